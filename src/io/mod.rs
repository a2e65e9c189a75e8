//! File formats read from clients, apart from HTTP so that tests and fuzz targets can call
//! them: `csv` (records under size limits), `csv_import` (a CSV file as an import's record
//! writes) and `zip` (an uploaded archive checked and its mapped entries planned). `fuzz`
//! holds their proptest fuzz targets.

pub mod csv;
pub mod csv_import;
#[cfg(test)]
mod fuzz;
pub mod zip;
