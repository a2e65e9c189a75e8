//! The file types an import reads (the `type` query parameter of `POST
//! /v1/views/<viewId>/import`, decisions.md section 7), apart from HTTP: `csv` (the default),
//! `tsv` (tab-separated, quoted as CSV), `xlsx` (the first sheet, `io::xlsx_import`) and
//! `json` (an array of records as the records API takes them, `io::json_import`). The other
//! types the hosted OpenAPI names (`xls`, `po`, `html`) and unknown ones are refused naming
//! them.
//!
//! A file is never read as another type than the one given: `check_content` looks at its
//! first bytes and refuses a zip archive (an xlsx workbook), an xls workbook, JSON or binary
//! data sent as `csv`/`tsv`, and anything but a zip archive sent as `xlsx`, with a message
//! naming what the file looks like and the type to send. The three tables (csv, tsv, xlsx)
//! share the layout, mapping and limits of `io::csv_import`; a json file's records carry
//! their column ids, so the layout fields of the import request are refused for it.

use std::io::{BufReader, Read, Seek, SeekFrom};

use super::csv::Limits;
use super::csv_import::{clip, ImportRequest, Layout};
use super::error::{FileError, FileResult};
use super::{csv_import, json_import, xlsx_import};
use crate::grid::records::RecordInput;

/// How many first bytes `check_content` looks at.
pub const HEAD_BYTES: usize = 8 * 1024;

/// An import's file type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Tsv,
    Xlsx,
    Json,
}

impl Format {
    /// The `type` query parameter: absent or empty is csv; the error is a 400 message.
    pub fn parse(value: Option<&str>) -> FileResult<Format> {
        let value = value.map(str::trim).unwrap_or_default();
        let known = [("csv", Format::Csv), ("tsv", Format::Tsv), ("xlsx", Format::Xlsx)];
        let known = known.into_iter().chain([("json", Format::Json)]);
        if value.is_empty() {
            return Ok(Format::Csv);
        }
        if let Some((_, format)) = known.into_iter().find(|(n, _)| n.eq_ignore_ascii_case(value)) {
            return Ok(format);
        }
        let value = clip(value, 100);
        if ["xls", "po", "html"].iter().any(|n| n.eq_ignore_ascii_case(value)) {
            return Err(FileError::Request(format!(
                "type {value} is not supported by import; use csv, tsv, xlsx or json{}.",
                if value.eq_ignore_ascii_case("xls") {
                    " (save an xls workbook as xlsx)"
                } else {
                    ""
                }
            )));
        }
        Err(FileError::Request(format!("type \"{value}\" is unknown; use csv, tsv, xlsx or json.")))
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Tsv => "tsv",
            Format::Xlsx => "xlsx",
            Format::Json => "json",
        }
    }

    fn delimiter(self) -> u8 {
        if self == Format::Tsv {
            b'\t'
        } else {
            b','
        }
    }
}

/// What a file's first bytes look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Zip,
    Xls,
    Json,
    Binary,
    Text,
}

impl Kind {
    fn of(head: &[u8]) -> Kind {
        let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
        let mut chars = text.iter().copied().filter(|b| !b.is_ascii_whitespace());
        if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
            Kind::Zip
        } else if head.starts_with(b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1") {
            Kind::Xls
        } else if head.contains(&0) {
            Kind::Binary
        } else {
            match (chars.next(), chars.next()) {
                (Some(b'{'), _) | (Some(b'['), Some(b'{' | b']') | None) => Kind::Json,
                _ => Kind::Text,
            }
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Zip => "a zip archive (an xlsx workbook?); send an xlsx workbook with type=xlsx",
            Kind::Xls => "an xls (Excel 97-2003) workbook; save it as xlsx and send type=xlsx",
            Kind::Json => "JSON; send an array of records with type=json",
            Kind::Binary => {
                "binary data, not UTF-8 text (it has NUL bytes; save UTF-16 text as UTF-8)"
            }
            Kind::Text => "text; send CSV with type=csv, TSV with type=tsv, JSON with type=json",
        }
    }
}

/// The refusal of a file whose first bytes `head` do not fit `type_name`.
pub fn mismatch(type_name: &str, head: &[u8]) -> FileError {
    let what = if head.is_empty() { "empty" } else { Kind::of(head).describe() };
    FileError::Content(format!(
        "The file does not match type={type_name}: it is {what}. Nothing was imported."
    ))
}

/// Refuses a file whose first bytes show it is not of `format` (see the module doc).
pub fn check_content(format: Format, head: &[u8]) -> FileResult<()> {
    let fits = match (format, Kind::of(head)) {
        (Format::Csv | Format::Tsv, kind) => kind == Kind::Text || head.is_empty(),
        (Format::Xlsx, kind) => kind == Kind::Zip,
        (Format::Json, kind) => matches!(kind, Kind::Json | Kind::Text),
    };
    if fits {
        Ok(())
    } else {
        Err(mismatch(format.name(), head))
    }
}

/// Refuses the import request's fields that do not apply to `format`.
pub fn check_request(format: Format, request: &ImportRequest) -> FileResult<()> {
    if format != Format::Json {
        return Ok(());
    }
    let field = if request.column_mappings.is_some() {
        "columnMappings"
    } else if request.first_data_row.is_some() {
        "firstDataRow"
    } else if request.with_header == Some(false) {
        "withHeader false"
    } else {
        return Ok(());
    };
    Err(FileError::Request(format!(
        "importRequest.{field} does not apply to type=json: each record names its columns \
         (cells[].columnId)."
    )))
}

/// What is read of a file before the task starts.
#[derive(Debug)]
pub enum Head {
    /// A table's header row (`None` for an empty file), mapped by `plan_layout`.
    Table(Option<Vec<String>>),
    /// A json file's records, read whole.
    Records(Vec<(String, RecordInput)>),
}

/// Reads what an import checks before it starts, from the upload `file` of `size` bytes:
/// refuses a file that is not of `format` or a request that does not apply to it, then reads
/// the header row of a table, or every record of a json file. Blocking. The error is the
/// message of a 400.
pub fn read_head<F: Read + Seek>(
    format: Format,
    file: &mut F,
    size: u64,
    limits: Limits,
    request: &ImportRequest,
) -> FileResult<Head> {
    check_request(format, request)?;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    (&mut *file).take(HEAD_BYTES as u64).read_to_end(&mut head).map_err(|e| unreadable(&e))?;
    check_content(format, &head)?;
    file.seek(SeekFrom::Start(0)).map_err(|e| unreadable(&e))?;
    match format {
        Format::Csv | Format::Tsv => {
            csv_import::read_header(&mut *file, limits, format.delimiter()).map(Head::Table)
        }
        Format::Xlsx => {
            xlsx_import::check_archive(BufReader::new(&mut *file), size)?;
            file.seek(SeekFrom::Start(0)).map_err(|e| unreadable(&e))?;
            let first_data_row = request.first_data_row.unwrap_or(1);
            xlsx_import::read_header(BufReader::new(file), limits, first_data_row).map(Head::Table)
        }
        Format::Json => json_import::read_records(BufReader::new(file), limits).map(Head::Records),
    }
}

fn unreadable(err: &std::io::Error) -> FileError {
    FileError::Content(format!("The file cannot be read: {err}."))
}

/// Every data row of a table file as a record write (every record of a json file), as the
/// import task reads it. Blocking. The error is the task's message.
pub fn read_rows<F: Read + Seek>(
    format: Format,
    file: F,
    layout: &Layout,
) -> FileResult<Vec<(String, RecordInput)>> {
    match format {
        Format::Csv | Format::Tsv => {
            csv_import::read_rows(BufReader::new(file), layout, format.delimiter())
        }
        Format::Xlsx => xlsx_import::read_rows(BufReader::new(file), layout),
        Format::Json => json_import::read_records(BufReader::new(file), layout.limits),
    }
}

/// A hint for a header that maps nothing because it was split with the wrong separator.
pub fn header_hint(format: Format, header: Option<&[String]>) -> &'static str {
    let single = match header {
        Some([only]) => only.as_str(),
        _ => return "",
    };
    match format {
        Format::Csv if single.contains('\t') => {
            " The header row has tabs and no commas: for a tab-separated file send type=tsv."
        }
        Format::Tsv if single.contains(',') => {
            " The header row has commas and no tabs: for a comma-separated file send type=csv."
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_parse_and_unknown_ones_are_named() {
        assert_eq!(Format::parse(None), Ok(Format::Csv));
        assert_eq!(Format::parse(Some("")), Ok(Format::Csv));
        assert_eq!(Format::parse(Some("TSV")), Ok(Format::Tsv));
        assert_eq!(Format::parse(Some("xlsx")), Ok(Format::Xlsx));
        assert_eq!(Format::parse(Some("json")), Ok(Format::Json));
        let xls = Format::parse(Some("xls")).expect_err("xls").to_string();
        assert!(xls.contains("type xls is not supported") && xls.contains("as xlsx"), "{xls}");
        let odd = Format::parse(Some("yaml")).expect_err("unknown").to_string();
        assert!(odd.contains("type \"yaml\" is unknown"), "{odd}");
    }

    #[test]
    fn content_of_another_type_is_refused() {
        let zip = b"PK\x03\x04\x14\0\0\0";
        let xls = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1\0\0";
        for (format, head, part) in [
            (Format::Csv, &zip[..], "zip archive"),
            (Format::Tsv, &xls[..], "xls (Excel 97-2003)"),
            (Format::Csv, b"[{\"id\": \"a\"}]", "JSON"),
            (Format::Csv, b" {\"a\": 1}", "JSON"),
            (Format::Csv, b"a,b\n\0\0", "binary"),
            (Format::Xlsx, b"Record ID,English\n", "text"),
            (Format::Xlsx, &xls[..], "xls"),
            (Format::Xlsx, b"", "empty"),
            (Format::Json, &zip[..], "zip archive"),
        ] {
            let err = check_content(format, head).expect_err(part).to_string();
            assert!(err.contains(part) && err.contains(format.name()), "{err}");
        }
        assert!(check_content(Format::Csv, b"\xEF\xBB\xBFRecord ID,[note]\n").is_ok());
        assert!(check_content(Format::Csv, b"").is_ok());
        assert!(check_content(Format::Json, b"\xEF\xBB\xBF [ ]").is_ok());
        assert!(check_content(Format::Json, b"oops").is_ok(), "the JSON reader says why");
        assert!(check_content(Format::Xlsx, zip).is_ok());
    }

    #[test]
    fn layout_fields_are_refused_for_json() {
        let mapped: ImportRequest =
            serde_json::from_str(r#"{"columnMappings": []}"#).expect("request");
        let err = check_request(Format::Json, &mapped).expect_err("json").to_string();
        assert!(err.contains("importRequest.columnMappings"), "{err}");
        assert!(check_request(Format::Csv, &mapped).is_ok());
        let headed: ImportRequest = serde_json::from_str(r#"{"withHeader": true}"#).expect("ok");
        assert!(check_request(Format::Json, &headed).is_ok());
    }
}
