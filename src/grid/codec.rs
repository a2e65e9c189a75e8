//! Cell values on the wire: parsing a request's JSON value for a column type into a
//! `CellValue`, and rendering a stored value back to JSON (decisions.md section 4).
//!
//! Pure functions; a refused value is a `CellRejected` whose message names the type, and the
//! caller adds the record and column.

use serde_json::Value;

use super::records::ValueIn;
use super::schema::{ColumnDef, ColumnType, NumberType};
use super::value::{CellValue, StorageKind};

/// Why a written value does not fit its column's type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CellRejected {
    #[error("value must be a string")]
    NotText,
    /// Neither a string nor an array of strings (`what`: "selection options", "file ids" ...).
    #[error("value must be a list of {0} (strings)")]
    NotAList(&'static str),
    #[error("\"{0}\" is not one of the column's selection options")]
    NotAnOption(String),
    #[error("value names {0} records but the reference column takes one (selectionType single)")]
    OneReferenceOnly(usize),
    /// Not a number: the string given, if it was one.
    #[error("value {}must be a number", .0.as_ref().map_or(String::new(), |s| format!("\"{s}\" ")))]
    NotANumber(Option<String>),
    #[error("value must be a finite number")]
    NotFinite,
    #[error("value {0} must be an integer")]
    NotAnInteger(f64),
    #[error("value must be true or false")]
    NotABoolean,
    #[error("value must be an RFC 3339 date-time string")]
    NotADatetimeString,
    #[error(
        "value \"{0}\" is not a date-time (use RFC 3339, e.g. 2026-01-31T10:15:30Z, or 2026-01-31)"
    )]
    NotADatetime(String),
    #[error("value is not valid JSON: {0}")]
    NotJson(String),
    #[error("value must be a string holding YAML")]
    NotAYamlString,
    #[error("value is not valid YAML: {0}")]
    NotYaml(String),
    #[error("formula and lookup values are computed and cannot be written")]
    Computed,
}

/// Parses a written value for `column`. `null` and `""` empty the cell. A value of another
/// shape than the column's type takes is refused (decisions 4): a number or boolean for a text
/// column, a lone string for a selection or file list; only a reference takes a lone id, and
/// number and boolean columns their values written as strings.
pub fn parse_value(column: &ColumnDef, value: &Value) -> Result<CellValue, CellRejected> {
    parse(column, value, Shapes::Exact)
}

/// How strictly a value's JSON shape must match its column's type.
#[derive(Clone, Copy, PartialEq)]
enum Shapes {
    /// A write's: the shape decisions 4 gives each type.
    Exact,
    /// A column's type change (`convert`): a number or boolean becomes text, a lone item a list.
    Converted,
}

fn parse(column: &ColumnDef, value: &Value, shapes: Shapes) -> Result<CellValue, CellRejected> {
    if value.is_null() || value.as_str() == Some("") {
        return Ok(CellValue::Empty);
    }
    match column.column_type {
        ColumnType::SingleLine
        | ColumnType::MultipleLines
        | ColumnType::RichText
        | ColumnType::Markdown
        | ColumnType::Html
        | ColumnType::Language => text(value, shapes).map(CellValue::Text),
        ColumnType::SingleSelection => {
            let chosen = text(value, shapes)?;
            check_option(column, &chosen)?;
            Ok(CellValue::Text(chosen))
        }
        ColumnType::MultipleSelections => {
            list_cell(column, string_list(value, "selection options", shapes)?)
        }
        ColumnType::Files => list_cell(column, string_list(value, "file ids", shapes)?),
        // "record id or array of ids" (decisions 4).
        ColumnType::Reference => {
            list_cell(column, string_list(value, "record ids", Shapes::Converted)?)
        }
        // "a company user name or list of them" (decisions 12): kept and read as a list.
        ColumnType::User => list_cell(column, string_list(value, "user names", Shapes::Converted)?),
        ColumnType::Number => number(column, value).map(CellValue::Number),
        ColumnType::Boolean => boolean(value).map(CellValue::Boolean),
        ColumnType::Datetime => {
            let s = value.as_str().ok_or(CellRejected::NotADatetimeString)?;
            parse_datetime(s)
                .map(CellValue::Datetime)
                .ok_or_else(|| CellRejected::NotADatetime(s.to_owned()))
        }
        ColumnType::Json => json_text(value).map(CellValue::Text),
        ColumnType::Yaml => {
            let s = value.as_str().ok_or(CellRejected::NotAYamlString)?;
            yaml_rust2::YamlLoader::load_from_str(s)
                .map_err(|e| CellRejected::NotYaml(e.to_string()))?;
            Ok(CellValue::Text(s.to_owned()))
        }
        ColumnType::Formula | ColumnType::Lookup => Err(CellRejected::Computed),
    }
}

/// `parse_value` of a value the caller gives up: a text cell's string moves into the cell
/// instead of being copied (a bulk add of 1000 records x 12 columns copies no text).
pub fn parse_value_owned(column: &ColumnDef, value: ValueIn) -> Result<CellValue, CellRejected> {
    match (column.column_type, value) {
        (
            ColumnType::SingleLine
            | ColumnType::MultipleLines
            | ColumnType::RichText
            | ColumnType::Markdown
            | ColumnType::Html
            | ColumnType::Language,
            ValueIn::String(s),
        ) if !s.is_empty() => Ok(CellValue::Text(s)),
        (ColumnType::SingleSelection, ValueIn::String(s)) if !s.is_empty() => {
            check_option(column, &s)?;
            Ok(CellValue::Text(s))
        }
        // A list of strings moves its strings instead of copying them.
        (column_type, ValueIn::Array(items))
            if column.is_writable()
                && column_type.storage() == StorageKind::List
                && items.iter().all(Value::is_string) =>
        {
            let items = items.into_iter().filter_map(|item| match item {
                Value::String(s) => Some(s),
                _ => None,
            });
            list_cell(column, items.collect())
        }
        (_, value) => parse_value(column, &value.into_value()),
    }
}

/// The items of a list column's cell, checked: each a selection's option, at most one id in a
/// single reference.
fn list_cell(column: &ColumnDef, items: Vec<String>) -> Result<CellValue, CellRejected> {
    match column.column_type {
        ColumnType::MultipleSelections => {
            for option in &items {
                check_option(column, option)?;
            }
        }
        ColumnType::Reference => {
            let single = column.reference.as_ref().is_some_and(|r| !r.multiple);
            if single && items.len() > 1 {
                return Err(CellRejected::OneReferenceOnly(items.len()));
            }
        }
        _ => {}
    }
    Ok(list(items))
}

fn list(items: Vec<String>) -> CellValue {
    if items.is_empty() {
        CellValue::Empty
    } else {
        CellValue::List(items)
    }
}

fn text(value: &Value, shapes: Shapes) -> Result<String, CellRejected> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) if shapes == Shapes::Converted => Ok(n.to_string()),
        Value::Bool(b) if shapes == Shapes::Converted => Ok(b.to_string()),
        _ => Err(CellRejected::NotText),
    }
}

fn string_list(
    value: &Value,
    what: &'static str,
    shapes: Shapes,
) -> Result<Vec<String>, CellRejected> {
    match value {
        Value::String(s) if shapes == Shapes::Converted => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or(CellRejected::NotAList(what)))
            .collect(),
        _ => Err(CellRejected::NotAList(what)),
    }
}

fn check_option(column: &ColumnDef, chosen: &str) -> Result<(), CellRejected> {
    let options = column.selection.as_deref().unwrap_or_default();
    if options.iter().any(|o| o.value == chosen) {
        Ok(())
    } else {
        Err(CellRejected::NotAnOption(chosen.to_owned()))
    }
}

fn number(column: &ColumnDef, value: &Value) -> Result<f64, CellRejected> {
    let n = match value {
        Value::Number(n) => n.as_f64().ok_or(CellRejected::NotANumber(None))?,
        Value::String(s) => {
            s.trim().parse::<f64>().map_err(|_| CellRejected::NotANumber(Some(s.clone())))?
        }
        Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) => {
            return Err(CellRejected::NotANumber(None))
        }
    };
    if !n.is_finite() {
        return Err(CellRejected::NotFinite);
    }
    let integer =
        column.number_format.as_ref().is_some_and(|f| f.number_type == NumberType::Integer);
    if integer && n.fract() != 0.0 {
        return Err(CellRejected::NotAnInteger(n));
    }
    Ok(n)
}

fn boolean(value: &Value) -> Result<bool, CellRejected> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        Value::Null | Value::Number(_) | Value::String(_) | Value::Array(_) | Value::Object(_) => {
            Err(CellRejected::NotABoolean)
        }
    }
}

fn json_text(value: &Value) -> Result<String, CellRejected> {
    match value {
        Value::String(s) => {
            serde_json::from_str::<Value>(s).map_err(|e| CellRejected::NotJson(e.to_string()))?;
            Ok(s.clone())
        }
        other => Ok(other.to_string()),
    }
}

/// Milliseconds since the epoch from RFC 3339 or a plain `YYYY-MM-DD` date.
pub fn parse_datetime(s: &str) -> Option<i64> {
    if let Some(ms) = parse_utc_millis(s) {
        return Some(ms);
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp_millis());
    }
    let date = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis())
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, the form datetime cells are answered in (and so written back
/// in), read digit by digit: a bulk add parses one per record, and chrono's RFC 3339 parser
/// took several hundred instructions each. `None` for anything else (other forms, a leap
/// second, an invalid date), which `parse_datetime` leaves to chrono.
fn parse_utc_millis(s: &str) -> Option<i64> {
    let b: &[u8; 24] = s.as_bytes().try_into().ok()?;
    let shape = *b"dddd-dd-ddTdd:dd:dd.dddZ";
    for (&byte, &expected) in b.iter().zip(&shape) {
        let fits = if expected == b'd' { byte.is_ascii_digit() } else { byte == expected };
        if !fits {
            return None;
        }
    }
    let number = |range: std::ops::Range<usize>| {
        b[range].iter().fold(0i64, |n, &digit| n * 10 + i64::from(digit - b'0'))
    };
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    let (hour, minute, second, ms) =
        (number(11..13), number(14..16), number(17..19), number(20..23));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if day == 0 || day > month_days || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    // Days from 1970-01-01 (Howard Hinnant's `days_from_civil`, years counted from March).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    Some(days * 86_400_000 + ((hour * 60 + minute) * 60 + second) * 1000 + ms)
}

/// A datetime cell as written on the wire: UTC with milliseconds and `Z`.
pub fn format_datetime(ms: i64) -> String {
    format_utc(ms, "Z")
}

/// A record timestamp (`lastModifiedTime`): UTC with milliseconds and `+00:00`.
pub fn format_timestamp(ms: i64) -> String {
    format_utc(ms, "+00:00")
}

/// `YYYY-MM-DDTHH:MM:SS.mmm` then `zone` (`write_utc`), through chrono's formatter for years
/// outside 0..=9999.
fn format_utc(ms: i64, zone: &str) -> String {
    let mut out = Vec::with_capacity(23 + zone.len());
    if write_utc(&mut out, ms, zone.as_bytes()) {
        return String::from_utf8(out).unwrap_or_default();
    }
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => format!("{}{zone}", t.format("%Y-%m-%dT%H:%M:%S%.3f")),
        None => String::new(),
    }
}

/// Appends `YYYY-MM-DDTHH:MM:SS.mmm` then `zone` for a time in years 0..=9999, digit by digit
/// (days to a civil date as in Howard Hinnant's `civil_from_days`): pages render one or more
/// per record, and formatting machinery took a tenth of a page's CPU. False, with nothing
/// written, for other years.
pub fn write_utc(out: &mut Vec<u8>, ms: i64, zone: &[u8]) -> bool {
    /// Milliseconds from 0000-01-01T00:00:00Z to the Unix epoch, and past 9999-12-31T23:59:59.999Z.
    const FIRST: i64 = -62_167_219_200_000;
    const END: i64 = 253_402_300_800_000;
    if !(FIRST..END).contains(&ms) {
        return false;
    }
    let (days, in_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Days since 0000-03-01, so that a leap day ends its (March-based) year.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let of_era = z.rem_euclid(146_097);
    let year_of_era = (of_era - of_era / 1460 + of_era / 36_524 - of_era / 146_096) / 365;
    let day_of_year = of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    // Written into a fixed buffer (no capacity check per digit), two digits at a time.
    let mut text = *b"0000-00-00T00:00:00.000";
    let two = |text: &mut [u8; 23], at: usize, value: i64| {
        text[at] = b'0' + (value / 10) as u8;
        text[at + 1] = b'0' + (value % 10) as u8;
    };
    two(&mut text, 0, year / 100);
    two(&mut text, 2, year % 100);
    two(&mut text, 5, month);
    two(&mut text, 8, day);
    two(&mut text, 11, in_day / 3_600_000);
    two(&mut text, 14, in_day / 60_000 % 60);
    two(&mut text, 17, in_day / 1000 % 60);
    two(&mut text, 20, in_day % 1000 / 10);
    text[22] = b'0' + (in_day % 10) as u8;
    out.reserve(text.len() + zone.len());
    out.extend_from_slice(&text);
    out.extend_from_slice(zone);
    true
}

/// A stored value rendered for a column type, serialized straight from the value (the same JSON
/// as `render_value`, without building a `Value` first).
#[derive(Debug, Clone, Copy)]
pub struct Rendered<'a> {
    pub column_type: ColumnType,
    pub value: &'a CellValue,
}

impl serde::Serialize for Rendered<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            CellValue::Empty => match self.column_type.storage() {
                StorageKind::Number | StorageKind::Datetime | StorageKind::Boolean => {
                    serializer.serialize_none()
                }
                StorageKind::List => serializer.collect_seq(std::iter::empty::<&str>()),
                StorageKind::Text => serializer.serialize_str(""),
            },
            CellValue::Text(s) => serializer.serialize_str(s),
            CellValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => {
                serializer.serialize_i64(*n as i64)
            }
            CellValue::Number(n) if n.is_finite() => serializer.serialize_f64(*n),
            CellValue::Number(_) => serializer.serialize_none(),
            CellValue::Boolean(b) => serializer.serialize_bool(*b),
            CellValue::Datetime(ms) => serializer.serialize_str(&format_datetime(*ms)),
            CellValue::List(items) => serializer.collect_seq(items),
        }
    }
}

/// A stored value as a CSV or spreadsheet cell, written so that reading it back gives the same
/// value: text as is, numbers as JSON writes them, booleans `true`/`false`, datetimes in UTC
/// ISO 8601, lists as a JSON array of strings, empty as nothing.
pub fn export_text(value: &CellValue) -> String {
    match value {
        CellValue::Empty => String::new(),
        CellValue::Text(text) => text.clone(),
        CellValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => (*n as i64).to_string(),
        CellValue::Number(n) => serde_json::Value::from(*n).to_string(),
        CellValue::Boolean(b) => b.to_string(),
        CellValue::Datetime(ms) => format_datetime(*ms),
        CellValue::List(items) => serde_json::Value::from(items.clone()).to_string(),
    }
}

/// Renders a stored value for a column of type `column_type`.
pub fn render_value(column_type: ColumnType, value: &CellValue) -> Value {
    match value {
        CellValue::Empty => empty_value(column_type),
        CellValue::Text(s) => Value::String(s.clone()),
        CellValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => Value::from(*n as i64),
        CellValue::Number(n) => serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number),
        CellValue::Boolean(b) => Value::Bool(*b),
        CellValue::Datetime(ms) => Value::String(format_datetime(*ms)),
        CellValue::List(items) => Value::Array(items.iter().cloned().map(Value::String).collect()),
    }
}

/// The value an empty cell reads as (decisions 4), by how the type is stored: `null` for a
/// number, datetime or boolean, `[]` for a list, `""` for text.
pub fn empty_value(column_type: ColumnType) -> Value {
    match column_type.storage() {
        StorageKind::Number | StorageKind::Datetime | StorageKind::Boolean => Value::Null,
        StorageKind::List => Value::Array(Vec::new()),
        StorageKind::Text => Value::String(String::new()),
    }
}

/// Converts a stored value to another column type (when a column's type changes); values that
/// do not convert become empty.
pub fn convert(value: &CellValue, to: &ColumnDef) -> CellValue {
    let as_json = match value {
        CellValue::Empty => return CellValue::Empty,
        CellValue::Text(s) => Value::String(s.clone()),
        CellValue::Number(n) => serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number),
        CellValue::Boolean(b) => Value::Bool(*b),
        CellValue::Datetime(ms) => Value::String(format_datetime(*ms)),
        CellValue::List(items)
            if items.len() == 1 && to.column_type.storage() != StorageKind::List =>
        {
            Value::String(items[0].clone())
        }
        CellValue::List(items) => Value::Array(items.iter().cloned().map(Value::String).collect()),
    };
    parse(to, &as_json, Shapes::Converted).unwrap_or(CellValue::Empty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::schema::{NumberFormat, SelectionOption};
    use serde_json::json;

    fn column(t: ColumnType) -> ColumnDef {
        ColumnDef {
            id: "c".into(),
            name: "c".into(),
            description: None,
            column_type: t,
            language_code: None,
            localization_type: None,
            number_format: None,
            selection: Some(vec![SelectionOption { value: "a".into(), color: None }]),
            reference: None,
            formula: None,
            date_time_format: None,
        }
    }

    /// Each refusal is its case, and reads as the sentence the API answers with.
    #[test]
    fn refusals_are_typed_and_read_as_before() {
        let refused = |t: ColumnType, v: Value| parse_value(&column(t), &v).expect_err("refused");
        let cases = [
            (refused(ColumnType::Number, json!(true)), "value must be a number"),
            (refused(ColumnType::Number, json!("x1")), "value \"x1\" must be a number"),
            (refused(ColumnType::Boolean, json!(2)), "value must be true or false"),
            (refused(ColumnType::SingleLine, json!([1])), "value must be a string"),
            (
                refused(ColumnType::SingleSelection, json!("b")),
                "\"b\" is not one of the column's selection options",
            ),
            (refused(ColumnType::Files, json!(3)), "value must be a list of file ids (strings)"),
            (
                refused(ColumnType::Formula, json!("1")),
                "formula and lookup values are computed and cannot be written",
            ),
        ];
        for (rejected, message) in &cases {
            assert_eq!(rejected.to_string(), *message);
        }
        assert_eq!(cases[1].0, CellRejected::NotANumber(Some("x1".into())));
        assert!(matches!(
            refused(ColumnType::Datetime, json!("soon")),
            CellRejected::NotADatetime(given) if given == "soon"
        ));
    }

    /// Taking the value gives what reading it gives, for every column type and kind of value.
    #[test]
    fn parse_value_owned_agrees_with_parse_value() {
        let values = [
            json!(null),
            json!(""),
            json!("a"),
            json!("b"),
            json!("übersetzt 訳"),
            json!("1.5"),
            json!("true"),
            json!("2026-01-31"),
            json!(["a", "b"]),
            json!([]),
            json!(7),
            json!(false),
            json!({"a": 1}),
        ];
        for &t in ColumnType::ALL {
            let column = column(t);
            for value in &values {
                let owned = parse_value_owned(&column, ValueIn::from(value.clone()));
                assert_eq!(owned, parse_value(&column, value), "{t:?} {value}");
            }
        }
    }

    #[test]
    fn a_single_reference_takes_one_id() {
        let mut single = column(ColumnType::Reference);
        single.reference = Some(crate::grid::schema::ReferenceSetting {
            grid_id: "g".into(),
            branch_id: None,
            column_id: "term".into(),
            reference_type: crate::grid::schema::ReferenceType::Row,
            multiple: false,
        });
        assert_eq!(parse_value(&single, &json!("r1")), Ok(CellValue::List(vec!["r1".into()])));
        assert!(parse_value(&single, &json!(["r1", "r2"])).is_err());
        let multiple = column(ColumnType::Reference);
        assert!(parse_value(&multiple, &json!(["r1", "r2"])).is_ok());
    }

    #[test]
    fn parses_each_type() {
        assert_eq!(
            parse_value(&column(ColumnType::Number), &json!("1.5")),
            Ok(CellValue::Number(1.5))
        );
        assert_eq!(
            parse_value(&column(ColumnType::Boolean), &json!("true")),
            Ok(CellValue::Boolean(true))
        );
        assert_eq!(
            parse_value(&column(ColumnType::Datetime), &json!("2026-01-31")),
            Ok(CellValue::Datetime(1_769_817_600_000))
        );
        assert_eq!(
            parse_value(&column(ColumnType::Json), &json!({"a": 1})),
            Ok(CellValue::Text("{\"a\":1}".into()))
        );
        assert!(parse_value(&column(ColumnType::Json), &json!("{bad")).is_err());
        assert!(parse_value(&column(ColumnType::Yaml), &json!("a: [1, 2")).is_err());
        assert!(parse_value(&column(ColumnType::SingleSelection), &json!("b")).is_err());
        assert!(parse_value(&column(ColumnType::Number), &json!("x")).is_err());
        assert_eq!(
            parse_value(&column(ColumnType::SingleLine), &json!(null)),
            Ok(CellValue::Empty)
        );
    }

    /// A write's value has its type's shape (decisions 4); a type change converts what it can.
    #[test]
    fn a_value_of_another_shape_is_refused_but_converted_on_a_type_change() {
        let write = |t: ColumnType, v: Value| parse_value(&column(t), &v);
        assert_eq!(write(ColumnType::SingleLine, json!(5)), Err(CellRejected::NotText));
        assert_eq!(write(ColumnType::Language, json!(true)), Err(CellRejected::NotText));
        assert_eq!(write(ColumnType::SingleSelection, json!(1)), Err(CellRejected::NotText));
        let lone = |t| write(t, json!("a"));
        assert!(matches!(lone(ColumnType::MultipleSelections), Err(CellRejected::NotAList(_))));
        assert!(matches!(lone(ColumnType::Files), Err(CellRejected::NotAList(_))));
        assert_eq!(lone(ColumnType::Reference), Ok(CellValue::List(vec!["a".into()])));
        assert_eq!(write(ColumnType::Number, json!("2")), Ok(CellValue::Number(2.0)));
        assert_eq!(write(ColumnType::Boolean, json!("false")), Ok(CellValue::Boolean(false)));
        let text = column(ColumnType::SingleLine);
        assert_eq!(convert(&CellValue::Number(5.5), &text), CellValue::Text("5.5".into()));
        assert_eq!(convert(&CellValue::Boolean(true), &text), CellValue::Text("true".into()));
        assert_eq!(
            convert(&CellValue::Text("a".into()), &column(ColumnType::MultipleSelections)),
            CellValue::List(vec!["a".into()])
        );
    }

    #[test]
    fn integer_format_rejects_fractions() {
        let mut c = column(ColumnType::Number);
        c.number_format = Some(NumberFormat {
            number_type: NumberType::Integer,
            decimal_places: None,
            currency_symbol: None,
            use_1000_separator: None,
        });
        assert!(parse_value(&c, &json!(1.5)).is_err());
        assert_eq!(parse_value(&c, &json!(2)), Ok(CellValue::Number(2.0)));
    }

    #[test]
    fn datetimes_round_trip_in_utc_with_millis() {
        let ms = parse_datetime("2026-01-31T11:15:30.123+01:00").expect("valid");
        assert_eq!(format_datetime(ms), "2026-01-31T10:15:30.123Z");
    }

    #[test]
    fn empty_values_by_type() {
        assert_eq!(empty_value(ColumnType::Language), json!(""));
        assert_eq!(empty_value(ColumnType::Files), json!([]));
        assert_eq!(empty_value(ColumnType::Number), json!(null));
    }

    #[test]
    fn timestamps_match_chrono_formatting() {
        let chrono_format = |ms: i64, pattern: &str| {
            chrono::DateTime::from_timestamp_millis(ms)
                .map_or_else(String::new, |t| t.format(pattern).to_string())
        };
        let samples = [
            0,
            1,
            -1,
            999,
            -62_167_219_200_000,
            -62_167_219_200_001,
            951_782_400_000,
            951_868_800_000,
            4_107_542_400_000,
            1_769_854_530_123,
            -62_135_596_800_000,
            -62_135_596_800_001,
            253_402_300_799_999,
            253_402_300_800_000,
            i64::MAX,
            i64::MIN,
        ];
        for ms in
            samples.into_iter().chain((0..2000).map(|i| i * 7_919_993_417 - 5_000_000_000_000))
        {
            assert_eq!(format_datetime(ms), chrono_format(ms, "%Y-%m-%dT%H:%M:%S%.3fZ"), "{ms}");
            assert_eq!(
                format_timestamp(ms),
                chrono_format(ms, "%Y-%m-%dT%H:%M:%S%.3f+00:00"),
                "{ms}"
            );
        }
    }

    proptest::proptest! {
        /// Every time of years 0..=9999 is written as chrono writes it.
        #[test]
        fn written_times_match_chrono(ms in -62_167_219_200_000i64..253_402_300_800_000) {
            let mut out = Vec::new();
            proptest::prop_assert!(write_utc(&mut out, ms, b"Z"));
            let t = chrono::DateTime::from_timestamp_millis(ms).expect("in range");
            let expected = t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
            proptest::prop_assert_eq!(String::from_utf8(out).expect("ASCII"), expected);
        }

        /// The digit-by-digit reading of the answered form reads every time of years
        /// 0..=9999 back as it was written.
        #[test]
        fn answered_times_read_back(ms in -62_167_219_200_000i64..253_402_300_800_000) {
            let written = format_datetime(ms);
            proptest::prop_assert_eq!(parse_utc_millis(&written), Some(ms));
        }

        /// Whatever the digits (invalid months, days, hours, leap seconds), the digit-by-digit
        /// reading agrees with chrono's RFC 3339 parser or leaves the text to it.
        #[test]
        fn answered_form_reads_as_chrono_reads_it(
            digits in proptest::collection::vec(0u8..10, 17),
            near in proptest::sample::select(vec!["1970-01-01", "2024-02-29", "2023-02-29", "0000-12-31", "9999-12-31", "2100-02-29", "2000-02-29"]),
            use_near in proptest::bool::ANY,
        ) {
            let d: Vec<char> = digits.iter().map(|&d| char::from(b'0' + d)).collect();
            let date: String = if use_near {
                near.to_owned()
            } else {
                format!("{}{}{}{}-{}{}-{}{}", d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7])
            };
            let text = format!("{date}T{}{}:{}{}:{}{}.{}{}{}Z", d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15], d[16]);
            let chrono = chrono::DateTime::parse_from_rfc3339(&text).ok().map(|t| t.timestamp_millis());
            match parse_utc_millis(&text) {
                Some(ms) => proptest::prop_assert_eq!(Some(ms), chrono, "{}", text),
                // Left to chrono: only what it refuses, or a leap second.
                None => proptest::prop_assert!(chrono.is_none() || text[17..19] == *"60", "{}", text),
            }
            proptest::prop_assert_eq!(parse_datetime(&text), chrono);
        }
    }

    #[test]
    fn lists_given_as_arrays_are_checked_as_before_when_moved() {
        let mut tags = column(ColumnType::MultipleSelections);
        tags.selection = Some(vec![
            SelectionOption { value: "a".into(), color: None },
            SelectionOption { value: "b".into(), color: None },
        ]);
        let files = column(ColumnType::Files);
        for (column, value) in [
            (&tags, json!(["a", "b"])),
            (&tags, json!(["a", "z"])),
            (&tags, json!([])),
            (&tags, json!(["a", 1])),
            (&files, json!(["f1", "f2"])),
            (&files, json!([])),
            (&files, json!([null])),
        ] {
            let owned =
                parse_value_owned(column, ValueIn::from(value.clone())).map_err(|e| e.to_string());
            let borrowed = parse_value(column, &value).map_err(|e| e.to_string());
            assert_eq!(owned, borrowed, "{value}");
        }
    }

    #[test]
    fn rendered_values_serialize_as_render_value() {
        let values = [
            CellValue::Empty,
            CellValue::Text(String::new()),
            CellValue::Text("Grüße \"quoted\"\n".into()),
            CellValue::Number(3.0),
            CellValue::Number(-0.5),
            CellValue::Number(1e16),
            CellValue::Number(f64::NAN),
            CellValue::Boolean(true),
            CellValue::Datetime(1_769_854_530_123),
            CellValue::List(vec![]),
            CellValue::List(vec!["a".into(), "b\"c".into()]),
        ];
        for column_type in ColumnType::ALL.iter().copied() {
            for value in &values {
                let rendered = serde_json::to_value(Rendered { column_type, value }).expect("ok");
                assert_eq!(rendered, render_value(column_type, value), "{column_type:?} {value:?}");
            }
        }
    }
}
