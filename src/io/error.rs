//! `FileError`: why a file was refused (an import's upload: its type, content, layout, rows or
//! size) or could not be written (an export), with the place in the file as data where there
//! is one. Every refusal of an upload answers 400 `badRequest`; a failed export is a 500.

use std::fmt;

use crate::error::{Coded, ErrorCode};

/// Where in a file a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A row of a table (1-based).
    Row(usize),
    /// A field of a table's row, by row (1-based) and column (0-based; shown 1-based).
    Field { row: usize, column: usize },
    /// The field of a row mapped to a view's column, by the column's id.
    Column { row: usize, column_id: String },
    /// A cell of a sheet by its name (`B4`).
    Cell(String),
    /// A record of a json file (1-based).
    Record(usize),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Row(row) => write!(f, "row {row}"),
            Place::Field { row, column } => write!(f, "row {row}, column {}", column + 1),
            Place::Column { row, column_id } => write!(f, "row {row}, column \"{column_id}\""),
            Place::Cell(name) => write!(f, "cell {name}"),
            Place::Record(n) => write!(f, "record {n}"),
        }
    }
}

/// A refused or unreadable upload, or an export that could not be written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FileError {
    /// The request does not fit the file: an unknown or unsupported `type`, an import request
    /// field that does not apply, column mappings that do not fit the view or the file.
    #[error("{0}")]
    Request(String),
    /// The file is not of its type, or cannot be read as it (a damaged workbook, invalid JSON,
    /// a row that cannot be parsed).
    #[error("{0}")]
    Content(String),
    /// A value at `place` that cannot be imported.
    #[error("{place}: {problem}")]
    At { place: Place, problem: String },
    /// The file is over a limit: rows, cells, or the bytes of a field or record.
    #[error("{0}")]
    TooLarge(String),
    /// Writing an export failed: the disk, or the client went away.
    #[error("{0}")]
    Write(String),
}

impl FileError {
    pub fn at(place: Place, problem: impl Into<String>) -> FileError {
        FileError::At { place, problem: problem.into() }
    }
}

impl Coded for FileError {
    fn code(&self) -> ErrorCode {
        match self {
            FileError::Request(_)
            | FileError::Content(_)
            | FileError::At { .. }
            | FileError::TooLarge(_) => ErrorCode::BadRequest,
            FileError::Write(_) => ErrorCode::InternalServerError,
        }
    }
}

/// What reading or writing a file gives.
pub type FileResult<T> = Result<T, FileError>;
