//! A branch's schema: column definitions with their type settings, dependencies between
//! language columns, and views (which columns they show and whether they are editable).
//!
//! Plain data owned by the grid actor. Validation of client requests lives in `grid::columns`;
//! JSON shapes in `grid::render`.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::value::StorageKind;
use crate::error::{ApiError, ApiResult};

/// The predefined columns a `columnIds` list may name besides the view's columns
/// (decisions.md section 6); every record carries them anyway.
pub const PREDEFINED_COLUMNS: [&str; 4] =
    ["_recordId", "_path", "_lastModifiedTime", "_lastModifiedBy"];

/// A `columnIds` list as served: each id once, in the order first named. More distinct ids
/// than the view shows (`shown`) plus the predefined columns is 400 badRequest, so no list can
/// make an answer larger than the whole view's.
pub fn distinct_column_ids(ids: &[String], shown: usize) -> ApiResult<Vec<&str>> {
    let most = shown + PREDEFINED_COLUMNS.len();
    let mut seen = HashSet::new();
    let mut distinct = Vec::new();
    for id in ids {
        if seen.insert(id.as_str()) {
            distinct.push(id.as_str());
            if distinct.len() > most {
                return Err(ApiError::bad_request(format!(
                    "columnIds names more than {most} distinct columns: the view has {shown} \
                     columns and there are {} predefined ones.",
                    PREDEFINED_COLUMNS.len()
                )));
            }
        }
    }
    Ok(distinct)
}

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name { $($variant),* }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }

            pub fn parse(s: &str) -> Option<$name> {
                match s { $($text => Some($name::$variant),)* _ => None }
            }
        }
    };
}

string_enum! {
    /// The column types of gridly-api.md (and html from decisions.md section 4).
    ColumnType {
        SingleLine => "singleLine",
        MultipleLines => "multipleLines",
        RichText => "richText",
        Markdown => "markdown",
        Html => "html",
        SingleSelection => "singleSelection",
        MultipleSelections => "multipleSelections",
        Boolean => "boolean",
        Number => "number",
        Datetime => "datetime",
        Files => "files",
        Reference => "reference",
        Language => "language",
        Formula => "formula",
        Json => "json",
        Yaml => "yaml",
    }
}

string_enum! {
    /// Colors a selection option may have.
    SelectionColor {
        Atlantis => "atlantis",
        Crusta => "crusta",
        LightCyan => "lightCyan",
        BurntSlena => "burntSlena",
        BrightRed => "brightRed",
        SeaGreen => "seaGreen",
        ShamRock => "shamRock",
        DodgerBlue => "dodgerBlue",
        Sun => "sun",
        MidGrey => "midGrey",
        FuchsiaBlue => "fuchsiaBlue",
        ShipCove => "shipCove",
        FunBlue => "funBlue",
        Froly => "froly",
        LightLavender => "lightLavender",
    }
}

string_enum! {
    /// Whether a language column holds the source text or a translation.
    LocalizationType {
        SourceLanguage => "sourceLanguage",
        TargetLanguage => "targetLanguage",
    }
}

string_enum! {
    /// How a number column's values are constrained and shown.
    NumberType {
        Decimal => "decimal",
        Integer => "integer",
    }
}

string_enum! {
    /// Whether a reference column links whole records or single cells.
    ReferenceType {
        Row => "row",
        Cell => "cell",
    }
}

string_enum! {
    /// How a formula's result is typed.
    ResultValueType {
        List => "list",
        String => "string",
        Decimal => "decimal",
        Boolean => "boolean",
        Datetime => "datetime",
        Na => "na",
    }
}

impl ColumnType {
    /// How cells of this type are laid out in the store.
    pub fn storage(self) -> StorageKind {
        match self {
            ColumnType::Number => StorageKind::Number,
            ColumnType::Boolean => StorageKind::Boolean,
            ColumnType::Datetime => StorageKind::Datetime,
            ColumnType::MultipleSelections | ColumnType::Files | ColumnType::Reference => {
                StorageKind::List
            }
            ColumnType::SingleLine
            | ColumnType::MultipleLines
            | ColumnType::RichText
            | ColumnType::Markdown
            | ColumnType::Html
            | ColumnType::SingleSelection
            | ColumnType::Language
            | ColumnType::Formula
            | ColumnType::Json
            | ColumnType::Yaml => StorageKind::Text,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumberFormat {
    pub number_type: NumberType,
    pub decimal_places: Option<u32>,
    pub currency_symbol: Option<String>,
    pub use_1000_separator: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectionOption {
    pub value: String,
    pub color: Option<SelectionColor>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceSetting {
    pub grid_id: String,
    pub branch_id: Option<String>,
    pub column_id: String,
    pub reference_type: ReferenceType,
    pub multiple: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormulaSetting {
    pub formula_text: String,
    pub always_format_result_value_as_list: bool,
    pub detect_result_value_type: Option<ResultValueType>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DateTimeFormat {
    pub date_format: Option<String>,
    pub time_format: Option<String>,
    pub zone_offset: Option<String>,
    pub show_time_zone: Option<bool>,
}

/// One column of a grid branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnDef {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub column_type: ColumnType,
    pub language_code: Option<String>,
    pub localization_type: Option<LocalizationType>,
    pub number_format: Option<NumberFormat>,
    pub selection: Option<Vec<SelectionOption>>,
    pub reference: Option<ReferenceSetting>,
    pub formula: Option<FormulaSetting>,
    pub date_time_format: Option<DateTimeFormat>,
}

impl ColumnDef {
    pub fn is_language(&self) -> bool {
        self.column_type == ColumnType::Language
    }

    pub fn is_source(&self) -> bool {
        self.is_language() && self.localization_type == Some(LocalizationType::SourceLanguage)
    }

    pub fn is_target(&self) -> bool {
        self.is_language() && self.localization_type == Some(LocalizationType::TargetLanguage)
    }

    /// Whether clients may write this column's values at all (formulas are computed).
    pub fn is_writable(&self) -> bool {
        self.column_type != ColumnType::Formula
    }
}

/// A translation dependency: the target's cells follow the source's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    pub id: String,
    pub source_column_id: String,
    pub target_column_id: String,
}

/// One column shown in a view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewColumn {
    pub id: String,
    pub editable: bool,
}

/// A view of a branch. The default access view shows every column, editable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewDef {
    pub id: String,
    pub name: String,
    pub is_default: bool,
    pub columns: Vec<ViewColumn>,
}

/// Columns, dependencies and views of one branch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    pub columns: Vec<ColumnDef>,
    pub dependencies: Vec<Dependency>,
    pub views: Vec<ViewDef>,
}

impl Schema {
    pub fn column(&self, id: &str) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| c.id == id)
    }

    pub fn view(&self, id: &str) -> Option<&ViewDef> {
        self.views.iter().find(|v| v.id == id)
    }

    /// The columns a view shows, in its order, with their editable flags.
    pub fn view_columns<'a>(&'a self, view: &'a ViewDef) -> Vec<(&'a ColumnDef, bool)> {
        if view.is_default {
            return self.columns.iter().map(|c| (c, c.is_writable())).collect();
        }
        view.columns
            .iter()
            .filter_map(|vc| self.column(&vc.id).map(|c| (c, vc.editable && c.is_writable())))
            .collect()
    }

    /// The column a view shows with this id, with its editable flag.
    pub fn view_column<'a>(&'a self, view: &'a ViewDef, id: &str) -> Option<(&'a ColumnDef, bool)> {
        let column = self.column(id)?;
        if view.is_default {
            return Some((column, column.is_writable()));
        }
        let shown = view.columns.iter().find(|vc| vc.id == id)?;
        Some((column, shown.editable && column.is_writable()))
    }

    /// The dependency whose target is this column.
    pub fn dependency_of_target(&self, target: &str) -> Option<&Dependency> {
        self.dependencies.iter().find(|d| d.target_column_id == target)
    }

    /// Whether adding source -> target would close a cycle.
    pub fn would_cycle(&self, source: &str, target: &str) -> bool {
        let mut current = source.to_owned();
        let mut steps = 0;
        loop {
            if current == target {
                return true;
            }
            match self.dependency_of_target(&current) {
                Some(dep) if steps <= self.dependencies.len() => {
                    current = dep.source_column_id.clone();
                    steps += 1;
                }
                _ => return false,
            }
        }
    }
}
