//! JSON shapes of the schema as the API answers them: columns (full and as listed in grids and
//! views), views and dependencies. Field names and types follow the hosted service's OpenAPI.
//!
//! Pure conversions; no validation, no state. What reference columns point at lives in other
//! branches and the catalogue: the caller looks it up first (`ReferenceTargets`).

use std::collections::HashMap;

use serde::Serialize;
use utoipa::ToSchema;

use super::schema::{ColumnDef, Dependency, ReferenceSetting, Schema, ViewDef};

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NumberFormatBody {
    #[serde(rename = "type")]
    pub number_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decimal_places: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency_symbol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use1000_separator: Option<bool>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SelectionOptionBody {
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub color: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SelectionBody {
    pub options: Vec<SelectionOptionBody>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NamedRef {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The referenced column: its id, and its name and type when the target could be looked up.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ColumnRef {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub column_type: Option<&'static str>,
}

/// One branch that reference columns point at: the names of its grid and itself, and its
/// columns.
#[derive(Debug, Clone)]
pub struct ReferenceTarget {
    pub grid_name: String,
    pub branch_name: String,
    pub columns: Vec<ColumnDef>,
}

/// The branches reference columns point at, by branch id (a grid's id for its master branch).
#[derive(Debug, Clone, Default)]
pub struct ReferenceTargets(HashMap<String, ReferenceTarget>);

impl ReferenceTargets {
    /// The id of the branch a reference points at.
    pub fn branch_of(r: &ReferenceSetting) -> &str {
        r.branch_id.as_deref().unwrap_or(&r.grid_id)
    }

    pub fn contains(&self, branch_id: &str) -> bool {
        self.0.contains_key(branch_id)
    }

    pub fn insert(&mut self, branch_id: String, target: ReferenceTarget) {
        self.0.insert(branch_id, target);
    }

    fn get(&self, r: &ReferenceSetting) -> Option<&ReferenceTarget> {
        self.0.get(Self::branch_of(r))
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceBody {
    pub grid_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
    pub column_id: String,
    #[serde(rename = "type")]
    pub reference_type: &'static str,
    pub selection_type: &'static str,
    pub grid: NamedRef,
    pub branch: NamedRef,
    pub column: ColumnRef,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FormulaBody {
    pub formula_text: String,
    pub always_format_result_value_as_list: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detect_result_value_type: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DateTimeFormatBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date_format: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_format: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_offset: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub show_time_zone: Option<bool>,
}

/// A column as the API shows it (full resource, and inside grids and views).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ColumnBody {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "type")]
    pub column_type: &'static str,
    pub editable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub localization_type: Option<&'static str>,
    pub is_source: bool,
    pub is_target: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_format: Option<NumberFormatBody>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection: Option<SelectionBody>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection_options: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<ReferenceBody>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub formula: Option<FormulaBody>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date_time_format: Option<DateTimeFormatBody>,
}

/// A view as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ViewBody {
    pub id: String,
    pub name: String,
    pub grid_id: String,
    pub grid_status: &'static str,
    pub columns: Vec<ColumnBody>,
}

/// A dependency as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyBody {
    pub id: String,
    pub source_column_id: String,
    pub target_column_id: String,
}

impl From<&Dependency> for DependencyBody {
    fn from(d: &Dependency) -> DependencyBody {
        DependencyBody {
            id: d.id.clone(),
            source_column_id: d.source_column_id.clone(),
            target_column_id: d.target_column_id.clone(),
        }
    }
}

/// Renders a column of `schema` with the given editable flag; a reference column names its
/// target when `targets` has it.
pub fn column_body(
    schema: &Schema,
    column: &ColumnDef,
    editable: bool,
    targets: &ReferenceTargets,
) -> ColumnBody {
    let options = column.selection.as_ref();
    ColumnBody {
        id: column.id.clone(),
        name: column.name.clone(),
        description: column.description.clone(),
        column_type: column.column_type.as_str(),
        editable,
        language_code: column.language_code.clone(),
        localization_type: column.localization_type.map(|t| t.as_str()),
        is_source: column.is_source(),
        is_target: column.is_target(),
        depends_on: schema.dependency_of_target(&column.id).map(|d| d.source_column_id.clone()),
        number_format: column.number_format.as_ref().map(|nf| NumberFormatBody {
            number_type: nf.number_type.as_str(),
            decimal_places: nf.decimal_places,
            currency_symbol: nf.currency_symbol.clone(),
            use1000_separator: nf.use_1000_separator,
        }),
        selection: options.map(|opts| SelectionBody {
            options: opts
                .iter()
                .map(|o| SelectionOptionBody {
                    value: o.value.clone(),
                    color: o.color.map(|c| c.as_str()),
                })
                .collect(),
        }),
        selection_options: options.map(|opts| opts.iter().map(|o| o.value.clone()).collect()),
        reference: column.reference.as_ref().map(|r| reference_body(r, targets)),
        formula: column.formula.as_ref().map(|f| FormulaBody {
            formula_text: f.formula_text.clone(),
            always_format_result_value_as_list: f.always_format_result_value_as_list,
            detect_result_value_type: f.detect_result_value_type.map(|t| t.as_str()),
        }),
        date_time_format: column.date_time_format.as_ref().map(|f| DateTimeFormatBody {
            date_format: f.date_format.clone(),
            time_format: f.time_format.clone(),
            zone_offset: f.zone_offset.clone(),
            show_time_zone: f.show_time_zone,
        }),
    }
}

fn reference_body(r: &ReferenceSetting, targets: &ReferenceTargets) -> ReferenceBody {
    let target = targets.get(r);
    let column = target.and_then(|t| t.columns.iter().find(|c| c.id == r.column_id));
    ReferenceBody {
        grid_id: r.grid_id.clone(),
        branch_id: r.branch_id.clone(),
        column_id: r.column_id.clone(),
        reference_type: r.reference_type.as_str(),
        selection_type: if r.multiple { "multiple" } else { "single" },
        grid: NamedRef { id: r.grid_id.clone(), name: target.map(|t| t.grid_name.clone()) },
        branch: NamedRef {
            id: ReferenceTargets::branch_of(r).to_owned(),
            name: target.map(|t| t.branch_name.clone()),
        },
        column: ColumnRef {
            id: r.column_id.clone(),
            name: column.map(|c| c.name.clone()),
            column_type: column.map(|c| c.column_type.as_str()),
        },
    }
}

/// The columns a view shows, rendered.
pub fn view_columns(
    schema: &Schema,
    view: &ViewDef,
    targets: &ReferenceTargets,
) -> Vec<ColumnBody> {
    schema
        .view_columns(view)
        .into_iter()
        .map(|(c, editable)| column_body(schema, c, editable, targets))
        .collect()
}
