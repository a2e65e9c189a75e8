//! The query engine: `query` (filters) and `sort` of record listings, run in the grid actor over
//! the columnar store.
//!
//! # Grammar
//!
//! Both parameters are URL-encoded JSON objects (decisions.md section 6); key order matters for
//! `sort` and is preserved (`serde_json` with `preserve_order`).
//!
//! ```text
//! query     = "{" [ condition { "," condition } ] "}"      all conditions are ANDed
//! condition = field ":" "{" operator ":" value "}"         exactly one operator per field
//! sort      = "{" [ key { "," key } ] "}"                  keys apply in object order
//! key       = field ":" ( "asc" | "desc" )                 case-insensitive
//! field     = column id
//!           | "_recordId" | "_path" | "_lastModifiedTime" | "_lastModifiedBy"
//!           | column id "._dependencyStatus" | column id "._sourceStatus"   (query only, language
//!                                                                            columns)
//! operator  = "=" | "!=" | "<" | "<=" | ">" | ">=" | "contains" | "notContains"
//!           | "startsWith" | "notStartsWith" | "endsWith" | "notEndsWith" | "regexp"
//!           | "notRegexp" | "in" | "notIn" | "between" | "notBetween" | "isEmpty"
//!           | "isNotEmpty" | "isNull" | "isNotNull"
//! ```
//!
//! Values: `in`/`notIn` take a non-empty array, `between`/`notBetween` a two-element array
//! `[low, high]` (inclusive); `isEmpty`, `isNotEmpty`, `isNull`, `isNotNull` ignore the value;
//! every other operator takes one scalar. Numbers accept numeric strings, datetimes RFC 3339 or
//! `YYYY-MM-DD` strings or epoch milliseconds, booleans `true`/`false` or their strings, statuses
//! their names (`outOfDate`, `readyForTranslation`, ...).
//!
//! Operators per field type (anything else is `invalidFilterOperator`):
//!
//! | field type | operators |
//! |---|---|
//! | every type | `=` `!=` `in` `notIn` `isEmpty` `isNotEmpty` `isNull` `isNotNull` |
//! | number, datetime, `_lastModifiedTime` | also `<` `<=` `>` `>=` `between` `notBetween` |
//! | language, single line, multiple lines, rich text, markdown, html, json, yaml, formula, files, reference, `_recordId`, `_lastModifiedBy` | also `contains` `startsWith` `endsWith` `regexp` and their negations |
//! | `_path` | also `contains` `startsWith` `endsWith` and their negations |
//! | status sub-fields | `=` `!=` `in` `notIn` |
//!
//! # Semantics
//!
//! - `contains`, `startsWith`, `endsWith` are case-insensitive: both sides are lowercased char
//!   by char (`char::to_lowercase`) with the word-final sigma `ς` read as `σ`. `=`, `in` and `regexp` are exact (`(?i)` makes a pattern
//!   case-insensitive); `regexp` matches anywhere unless anchored. Patterns are compiled with
//!   size limits, so a pathological pattern is refused (`invalidFilterValue`), never run.
//! - An empty cell is `""` to text operators, so `= ""` selects empty cells. `isNull` is
//!   `isEmpty` (the store keeps no separate null).
//! - List cells (multiple selections, files, references) match `=`, `in`, `contains`,
//!   `startsWith`, `endsWith` and `regexp` when any item does; `=` with an array matches a list
//!   with exactly those items in that order.
//! - Every negated operator (`!=`, `notIn`, `notContains`, ..., `notBetween`, `isNotEmpty`)
//!   matches exactly the records its positive form does not, empty cells included.
//! - Sort: numbers numerically, datetimes chronologically, booleans false first, text by code
//!   point, lists item by item; empty cells last in both directions; ties keep insertion order.
//!
//! # Execution (`engine`)
//!
//! Filters become row sets (roaring bitmaps), cheapest first; once few candidates remain the rest
//! are tested row by row. Equality on text columns uses a hash index (value to row set) when the
//! column has few distinct values; case-insensitive `contains` searches the column's text as
//! stored for every spelling of the needle at once (`fold`: SIMD over two bytes, then the rest
//! char by char), with no lowercased copy; sorting walks an ordered index of the first sort key or,
//! when few records match, selects the top rows directly. Indexes are built on first use and
//! then follow the store's change journal (patched per write, rebuilt only after compaction or a
//! very large change). Cursor pages (`cursor`) start at the cursor record's place in the
//! listing's order: a bitmap range on an unsorted listing, the ordered index otherwise.

mod arena_regex;
mod bind;
mod cursor;
mod engine;
mod error;
mod filter;
mod fold;
mod index;
mod page;
mod parse;

#[cfg(test)]
pub(crate) mod fuzz;
#[cfg(test)]
mod tests;

pub use bind::{bind_filters, bind_sort};
pub use cursor::Direction;
pub use engine::QueryEngine;
pub use error::{QueryError, QueryResult};
pub use filter::{Filter, Pred, SortKey, Target, Val};
pub use parse::{parse_query, parse_sort, Op, RawFilter, RawSort};
