//! Fuzz targets of the file readers, on the stable toolchain: proptest properties bounded to
//! a few hundred cases each so that they run in seconds in CI (`cargo test --lib io::fuzz`;
//! raise `PROPTEST_CASES` for a longer run). Each feeds hostile input to the code the upload
//! endpoints call and checks that it never panics, that what it holds stays bounded, and that
//! a refusal is a clean 400/413 error.

use std::io::{Cursor, Write};

use proptest::prelude::*;

use super::csv::{Limits, Reader, Record};
use super::csv_import::{plan_layout, read_header, read_rows, ImportRequest, Target};
use super::zip::{copy_counted, open_checked, plan, Budget, Mappings};
use crate::error::ErrorCode;
use crate::grid::records::ValueIn;
use crate::grid::schema::{ColumnDef, ColumnType};

const SMALL: Limits = Limits { max_field_bytes: 64, max_record_bytes: 256, max_fields: 8 };

fn config() -> ProptestConfig {
    ProptestConfig { cases: 256, max_shrink_iters: 256, ..ProptestConfig::default() }
}

fn column(id: &str, column_type: ColumnType) -> ColumnDef {
    ColumnDef {
        id: id.to_owned(),
        name: id.to_uppercase(),
        description: None,
        column_type,
        language_code: None,
        localization_type: None,
        number_format: None,
        selection: None,
        reference: None,
        formula: None,
        date_time_format: None,
    }
}

/// The view the CSV targets run against: text, a list and a formula column.
fn view() -> Vec<ColumnDef> {
    vec![
        column("a", ColumnType::SingleLine),
        column("b", ColumnType::MultipleLines),
        column("tags", ColumnType::MultipleSelections),
        column("f", ColumnType::Formula),
    ]
}

/// CSV-ish bytes: mostly separators, quotes and line ends, some text and invalid UTF-8.
fn csv_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => prop::sample::select(b",\"\r\n".to_vec()),
        4 => prop::sample::select(b"abAB_ [].".to_vec()),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..2048)
}

/// A valid zip of a few entries (stored and deflated, some repetitive).
fn valid_zip() -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for (i, method) in [zip::CompressionMethod::Deflated, zip::CompressionMethod::Stored]
        .into_iter()
        .cycle()
        .take(4)
        .enumerate()
    {
        let content = format!("entry {i} ").repeat(50 * (i + 1));
        zip.start_file(format!("e{i}.txt"), options.compression_method(method)).expect("starts");
        zip.write_all(content.as_bytes()).expect("written");
    }
    zip.finish().expect("finished").into_inner()
}

/// Reads a zip the way the upload does, into nothing: the error code of a refusal.
fn read_zip(bytes: &[u8], mappings: &Mappings) -> Result<u64, ErrorCode> {
    let mut budget = Budget::new(1 << 20, bytes.len() as u64);
    let mut archive = open_checked(Cursor::new(bytes), bytes.len() as u64).map_err(|e| e.code)?;
    let planned = plan(&mut archive, mappings, &budget).map_err(|e| e.code)?;
    let mut total = 0;
    for entry in planned.into_iter().flat_map(|(_, entries)| entries) {
        let mut reader = archive.by_index(entry.index).map_err(|_| ErrorCode::BadRequest)?;
        let on_write = |_| unreachable!("a sink does not fail");
        total += copy_counted(&mut reader, &mut std::io::sink(), &entry, &mut budget, on_write)
            .map_err(|e| e.code)?;
    }
    Ok(total)
}

fn mappings() -> Mappings {
    let names = (0..4).map(|i| format!("e{i}.txt")).collect();
    Mappings::from([("r1".to_owned(), names)])
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn csv_reader_never_panics_and_holds_one_bounded_record(bytes in csv_bytes()) {
        let mut reader = Reader::new(&bytes[..], SMALL);
        let mut record = Record::default();
        let mut rows = 0;
        while let Ok(true) = reader.read(&mut record) {
            rows += 1;
            prop_assert!(record.len() <= SMALL.max_fields);
            prop_assert!(record.iter().all(|f| f.len() <= SMALL.max_field_bytes));
            prop_assert!(rows <= bytes.len());
        }
        prop_assert!(record.capacity() <= 2 * (SMALL.max_record_bytes + 1) + 8 * 2 * (SMALL.max_fields + 1));
    }

    #[test]
    fn csv_import_of_arbitrary_bytes_never_panics_and_stays_bounded(
        bytes in csv_bytes(),
        with_header in any::<bool>(),
        mapped in prop::collection::vec((0usize..6, 0usize..5), 0..4),
    ) {
        let columns = view();
        let columns: Vec<&ColumnDef> = columns.iter().collect();
        let ids = ["a", "b", "tags", "f", "_recordId"];
        let request = ImportRequest {
            with_header: Some(with_header),
            column_mappings: (!mapped.is_empty()).then(|| mapped.iter().map(|(at, c)| {
                super::csv_import::ColumnMapping { column_id: ids[*c].to_owned(), file_column_index: *at }
            }).collect()),
            ..ImportRequest::default()
        };
        let limits = super::csv_import::limits(columns.len());
        let Ok(header) = read_header(&bytes[..], limits, b',') else { return Ok(()) };
        let Ok(layout) = plan_layout(&request, &columns, header.as_deref()) else { return Ok(()) };
        let targets: Vec<&Target> =
            layout.targets.iter().filter(|t| !matches!(t, Target::Ignored)).collect();
        for (i, t) in targets.iter().enumerate() {
            prop_assert!(!targets[..i].contains(t), "a target twice: {:?}", layout.targets);
        }
        if let Ok(rows) = read_rows(&bytes[..], &layout, b',') {
            prop_assert!(rows.len() <= bytes.len());
            let mapped = layout.columns().len();
            // A mapping past a row's last field writes nothing for that row.
            prop_assert!(rows.iter().all(|(_, r)| r.cells.len() <= mapped));
        }
    }

    #[test]
    fn structured_csv_imports_its_values_exactly(
        rows in prop::collection::vec(
            prop::collection::vec("[a-z,\"\r\n é]{0,12}", 2..=2), 1..40),
    ) {
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(["A", "B"]).expect("header");
        for row in &rows {
            writer.write_record(row).expect("row");
        }
        let bytes = writer.into_inner().expect("csv");
        let columns = view();
        let columns: Vec<&ColumnDef> = columns.iter().collect();
        let limits = super::csv_import::limits(columns.len());
        let header = read_header(&bytes[..], limits, b',').expect("header");
        let layout = plan_layout(&ImportRequest::default(), &columns, header.as_deref()).expect("layout");
        let read = read_rows(&bytes[..], &layout, b',').expect("rows");
        // Rows whose fields are all empty are blank lines when there is one column, never here.
        prop_assert_eq!(read.len(), rows.len());
        for ((_, input), row) in read.iter().zip(&rows) {
            for (cell, text) in input.cells.iter().zip(row) {
                let expected = if text.is_empty() { serde_json::Value::Null } else { serde_json::json!(text) };
                prop_assert_eq!(cell.value.clone().map(ValueIn::into_value), Some(expected));
            }
        }
    }

    #[test]
    fn zip_reading_of_arbitrary_bytes_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        eocd in any::<bool>(),
        count in any::<u16>(),
    ) {
        let mut bytes = bytes;
        if eocd {
            bytes.extend_from_slice(b"PK\x05\x06\0\0\0\0");
            bytes.extend_from_slice(&count.to_le_bytes());
            bytes.extend_from_slice(&count.to_le_bytes());
            bytes.extend_from_slice(&[0; 10]);
        }
        if let Err(code) = read_zip(&bytes, &mappings()) {
            prop_assert!(matches!(code, ErrorCode::BadRequest | ErrorCode::PayloadTooLarge), "{code:?}");
        }
    }

    #[test]
    fn mutated_valid_zips_are_read_or_refused_cleanly(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut bytes = valid_zip();
        for (at, byte) in flips {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        match read_zip(&bytes, &mappings()) {
            Ok(total) => prop_assert!(total <= 1 << 20),
            Err(code) => prop_assert!(
                matches!(code, ErrorCode::BadRequest | ErrorCode::PayloadTooLarge), "{code:?}"),
        }
    }

    #[test]
    fn json_import_of_arbitrary_bytes_never_panics_and_stays_bounded(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..512),
            "[\\[\\]{}\"a-z:,0-9 ]{0,256}".prop_map(String::into_bytes),
        ],
    ) {
        if let Ok(records) = super::json_import::read_records(&bytes[..], SMALL) {
            for (_, record) in &records {
                prop_assert!(record.cells.len() <= SMALL.max_fields);
            }
        }
    }

    #[test]
    fn mutated_workbooks_are_read_or_refused_cleanly(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut bytes = valid_workbook();
        for (at, byte) in flips {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        let size = bytes.len() as u64;
        if super::xlsx_import::check_archive(Cursor::new(&bytes), size).is_ok() {
            let header = super::xlsx_import::read_header(Cursor::new(&bytes), SMALL, 1);
            if let Ok(Some(header)) = header {
                prop_assert!(header.len() <= SMALL.max_fields);
            }
        }
    }
}

/// A small workbook of two rows (rust_xlsxwriter's output).
fn valid_workbook() -> Vec<u8> {
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    for (r, row) in [["_recordId", "en"], ["k1", "Start"]].iter().enumerate() {
        for (c, text) in row.iter().enumerate() {
            sheet.write_string(r as u32, c as u16, *text).expect("cell");
        }
    }
    book.save_to_buffer().expect("workbook")
}

#[test]
fn the_valid_zip_reads_whole() {
    let bytes = valid_zip();
    assert_eq!(
        read_zip(&bytes, &mappings()),
        Ok((1..=4).map(|i| 50 * i * 8).sum::<usize>() as u64)
    );
}
