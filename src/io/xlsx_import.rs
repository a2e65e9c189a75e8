//! An xlsx workbook as an import's rows (`type=xlsx`, decisions.md section 7), apart from HTTP:
//! the first sheet of the workbook, read with `calamine`, row 1 being the header row as in a
//! CSV file, then through the same layout and limits as CSV (`io::csv_import::collect_rows`).
//!
//! An xlsx file is a zip archive, so it is bounded before `calamine` opens it:
//! `check_archive` checks the entry count and names (`io::zip::open_checked`), then unpacks
//! every entry into nothing, counting the bytes as they come (headers may lie), and refuses a
//! workbook that unpacks to more than `MAX_UNPACKED_BYTES`; the declared `<dimension>` of the
//! first sheet is then held to the import's limits (`check_dimensions`). The sheet's cells are
//! streamed (`worksheet_cells_reader`, never a whole `Range`, which a sparse sheet would blow
//! up) and every cell is checked as it comes: its column within the row's field limit, its
//! text within `MAX_FIELD_BYTES`, its row within `MAX_RECORD_BYTES`, rows in order.
//!
//! Cell values become text as a CSV field would hold them: numbers in the shortest form that
//! reads back the same (`3`, `2.5`), booleans `true`/`false`, dates `YYYY-MM-DD` (midnight) or
//! RFC 3339 UTC, durations as their number of days, strings as they are. An error value
//! (`#DIV/0!`) is refused naming its cell. A row without any value is skipped, as a blank CSV
//! line is. Any panic of the reader is caught and refused like a damaged file.

use std::io::{Read, Seek, SeekFrom};
use std::panic::{catch_unwind, AssertUnwindSafe};

use calamine::{DataRef, Reader, Xlsx, XlsxError};

use super::csv::Limits;
use super::csv_import::{collect_rows, Fields, Layout, RowSource, MAX_ROWS};
use super::error::{FileError, FileResult, Place};
use crate::grid::records::RecordInput;

/// The most an xlsx workbook may unpack to, all its entries together.
pub const MAX_UNPACKED_BYTES: u64 = 256 * 1024 * 1024;
/// The date serials read as dates (years about 1627 to 4637); others stay numbers.
const DATE_SERIALS: std::ops::Range<f64> = -100_000.0..1_000_000.0;

/// Refuses what is not a readable xlsx archive within `MAX_UNPACKED_BYTES`; the error is a 400
/// message. Reads the whole archive once, into nothing.
pub fn check_archive<R: Read + Seek>(mut input: R, size: u64) -> FileResult<()> {
    let mut head = [0u8; 4];
    let read = input.read(&mut head).map_err(|e| not_xlsx(&e))?;
    if head[..read] != *b"PK\x03\x04" {
        return Err(super::import_format::mismatch("xlsx", &head[..read]));
    }
    input.seek(SeekFrom::Start(0)).map_err(|e| not_xlsx(&e))?;
    let mut archive = super::zip::open_checked(input, size).map_err(|e| not_xlsx(&e.message))?;
    let mut unpacked = 0u64;
    for index in 0..archive.len() {
        let entry = archive.by_index(index).map_err(|e| not_xlsx(&e))?;
        let name = entry.name().to_owned();
        if entry.encrypted() {
            return Err(not_xlsx(&format!("the entry \"{name}\" is encrypted")));
        }
        let left = MAX_UNPACKED_BYTES - unpacked;
        let mut bounded = entry.take(left + 1);
        let copied = std::io::copy(&mut bounded, &mut std::io::sink())
            .map_err(|e| not_xlsx(&format!("the entry \"{name}\" cannot be unpacked: {e}")))?;
        if copied > left {
            return Err(FileError::TooLarge(format!(
                "The xlsx workbook unpacks to more than the {MAX_UNPACKED_BYTES} bytes an import \
                 reads; split it."
            )));
        }
        unpacked += copied;
    }
    Ok(())
}

fn not_xlsx(err: &dyn std::fmt::Display) -> FileError {
    FileError::Content(format!("The file is not a readable xlsx workbook (type=xlsx): {err}."))
}

/// The header row (row 1 of the first sheet, empty when that row has no value), or `None`
/// for a sheet without any value; `first_data_row` (1-based) bounds the declared dimension.
/// The error is a 400 message. Run `check_archive` first.
pub fn read_header<R: Read + Seek>(
    input: R,
    limits: Limits,
    first_data_row: usize,
) -> FileResult<Option<Vec<String>>> {
    let header_rows = first_data_row.saturating_sub(1);
    with_sheet(input, limits, header_rows, |rows| match rows.next_row()? {
        None => Ok(None),
        Some((1, row)) => Ok(Some(row.texts())),
        Some(_) => Ok(Some(Vec::new())),
    })
}

/// Every data row of the first sheet as a record write, labelled `row <n>` (the sheet's row
/// number). Blocking. The error is the task's message. Run `check_archive` first.
pub fn read_rows<R: Read + Seek>(
    input: R,
    layout: &Layout,
) -> FileResult<Vec<(String, RecordInput)>> {
    let header_rows = layout.first_data_row.saturating_sub(1);
    with_sheet(input, layout.limits, header_rows, |rows| collect_rows(rows, layout))
}

/// Opens the workbook's first sheet as `SheetRows` for `read`, after `check_dimensions`.
fn with_sheet<R: Read + Seek, T>(
    input: R,
    limits: Limits,
    header_rows: usize,
    read: impl FnOnce(&mut SheetRows<'_>) -> FileResult<T>,
) -> FileResult<T> {
    let opened = catch_unwind(AssertUnwindSafe(|| {
        let mut workbook: Xlsx<R> = Xlsx::new(input).map_err(|e| not_xlsx(&e))?;
        let first = workbook.sheet_names().into_iter().next();
        let first = first.ok_or_else(|| not_xlsx(&"the workbook has no sheet"))?;
        let mut cells = workbook.worksheet_cells_reader(&first).map_err(|e| not_xlsx(&e))?;
        let dimensions = cells.dimensions();
        check_dimensions(dimensions.start, dimensions.end, limits, header_rows)?;
        let mut rows = SheetRows::new(Box::new(move || cells.next_cell()), limits);
        let read = read(&mut rows);
        drop(rows);
        read
    }));
    opened.unwrap_or_else(|_| Err(not_xlsx(&"the sheet is damaged")))
}

/// Refuses a sheet that declares more columns than a row may have, or more data rows (those
/// after the first `header_rows`) than an import reads (`MAX_ROWS`). `start`/`end` are 0-based
/// (row, column).
pub fn check_dimensions(
    start: (u32, u32),
    end: (u32, u32),
    limits: Limits,
    header_rows: usize,
) -> FileResult<()> {
    let columns = end.1 as usize + 1;
    if columns > limits.max_fields {
        return Err(FileError::TooLarge(format!(
            "The sheet declares {columns} columns (up to {}); an import into this view reads at \
             most {}.",
            column_name(end.1),
            limits.max_fields
        )));
    }
    let rows = (end.0 as usize + 1).saturating_sub(header_rows.max(start.0 as usize));
    if rows > MAX_ROWS {
        return Err(FileError::TooLarge(format!(
            "The sheet declares {rows} data rows (to row {}); an import reads at most \
             {MAX_ROWS}; split it.",
            u64::from(end.0) + 1
        )));
    }
    Ok(())
}

/// A 0-based column index as its letters (`0` is `A`, `27` is `AB`).
pub fn column_name(index: u32) -> String {
    let mut n = u64::from(index) + 1;
    let mut letters = Vec::new();
    while n > 0 {
        let rem = ((n - 1) % 26) as u8;
        letters.push(b'A' + rem);
        n = (n - 1) / 26;
    }
    letters.reverse();
    String::from_utf8_lossy(&letters).into_owned()
}

/// A cell's name, `B7`, from 0-based (row, column).
fn cell_name(row: u32, column: u32) -> String {
    format!("{}{}", column_name(column), u64::from(row) + 1)
}

/// One row of a sheet: its values by column, `None` where a cell is empty.
#[derive(Debug, Default)]
pub struct SheetRow {
    cells: Vec<Option<String>>,
    bytes: usize,
}

impl SheetRow {
    fn texts(&self) -> Vec<String> {
        self.cells.iter().map(|c| c.clone().unwrap_or_default()).collect()
    }

    fn clear(&mut self) {
        self.cells.clear();
        self.bytes = 0;
    }
}

impl Fields for SheetRow {
    fn width(&self) -> usize {
        self.cells.len()
    }

    fn text(&self, i: usize, _row: usize) -> FileResult<String> {
        Ok(self.cells.get(i).cloned().flatten().unwrap_or_default())
    }
}

/// The next streamed cell of a sheet (calamine does not name its reader's type).
type NextCell<'a> = Box<dyn FnMut() -> Result<Option<calamine::Cell<DataRef<'a>>>, XlsxError> + 'a>;

/// The rows of a sheet from its streamed cells.
struct SheetRows<'a> {
    cells: NextCell<'a>,
    limits: Limits,
    /// A cell read past the end of the row being built.
    pending: Option<calamine::Cell<DataRef<'a>>>,
    /// The 0-based row of the last row returned.
    last: Option<u32>,
    row: SheetRow,
    /// Whether the reader has given its last cell (asked again, it would read past the end).
    done: bool,
}

impl<'a> SheetRows<'a> {
    fn new(cells: NextCell<'a>, limits: Limits) -> SheetRows<'a> {
        SheetRows {
            cells,
            limits,
            pending: None,
            last: None,
            row: SheetRow::default(),
            done: false,
        }
    }

    fn next_cell(&mut self) -> FileResult<Option<calamine::Cell<DataRef<'a>>>> {
        if let Some(cell) = self.pending.take() {
            return Ok(Some(cell));
        }
        if self.done {
            return Ok(None);
        }
        let next = (self.cells)().map_err(|e| sheet_problem(&e))?;
        self.done = next.is_none();
        Ok(next)
    }

    /// Puts a cell's text into the row being built, under the limits.
    fn put(&mut self, (row, column): (u32, u32), text: String) -> FileResult<()> {
        let at = column as usize;
        let cell = || Place::Cell(cell_name(row, column));
        if at >= self.limits.max_fields {
            let limit = self.limits.max_fields;
            let problem = format!("a row has at most {limit} columns in an import into this view.");
            return Err(FileError::at(cell(), problem));
        }
        if text.len() > self.limits.max_field_bytes {
            let limit = self.limits.max_field_bytes;
            return Err(FileError::at(cell(), format!("the value is longer than {limit} bytes.")));
        }
        self.row.bytes += text.len();
        if self.row.bytes > self.limits.max_record_bytes {
            let limit = self.limits.max_record_bytes;
            return Err(FileError::TooLarge(format!(
                "row {} is longer than {limit} bytes.",
                u64::from(row) + 1
            )));
        }
        if self.row.cells.len() <= at {
            self.row.cells.resize(at + 1, None);
        }
        self.row.cells[at] = Some(text);
        Ok(())
    }
}

impl RowSource for SheetRows<'_> {
    type Row = SheetRow;
    const RECTANGULAR: bool = false;

    fn next_row(&mut self) -> FileResult<Option<(usize, &SheetRow)>> {
        self.row.clear();
        let mut current: Option<u32> = None;
        while let Some(cell) = self.next_cell()? {
            let (row, column) = cell.get_position();
            let Some(text) = cell_text(cell.get_value(), row, column)? else { continue };
            if current.is_some_and(|r| r != row) {
                self.pending = Some(cell);
                break;
            }
            if current.is_none() && self.last.is_some_and(|last| row <= last) {
                let problem = format!(
                    "the sheet's rows are out of order (row {} comes after row {}).",
                    u64::from(row) + 1,
                    self.last.map_or(0, |l| u64::from(l) + 1)
                );
                return Err(FileError::at(Place::Cell(cell_name(row, column)), problem));
            }
            current = Some(row);
            self.put((row, column), text)?;
        }
        Ok(current.map(|row| {
            self.last = Some(row);
            (row as usize + 1, &self.row)
        }))
    }
}

fn sheet_problem(err: &XlsxError) -> FileError {
    FileError::Content(format!("The sheet cannot be read: {err}."))
}

/// A cell's value as text (`None` when empty); an error value is refused naming the cell.
pub fn cell_text(value: &DataRef<'_>, row: u32, column: u32) -> FileResult<Option<String>> {
    let text = match value {
        DataRef::Empty => return Ok(None),
        DataRef::Int(n) => n.to_string(),
        DataRef::Float(f) => number_text(*f),
        DataRef::String(s) | DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s.clone(),
        DataRef::SharedString(s) => (*s).to_owned(),
        DataRef::Bool(b) => b.to_string(),
        DataRef::DateTime(date) => date_text(date),
        DataRef::Error(err) => {
            let place = Place::Cell(cell_name(row, column));
            return Err(FileError::at(place, format!("the cell holds the error {err}.")));
        }
    };
    Ok(Some(text).filter(|t| !t.is_empty()))
}

/// A number in the shortest form that reads back the same; `NaN`/infinities as Rust writes them.
fn number_text(f: f64) -> String {
    format!("{f}")
}

/// A date cell: `YYYY-MM-DD` at midnight, RFC 3339 UTC otherwise; a duration (or a serial
/// outside `DATE_SERIALS`) as its number.
fn date_text(date: &calamine::ExcelDateTime) -> String {
    let serial = date.as_f64();
    if date.is_duration() || !DATE_SERIALS.contains(&serial) {
        return number_text(serial);
    }
    match date.as_datetime() {
        Some(t) if t.time() == chrono::NaiveTime::MIN => t.format("%Y-%m-%d").to_string(),
        Some(t) if t.and_utc().timestamp_subsec_millis() == 0 => {
            t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
        }
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        None => number_text(serial),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        crate::io::csv_import::limits(3)
    }

    #[test]
    fn column_names_are_spreadsheet_letters() {
        let names: Vec<String> = [0, 25, 26, 27, 701, 702].map(column_name).to_vec();
        assert_eq!(names, ["A", "Z", "AA", "AB", "ZZ", "AAA"]);
        assert_eq!(cell_name(6, 1), "B7");
    }

    #[test]
    fn declared_dimensions_are_held_to_the_limits() {
        assert!(check_dimensions((0, 0), (10, 2), limits(), 1).is_ok());
        let wide =
            check_dimensions((0, 0), (0, 100_000), limits(), 1).expect_err("too wide").to_string();
        assert!(wide.contains("columns"), "{wide}");
        let long = check_dimensions((0, 0), (u32::MAX - 1, 0), limits(), 1)
            .expect_err("too long")
            .to_string();
        assert!(long.contains("data rows"), "{long}");
    }

    #[test]
    fn cell_values_read_as_a_csv_field_would_hold_them() {
        let text = |v: DataRef<'_>| cell_text(&v, 0, 0);
        assert_eq!(text(DataRef::Empty), Ok(None));
        assert_eq!(text(DataRef::Float(3.0)), Ok(Some("3".into())));
        assert_eq!(text(DataRef::Float(2.5)), Ok(Some("2.5".into())));
        assert_eq!(text(DataRef::Int(-7)), Ok(Some("-7".into())));
        assert_eq!(text(DataRef::Bool(true)), Ok(Some("true".into())));
        assert_eq!(text(DataRef::SharedString("日本語")), Ok(Some("日本語".into())));
        let error = text(DataRef::Error(calamine::CellErrorType::Div0)).expect_err("an error");
        let a1 = Place::Cell("A1".into());
        assert!(matches!(&error, FileError::At { place, .. } if *place == a1), "{error}");
        assert!(error.to_string().starts_with("cell A1: the cell holds the error"), "{error}");
    }

    #[test]
    fn bytes_that_are_not_a_workbook_are_refused_never_read() {
        for bytes in [&b""[..], b"a,b\n1,2\n", b"PK\x03\x04garbage", &[0xd0, 0xcf, 0x11, 0xe0]] {
            let refused = check_archive(std::io::Cursor::new(bytes), bytes.len() as u64);
            assert!(refused.is_err(), "{bytes:?}");
        }
    }
}
