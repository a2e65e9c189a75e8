//! Bound filters and sort keys: raw conditions checked against a view's columns, with operands
//! parsed per column type, and the reference meaning of every predicate (`Pred::matches`), which
//! the engine's fast paths must agree with.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::Bound;

use regex::{Regex, RegexBuilder};
use regex_syntax::hir::{Hir, HirKind, Look};
use serde_json::Value;

use super::arena_regex::ArenaRegex;
use super::parse::{Op, RawFilter, RawSort};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::codec::parse_datetime;
use crate::grid::ops::GridState;
use crate::grid::schema::{ColumnType, ViewDef};
use crate::grid::store::{CellRef, ColumnSlot, ColumnStore, ListRef, RowId};
use crate::grid::value::{CellValue, DependencyStatus, SourceStatus};

/// Longest regular expression accepted, in bytes.
const REGEX_MAX_LEN: usize = 1000;
/// Compiled size limits of a regular expression (program and lazy DFA cache).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// What a filter or sort key reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// A column's cells.
    Cell(ColumnSlot, Kind),
    RecordId,
    Path,
    ModifiedTime,
    ModifiedBy,
    /// A language column's dependency status.
    DependencyStatus(ColumnSlot),
    /// A language column's source status.
    SourceStatus(ColumnSlot),
}

/// The kind of value a target yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Text,
    Number,
    Time,
    Bool,
    List,
    Status,
}

impl Target {
    /// The kind of value read.
    pub fn kind(self) -> Kind {
        match self {
            Target::Cell(_, kind) => kind,
            Target::RecordId | Target::Path | Target::ModifiedBy => Kind::Text,
            Target::ModifiedTime => Kind::Time,
            Target::DependencyStatus(_) | Target::SourceStatus(_) => Kind::Status,
        }
    }

    /// The value of `row`.
    #[inline]
    pub fn value(self, store: &ColumnStore, row: RowId) -> Val<'_> {
        match self {
            Target::Cell(slot, _) => Val::from_cell(store.value_ref(row, slot)),
            Target::RecordId => Val::Text(store.id(row)),
            Target::Path => Val::Text(store.path(row)),
            Target::ModifiedBy => Val::Text(store.modified_by(row)),
            Target::ModifiedTime => Val::Time(store.modified_time(row)),
            Target::DependencyStatus(slot) => Val::Status(store.dependency_status(row, slot) as u8),
            Target::SourceStatus(slot) => Val::Status(store.source_status(row, slot) as u8),
        }
    }
}

/// A value as filters and sorts see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val<'a> {
    Empty,
    Text(&'a str),
    Number(f64),
    Time(i64),
    Bool(bool),
    List(ListRef<'a>),
    Status(u8),
}

impl<'a> Val<'a> {
    /// The value of a stored cell.
    #[inline]
    pub fn from_cell(cell: CellRef<'a>) -> Self {
        match cell {
            CellRef::Empty => Val::Empty,
            CellRef::Text(s) => Val::Text(s),
            // -0 reads as 0 (filters already take them as equal): sorts then tie them too,
            // keeping insertion order, instead of ordering -0 before 0.
            CellRef::Number(n) => Val::Number(if n == 0.0 { 0.0 } else { n }),
            CellRef::Boolean(b) => Val::Bool(b),
            CellRef::Datetime(t) => Val::Time(t),
            CellRef::List(items) => Val::List(items),
        }
    }

    /// A value held apart from the store (a history entry's), a list's items encoded into
    /// `buf`.
    pub fn from_value(value: &'a CellValue, buf: &'a mut String) -> Self {
        match value {
            CellValue::Empty => Val::Empty,
            CellValue::Text(s) => Val::Text(s),
            CellValue::Number(n) => Val::Number(if *n == 0.0 { 0.0 } else { *n }),
            CellValue::Boolean(b) => Val::Bool(*b),
            CellValue::Datetime(t) => Val::Time(*t),
            CellValue::List(items) => Val::List(ListRef::encoded(items, buf)),
        }
    }

    /// True for an absent value, an empty string and an empty list.
    #[inline]
    pub fn is_empty(self) -> bool {
        match self {
            Val::Empty => true,
            Val::Text(s) => s.is_empty(),
            Val::List(items) => items.is_empty(),
            Val::Number(_) | Val::Time(_) | Val::Bool(_) | Val::Status(_) => false,
        }
    }
}

/// Orders two non-empty values of one kind (numbers by `total_cmp`, text by code point, lists
/// item by item, false before true).
pub fn cmp_vals(a: Val<'_>, b: Val<'_>) -> Ordering {
    match (a, b) {
        (Val::Text(a), Val::Text(b)) => a.cmp(b),
        (Val::Number(a), Val::Number(b)) => a.total_cmp(&b),
        (Val::Time(a), Val::Time(b)) => a.cmp(&b),
        (Val::Bool(a), Val::Bool(b)) => a.cmp(&b),
        (Val::Status(a), Val::Status(b)) => a.cmp(&b),
        (Val::List(a), Val::List(b)) => Iterator::cmp(a, b),
        (a, b) => a.is_empty().cmp(&b.is_empty()),
    }
}

/// Orders two values by one sort key: empty values last in both directions.
#[inline]
pub fn cmp_key(a: Val<'_>, b: Val<'_>, descending: bool) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) if descending => cmp_vals(b, a),
        (false, false) => cmp_vals(a, b),
    }
}

/// A filter operand, parsed for its target's kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Text(String),
    Number(f64),
    Time(i64),
    Bool(bool),
    /// A whole list (`=` with an array on a list column).
    Items(Vec<String>),
    Status(u8),
}

/// The positive form of a condition.
#[derive(Debug, Clone)]
pub enum Pred {
    /// The value is empty.
    Empty,
    /// Equal (for lists: has the item, or is exactly the items).
    Eq(Operand),
    /// Equal to one of them.
    In(Vec<Operand>),
    /// Within bounds (numbers and times).
    Range(Bound<Operand>, Bound<Operand>),
    /// Lowercased needle: the lowercased text contains it.
    Contains(String),
    StartsWith(String),
    EndsWith(String),
    Regex(Box<Pattern>),
}

/// A compiled `regexp` operand.
#[derive(Debug, Clone)]
pub struct Pattern {
    /// The pattern as written, matched against one value.
    pub regex: Regex,
    /// For one search over many values each followed by `\n` (a store arena): the pattern in
    /// multi-line mode, or for a pattern with `\A` or `\z` (which only hold at the ends of
    /// the whole text) the pattern without its assertions (removing one only widens what
    /// matches). Either matches inside every value that has a match (plus in some that have
    /// not, which `regex` rejects). `None` when it cannot be built.
    pub search: Option<ArenaRegex>,
}

impl Pred {
    /// Whether a value satisfies the predicate: the reference meaning of every operator.
    pub fn matches(&self, value: Val<'_>) -> bool {
        match self {
            Pred::Empty => value.is_empty(),
            Pred::Eq(operand) => equals(value, operand),
            Pred::In(operands) => operands.iter().any(|o| equals(value, o)),
            Pred::Range(lo, hi) => in_range(value, lo, hi),
            Pred::Contains(needle) => any_text(value, |s| fold_case(s).contains(needle.as_str())),
            Pred::StartsWith(needle) => {
                any_text(value, |s| fold_case(s).starts_with(needle.as_str()))
            }
            Pred::EndsWith(needle) => any_text(value, |s| fold_case(s).ends_with(needle.as_str())),
            Pred::Regex(pattern) => any_text(value, |s| pattern.regex.is_match(s)),
        }
    }
}

/// `s` with case folded for case-insensitive matching: lowercased char by char, with the
/// word-final sigma `ς` read as `σ` (so "ΟΣ" is found in "ΟΣΑ" and in "ΟΔΟΣ"). Borrows ASCII text
/// without capitals.
pub fn fold_case(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            return Cow::Owned(s.to_ascii_lowercase());
        }
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    push_folded(&mut out, s);
    Cow::Owned(out)
}

/// Appends `s` case-folded as `fold_case` does.
pub fn push_folded(out: &mut String, s: &str) {
    if s.is_ascii() {
        out.extend(s.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        return;
    }
    out.extend(s.chars().flat_map(char::to_lowercase).map(super::fold::final_sigma));
}

/// Applies a text test to a text value (an empty value is `""`) or to each item of a list.
fn any_text(value: Val<'_>, mut test: impl FnMut(&str) -> bool) -> bool {
    match value {
        Val::Text(s) => test(s),
        Val::Empty => test(""),
        Val::List(mut items) => items.any(test),
        _ => false,
    }
}

fn equals(value: Val<'_>, operand: &Operand) -> bool {
    match (value, operand) {
        (Val::Text(s), Operand::Text(o)) => s == o,
        (Val::Empty, Operand::Text(o)) => o.is_empty(),
        (Val::List(mut items), Operand::Text(o)) => items.any(|item| item == o),
        (Val::List(items), Operand::Items(o)) => items.eq(o.iter().map(String::as_str)),
        (Val::Empty, Operand::Items(o)) => o.is_empty(),
        (Val::Number(n), Operand::Number(o)) => n == *o,
        (Val::Time(t), Operand::Time(o)) => t == *o,
        (Val::Bool(b), Operand::Bool(o)) => b == *o,
        (Val::Status(s), Operand::Status(o)) => s == *o,
        _ => false,
    }
}

fn in_range(value: Val<'_>, lo: &Bound<Operand>, hi: &Bound<Operand>) -> bool {
    let ord = |operand: &Operand| match (value, operand) {
        (Val::Number(n), Operand::Number(o)) => n.partial_cmp(o),
        (Val::Time(t), Operand::Time(o)) => Some(t.cmp(o)),
        _ => None,
    };
    let orderable = matches!(value, Val::Number(n) if !n.is_nan()) || matches!(value, Val::Time(_));
    let low_ok = match lo {
        Bound::Unbounded => orderable,
        Bound::Included(o) => matches!(ord(o), Some(Ordering::Greater | Ordering::Equal)),
        Bound::Excluded(o) => ord(o) == Some(Ordering::Greater),
    };
    let high_ok = match hi {
        Bound::Unbounded => orderable,
        Bound::Included(o) => matches!(ord(o), Some(Ordering::Less | Ordering::Equal)),
        Bound::Excluded(o) => ord(o) == Some(Ordering::Less),
    };
    low_ok && high_ok
}

/// A bound condition: the positive predicate, whether it is negated, on what.
#[derive(Debug, Clone)]
pub struct Filter {
    pub target: Target,
    pub pred: Pred,
    pub negate: bool,
}

impl Filter {
    /// Whether `row` passes the filter.
    #[inline]
    pub fn test(&self, store: &ColumnStore, row: RowId) -> bool {
        self.pred.matches(self.target.value(store, row)) != self.negate
    }

    /// Whether a value read elsewhere than the store (`target`'s value) passes the filter.
    pub fn test_value(&self, value: Val<'_>) -> bool {
        self.pred.matches(value) != self.negate
    }

    /// A rough cost rank: cheaper filters run first.
    pub fn cost(&self) -> u8 {
        match (&self.pred, self.target.kind()) {
            (_, Kind::Status) | (Pred::Empty, _) => 0,
            (Pred::Eq(_) | Pred::In(_), Kind::Text) => 1,
            (Pred::Eq(_) | Pred::In(_) | Pred::Range(..), _) => 2,
            (Pred::Contains(_) | Pred::StartsWith(_) | Pred::EndsWith(_), _) => 3,
            (Pred::Regex(_), _) => 4,
        }
    }
}

/// A bound sort key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SortKey {
    pub target: Target,
    pub descending: bool,
}

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
    Unknown(ErrorCode, String),
}

fn kind_for(column_type: ColumnType) -> Kind {
    match column_type {
        ColumnType::Number => Kind::Number,
        ColumnType::Datetime => Kind::Time,
        ColumnType::Boolean => Kind::Bool,
        ColumnType::MultipleSelections | ColumnType::Files | ColumnType::Reference => Kind::List,
        _ => Kind::Text,
    }
}

/// Resolves a field against a view: a shown column, a predefined column, or a status sub-field.
fn resolve(state: &GridState, view: &ViewDef, field: &str, not_found: ErrorCode) -> Resolved {
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
                Some(_) => Resolved::Unknown(
                    ErrorCode::InvalidFilterField,
                    format!("\"{field}\": only language columns have statuses."),
                ),
                None => Resolved::Unknown(not_found, column_missing(id, view)),
            };
        }
    }
    if field.starts_with('_') {
        return Resolved::Unknown(
            ErrorCode::InvalidFilterField,
            format!(
                "\"{field}\" is not a column of view \"{}\" nor a predefined column (_recordId, \
                 _path, _lastModifiedTime, _lastModifiedBy).",
                view.id
            ),
        );
    }
    Resolved::Unknown(not_found, column_missing(field, view))
}

fn column_missing(id: &str, view: &ViewDef) -> String {
    format!("Column \"{id}\" could not be found in view \"{}\".", view.id)
}

/// Binds raw conditions to a view's columns, checking operators and parsing operands.
pub fn bind_filters(
    state: &GridState,
    view: &ViewDef,
    raws: &[RawFilter],
) -> ApiResult<Vec<Filter>> {
    raws.iter().map(|raw| bind_filter(state, view, raw)).collect()
}

fn bind_filter(state: &GridState, view: &ViewDef, raw: &RawFilter) -> ApiResult<Filter> {
    let (target, column_type, label) =
        match resolve(state, view, &raw.field, ErrorCode::FilterColumnNotFound) {
            Resolved::Found(target, column_type, label) => (target, column_type, label),
            Resolved::Unknown(code, message) => return Err(ApiError::new(code, message)),
        };
    let op = raw.op;
    if !supports(class_of(target, column_type), op) {
        return Err(ApiError::new(
            ErrorCode::InvalidFilterOperator,
            format!("operator \"{}\" is not supported on {label}.", op.name()),
        ));
    }
    let operand = |value: &Value| parse_operand(target, value, op, &label);
    let items = |value: &Value, want: Option<usize>| -> ApiResult<Vec<Operand>> {
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
        Op::Eq | Op::Ne => {
            let value = match (&raw.value, target.kind()) {
                (Value::Array(items), Kind::List) => Operand::Items(
                    items
                        .iter()
                        .map(|item| match item {
                            Value::String(s) => Ok(s.clone()),
                            other => Err(invalid_value(op, &label, other, "an array of strings")),
                        })
                        .collect::<ApiResult<_>>()?,
                ),
                (value, _) => operand(value)?,
            };
            let pred = match &value {
                Operand::Text(s) if s.is_empty() => Pred::Empty,
                _ => Pred::Eq(value),
            };
            (pred, op == Op::Ne)
        }
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

fn invalid_value(op: Op, label: &str, value: &Value, want: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidFilterValue,
        format!(
            "value {value} of operator \"{}\" on {label} is invalid: expected {want}.",
            op.name()
        ),
    )
}

/// The case-folded needle of a case-insensitive operator (numbers are taken as their text).
fn needle(op: Op, label: &str, value: &Value) -> ApiResult<String> {
    match value {
        Value::String(s) => Ok(fold_case(s).into_owned()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(invalid_value(op, label, other, "a string")),
    }
}

/// Compiles a pattern with size limits; a pattern too long or too large is refused.
fn compile_regex(pattern: &str, label: &str) -> ApiResult<Pattern> {
    let refuse = |why: String| {
        ApiError::new(
            ErrorCode::InvalidFilterValue,
            format!("regular expression on {label} is invalid: {why}"),
        )
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
fn parse_operand(target: Target, value: &Value, op: Op, label: &str) -> ApiResult<Operand> {
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
pub fn bind_sort(state: &GridState, view: &ViewDef, raws: &[RawSort]) -> ApiResult<Vec<SortKey>> {
    let mut keys: Vec<SortKey> = Vec::with_capacity(raws.len());
    for raw in raws {
        let target = match resolve(state, view, &raw.field, ErrorCode::SortColumnNotFound) {
            Resolved::Found(target, ..) => target,
            Resolved::Unknown(code, message) => {
                let code = if code == ErrorCode::InvalidFilterField {
                    ErrorCode::InvalidSortField
                } else {
                    code
                };
                return Err(ApiError::new(code, message));
            }
        };
        if target.kind() == Kind::Status {
            return Err(ApiError::new(
                ErrorCode::InvalidSortField,
                format!("\"{}\": statuses can be filtered but not sorted.", raw.field),
            ));
        }
        if !keys.iter().any(|k| k.target == target) {
            keys.push(SortKey { target, descending: raw.descending });
        }
    }
    Ok(keys)
}
