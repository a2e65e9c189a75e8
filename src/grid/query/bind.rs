//! Binding: raw conditions and sort keys checked against a view's columns (400 and 404 codes of
//! the listing), with operands parsed per column type and regular expressions compiled within
//! their limits, into `filter`'s `Filter` and `SortKey`.

use std::ops::Bound;

use regex::RegexBuilder;
use regex_syntax::hir::{Hir, HirKind, Look};
use serde_json::Value;

use super::arena_regex::ArenaRegex;
use super::error::{QueryError, QueryResult};
use super::filter::{fold_case, Filter, Kind, Operand, Pattern, Pred, SortKey, Target};
use super::parse::{Op, RawFilter, RawSort};
use crate::grid::codec::parse_datetime;
use crate::grid::ops::GridState;
use crate::grid::schema::{ColumnType, ViewDef};
use crate::grid::value::{DependencyStatus, SourceStatus, StorageKind};

/// Longest regular expression accepted, in bytes.
const REGEX_MAX_LEN: usize = 1000;
/// Compiled size limits of a regular expression (program and lazy DFA cache).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Which operators a target accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Equality only (selections, booleans, statuses).
    Equality,
    /// Equality, ranges.
    Ordered,
    /// Equality, case-insensitive matching, regular expressions.
    Matchable,
    /// Equality, case-insensitive matching (the path).
    MatchableNoRegex,
}

fn class_of(target: Target, column_type: Option<ColumnType>) -> Class {
    match target {
        Target::RecordId | Target::ModifiedBy => Class::Matchable,
        Target::Path => Class::MatchableNoRegex,
        Target::ModifiedTime => Class::Ordered,
        Target::DependencyStatus(_) | Target::SourceStatus(_) => Class::Equality,
        Target::Cell(..) => match column_type {
            Some(ColumnType::Number | ColumnType::Datetime) => Class::Ordered,
            Some(
                ColumnType::SingleSelection | ColumnType::MultipleSelections | ColumnType::Boolean,
            ) => Class::Equality,
            _ => Class::Matchable,
        },
    }
}

fn supports(class: Class, op: Op) -> bool {
    match op {
        Op::Eq
        | Op::Ne
        | Op::In
        | Op::NotIn
        | Op::IsEmpty
        | Op::IsNotEmpty
        | Op::IsNull
        | Op::IsNotNull => true,
        Op::Lt | Op::Le | Op::Gt | Op::Ge | Op::Between | Op::NotBetween => class == Class::Ordered,
        Op::Contains
        | Op::NotContains
        | Op::StartsWith
        | Op::NotStartsWith
        | Op::EndsWith
        | Op::NotEndsWith => matches!(class, Class::Matchable | Class::MatchableNoRegex),
        Op::Regexp | Op::NotRegexp => class == Class::Matchable,
    }
}

/// How a field resolves, or why it does not.
enum Resolved {
    Found(Target, Option<ColumnType>, String),
    Unknown(QueryError),
}

fn kind_for(column_type: ColumnType) -> Kind {
    match column_type {
        ColumnType::Number => Kind::Number,
        ColumnType::Datetime => Kind::Time,
        ColumnType::Boolean => Kind::Bool,
        _ if column_type.storage() == StorageKind::List => Kind::List,
        _ => Kind::Text,
    }
}

/// Resolves a field against a view: a shown column, a predefined column, or a status sub-field.
fn resolve(
    state: &GridState,
    view: &ViewDef,
    field: &str,
    not_found: fn(String) -> QueryError,
) -> Resolved {
    let column = |id: &str| {
        let (column, _) = state.schema.view_column(view, id)?;
        let slot = *state.slots.get(&column.id)?;
        Some((column, slot))
    };
    if let Some((column, slot)) = column(field) {
        let target = Target::Cell(slot, kind_for(column.column_type));
        let label = format!("{} column \"{field}\"", column.column_type.as_str());
        return Resolved::Found(target, Some(column.column_type), label);
    }
    let predefined = match field {
        "_recordId" => Some(Target::RecordId),
        "_path" => Some(Target::Path),
        "_lastModifiedTime" => Some(Target::ModifiedTime),
        "_lastModifiedBy" => Some(Target::ModifiedBy),
        _ => None,
    };
    if let Some(target) = predefined {
        return Resolved::Found(target, None, format!("\"{field}\""));
    }
    for (suffix, source) in [("._dependencyStatus", false), ("._sourceStatus", true)] {
        if let Some(id) = field.strip_suffix(suffix) {
            return match column(id) {
                Some((c, slot)) if c.is_language() => {
                    let target = if source {
                        Target::SourceStatus(slot)
                    } else {
                        Target::DependencyStatus(slot)
                    };
                    Resolved::Found(target, None, format!("\"{field}\""))
                }
                Some(_) => Resolved::Unknown(QueryError::InvalidField(format!(
                    "\"{field}\": only language columns have statuses."
                ))),
                None => Resolved::Unknown(not_found(column_missing(id, view))),
            };
        }
    }
    if field.starts_with('_') {
        return Resolved::Unknown(QueryError::InvalidField(format!(
            "\"{field}\" is not a column of view \"{}\" nor a predefined column (_recordId, \
             _path, _lastModifiedTime, _lastModifiedBy).",
            view.id
        )));
    }
    Resolved::Unknown(not_found(column_missing(field, view)))
}

fn column_missing(id: &str, view: &ViewDef) -> String {
    format!("Column \"{id}\" could not be found in view \"{}\".", view.id)
}

/// Binds raw conditions to a view's columns, checking operators and parsing operands.
pub fn bind_filters(
    state: &GridState,
    view: &ViewDef,
    raws: &[RawFilter],
) -> QueryResult<Vec<Filter>> {
    raws.iter().map(|raw| bind_filter(state, view, raw)).collect()
}

fn bind_filter(state: &GridState, view: &ViewDef, raw: &RawFilter) -> QueryResult<Filter> {
    let (target, column_type, label) =
        match resolve(state, view, &raw.field, QueryError::ColumnNotFound) {
            Resolved::Found(target, column_type, label) => (target, column_type, label),
            Resolved::Unknown(err) => return Err(err),
        };
    let op = raw.op;
    if !supports(class_of(target, column_type), op) {
        return Err(QueryError::InvalidOperator(format!(
            "operator \"{}\" is not supported on {label}.",
            op.name()
        )));
    }
    let operand = |value: &Value| parse_operand(target, value, op, &label);
    let items = |value: &Value, want: Option<usize>| -> QueryResult<Vec<Operand>> {
        let Value::Array(items) = value else {
            return Err(invalid_value(op, &label, value, "an array"));
        };
        if let Some(n) = want {
            if items.len() != n {
                return Err(invalid_value(op, &label, value, "an array of two values [low, high]"));
            }
        }
        items.iter().map(operand).collect()
    };
    let (pred, negate) = match op {
        Op::IsEmpty | Op::IsNull => (Pred::Empty, false),
        Op::IsNotEmpty | Op::IsNotNull => (Pred::Empty, true),
        Op::Eq | Op::Ne => (eq_pred(target, op, &label, &raw.value)?, op == Op::Ne),
        Op::In | Op::NotIn => (Pred::In(items(&raw.value, None)?), op == Op::NotIn),
        Op::Lt => (Pred::Range(Bound::Unbounded, Bound::Excluded(operand(&raw.value)?)), false),
        Op::Le => (Pred::Range(Bound::Unbounded, Bound::Included(operand(&raw.value)?)), false),
        Op::Gt => (Pred::Range(Bound::Excluded(operand(&raw.value)?), Bound::Unbounded), false),
        Op::Ge => (Pred::Range(Bound::Included(operand(&raw.value)?), Bound::Unbounded), false),
        Op::Between | Op::NotBetween => {
            let mut bounds = items(&raw.value, Some(2))?.into_iter();
            let (Some(low), Some(high)) = (bounds.next(), bounds.next()) else {
                unreachable!("items checked the length")
            };
            (Pred::Range(Bound::Included(low), Bound::Included(high)), op == Op::NotBetween)
        }
        Op::Contains | Op::NotContains => {
            (Pred::Contains(needle(op, &label, &raw.value)?), op == Op::NotContains)
        }
        Op::StartsWith | Op::NotStartsWith => {
            (Pred::StartsWith(needle(op, &label, &raw.value)?), op == Op::NotStartsWith)
        }
        Op::EndsWith | Op::NotEndsWith => {
            (Pred::EndsWith(needle(op, &label, &raw.value)?), op == Op::NotEndsWith)
        }
        Op::Regexp | Op::NotRegexp => {
            let Value::String(pattern) = &raw.value else {
                return Err(invalid_value(op, &label, &raw.value, "a regular expression string"));
            };
            (Pred::Regex(Box::new(compile_regex(pattern, &label)?)), op == Op::NotRegexp)
        }
    };
    Ok(Filter { target, pred, negate })
}

/// The predicate of `eq` / `ne`: a list column compares with an array of strings, and an
/// empty text means an empty cell.
fn eq_pred(target: Target, op: Op, label: &str, value: &Value) -> QueryResult<Pred> {
    let value = match (value, target.kind()) {
        (Value::Array(items), Kind::List) => Operand::Items(
            items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(invalid_value(op, label, other, "an array of strings")),
                })
                .collect::<QueryResult<_>>()?,
        ),
        (value, _) => parse_operand(target, value, op, label)?,
    };
    Ok(match &value {
        Operand::Text(s) if s.is_empty() => Pred::Empty,
        _ => Pred::Eq(value),
    })
}

fn invalid_value(op: Op, label: &str, value: &Value, want: &str) -> QueryError {
    QueryError::InvalidValue(format!(
        "value {value} of operator \"{}\" on {label} is invalid: expected {want}.",
        op.name()
    ))
}

/// The case-folded needle of a case-insensitive operator (numbers are taken as their text).
fn needle(op: Op, label: &str, value: &Value) -> QueryResult<String> {
    match value {
        Value::String(s) => Ok(fold_case(s).into_owned()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(invalid_value(op, label, other, "a string")),
    }
}

/// Compiles a pattern with size limits; a pattern too long or too large is refused.
fn compile_regex(pattern: &str, label: &str) -> QueryResult<Pattern> {
    let refuse = |why: String| {
        QueryError::InvalidValue(format!("regular expression on {label} is invalid: {why}"))
    };
    if pattern.len() > REGEX_MAX_LEN {
        return Err(refuse(format!("it is longer than {REGEX_MAX_LEN} bytes")));
    }
    let build = || {
        RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .nest_limit(64)
            .build()
            .map_err(|e| refuse(e.to_string().lines().last().unwrap_or_default().trim().to_owned()))
    };
    let regex = build()?;
    let hir = regex_syntax::ParserBuilder::new().multi_line(true).build().parse(pattern).ok();
    let search = hir.and_then(|hir| {
        let looks = hir.properties().look_set();
        let hir = if looks.contains(Look::Start) || looks.contains(Look::End) {
            without_assertions(hir)
        } else {
            hir
        };
        ArenaRegex::new(&hir, REGEX_SIZE_LIMIT)
    });
    Ok(Pattern { regex, search })
}

/// `hir` with every assertion replaced by the empty match.
fn without_assertions(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Look(_) | HirKind::Empty => Hir::empty(),
        HirKind::Literal(literal) => Hir::literal(literal.0),
        HirKind::Class(class) => Hir::class(class),
        HirKind::Repetition(mut repetition) => {
            repetition.sub = Box::new(without_assertions(*repetition.sub));
            Hir::repetition(repetition)
        }
        HirKind::Capture(mut capture) => {
            capture.sub = Box::new(without_assertions(*capture.sub));
            Hir::capture(capture)
        }
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(without_assertions).collect()),
        HirKind::Alternation(subs) => {
            Hir::alternation(subs.into_iter().map(without_assertions).collect())
        }
    }
}

/// Parses one scalar operand for the target's kind.
fn parse_operand(target: Target, value: &Value, op: Op, label: &str) -> QueryResult<Operand> {
    let bad = |want: &str| invalid_value(op, label, value, want);
    let operand = match target.kind() {
        Kind::Text | Kind::List => match value {
            Value::String(s) => Operand::Text(s.clone()),
            Value::Number(n) => Operand::Text(n.to_string()),
            Value::Bool(b) => Operand::Text(b.to_string()),
            _ => return Err(bad("a string")),
        },
        Kind::Number => match value {
            Value::Number(n) => Operand::Number(n.as_f64().ok_or_else(|| bad("a number"))?),
            Value::String(s) => Operand::Number(
                s.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|n| n.is_finite())
                    .ok_or_else(|| bad("a number"))?,
            ),
            _ => return Err(bad("a number")),
        },
        Kind::Time => match value {
            Value::String(s) => Operand::Time(
                parse_datetime(s.trim())
                    .ok_or_else(|| bad("an RFC 3339 datetime or YYYY-MM-DD date"))?,
            ),
            Value::Number(n) => Operand::Time(n.as_i64().ok_or_else(|| bad("epoch milliseconds"))?),
            _ => return Err(bad("an RFC 3339 datetime or YYYY-MM-DD date")),
        },
        Kind::Bool => match value {
            Value::Bool(b) => Operand::Bool(*b),
            Value::String(s) if s == "true" || s == "false" => Operand::Bool(s == "true"),
            _ => return Err(bad("true or false")),
        },
        Kind::Status => {
            let name = value.as_str().ok_or_else(|| bad("a status name"))?;
            let status = match target {
                Target::SourceStatus(_) => SourceStatus::parse(name).map(|s| s as u8),
                _ => DependencyStatus::parse(name).map(|s| s as u8),
            };
            Operand::Status(status.ok_or_else(|| bad("a status name"))?)
        }
    };
    Ok(operand)
}

/// Binds raw sort keys to a view's columns.
pub fn bind_sort(state: &GridState, view: &ViewDef, raws: &[RawSort]) -> QueryResult<Vec<SortKey>> {
    let mut keys: Vec<SortKey> = Vec::with_capacity(raws.len());
    for raw in raws {
        let target = match resolve(state, view, &raw.field, QueryError::SortColumnNotFound) {
            Resolved::Found(target, ..) => target,
            // A field that names nothing sortable is the sort's own invalid field.
            Resolved::Unknown(QueryError::InvalidField(message)) => {
                return Err(QueryError::InvalidSortField(message))
            }
            Resolved::Unknown(err) => return Err(err),
        };
        if target.kind() == Kind::Status {
            return Err(QueryError::InvalidSortField(format!(
                "\"{}\": statuses can be filtered but not sorted.",
                raw.field
            )));
        }
        if !keys.iter().any(|k| k.target == target) {
            keys.push(SortKey { target, descending: raw.descending });
        }
    }
    Ok(keys)
}
