//! The hosted OpenAPI's `MergeBranchRequest` fields beyond `mergeRecordOptions`, turned into
//! what `grid::merge` takes: `mergeRecordConflicts` into per-cell choices
//! (`grid::merge_resolve::CellChoice`) and `query` (an array of `FilterField`) into the record
//! listing's filters (`grid::query::RawFilter`), so a merge query means what a listing query
//! means; `useLastMergeResolve: true` adds the choices the last merge between the same branches
//! was made with. What gridd does not do is refused with a 400 naming the field, never ignored:
//! operators and sub-fields the listing has no equivalent for,
//! `caseSensitive: true` (text operators are case-insensitive; `regexp` is exact),
//! `dynamicColumn` and `queryPathTagViaId`.

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::merge_resolve::{CellChoice, Choice, MAX_CELL_CHOICES, MAX_CONFLICT_RECORDS};
use crate::grid::query::{Op, RawFilter};

/// The most conditions a merge `query` may have.
pub const MAX_QUERY_FIELDS: usize = 100;

/// One record's cell choices (`MergeRecordConflict`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeRecordConflict {
    pub record_id: String,
    /// The record's path, for a grid whose records are identified by path and id.
    pub path_tag: Option<String>,
    #[serde(default, deserialize_with = "crate::json_object::objects_only")]
    pub cells: Vec<MergeCellConflict>,
}

/// One cell's choice (`MergeCellConflict`): `child`/`source`/`override` take the source's cell,
/// `parent`/`destination`/`reserve`/`ignore` keep the destination's, `overrideUpToDate` /
/// `overrideOutOfDate` take the source's with that dependency status.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeCellConflict {
    pub column_id: String,
    pub option: String,
}

/// One condition of a merge `query` (`FilterField`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilterField {
    pub column_id: String,
    pub operator: String,
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub values: Vec<Value>,
    pub sub_field: Option<String>,
    pub case_sensitive: Option<bool>,
    pub dynamic_column: Option<String>,
    pub query_path_tag_via_id: Option<bool>,
}

/// The cell choices of `mergeRecordConflicts` (400 for an unknown option, more than
/// `MAX_CONFLICT_RECORDS` records or `MAX_CELL_CHOICES` cells).
pub fn cell_choices(conflicts: Vec<MergeRecordConflict>) -> ApiResult<Vec<CellChoice>> {
    if conflicts.len() > MAX_CONFLICT_RECORDS {
        return Err(ApiError::bad_request(format!(
            "mergeRecordConflicts names {} records; at most {MAX_CONFLICT_RECORDS}.",
            conflicts.len()
        )));
    }
    let mut choices = Vec::new();
    for record in conflicts {
        for cell in record.cells {
            let choice = Choice::parse(&cell.option).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "mergeRecordConflicts: option \"{}\" (record \"{}\", column \"{}\") is not \
                     one of child, parent, source, destination, override, overrideUpToDate, \
                     overrideOutOfDate, reserve, ignore.",
                    crate::io::csv_import::clip(&cell.option, 64),
                    crate::io::csv_import::clip(&record.record_id, 64),
                    crate::io::csv_import::clip(&cell.column_id, 64),
                ))
            })?;
            if choices.len() >= MAX_CELL_CHOICES {
                return Err(ApiError::bad_request(format!(
                    "mergeRecordConflicts names more than {MAX_CELL_CHOICES} cells."
                )));
            }
            choices.push(CellChoice {
                record_id: record.record_id.clone(),
                path: record.path_tag.clone(),
                column_id: cell.column_id,
                choice,
            });
        }
    }
    Ok(choices)
}

/// The choices of a merge with `useLastMergeResolve: true`: those the last successful merge
/// between the same branches kept (`last`), each replaced by a choice of this request for the
/// same cell, and this request's others. More than `MAX_CELL_CHOICES` together is a 400.
pub fn with_last_resolve(
    last: Vec<CellChoice>,
    explicit: Vec<CellChoice>,
) -> ApiResult<Vec<CellChoice>> {
    let same = |a: &CellChoice, b: &CellChoice| {
        a.record_id == b.record_id && a.path == b.path && a.column_id == b.column_id
    };
    let mut kept: Vec<CellChoice> =
        last.into_iter().filter(|l| !explicit.iter().any(|e| same(l, e))).collect();
    if kept.len() + explicit.len() > MAX_CELL_CHOICES {
        return Err(ApiError::bad_request(format!(
            "mergeRecordConflicts and the last merge's choices (useLastMergeResolve) name more \
             than {MAX_CELL_CHOICES} cells together."
        )));
    }
    kept.extend(explicit);
    Ok(kept)
}

/// The merge `query` as listing filters (ANDed, as the hosted service ANDs them).
pub fn query_filters(fields: Vec<FilterField>) -> ApiResult<Vec<RawFilter>> {
    if fields.len() > MAX_QUERY_FIELDS {
        return Err(ApiError::bad_request(format!(
            "query has {} conditions; at most {MAX_QUERY_FIELDS}.",
            fields.len()
        )));
    }
    fields.into_iter().map(filter).collect()
}

fn filter(field: FilterField) -> ApiResult<RawFilter> {
    let refuse = |what: &str| {
        Err(ApiError::bad_request(format!(
            "query on \"{}\": {what} is not supported by this server.",
            crate::io::csv_import::clip(&field.column_id, 64)
        )))
    };
    if field.case_sensitive == Some(true) {
        return refuse("caseSensitive: true (text operators are case-insensitive; use regexp)");
    }
    if field.dynamic_column.as_deref().is_some_and(|d| !d.is_empty()) {
        return refuse("dynamicColumn");
    }
    if field.query_path_tag_via_id == Some(true) {
        return refuse("queryPathTagViaId: true");
    }
    let name = match field.sub_field.as_deref() {
        None | Some("") => field.column_id.clone(),
        Some(sub @ ("_dependencyStatus" | "_sourceStatus")) => format!("{}.{sub}", field.column_id),
        Some(other) => {
            return refuse(&format!("subField {}", crate::io::csv_import::clip(other, 64)))
        }
    };
    let Some(op) = Op::parse(&field.operator) else {
        return Err(ApiError::new(
            ErrorCode::InvalidFilterOperator,
            format!(
                "query on \"{}\": operator \"{}\" is not supported by this server.",
                crate::io::csv_import::clip(&field.column_id, 64),
                crate::io::csv_import::clip(&field.operator, 64)
            ),
        ));
    };
    let value = match op {
        _ if op.takes_no_value() => Value::Null,
        Op::In | Op::NotIn | Op::Between | Op::NotBetween => Value::Array(field.values),
        _ => match <[Value; 1]>::try_from(field.values) {
            Ok([value]) => value,
            Err(values) => {
                return Err(ApiError::new(
                    ErrorCode::MissingFilterValue,
                    format!(
                        "query on \"{}\": operator \"{}\" takes exactly one value; got {}.",
                        crate::io::csv_import::clip(&field.column_id, 64),
                        op.name(),
                        values.len()
                    ),
                ))
            }
        },
    };
    Ok(RawFilter { field: name, op, value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(json: Value) -> FilterField {
        serde_json::from_value(json).expect("a FilterField")
    }

    #[test]
    fn filter_fields_become_listing_filters() {
        let f = filter(field(
            serde_json::json!({"columnId": "en", "operator": "contains", "values": ["quest"]}),
        ));
        let f = f.expect("converted");
        assert_eq!(
            (f.field.as_str(), f.op, f.value),
            ("en", Op::Contains, serde_json::json!("quest"))
        );
        let f = filter(field(
            serde_json::json!({"columnId": "de", "operator": "in", "values": ["a", "b"], "subField": "_dependencyStatus"}),
        ));
        let f = f.expect("converted");
        assert_eq!(f.field, "de._dependencyStatus");
        assert_eq!(f.value, serde_json::json!(["a", "b"]));
        let f = filter(field(serde_json::json!({"columnId": "en", "operator": "isEmpty"})));
        assert_eq!(f.expect("converted").value, Value::Null);
    }

    #[test]
    fn what_has_no_listing_equivalent_is_refused_naming_it() {
        let cases = [
            (
                serde_json::json!({"columnId": "en", "operator": "hasTag", "values": ["x"]}),
                "hasTag",
            ),
            (
                serde_json::json!({"columnId": "en", "operator": "=", "values": ["x"], "subField": "_tm"}),
                "_tm",
            ),
            (
                serde_json::json!({"columnId": "en", "operator": "=", "values": ["x"], "caseSensitive": true}),
                "caseSensitive",
            ),
            (
                serde_json::json!({"columnId": "en", "operator": "=", "values": ["x", "y"]}),
                "exactly one",
            ),
            (serde_json::json!({"columnId": "en", "operator": "=", "values": []}), "exactly one"),
        ];
        for (json, needle) in cases {
            let err = filter(field(json)).expect_err("refused");
            assert!(err.message.contains(needle), "{needle}: {}", err.message);
        }
    }

    #[test]
    fn conflicts_become_cell_choices_and_bad_options_are_refused() {
        let conflicts: Vec<MergeRecordConflict> = serde_json::from_value(serde_json::json!([
            {"recordId": "r1", "cells": [{"columnId": "en", "option": "child"}, {"columnId": "de", "option": "parent"}]},
            {"recordId": "r2", "pathTag": "ui", "cells": [{"columnId": "en", "option": "overrideOutOfDate"}]}
        ]))
        .expect("conflicts");
        let choices = cell_choices(conflicts).expect("choices");
        assert_eq!(choices.len(), 3);
        assert_eq!(choices[1].choice, Choice::Destination);
        assert_eq!(choices[2].path.as_deref(), Some("ui"));
        let bad: Vec<MergeRecordConflict> = serde_json::from_value(serde_json::json!([
            {"recordId": "r1", "cells": [{"columnId": "en", "option": "sideways"}]}
        ]))
        .expect("conflicts");
        assert!(cell_choices(bad).expect_err("refused").message.contains("sideways"));
        // The last merge's choices, each replaced by the request's for the same cell.
        let choice = |record: &str, column: &str, choice| CellChoice {
            record_id: record.to_owned(),
            path: None,
            column_id: column.to_owned(),
            choice,
        };
        let last = vec![choice("r1", "en", Choice::Source), choice("r2", "en", Choice::Source)];
        let combined =
            with_last_resolve(last.clone(), vec![choice("r1", "en", Choice::Destination)])
                .expect("combined");
        assert_eq!(
            combined,
            [choice("r2", "en", Choice::Source), choice("r1", "en", Choice::Destination)]
        );
        let many: Vec<CellChoice> =
            (0..MAX_CELL_CHOICES).map(|i| choice(&format!("x{i}"), "en", Choice::Source)).collect();
        assert!(with_last_resolve(last, many).is_err(), "more than MAX_CELL_CHOICES together");
    }
}
