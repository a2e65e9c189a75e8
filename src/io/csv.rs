//! CSV read under limits (RFC 4180 as `csv_core` parses it: `"` quotes and escapes by
//! doubling, `\r`, `\n` or `\r\n` end a record, blank lines are skipped). The file comes from a
//! client, so every allocation a record makes is bounded: the bytes of one record
//! (`Limits::max_record_bytes`), of one field (`Limits::max_field_bytes`) and the number of
//! fields (`Limits::max_fields`). A record past a limit is an error naming its row, raised
//! before the buffers grow past the limit, so reading any file holds at most one record of
//! bounded size plus a fixed input buffer. Records are read one at a time into a reused
//! `Record`; nothing else is kept.

use std::fmt;
use std::io::Read;

use csv_core::ReadRecordResult;

/// The size of the input buffer.
const INPUT_BUFFER: usize = 64 * 1024;
/// The first size of a record's byte buffer.
const FIRST_RECORD_BYTES: usize = 1024;
/// The first number of field ends a record holds.
const FIRST_FIELDS: usize = 32;

/// What one record may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The bytes of one field (after unquoting).
    pub max_field_bytes: usize,
    /// The bytes of all fields of one record together (after unquoting).
    pub max_record_bytes: usize,
    /// The fields of one record.
    pub max_fields: usize,
}

/// Why a file could not be read. Rows are 1-based record numbers (blank lines do not count),
/// columns 1-based field numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsvError {
    /// The file could not be read.
    Io(String),
    /// A field is longer than `Limits::max_field_bytes`.
    FieldTooLong { row: usize, column: usize, limit: usize },
    /// A record is longer than `Limits::max_record_bytes`.
    RecordTooLong { row: usize, limit: usize },
    /// A record has more than `Limits::max_fields` fields.
    TooManyFields { row: usize, limit: usize },
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CsvError::Io(err) => write!(f, "the file could not be read: {err}"),
            CsvError::FieldTooLong { row, column, limit } => {
                write!(f, "row {row}, column {column}: the field is longer than {limit} bytes.")
            }
            CsvError::RecordTooLong { row, limit } => {
                write!(f, "row {row} is longer than {limit} bytes.")
            }
            CsvError::TooManyFields { row, limit } => {
                write!(f, "row {row} has more than {limit} fields.")
            }
        }
    }
}

impl std::error::Error for CsvError {}

/// One record: its fields' bytes, unquoted.
#[derive(Debug, Default, Clone)]
pub struct Record {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    fields: usize,
}

impl Record {
    /// The number of fields.
    pub fn len(&self) -> usize {
        self.fields
    }

    pub fn is_empty(&self) -> bool {
        self.fields == 0
    }

    /// Field `i` (0-based).
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        if i >= self.fields {
            return None;
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.bytes.get(start..self.ends[i])
    }

    /// The fields in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.fields).filter_map(|i| self.get(i))
    }

    /// The bytes the record's buffers hold (what reading it allocated).
    pub fn capacity(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * std::mem::size_of::<usize>()
    }
}

/// Reads records from `input` one at a time under `Limits`.
pub struct Reader<R> {
    core: csv_core::Reader,
    input: R,
    buffer: Box<[u8]>,
    start: usize,
    end: usize,
    eof: bool,
    rows: usize,
    limits: Limits,
}

impl<R: Read> Reader<R> {
    pub fn new(input: R, limits: Limits) -> Reader<R> {
        Reader::with_delimiter(input, limits, b',')
    }

    /// A reader of fields separated by `delimiter` (`b'\t'` for TSV), quoted as in CSV.
    pub fn with_delimiter(input: R, limits: Limits, delimiter: u8) -> Reader<R> {
        Reader {
            core: csv_core::ReaderBuilder::new().delimiter(delimiter).build(),
            input,
            buffer: vec![0; INPUT_BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            eof: false,
            rows: 0,
            limits,
        }
    }

    /// The number of records read so far (the row of the last one).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Reads the next record into `record`: `false` at the end of the input. After an error
    /// the reader must not be used again.
    pub fn read(&mut self, record: &mut Record) -> Result<bool, CsvError> {
        let row = self.rows + 1;
        if record.bytes.is_empty() {
            record.bytes.resize(FIRST_RECORD_BYTES.min(self.limits.max_record_bytes + 1), 0);
        }
        if record.ends.is_empty() {
            record.ends.resize(FIRST_FIELDS.min(self.limits.max_fields + 1), 0);
        }
        let (mut out, mut fields) = (0usize, 0usize);
        loop {
            self.fill()?;
            let input = &self.buffer[self.start..self.end];
            let (result, read, written, ended) =
                self.core.read_record(input, &mut record.bytes[out..], &mut record.ends[fields..]);
            self.start += read;
            out += written;
            fields += ended;
            match result {
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::OutputFull => {
                    let limit = self.limits.max_record_bytes;
                    grow(&mut record.bytes, limit).ok_or(CsvError::RecordTooLong { row, limit })?;
                }
                ReadRecordResult::OutputEndsFull => {
                    let limit = self.limits.max_fields;
                    grow(&mut record.ends, limit).ok_or(CsvError::TooManyFields { row, limit })?;
                }
                ReadRecordResult::Record => {
                    record.fields = fields;
                    self.rows = row;
                    return self.check_fields(record, row).map(|()| true);
                }
                ReadRecordResult::End => {
                    record.fields = 0;
                    return Ok(false);
                }
            }
        }
    }

    /// Refills the input buffer once it is used up.
    fn fill(&mut self) -> Result<(), CsvError> {
        if self.start < self.end || self.eof {
            return Ok(());
        }
        let read = loop {
            match self.input.read(&mut self.buffer) {
                Ok(read) => break read,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(CsvError::Io(err.to_string())),
            }
        };
        (self.start, self.end, self.eof) = (0, read, read == 0);
        Ok(())
    }

    fn check_fields(&self, record: &Record, row: usize) -> Result<(), CsvError> {
        if record.fields > self.limits.max_fields {
            return Err(CsvError::TooManyFields { row, limit: self.limits.max_fields });
        }
        let limit = self.limits.max_field_bytes;
        match record.iter().position(|field| field.len() > limit) {
            Some(i) => Err(CsvError::FieldTooLong { row, column: i + 1, limit }),
            None => Ok(()),
        }
    }
}

/// Doubles `buffer`, to at most `limit + 1` items (one past the limit, so that a record of
/// exactly `limit` still fits with room to see its end); `None` once it holds that many.
fn grow<T: Default + Clone>(buffer: &mut Vec<T>, limit: usize) -> Option<()> {
    let cap = limit.saturating_add(1);
    if buffer.len() >= cap {
        return None;
    }
    let size = buffer.len().saturating_mul(2).clamp(1, cap);
    buffer.resize(size, T::default());
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOMY: Limits =
        Limits { max_field_bytes: 1 << 20, max_record_bytes: 1 << 20, max_fields: 1000 };

    fn read_all(text: &[u8], limits: Limits) -> Result<Vec<Vec<String>>, CsvError> {
        let mut reader = Reader::new(text, limits);
        let mut record = Record::default();
        let mut rows = Vec::new();
        while reader.read(&mut record)? {
            rows.push(record.iter().map(|f| String::from_utf8_lossy(f).into_owned()).collect());
        }
        Ok(rows)
    }

    #[test]
    fn quoted_fields_line_ends_and_blank_lines_read_as_rfc_4180_says() {
        let rows = read_all(b"a,\"b,\"\"c\"\"\nd\"\r\n\n\ne,\r\nlast", ROOMY).expect("valid");
        assert_eq!(rows, [vec!["a", "b,\"c\"\nd"], vec!["e", ""], vec!["last"]]);
        assert_eq!(read_all(b"", ROOMY).expect("empty"), Vec::<Vec<String>>::new());
    }

    #[test]
    fn matches_the_csv_crate_on_ordinary_files() {
        let text = b"id,en,fr\nmenu.start,\"Start, now\",D\xc3\xa9marrer\r\n,x,\n\"q\"\"\",,\n";
        let mut theirs = csv::ReaderBuilder::new();
        let expected: Vec<Vec<Vec<u8>>> = theirs
            .has_headers(false)
            .flexible(true)
            .from_reader(&text[..])
            .byte_records()
            .map(|r| r.expect("valid").iter().map(<[u8]>::to_vec).collect())
            .collect();
        let mut reader = Reader::new(&text[..], ROOMY);
        let mut record = Record::default();
        let mut ours = Vec::new();
        while reader.read(&mut record).expect("valid") {
            ours.push(record.iter().map(<[u8]>::to_vec).collect::<Vec<_>>());
        }
        assert_eq!(ours, expected);
    }

    #[test]
    fn limits_stop_a_record_before_its_buffers_pass_them() {
        let limits = Limits { max_field_bytes: 10, max_record_bytes: 64, max_fields: 4 };
        assert_eq!(
            read_all(b"ok\nabcdefghijk,x\n", limits),
            Err(CsvError::FieldTooLong { row: 2, column: 1, limit: 10 })
        );
        assert_eq!(
            read_all(b"a,b,c,d,e\n", limits),
            Err(CsvError::TooManyFields { row: 1, limit: 4 })
        );
        let long = format!("\"{}\"", "x".repeat(10_000));
        assert_eq!(
            read_all(long.as_bytes(), limits),
            Err(CsvError::RecordTooLong { row: 1, limit: 64 })
        );
        let mut reader = Reader::new(long.as_bytes(), limits);
        let mut record = Record::default();
        assert!(reader.read(&mut record).is_err());
        assert!(record.capacity() <= 2 * (65 + 5 * 8), "{}", record.capacity());
        let wide = ",".repeat(100_000);
        let mut reader = Reader::new(wide.as_bytes(), limits);
        assert!(reader.read(&mut record).is_err());
        assert!(record.capacity() <= 2 * (65 + 5 * 8), "{}", record.capacity());
        let exact = "abcdefghij,abcdefghij,abcdefghij,abcdefghij\n";
        assert_eq!(read_all(exact.as_bytes(), limits).expect("at the limits").len(), 1);
    }
}
