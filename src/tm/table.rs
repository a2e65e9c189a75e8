//! A memory's segments as a table (the CSV and XLSX exports): one row per segment, the columns
//! `sourceLang`, `source`, `targetLang`, `target`, `createdTime`, `createdBy`, `changedTime`,
//! `changedBy`, `origin`. Plain functions over a `Write`.

use std::io::Write;
use std::path::Path;

use super::segment::Segment;
use super::store::Memory;
use super::ExportFilter;

const HEADER: [&str; 9] = [
    "sourceLang",
    "source",
    "targetLang",
    "target",
    "createdTime",
    "createdBy",
    "changedTime",
    "changedBy",
    "origin",
];

fn time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

fn row(s: &Segment) -> [String; 9] {
    [
        s.source.lang.clone(),
        s.source.text.clone(),
        s.target.lang.clone(),
        s.target.text.clone(),
        time(s.created_ms),
        s.created_by.clone(),
        time(s.changed_ms),
        s.changed_by.clone(),
        s.origin.as_str().to_owned(),
    ]
}

fn rows<'a>(
    memory: &'a Memory,
    filter: &'a ExportFilter,
) -> impl Iterator<Item = [String; 9]> + 'a {
    memory.scan().filter_map(Result::ok).filter(|(_, s)| filter.keeps(s)).map(|(_, s)| row(&s))
}

/// Writes the segments as CSV (RFC 4180, a header line).
pub fn write_csv(
    memory: &Memory,
    filter: &ExportFilter,
    sink: &mut dyn Write,
) -> Result<(), String> {
    let mut out = csv::Writer::from_writer(sink);
    out.write_record(HEADER).map_err(|e| e.to_string())?;
    for row in rows(memory, filter) {
        out.write_record(&row).map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())
}

/// Writes the segments as an XLSX workbook (built in `temp_dir`, then copied to `sink`).
pub fn write_xlsx(
    memory: &Memory,
    filter: &ExportFilter,
    temp_dir: &Path,
    sink: &mut dyn Write,
) -> Result<(), String> {
    use rust_xlsxwriter::Workbook;
    std::fs::create_dir_all(temp_dir).map_err(|e| e.to_string())?;
    let path = temp_dir.join(format!("tm-export-{}.xlsx", crate::ids::generate()));
    let written = (|| {
        let mut workbook = Workbook::new();
        workbook.set_tempdir(temp_dir).map_err(|e| e.to_string())?;
        let sheet = workbook.add_worksheet_with_constant_memory();
        for (col, name) in HEADER.iter().enumerate() {
            sheet.write_string(0, col as u16, *name).map_err(|e| e.to_string())?;
        }
        for (line, row) in rows(memory, filter).enumerate() {
            let line = u32::try_from(line + 1).map_err(|e| e.to_string())?;
            for (col, value) in row.iter().enumerate() {
                sheet.write_string(line, col as u16, value).map_err(|e| e.to_string())?;
            }
        }
        workbook.save(&path).map_err(|e| e.to_string())?;
        let mut file = std::fs::File::open(&path).map_err(|e| e.to_string())?;
        std::io::copy(&mut file, sink).map_err(|e| e.to_string())?;
        Ok(())
    })();
    let _ = std::fs::remove_file(&path);
    written
}
