//! Glossaries as tables: CSV (UTF-8, a BOM tolerated) and XLSX (the first sheet), read and
//! written.
//!
//! The first row names the columns: a language code (`en`, `ja-JP`) per column of terms (a
//! code repeated is a further column of synonyms), and `definition` (or `description`),
//! `note` and `id` (each at most once, any case). A column without a header is ignored; any
//! other header is refused naming it. Each further row is one entry; a row without any term
//! is skipped. An `id` of gridd's (`12` or `c12`) is kept as the entry's id.
//!
//! Bounded as every upload: CSV through `io::csv::Reader`'s limits, XLSX after
//! `xlsx_import::check_archive` and its dimension check, at most `MAX_FILE_ENTRIES` rows.

use std::io::{Read, Seek};
use std::panic::{catch_unwind, AssertUnwindSafe};

use calamine::{Reader as _, Xlsx};

use super::{at_entry, Concept, Fields, LangCode, MAX_ENTRY_LANGS, MAX_FILE_ENTRIES, MAX_SYNONYMS};
use crate::io::csv::{Limits, Reader, Record};
use crate::io::error::{FileError, FileResult};

/// The most columns a glossary table has.
pub const MAX_COLUMNS: usize = MAX_ENTRY_LANGS * 3 + 3;

const LIMITS: Limits =
    Limits { max_field_bytes: 64 * 1024, max_record_bytes: 1024 * 1024, max_fields: MAX_COLUMNS };

/// What one column of the table holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Column {
    Lang(LangCode),
    Definition,
    Note,
    Id,
    Ignored,
}

/// The columns the header row names.
fn plan_columns(header: &[String]) -> FileResult<Vec<Column>> {
    let mut columns = Vec::with_capacity(header.len());
    for (i, name) in header.iter().enumerate() {
        let name = name.trim().trim_start_matches('\u{feff}');
        let column = match name.to_ascii_lowercase().as_str() {
            "" => Column::Ignored,
            "definition" | "description" => Column::Definition,
            "note" | "notes" => Column::Note,
            "id" => Column::Id,
            _ => Column::Lang(LangCode::parse(name).map_err(|e| {
                FileError::Content(format!(
                    "The header of column {}: {e} A column is a language code, definition, note \
                     or id.",
                    i + 1
                ))
            })?),
        };
        if column != Column::Ignored
            && !matches!(column, Column::Lang(_))
            && columns.contains(&column)
        {
            return Err(FileError::Content(format!("The header names \"{name}\" twice.")));
        }
        columns.push(column);
    }
    if !columns.iter().any(|c| matches!(c, Column::Lang(_))) {
        return Err(FileError::Content(
            "The header row names no language column (as en, fr-FR).".into(),
        ));
    }
    Ok(columns)
}

/// One row as an entry (`None` for a row without any term).
fn row_entry(columns: &[Column], row: &[String], number: usize) -> FileResult<Option<Concept>> {
    if row.len() > columns.len() && row[columns.len()..].iter().any(|v| !v.trim().is_empty()) {
        return Err(at_entry("row", number, "it has a value in a column without a header."));
    }
    let mut entry = Concept::default();
    for (column, value) in columns.iter().zip(row) {
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        match column {
            Column::Lang(lang) => entry.add_term(lang.clone(), value),
            Column::Definition => entry.definition = Some(value.to_owned()),
            Column::Note => entry.note = Some(value.to_owned()),
            Column::Id => {
                entry.id = value.strip_prefix('c').unwrap_or(value).parse().ok();
            }
            Column::Ignored => {}
        }
    }
    if !entry.has_terms() {
        return Ok(None);
    }
    entry.check().map_err(|e| at_entry("row", number, e))?;
    Ok(Some(entry))
}

/// Collects rows (the first is the header) into entries.
#[derive(Debug, Default)]
struct Rows {
    columns: Option<Vec<Column>>,
    entries: Vec<Concept>,
}

impl Rows {
    fn push(&mut self, row: &[String], number: usize) -> FileResult<()> {
        let Some(columns) = &self.columns else {
            self.columns = Some(plan_columns(row)?);
            return Ok(());
        };
        if let Some(entry) = row_entry(columns, row, number)? {
            if self.entries.len() >= MAX_FILE_ENTRIES {
                return Err(FileError::TooLarge(format!(
                    "The file has more than {MAX_FILE_ENTRIES} entries."
                )));
            }
            self.entries.push(entry);
        }
        Ok(())
    }

    fn finish(self) -> FileResult<Vec<Concept>> {
        if self.columns.is_none() {
            return Err(FileError::Content("The file is empty: it has no header row.".into()));
        }
        Ok(self.entries)
    }
}

/// Reads a CSV glossary.
pub fn read_csv(input: impl Read) -> FileResult<Vec<Concept>> {
    let mut reader = Reader::new(input, LIMITS);
    let mut record = Record::default();
    let mut rows = Rows::default();
    while reader.read(&mut record).map_err(|e| FileError::Content(format!("The CSV file: {e}")))? {
        let row = record
            .iter()
            .map(|f| String::from_utf8(f.to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| at_entry("row", reader.rows(), "it is not UTF-8."))?;
        rows.push(&row, reader.rows())?;
    }
    rows.finish()
}

/// Reads the first sheet of an XLSX glossary (`size`: the file's length).
pub fn read_xlsx<R: Read + Seek>(mut input: R, size: u64) -> FileResult<Vec<Concept>> {
    crate::io::xlsx_import::check_archive(&mut input, size)?;
    input
        .seek(std::io::SeekFrom::Start(0))
        .map_err(|e| FileError::Content(format!("The xlsx workbook: {e}")))?;
    let read = catch_unwind(AssertUnwindSafe(|| read_sheet(input)));
    read.unwrap_or_else(|_| Err(FileError::Content("The xlsx workbook is damaged.".into())))
}

fn not_xlsx(err: impl std::fmt::Display) -> FileError {
    FileError::Content(format!("The file is not a readable xlsx workbook: {err}."))
}

fn read_sheet<R: Read + Seek>(input: R) -> FileResult<Vec<Concept>> {
    let mut workbook: Xlsx<R> = Xlsx::new(input).map_err(not_xlsx)?;
    let first = workbook.sheet_names().into_iter().next().ok_or_else(|| not_xlsx("no sheet"))?;
    let mut cells = workbook.worksheet_cells_reader(&first).map_err(not_xlsx)?;
    let end = cells.dimensions().end;
    crate::io::xlsx_import::check_dimensions((0, 0), end, LIMITS, 1)?;
    let (mut rows, mut row, mut at) = (Rows::default(), Vec::<String>::new(), None::<u32>);
    while let Some(cell) = cells.next_cell().map_err(not_xlsx)? {
        let (r, c) = cell.get_position();
        let Some(text) = crate::io::xlsx_import::cell_text(cell.get_value(), r, c)? else {
            continue;
        };
        if at.is_some_and(|a| a != r) {
            rows.push(&std::mem::take(&mut row), at.map_or(0, |a| a as usize + 1))?;
        }
        at = Some(r);
        let c = c as usize;
        if c >= MAX_COLUMNS || text.len() > LIMITS.max_field_bytes {
            return Err(at_entry("row", r as usize + 1, "a cell is out of the table's bounds."));
        }
        if row.len() <= c {
            row.resize(c + 1, String::new());
        }
        row[c] = text;
    }
    if let Some(a) = at {
        rows.push(&row, a as usize + 1)?;
    }
    rows.finish()
}

/// The table's header and rows for an export: the `id` column, then each language as many
/// times as its most synonyms, then `definition` and `note`, as `fields` asks.
fn table(
    entries: &[Concept],
    fields: Fields,
    langs: &[LangCode],
) -> (Vec<String>, Vec<Vec<String>>) {
    let widths: Vec<usize> = langs
        .iter()
        .map(|l| entries.iter().filter_map(|e| e.terms.get(l)).map(Vec::len).max().unwrap_or(0))
        .map(|w| w.clamp(1, MAX_SYNONYMS))
        .collect();
    let mut header = Vec::new();
    if fields.id {
        header.push("id".to_owned());
    }
    for (lang, width) in langs.iter().zip(&widths) {
        header.extend(std::iter::repeat_n(lang.to_string(), *width));
    }
    header.extend(fields.definition.then(|| "definition".to_owned()));
    header.extend(fields.note.then(|| "note".to_owned()));
    let mut rows = Vec::with_capacity(entries.len());
    for entry in entries {
        if !langs.iter().any(|l| entry.terms.get(l).is_some_and(|t| !t.is_empty())) {
            continue;
        }
        let mut row = Vec::with_capacity(header.len());
        if fields.id {
            row.push(entry.id.map(|id| id.to_string()).unwrap_or_default());
        }
        for (lang, width) in langs.iter().zip(&widths) {
            let terms = entry.terms.get(lang).map(Vec::as_slice).unwrap_or_default();
            row.extend((0..*width).map(|i| terms.get(i).cloned().unwrap_or_default()));
        }
        row.extend(fields.definition.then(|| entry.definition.clone().unwrap_or_default()));
        row.extend(fields.note.then(|| entry.note.clone().unwrap_or_default()));
        rows.push(row);
    }
    (header, rows)
}

/// A glossary as CSV (UTF-8, no BOM).
pub fn write_csv(entries: &[Concept], fields: Fields, langs: &[LangCode]) -> FileResult<Vec<u8>> {
    let (header, rows) = table(entries, fields, langs);
    let failed = |e: csv::Error| FileError::Write(format!("CSV: {e}"));
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(&header).map_err(failed)?;
    for row in rows {
        out.write_record(&row).map_err(failed)?;
    }
    out.into_inner().map_err(|e| FileError::Write(format!("CSV: {e}")))
}

/// A glossary as an XLSX workbook of one sheet.
pub fn write_xlsx(entries: &[Concept], fields: Fields, langs: &[LangCode]) -> FileResult<Vec<u8>> {
    use rust_xlsxwriter::{Format, Workbook};
    let (header, rows) = table(entries, fields, langs);
    let failed = |e: rust_xlsxwriter::XlsxError| FileError::Write(format!("XLSX: {e}"));
    let mut workbook = Workbook::new();
    let sheet = workbook.add_worksheet();
    let bold = Format::new().set_bold();
    for (col, name) in header.iter().enumerate() {
        sheet.write_string_with_format(0, col as u16, name, &bold).map_err(failed)?;
        sheet.set_column_width(col as u16, 28.0).map_err(failed)?;
    }
    for (line, row) in rows.iter().enumerate() {
        for (col, value) in row.iter().enumerate().filter(|(_, v)| !v.is_empty()) {
            sheet.write_string(line as u32 + 1, col as u16, value).map_err(failed)?;
        }
    }
    workbook.save_to_buffer().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "\u{feff}id,en,en,ja,ru,Definition,note\n\
        c4,save game,savegame,セーブデータ,сохранение,\"A saved state, of play.\",\n\
        ,,,,,,\n\
        ,quest,,クエスト,,,side content\n";

    #[test]
    fn csv_columns_are_languages_and_fields() {
        let entries = read_csv(CSV.as_bytes()).expect("read");
        assert_eq!(entries.len(), 2);
        let en = LangCode::parse("en").expect("en");
        assert_eq!(entries[0].id, Some(4));
        assert_eq!(entries[0].terms[&en], vec!["save game".to_owned(), "savegame".to_owned()]);
        assert_eq!(entries[0].definition.as_deref(), Some("A saved state, of play."));
        assert_eq!(entries[1].note.as_deref(), Some("side content"));
    }

    #[test]
    fn bad_tables_are_refused() {
        assert!(read_csv(&b""[..]).is_err());
        assert!(read_csv(&b"definition,note\nx,y\n"[..]).is_err());
        assert!(read_csv(&b"en,colour scheme\nx,y\n"[..]).is_err());
        assert!(read_csv(&b"en,note,note\nx,y,z\n"[..]).is_err());
        assert!(read_csv(&b"en\n\xff\xfe\n"[..]).is_err());
        let long = format!("en\n{}\n", "x".repeat(600));
        assert!(read_csv(long.as_bytes()).is_err());
    }

    #[test]
    fn written_tables_read_back_the_same() {
        let entries = read_csv(CSV.as_bytes()).expect("read");
        let langs: Vec<LangCode> =
            ["en", "ja", "ru"].iter().map(|l| LangCode::parse(l).expect("code")).collect();
        let csv = write_csv(&entries, Fields::default(), &langs).expect("csv");
        assert_eq!(read_csv(&csv[..]).expect("csv back"), entries);
        let xlsx = write_xlsx(&entries, Fields::default(), &langs).expect("xlsx");
        let size = xlsx.len() as u64;
        assert_eq!(read_xlsx(std::io::Cursor::new(xlsx), size).expect("xlsx back"), entries);
    }
}
