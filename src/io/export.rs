//! Files written for clients, apart from HTTP so that tests can call them: a view's records
//! (`write_view_csv` and `write_view_html` into any sink, `write_view_xlsx` through a temporary
//! file; the gettext files of a view are `po`'s) and a record history export
//! (`write_history_csv`, `write_history_xlsx`, at a path). Values are written by
//! `codec::export_text` (lists as JSON arrays), times as `format_timestamp` gives them.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::error::{FileError, FileResult};
use crate::grid::actor::reads::ExportSource;
use crate::grid::codec::{export_text, format_timestamp};
use crate::grid::history::ExportRow;
use crate::grid::schema::ColumnDef;
use crate::grid::value::CellValue;

/// Rows read from the branch copy at a time.
const ROWS_PER_READ: usize = 1000;

/// The header row of the file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FileHeader {
    ColumnName,
    ColumnId,
    None,
}

impl FileHeader {
    pub fn names(self, columns: &[ColumnDef]) -> Option<Vec<String>> {
        let predefined = match self {
            FileHeader::ColumnName => {
                ["Record ID", "Path", "Last modified by", "Last modified time"]
            }
            FileHeader::ColumnId => ["_recordId", "_path", "_lastModifiedBy", "_lastModifiedTime"],
            FileHeader::None => return None,
        };
        let mut names: Vec<String> = predefined.iter().map(|n| (*n).to_owned()).collect();
        names.extend(columns.iter().map(|c| match self {
            FileHeader::ColumnId => c.id.clone(),
            FileHeader::ColumnName | FileHeader::None => c.name.clone(),
        }));
        Some(names)
    }
}

/// The predefined columns the file starts with: record id, path, last modified by and time.
const PREDEFINED: usize = 4;

/// Calls `emit` with each row's predefined fields (record id, path, last modified by, last
/// modified time) and the values of the export's columns.
fn for_each_row(
    source: &ExportSource,
    mut emit: impl FnMut([&str; PREDEFINED], &mut dyn Iterator<Item = &CellValue>) -> FileResult<()>,
) -> FileResult<()> {
    let columns: Vec<&ColumnDef> = source.columns.iter().collect();
    for rows in source.rows.chunks(ROWS_PER_READ) {
        for record in source.view.state.read_rows(&columns, rows.iter().copied()) {
            let time = format_timestamp(record.time_ms);
            let predefined =
                [record.id.as_str(), record.path.as_str(), record.user.as_str(), &time];
            emit(predefined, &mut record.cells.iter().map(|c| &c.value))?;
        }
    }
    Ok(())
}

/// A view's rows as CSV (RFC 4180, UTF-8; `delimiter` between fields: a comma, or a tab for TSV)
/// into `sink`, the header row as `file_header` says.
pub fn write_view_csv(
    source: &ExportSource,
    file_header: FileHeader,
    delimiter: u8,
    sink: impl Write,
) -> FileResult<()> {
    let mut out = csv::WriterBuilder::new().delimiter(delimiter).from_writer(sink);
    let failed = |e: csv::Error| FileError::Write(format!("CSV: {e}"));
    if let Some(names) = file_header.names(&source.columns) {
        out.write_record(&names).map_err(failed)?;
    }
    for_each_row(source, |predefined, cells| {
        let mut fields: Vec<String> = predefined.iter().map(|f| (*f).to_owned()).collect();
        fields.extend(cells.map(export_text));
        out.write_record(&fields).map_err(failed)
    })?;
    out.flush().map_err(|e| FileError::Write(format!("CSV: {e}")))
}

/// A view's rows as an HTML document holding one `<table>`: the header row as `file_header`
/// says (in `<thead>`, none for `FileHeader::None`), then a row per record with the CSV's
/// fields, every text escaped (`escape_html`), so no value is ever read as markup. `title`
/// names the document (the view's name). Written row by row into `sink` (which buffers).
pub fn write_view_html(
    source: &ExportSource,
    file_header: FileHeader,
    title: &str,
    mut sink: impl Write,
) -> FileResult<()> {
    let failed = |e: std::io::Error| FileError::Write(format!("HTML: {e}"));
    let mut out = String::with_capacity(1024);
    out.push_str("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<title>");
    escape_html(&mut out, title);
    out.push_str("</title>\n</head>\n<body>\n<table>\n");
    if let Some(names) = file_header.names(&source.columns) {
        out.push_str("<thead>\n");
        html_row(&mut out, "th", names.iter().map(String::as_str));
        out.push_str("</thead>\n");
    }
    out.push_str("<tbody>\n");
    sink.write_all(out.as_bytes()).map_err(failed)?;
    for_each_row(source, |predefined, cells| {
        out.clear();
        let values: Vec<String> = cells.map(export_text).collect();
        html_row(&mut out, "td", predefined.into_iter().chain(values.iter().map(String::as_str)));
        sink.write_all(out.as_bytes()).map_err(failed)
    })?;
    sink.write_all(b"</tbody>\n</table>\n</body>\n</html>\n").map_err(failed)?;
    sink.flush().map_err(failed)
}

/// `<tr>` with each text in a `tag` cell, escaped, then a line break.
fn html_row<'a>(out: &mut String, tag: &str, texts: impl Iterator<Item = &'a str>) {
    out.push_str("<tr>");
    for text in texts {
        out.push('<');
        out.push_str(tag);
        out.push('>');
        escape_html(out, text);
        out.push_str("</");
        out.push_str(tag);
        out.push('>');
    }
    out.push_str("</tr>\n");
}

/// `text` with the five characters HTML gives a meaning escaped (in text and in quoted
/// attribute values alike), appended to `out`; share pages escape with it too.
pub fn escape_html(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// A view's rows as an XLSX file, written in rust_xlsxwriter's constant-memory mode to a
/// temporary file in `temp_dir`, then copied into `sink` and removed.
pub fn write_view_xlsx(
    source: &ExportSource,
    file_header: FileHeader,
    temp_dir: &Path,
    gone: &dyn Fn() -> bool,
    sink: &mut dyn Write,
) -> FileResult<()> {
    use rust_xlsxwriter::{Format, Workbook};
    std::fs::create_dir_all(temp_dir)
        .map_err(|e| FileError::Write(format!("{}: {e}", temp_dir.display())))?;
    let path = TempFile(temp_dir.join(format!("view-export-{}.xlsx", crate::ids::generate())));
    let failed = |e: rust_xlsxwriter::XlsxError| FileError::Write(format!("XLSX: {e}"));
    let mut workbook = Workbook::new();
    workbook.set_tempdir(temp_dir).map_err(failed)?;
    let sheet = workbook.add_worksheet_with_constant_memory();
    let bold = Format::new().set_bold();
    let mut line = 0u32;
    if let Some(names) = file_header.names(&source.columns) {
        for (col, name) in names.iter().enumerate() {
            sheet.write_string_with_format(0, col as u16, name, &bold).map_err(failed)?;
            sheet
                .set_column_width(col as u16, if col < PREDEFINED { 24.0 } else { 32.0 })
                .map_err(failed)?;
        }
        sheet.set_freeze_panes(1, 0).map_err(failed)?;
        line = 1;
    }
    for_each_row(source, |predefined, cells| {
        // The workbook is whole before its first byte is sent: a client that left stops it.
        if line.is_multiple_of(XLSX_ROWS_BETWEEN_LOOKS) && gone() {
            return Err(FileError::Write("the client went away".into()));
        }
        for (col, field) in predefined.iter().enumerate() {
            sheet.write_string(line, col as u16, xlsx_text(field)?).map_err(failed)?;
        }
        for (at, value) in cells.enumerate() {
            let col = (at + PREDEFINED) as u16;
            match value {
                CellValue::Empty => {}
                CellValue::Number(n) if n.is_finite() => {
                    sheet.write_number(line, col, *n).map_err(failed)?;
                }
                CellValue::Boolean(b) => {
                    sheet.write_boolean(line, col, *b).map_err(failed)?;
                }
                other => {
                    let text = export_text(other);
                    sheet.write_string(line, col, xlsx_text(&text)?).map_err(failed)?;
                }
            }
        }
        line = line
            .checked_add(1)
            .ok_or(FileError::Write("too many rows for a spreadsheet".into()))?;
        Ok(())
    })?;
    workbook.save(&path.0).map_err(failed)?;
    let mut file = std::fs::File::open(&path.0)
        .map_err(|e| FileError::Write(format!("{}: {e}", path.0.display())))?;
    std::io::copy(&mut file, sink)
        .map_err(|e| FileError::Write(format!("{}: {e}", path.0.display())))?;
    sink.flush().map_err(|e| FileError::Write(format!("XLSX: {e}")))
}

/// Rows an XLSX export writes between two looks at whether its client is still there.
const XLSX_ROWS_BETWEEN_LOOKS: u32 = 1024;

/// The most characters an XLSX cell holds (Excel's limit, which rust_xlsxwriter enforces).
const XLSX_MAX_CELL_CHARS: usize = 32_767;

/// The most rows an XLSX sheet holds, its header's included (Excel's limit, which
/// rust_xlsxwriter enforces).
const XLSX_MAX_ROWS: usize = 1_048_576;

/// Refuses (400) an XLSX file of `rows` rows under `header_rows` rows of header that one sheet
/// cannot hold: known before a workbook is built, where the writer would fail at the row past
/// the limit (a 1M-record grid was a 500 after building its whole sheet).
pub fn xlsx_rows_fit(rows: usize, header_rows: usize) -> FileResult<()> {
    let held = XLSX_MAX_ROWS - header_rows;
    if rows > held {
        return Err(FileError::Request(format!(
            "{rows} rows do not fit in an XLSX sheet, which holds {held} under its header; \
             export as csv, tsv or json, or filter the export"
        )));
    }
    Ok(())
}

/// `text` if an XLSX cell holds it; a refusal (400) naming the limit otherwise.
fn xlsx_text(text: &str) -> FileResult<&str> {
    // Counting only texts that could be too long: a char is at most 4 bytes.
    if text.len() > XLSX_MAX_CELL_CHARS && text.chars().count() > XLSX_MAX_CELL_CHARS {
        return Err(FileError::Request(format!(
            "a cell holds {} characters, more than an XLSX cell takes ({XLSX_MAX_CELL_CHARS}); \
             export as csv, tsv or json",
            text.chars().count()
        )));
    }
    Ok(text)
}

/// A file removed when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The header of a history export's rows.
fn header(enhanced: bool) -> Vec<&'static str> {
    let mut names = vec![
        "Record ID",
        "Path",
        "Column",
        "Value",
        "Dependency status",
        "Source status",
        "Last modified by",
        "Last modified time",
    ];
    if enhanced {
        names.push("Previous value");
    }
    names
}

/// The text fields of a row, in header order (the time last but one, before the previous value).
fn row_texts(row: &ExportRow, enhanced: bool) -> Vec<String> {
    let (dependency, source) = match row.statuses {
        Some((d, s)) => (d.as_str().to_owned(), s.as_str().to_owned()),
        None => (String::new(), String::new()),
    };
    let mut fields = vec![
        row.record_id.clone(),
        row.path.clone(),
        row.column_id.clone(),
        export_text(&row.value),
        dependency,
        source,
        row.user.clone(),
        format_timestamp(row.time_ms),
    ];
    if enhanced {
        fields.push(row.previous.as_ref().map(export_text).unwrap_or_default());
    }
    fields
}

/// A history export as CSV at `path`: one row per cell an entry wrote, with the previous value
/// when `enhanced`.
pub fn write_history_csv(path: &Path, enhanced: bool, rows: &[ExportRow]) -> FileResult<()> {
    let file = std::fs::File::create(path)
        .map_err(|e| FileError::Write(format!("{}: {e}", path.display())))?;
    let mut out = csv::Writer::from_writer(std::io::BufWriter::new(file));
    let failed = |e: csv::Error| FileError::Write(format!("writing {}: {e}", path.display()));
    out.write_record(header(enhanced)).map_err(failed)?;
    for row in rows {
        out.write_record(row_texts(row, enhanced)).map_err(failed)?;
    }
    let mut inner = out
        .into_inner()
        .map_err(|e| FileError::Write(format!("writing {}: {e}", path.display())))?;
    inner.flush().map_err(|e| FileError::Write(format!("writing {}: {e}", path.display())))
}

/// A spreadsheet with a bold, frozen header row, set column widths, and the modification time
/// as a date cell.
pub fn write_history_xlsx(path: &Path, enhanced: bool, rows: &[ExportRow]) -> FileResult<()> {
    use rust_xlsxwriter::{Format, Workbook};
    let failed = |e: rust_xlsxwriter::XlsxError| {
        FileError::Write(format!("writing {}: {e}", path.display()))
    };
    xlsx_rows_fit(rows.len(), 1)?;
    let mut workbook = Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.set_name("Record histories").map_err(failed)?;
    let bold = Format::new().set_bold();
    let date = Format::new().set_num_format("yyyy-mm-dd hh:mm:ss.000");
    const TIME_COLUMN: u16 = 7;
    for (col, name) in header(enhanced).iter().enumerate() {
        let col = col as u16;
        sheet.write_string_with_format(0, col, *name, &bold).map_err(failed)?;
        let width = match col {
            3 | 8 => 48.0,
            TIME_COLUMN => 24.0,
            _ => 18.0,
        };
        sheet.set_column_width(col, width).map_err(failed)?;
    }
    sheet.set_freeze_panes(1, 0).map_err(failed)?;
    for (at, row) in rows.iter().enumerate() {
        let line = u32::try_from(at + 1)
            .map_err(|_| FileError::Write("too many rows for a spreadsheet".into()))?;
        for (col, text) in row_texts(row, enhanced).into_iter().enumerate() {
            let col = col as u16;
            if col == TIME_COLUMN {
                // Excel's serial date: days since 1899-12-30, with the time as a fraction.
                let serial = row.time_ms as f64 / 86_400_000.0 + 25_569.0;
                sheet.write_number_with_format(line, col, serial, &date).map_err(failed)?;
            } else {
                sheet.write_string(line, col, xlsx_text(&text)?).map_err(failed)?;
            }
        }
    }
    workbook.save(path).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::columns::{build_column, ColumnRequest};
    use crate::grid::schema::Schema;
    use crate::grid::value::{DependencyStatus, SourceStatus};

    fn row(value: CellValue, previous: Option<CellValue>) -> ExportRow {
        ExportRow {
            record_id: "r1".into(),
            path: "menu".into(),
            column_id: "fr".into(),
            value,
            statuses: Some((DependencyStatus::OutOfDate, SourceStatus::Unset)),
            user: "alice".into(),
            time_ms: 0,
            previous,
        }
    }

    #[test]
    fn a_history_csv_has_its_header_and_a_row_per_cell_with_the_previous_value() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("h.csv");
        let rows = [row(CellValue::Text("Quitter, \"vite\"".into()), Some(CellValue::Empty))];
        write_history_csv(&path, true, &rows).expect("written");
        let text = std::fs::read_to_string(&path).expect("read");
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some(
                "Record ID,Path,Column,Value,Dependency status,Source status,Last modified by,\
                 Last modified time,Previous value"
            )
        );
        let line = lines.next().expect("a row");
        assert!(line.starts_with("r1,menu,fr,\"Quitter, \"\"vite\"\"\",outOfDate,"), "{line}");
        assert!(line.contains(",alice,1970-01-01T00:00:00.000+00:00,"), "{line}");
        assert_eq!(lines.next(), None);
        write_history_xlsx(&dir.path().join("h.xlsx"), false, &rows).expect("xlsx written");
    }

    #[test]
    fn an_xlsx_file_a_sheet_cannot_hold_is_refused_as_a_request_before_it_is_built() {
        assert!(xlsx_rows_fit(1_048_575, 1).is_ok());
        assert!(xlsx_rows_fit(1_048_576, 0).is_ok());
        let refused = xlsx_rows_fit(1_048_576, 1).expect_err("one row too many");
        assert!(matches!(&refused, FileError::Request(m) if m.contains("1048575")), "{refused}");
        assert!(matches!(xlsx_rows_fit(usize::MAX, 1), Err(FileError::Request(_))));
        // A history value over Excel's cell limit is the request's problem too, not a failed
        // write (a 500).
        let dir = tempfile::tempdir().expect("temp dir");
        let long = CellValue::Text("é".repeat(XLSX_MAX_CELL_CHARS + 1));
        let refused = write_history_xlsx(&dir.path().join("h.xlsx"), false, &[row(long, None)]);
        assert!(matches!(refused, Err(FileError::Request(_))), "{refused:?}");
    }

    #[test]
    fn a_view_file_names_its_columns_by_name_or_id_or_not_at_all() {
        let request: ColumnRequest = serde_json::from_value(serde_json::json!(
            {"id": "fr", "name": "French", "type": "singleLine"}
        ))
        .expect("a column request");
        let column = build_column(&Schema::default(), &request).expect("a column");
        let columns = [column];
        let by_name = FileHeader::ColumnName.names(&columns).expect("names");
        assert_eq!(
            by_name,
            ["Record ID", "Path", "Last modified by", "Last modified time", "French"]
        );
        let by_id = FileHeader::ColumnId.names(&columns).expect("ids");
        assert_eq!(by_id[4], "fr");
        assert_eq!(FileHeader::None.names(&columns), None);
    }
}
