//! A branch's schema: column definitions with their type settings, dependencies between
//! language columns, and views (which columns they show and whether they are editable).
//!
//! Plain data owned by the grid actor. Validation of client requests lives in `grid::columns`;
//! JSON shapes in `grid::render`.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::error::{GridError, GridResult};
use super::value::StorageKind;

/// The predefined columns a `columnIds` list may name besides the view's columns
/// (decisions.md section 6); every record carries them anyway.
pub const PREDEFINED_COLUMNS: [&str; 4] =
    ["_recordId", "_path", "_lastModifiedTime", "_lastModifiedBy"];

/// A `columnIds` list as served: each id once, in the order first named. More distinct ids
/// than the view shows (`shown`) plus the predefined columns is 400 badRequest, so no list can
/// make an answer larger than the whole view's.
pub fn distinct_column_ids(ids: &[String], shown: usize) -> GridResult<Vec<&str>> {
    let most = shown + PREDEFINED_COLUMNS.len();
    let mut seen = HashSet::new();
    let mut distinct = Vec::new();
    for id in ids {
        if seen.insert(id.as_str()) {
            distinct.push(id.as_str());
            if distinct.len() > most {
                return Err(GridError::TooManyColumnIds { shown });
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
    /// The column types of gridly-api.md (html from decisions.md section 4, user and lookup
    /// from section 12). Appended only: logs and snapshots hold a type by its place in this list.
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
        User => "user",
        Lookup => "lookup",
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
            ColumnType::MultipleSelections
            | ColumnType::Files
            | ColumnType::Reference
            | ColumnType::User
            | ColumnType::Lookup => StorageKind::List,
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

impl ReferenceSetting {
    /// Whether `other` points at the same grid and branch (a branch not named is the grid's
    /// first: `ReferenceTargets::branch_of`).
    pub fn same_target(&self, other: &ReferenceSetting) -> bool {
        self.grid_id == other.grid_id
            && crate::grid::render::ReferenceTargets::branch_of(self)
                == crate::grid::render::ReferenceTargets::branch_of(other)
    }
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

    /// Whether clients may write this column's values at all (formulas are computed, lookups
    /// read from the referenced records).
    pub fn is_writable(&self) -> bool {
        !matches!(self.column_type, ColumnType::Formula | ColumnType::Lookup)
    }

    /// Whether a read shows this column's cells as the values of the records they reference
    /// (`reference`: the column's own ids; `lookup`: the ids of the reference column it follows).
    pub fn shows_referenced(&self) -> bool {
        matches!(self.column_type, ColumnType::Reference | ColumnType::Lookup)
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
///
/// Lookups by column id go through a hash index (column id -> position in `columns`, and per
/// view, column id -> position in the view's list), rebuilt by `reindex` after every change
/// (`GridState::apply`, loading an image, renaming views). A lookup that finds the index out of
/// step with the lists (another size, or a position holding another id) scans instead, so an
/// index can only make a lookup slower, never wrong, as long as every change reindexes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Schema {
    pub columns: Vec<ColumnDef>,
    pub dependencies: Vec<Dependency>,
    pub views: Vec<ViewDef>,
    /// The branch's folders that are kept without records in them (created empty, moved or
    /// renamed), in their order among their siblings (`grid::paths`); other folders exist while
    /// a record's path names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    #[serde(skip)]
    index: foldhash::HashMap<String, usize>,
    /// View id -> (column id -> position in the view's `columns`).
    #[serde(skip)]
    view_index: HashMap<String, foldhash::HashMap<String, usize>>,
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.columns == other.columns
            && self.dependencies == other.dependencies
            && self.views == other.views
            && self.paths == other.paths
    }
}

/// Where `id` is in `items` by `index` (`None`: in none), or `Err(())` when the index is out
/// of step and the caller must scan.
fn indexed<T>(
    index: Option<&foldhash::HashMap<String, usize>>,
    items: &[T],
    id: &str,
    id_of: impl Fn(&T) -> &str,
) -> Result<Option<usize>, ()> {
    let Some(index) = index.filter(|i| i.len() == items.len()) else { return Err(()) };
    match index.get(id) {
        None => Ok(None),
        Some(&at) if items.get(at).is_some_and(|item| id_of(item) == id) => Ok(Some(at)),
        Some(_) => Err(()),
    }
}

impl Schema {
    /// Rebuilds the id indexes from the lists.
    pub fn reindex(&mut self) {
        self.index = self.columns.iter().enumerate().map(|(i, c)| (c.id.clone(), i)).collect();
        self.view_index = self
            .views
            .iter()
            .map(|v| {
                let columns = v.columns.iter().enumerate().map(|(i, c)| (c.id.clone(), i));
                (v.id.clone(), columns.collect())
            })
            .collect();
    }

    /// Appends a column, keeping the index in step.
    pub fn push_column(&mut self, column: ColumnDef) {
        if self.index.len() == self.columns.len() {
            self.index.insert(column.id.clone(), self.columns.len());
        }
        self.columns.push(column);
    }

    /// Where column `id` stands in `columns`.
    pub fn column_position(&self, id: &str) -> Option<usize> {
        match indexed(Some(&self.index), &self.columns, id, |c| &c.id) {
            Ok(at) => at,
            Err(()) => self.columns.iter().position(|c| c.id == id),
        }
    }

    pub fn column(&self, id: &str) -> Option<&ColumnDef> {
        match indexed(Some(&self.index), &self.columns, id, |c| &c.id) {
            Ok(at) => at.map(|at| &self.columns[at]),
            Err(()) => self.columns.iter().find(|c| c.id == id),
        }
    }

    /// The entry of column `id` in `view`'s own list.
    fn view_entry<'a>(&self, view: &'a ViewDef, id: &str) -> Option<&'a ViewColumn> {
        let index = self.view_index.get(&view.id);
        match indexed(index, &view.columns, id, |c| &c.id) {
            Ok(at) => at.map(|at| &view.columns[at]),
            Err(()) => view.columns.iter().find(|vc| vc.id == id),
        }
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
        let shown = self.view_entry(view, id)?;
        Some((column, shown.editable && column.is_writable()))
    }

    /// The dependencies `view` shows: those whose source and target columns it shows both.
    pub fn view_dependencies<'a>(
        &'a self,
        view: &'a ViewDef,
    ) -> impl Iterator<Item = &'a Dependency> + 'a {
        self.dependencies.iter().filter(move |d| {
            self.view_column(view, &d.source_column_id).is_some()
                && self.view_column(view, &d.target_column_id).is_some()
        })
    }

    /// The reference column a lookup column follows: the branch's reference column pointing at
    /// the lookup's grid and branch. The planner keeps there being one while a lookup follows
    /// it (`columns::apply_lookup`, `columns::check_lookups_unambiguous`,
    /// `planner::check_not_followed`); were there two, the first in the schema is followed.
    pub fn lookup_followed(&self, lookup: &ColumnDef) -> Option<&ColumnDef> {
        let target = lookup.reference.as_ref()?;
        self.columns_pointing_at(ColumnType::Reference, target).next()
    }

    /// The columns of `column_type` (reference or lookup) pointing at `target`'s grid and
    /// branch, in the schema's order.
    pub fn columns_pointing_at<'a, 't>(
        &'a self,
        column_type: ColumnType,
        target: &'t ReferenceSetting,
    ) -> impl Iterator<Item = &'a ColumnDef> + use<'a, 't> {
        self.columns.iter().filter(move |c| {
            c.column_type == column_type
                && c.reference.as_ref().is_some_and(|r| r.same_target(target))
        })
    }

    /// The first lookup column following reference column `id` (`lookup_followed`), if any.
    pub fn lookup_following(&self, id: &str) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| {
            c.column_type == ColumnType::Lookup
                && self.lookup_followed(c).is_some_and(|followed| followed.id == id)
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn column(id: &str) -> ColumnDef {
        ColumnDef {
            id: id.into(),
            name: id.into(),
            description: None,
            column_type: ColumnType::SingleLine,
            language_code: None,
            localization_type: None,
            number_format: None,
            selection: None,
            reference: None,
            formula: None,
            date_time_format: None,
        }
    }

    #[test]
    fn lookups_by_id_use_the_index_and_never_trust_a_stale_one() {
        let mut schema = Schema::default();
        for i in 0..50 {
            schema.push_column(column(&format!("c{i}")));
        }
        let view = ViewDef {
            id: "v".into(),
            name: "v".into(),
            is_default: false,
            columns: vec![ViewColumn { id: "c7".into(), editable: true }],
        };
        schema.views.push(view.clone());
        schema.reindex();
        assert_eq!(schema.column("c42").map(|c| c.id.as_str()), Some("c42"));
        assert!(schema.column("c50").is_none());
        assert!(schema.view_column(&view, "c7").is_some_and(|(_, editable)| editable));
        assert!(schema.view_column(&view, "c8").is_none());
        // Changed behind the index's back: other sizes or positions fall back to a scan.
        schema.columns.remove(0);
        assert_eq!(schema.column("c42").map(|c| c.id.as_str()), Some("c42"));
        assert!(schema.column("c0").is_none());
        schema.columns.push(column("late"));
        assert_eq!(schema.column("c49").map(|c| c.id.as_str()), Some("c49"));
        let mut moved = view.clone();
        moved.columns.insert(0, ViewColumn { id: "c9".into(), editable: false });
        assert!(schema.view_column(&moved, "c7").is_some());
        // A deserialized schema has no index and scans until reindexed.
        let json = serde_json::to_string(&schema).expect("serializes");
        let loaded: Schema = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(loaded, schema);
        assert!(loaded.column("late").is_some());
    }

    #[test]
    fn column_ids_are_deduplicated_and_bounded_by_the_view() {
        let ids: Vec<String> =
            ["a", "b", "a", "_path", "b"].iter().map(|s| s.to_string()).collect();
        assert_eq!(distinct_column_ids(&ids, 2).expect("within"), vec!["a", "b", "_path"]);
        let many: Vec<String> = (0..7).map(|i| format!("c{i}")).collect();
        assert!(distinct_column_ids(&many, 3).is_ok());
        assert!(distinct_column_ids(&many, 2).is_err());
    }
}
