//! Column requests: the JSON a client sends to create or update a column, checked and turned
//! into a `ColumnDef` against the branch's schema.
//!
//! Pure functions over the schema; the grid actor applies what they return.

use crate::json_object::optional_object;
use serde::Deserialize;
use utoipa::ToSchema;

use super::formula;
use super::schema::{
    ColumnDef, ColumnType, DateTimeFormat, FormulaSetting, LocalizationType, NumberFormat,
    NumberType, ReferenceSetting, ReferenceType, ResultValueType, Schema, SelectionColor,
    SelectionOption,
};
use super::schema_error::{SchemaError, SchemaResult};
use crate::ids;

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NumberFormatRequest {
    #[serde(rename = "type")]
    pub number_type: Option<String>,
    pub decimal_places: Option<u32>,
    pub currency_symbol: Option<String>,
    pub use1000_separator: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct SelectionOptionRequest {
    pub value: String,
    pub color: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct SelectionRequest {
    #[serde(default, deserialize_with = "crate::json_object::objects_only")]
    pub options: Vec<SelectionOptionRequest>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceRequest {
    pub grid_id: Option<String>,
    pub branch_id: Option<String>,
    pub column_id: Option<String>,
    #[serde(rename = "type")]
    pub reference_type: Option<String>,
    pub selection_type: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FormulaRequest {
    pub formula_text: Option<String>,
    pub always_format_result_value_as_list: Option<bool>,
    pub detect_result_value_type: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DateTimeFormatRequest {
    pub date_format: Option<String>,
    pub time_format: Option<String>,
    pub zone_offset: Option<String>,
    pub show_time_zone: Option<bool>,
}

/// Body of column create (name and type required) and update (all optional).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ColumnRequest {
    pub id: Option<String>,
    /// On update: the column's new id (`id` is accepted too).
    pub new_id: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(rename = "type")]
    pub column_type: Option<String>,
    pub editable: Option<bool>,
    pub language_code: Option<String>,
    pub localization_type: Option<String>,
    // The settings are objects only (`json_object`): serde's derive would read a list of
    // their fields in order too.
    #[serde(default, deserialize_with = "optional_object")]
    pub number_format: Option<NumberFormatRequest>,
    #[serde(default, deserialize_with = "optional_object")]
    pub selection: Option<SelectionRequest>,
    /// Deprecated list form of the selection options.
    pub selection_options: Option<Vec<String>>,
    #[serde(default, deserialize_with = "optional_object")]
    pub reference: Option<ReferenceRequest>,
    #[serde(default, deserialize_with = "optional_object")]
    pub formula: Option<FormulaRequest>,
    #[serde(default, deserialize_with = "optional_object")]
    pub date_time_format: Option<DateTimeFormatRequest>,
}

const MAX_NAME_CHARS: usize = 255;
const MAX_OPTIONS: usize = 1000;

/// The most columns a grid (each branch of it) may have: adding past it is 400 badRequest.
pub const MAX_COLUMNS: usize = 1000;

/// Builds a new column from a create request, checking it against the schema (and the cap on
/// columns).
pub fn build_column(schema: &Schema, req: &ColumnRequest) -> SchemaResult<ColumnDef> {
    if schema.columns.len() >= MAX_COLUMNS {
        return Err(SchemaError::invalid(format!(
            "A grid has at most {MAX_COLUMNS} columns; this one has {}.",
            schema.columns.len()
        )));
    }
    let name = req
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| SchemaError::invalid("The column name is required."))?;
    let type_text = req
        .column_type
        .as_deref()
        .ok_or_else(|| SchemaError::invalid("The column type is required."))?;
    let column_type = parse_column_type(type_text)?;
    let id = match &req.id {
        Some(id) => check_new_column_id(schema, id)?,
        None => unique_generated_id(schema),
    };
    let mut column = ColumnDef {
        id,
        name: check_name(name)?,
        description: req.description.clone(),
        column_type,
        language_code: None,
        localization_type: None,
        number_format: None,
        selection: None,
        reference: None,
        formula: None,
        date_time_format: None,
    };
    apply_settings(schema, &mut column, req, true)?;
    Ok(column)
}

/// Applies an update request to a copy of an existing column.
pub fn update_column(
    schema: &Schema,
    current: &ColumnDef,
    req: &ColumnRequest,
) -> SchemaResult<ColumnDef> {
    let mut column = current.clone();
    if let Some(new_id) = req.new_id.as_ref().or(req.id.as_ref()) {
        if new_id != &current.id {
            column.id = check_new_column_id(schema, new_id)?;
        }
    }
    if let Some(name) = &req.name {
        let name = name.trim();
        if name.is_empty() {
            return Err(SchemaError::invalid("The column name cannot be empty."));
        }
        column.name = check_name(name)?;
    }
    if let Some(description) = &req.description {
        column.description = Some(description.clone());
    }
    let type_changed = match req.column_type.as_deref() {
        Some(text) => {
            let new_type = parse_column_type(text)?;
            let changed = new_type != column.column_type;
            // A lookup holds no values of its own: no column becomes one or stops being one.
            if changed
                && (new_type == ColumnType::Lookup || column.column_type == ColumnType::Lookup)
            {
                return Err(SchemaError::invalid(
                    "A column cannot change to or from the lookup type; create a new column.",
                ));
            }
            column.column_type = new_type;
            changed
        }
        None => false,
    };
    apply_settings(schema, &mut column, req, type_changed)?;
    Ok(column)
}

fn check_name(name: &str) -> SchemaResult<String> {
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(SchemaError::invalid(format!(
            "The column name is longer than {MAX_NAME_CHARS} characters."
        )));
    }
    Ok(name.to_owned())
}

fn parse_column_type(text: &str) -> SchemaResult<ColumnType> {
    ColumnType::parse(text).ok_or_else(|| {
        let known: Vec<&str> = ColumnType::ALL.iter().map(|t| t.as_str()).collect();
        SchemaError::invalid(format!(
            "Unknown column type \"{text}\"; expected one of {}.",
            known.join(", ")
        ))
    })
}

fn check_new_column_id(schema: &Schema, id: &str) -> SchemaResult<String> {
    if !ids::is_valid_column_id(id) {
        return Err(SchemaError::InvalidColumnId(format!(
            "Column id \"{id}\" is invalid: use letters, digits and '_', not starting with '_', \
                 at most 100 characters."
        )));
    }
    if schema.column(id).is_some() {
        return Err(SchemaError::InvalidColumnId(format!(
            "Column id \"{id}\" already exists in this grid."
        )));
    }
    Ok(id.to_owned())
}

fn unique_generated_id(schema: &Schema) -> String {
    loop {
        let id = ids::generate();
        if schema.column(&id).is_none() {
            return id;
        }
    }
}

/// Sets the type-specific settings from the request. `fresh` means the type is new, so
/// settings of other types are dropped and required ones must be present.
fn apply_settings(
    schema: &Schema,
    column: &mut ColumnDef,
    req: &ColumnRequest,
    fresh: bool,
) -> SchemaResult<()> {
    if fresh {
        column.language_code = None;
        column.localization_type = None;
        column.number_format = None;
        column.selection = None;
        column.reference = None;
        column.formula = None;
    }
    check_given_settings(req)?;
    match column.column_type {
        ColumnType::Language => apply_language(column, req)?,
        ColumnType::Number => {
            if let Some(nf) = &req.number_format {
                column.number_format = Some(parse_number_format(nf)?);
            }
        }
        ColumnType::SingleSelection | ColumnType::MultipleSelections => {
            if let Some(options) = parse_selection(req)? {
                column.selection = Some(options);
            } else if column.selection.is_none() {
                column.selection = Some(Vec::new());
            }
        }
        ColumnType::Reference => {
            if let Some(r) = &req.reference {
                column.reference = Some(parse_reference(r)?);
            } else if column.reference.is_none() {
                return Err(SchemaError::invalid(
                    "A reference column needs reference.gridId and reference.columnId.",
                ));
            }
            check_lookups_unambiguous(schema, column)?;
        }
        ColumnType::Formula => apply_formula(schema, column, req)?,
        ColumnType::Lookup => apply_lookup(schema, column, req)?,
        ColumnType::SingleLine
        | ColumnType::MultipleLines
        | ColumnType::RichText
        | ColumnType::Markdown
        | ColumnType::Html
        | ColumnType::Boolean
        | ColumnType::Datetime
        | ColumnType::Files
        | ColumnType::Json
        | ColumnType::Yaml
        | ColumnType::User => {}
    }
    if let Some(f) = &req.date_time_format {
        column.date_time_format = Some(DateTimeFormat {
            date_format: f.date_format.clone(),
            time_format: f.time_format.clone(),
            zone_offset: f.zone_offset.clone(),
            show_time_zone: f.show_time_zone,
        });
    }
    Ok(())
}

/// Refuses a setting given with a value no column takes (an unknown selection color, number
/// type or localization type: decisions 4), whether or not this column's type uses it; one it
/// does not use is then ignored, as before.
fn check_given_settings(req: &ColumnRequest) -> SchemaResult<()> {
    parse_selection(req)?;
    if let Some(nf) = &req.number_format {
        parse_number_format(nf)?;
    }
    match &req.localization_type {
        Some(text) if LocalizationType::parse(text).is_none() => {
            Err(SchemaError::invalid(format!(
            "localizationType \"{text}\" is invalid; expected sourceLanguage or targetLanguage."
        )))
        }
        _ => Ok(()),
    }
}

fn apply_language(column: &mut ColumnDef, req: &ColumnRequest) -> SchemaResult<()> {
    if let Some(code) = &req.language_code {
        let valid =
            !code.is_empty() && code.len() <= 16 && code.chars().all(|c| c.is_ascii_alphanumeric());
        if !valid {
            return Err(SchemaError::invalid(format!(
                "languageCode \"{code}\" is invalid: use letters and digits, like enUS."
            )));
        }
        column.language_code = Some(code.clone());
    }
    if let Some(text) = &req.localization_type {
        let parsed = LocalizationType::parse(text).ok_or_else(|| {
            SchemaError::invalid(format!(
                "localizationType \"{text}\" is invalid; expected sourceLanguage or targetLanguage."
            ))
        })?;
        column.localization_type = Some(parsed);
    }
    if column.language_code.is_none() {
        return Err(SchemaError::invalid("A language column needs a languageCode."));
    }
    if column.localization_type.is_none() {
        column.localization_type = Some(LocalizationType::SourceLanguage);
    }
    Ok(())
}

fn parse_number_format(nf: &NumberFormatRequest) -> SchemaResult<NumberFormat> {
    let number_type = match nf.number_type.as_deref() {
        None => NumberType::Decimal,
        Some(text) => NumberType::parse(text).ok_or_else(|| {
            SchemaError::invalid(format!(
                "numberFormat.type \"{text}\" is invalid; expected decimal or integer."
            ))
        })?,
    };
    if nf.decimal_places.is_some_and(|p| p > 20) {
        return Err(SchemaError::invalid("numberFormat.decimalPlaces must be between 0 and 20."));
    }
    Ok(NumberFormat {
        number_type,
        decimal_places: nf.decimal_places,
        currency_symbol: nf.currency_symbol.clone(),
        use_1000_separator: nf.use1000_separator,
    })
}

fn parse_selection(req: &ColumnRequest) -> SchemaResult<Option<Vec<SelectionOption>>> {
    let options: Vec<SelectionOption> = match (&req.selection, &req.selection_options) {
        (Some(selection), _) => selection
            .options
            .iter()
            .map(|o| {
                let color = match o.color.as_deref() {
                    None => None,
                    Some(text) => Some(SelectionColor::parse(text).ok_or_else(|| {
                        let known: Vec<&str> =
                            SelectionColor::ALL.iter().map(|c| c.as_str()).collect();
                        SchemaError::invalid(format!(
                            "Unknown selection color \"{text}\"; expected one of {}.",
                            known.join(", ")
                        ))
                    })?),
                };
                Ok(SelectionOption { value: o.value.clone(), color })
            })
            .collect::<SchemaResult<_>>()?,
        (None, Some(values)) => {
            values.iter().map(|v| SelectionOption { value: v.clone(), color: None }).collect()
        }
        (None, None) => return Ok(None),
    };
    if options.len() > MAX_OPTIONS {
        return Err(SchemaError::invalid(format!(
            "A selection has at most {MAX_OPTIONS} options."
        )));
    }
    for (i, option) in options.iter().enumerate() {
        if option.value.chars().count() > 100 {
            return Err(SchemaError::invalid("A selection option is at most 100 characters."));
        }
        if options[..i].iter().any(|o| o.value == option.value) {
            return Err(SchemaError::invalid(format!(
                "Selection option \"{}\" is listed twice.",
                option.value
            )));
        }
    }
    Ok(Some(options))
}

fn parse_reference(r: &ReferenceRequest) -> SchemaResult<ReferenceSetting> {
    let grid_id = r
        .grid_id
        .clone()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| SchemaError::invalid("reference.gridId is required."))?;
    let column_id = r
        .column_id
        .clone()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| SchemaError::invalid("reference.columnId is required."))?;
    let reference_type = match r.reference_type.as_deref() {
        None => ReferenceType::Row,
        Some(text) => ReferenceType::parse(text).ok_or_else(|| {
            SchemaError::invalid(format!(
                "reference.type \"{text}\" is invalid; expected row or cell."
            ))
        })?,
    };
    let multiple = match r.selection_type.as_deref() {
        None | Some("multiple") => true,
        Some("single") => false,
        Some(other) => {
            return Err(SchemaError::invalid(format!(
                "reference.selectionType \"{other}\" is invalid; expected single or multiple."
            )))
        }
    };
    Ok(ReferenceSetting {
        grid_id,
        branch_id: r.branch_id.clone(),
        column_id,
        reference_type,
        multiple,
    })
}

/// Refuses reference column `column` when a lookup column points at its grid and branch and
/// another reference column already does: the lookup follows exactly one.
fn check_lookups_unambiguous(schema: &Schema, column: &ColumnDef) -> SchemaResult<()> {
    let Some(target) = &column.reference else { return Ok(()) };
    let lookup = schema.columns_pointing_at(ColumnType::Lookup, target).next();
    let other =
        schema.columns_pointing_at(ColumnType::Reference, target).find(|c| c.id != column.id);
    match (lookup, other) {
        (Some(lookup), Some(other)) => Err(SchemaError::invalid(format!(
            "Lookup column \"{}\" follows reference column \"{}\" to grid \"{}\"; a second \
             reference column to that grid would make it ambiguous.",
            lookup.id, other.id, target.grid_id
        ))),
        _ => Ok(()),
    }
}

/// A lookup's `reference` names the referenced grid (and branch) and the column of it shown;
/// the branch must have exactly one reference column pointing there, the one followed.
fn apply_lookup(schema: &Schema, column: &mut ColumnDef, req: &ColumnRequest) -> SchemaResult<()> {
    if let Some(r) = &req.reference {
        column.reference = Some(parse_reference(r)?);
    }
    let Some(wanted) = &column.reference else {
        return Err(SchemaError::invalid(
            "A lookup column needs reference.gridId and reference.columnId: the referenced grid \
             and the column of it to show.",
        ));
    };
    let following = (schema.columns_pointing_at(ColumnType::Reference, wanted))
        .filter(|c| c.id != column.id)
        .count();
    match following {
        1 => Ok(()),
        0 => Err(SchemaError::invalid(format!(
            "A lookup column shows a column of the records a reference column points at: this \
             grid has no reference column pointing at grid \"{}\".",
            wanted.grid_id
        ))),
        _ => Err(SchemaError::invalid(format!(
            "More than one reference column of this grid points at grid \"{}\"; a lookup \
             follows exactly one.",
            wanted.grid_id
        ))),
    }
}

fn apply_formula(schema: &Schema, column: &mut ColumnDef, req: &ColumnRequest) -> SchemaResult<()> {
    let Some(f) = &req.formula else {
        if column.formula.is_none() {
            return Err(SchemaError::invalid("A formula column needs formula.formulaText."));
        }
        return Ok(());
    };
    let text = f
        .formula_text
        .clone()
        .or_else(|| column.formula.as_ref().map(|f| f.formula_text.clone()))
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| SchemaError::invalid("formula.formulaText is required."))?;
    formula::check(schema, &column.id, &text)?;
    let detect = match f.detect_result_value_type.as_deref() {
        None => column.formula.as_ref().and_then(|f| f.detect_result_value_type),
        Some(text) => Some(ResultValueType::parse(text).ok_or_else(|| {
            SchemaError::invalid(format!("formula.detectResultValueType \"{text}\" is invalid."))
        })?),
    };
    let as_list = f
        .always_format_result_value_as_list
        .or_else(|| column.formula.as_ref().map(|f| f.always_format_result_value_as_list))
        .unwrap_or(false);
    column.formula = Some(FormulaSetting {
        formula_text: text,
        always_format_result_value_as_list: as_list,
        detect_result_value_type: detect,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Coded, ErrorCode};

    fn req(json: serde_json::Value) -> ColumnRequest {
        serde_json::from_value(json).expect("valid request")
    }

    #[test]
    fn builds_a_language_column() {
        let schema = Schema::default();
        let col = build_column(
            &schema,
            &req(serde_json::json!({"id":"enUS","name":"English","type":"language","languageCode":"enUS"})),
        )
        .expect("valid");
        assert!(col.is_source());
        assert_eq!(col.language_code.as_deref(), Some("enUS"));
    }

    #[test]
    fn refuses_bad_settings() {
        let schema = Schema::default();
        let bad = [
            serde_json::json!({"name":"x","type":"lookup"}),
            serde_json::json!({"name":"x","type":"language"}),
            serde_json::json!({"name":"x","type":"language","languageCode":"enUS","localizationType":"pivot"}),
            serde_json::json!({"name":"x","type":"singleSelection","selection":{"options":[{"value":"a","color":"pink"}]}}),
            serde_json::json!({"name":"x","type":"formula","formula":{"formulaText":"[missing] & 1"}}),
            serde_json::json!({"name":"x","type":"reference","reference":{"gridId":"g"}}),
            serde_json::json!({"type":"singleLine"}),
        ];
        for body in bad {
            let err = build_column(&schema, &req(body.clone())).expect_err("must be refused");
            assert_eq!(err.code(), ErrorCode::BadRequest, "{body}");
        }
        let err =
            build_column(&schema, &req(serde_json::json!({"id":"_x","name":"x","type":"number"})))
                .expect_err("invalid id");
        assert_eq!(err.code(), ErrorCode::InvalidColumnId);
    }

    #[test]
    fn formulas_are_checked_against_the_schema() {
        use serde_json::json;
        let mut schema = Schema::default();
        let text = |id: &str| json!({"id": id, "name": id, "type": "singleLine"});
        schema.columns.push(build_column(&schema, &req(text("key"))).expect("valid"));
        let formula = |id: &str, f: &str| json!({"id": id, "name": id, "type": "formula", "formula": {"formulaText": f}});
        let a = build_column(&schema, &req(formula("a", "CONCAT([key], \"_[no]\")")));
        schema.columns.push(a.expect("valid formula"));
        for (id, f) in [("b", "[nope]"), ("b", "[b] & 1"), ("b", "1 +"), ("b", "LEN()")] {
            let err = build_column(&schema, &req(formula(id, f))).expect_err(f);
            assert_eq!(err.code(), ErrorCode::BadRequest, "{f}");
        }
        schema.columns.push(build_column(&schema, &req(formula("b", "[a] & 1"))).expect("valid"));
        let a = schema.columns[1].clone();
        let patch = req(json!({"formula": {"formulaText": "[b]"}}));
        let cycle = update_column(&schema, &a, &patch).expect_err("a cycle");
        assert!(cycle.to_string().contains("through column \"b\""), "{cycle}");
    }
}
