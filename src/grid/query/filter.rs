//! Bound filters and sort keys, and the reference meaning of every predicate (`Pred::matches`),
//! which the engine's fast paths must agree with. Binding them from raw conditions is `bind`'s.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::Bound;

use regex::Regex;

use super::arena_regex::ArenaRegex;
use crate::grid::store::{CellRef, ColumnSlot, ColumnStore, ListRef, RowId};
use crate::grid::value::CellValue;

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
