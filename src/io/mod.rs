//! File formats read from and written for clients, apart from HTTP so that tests and fuzz
//! targets can call them: `export` (a view's records as CSV, TSV, XLSX or HTML, and a history
//! export, CSV and XLSX), `po` (a view's localization columns as gettext files in a zip);
//! `csv` (records under size limits), `error` (`FileError`: what a refused file answers),
//! `csv_import` (a CSV file as an import's record writes), `import_format` (an import's `type`: csv, tsv, xlsx or json, and its content
//! checked against it), `xlsx_import` and `json_import` (the other types' readers) and `zip`
//! (an uploaded archive checked and its mapped entries planned); `glossary` (glossary files:
//! TBX, CSV and XLSX). `fuzz` holds their proptest fuzz targets. `cdn_publish` writes a
//! published CDN version's files (issue 22).

pub mod cdn_publish;
pub mod csv;
pub mod csv_import;
pub mod error;
pub mod export;
#[cfg(test)]
mod fuzz;
pub mod glossary;
pub mod import_format;
pub mod json_import;
pub mod po;
pub mod xlsx_import;
pub mod xml;
pub mod zip;
