//! Typed cell values: the owned form a write carries into the grid actor and the store keeps.
//!
//! Owns the mapping from column types to storage classes. Parsing JSON request values and rendering
//! response values per column type lives in `grid::codec`; this module knows nothing of JSON.

use serde::{Deserialize, Serialize};

/// How a column's cells are laid out in the columnar store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StorageKind {
    /// UTF-8 strings (single line, multiple lines, rich text, markdown, html, language,
    /// single selection, json, yaml, formula results rendered as text).
    Text,
    /// f64 numbers.
    Number,
    /// true / false.
    Boolean,
    /// Milliseconds since the Unix epoch, UTC.
    Datetime,
    /// Lists of strings (multiple selections, file ids, referenced record ids, user names).
    List,
}

/// One cell's value. `Empty` is the absent value of every kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CellValue {
    Empty,
    Text(String),
    Number(f64),
    Boolean(bool),
    Datetime(i64),
    List(Vec<String>),
}

impl CellValue {
    /// True for the empty value and for an empty string or list.
    pub fn is_empty(&self) -> bool {
        match self {
            CellValue::Empty => true,
            CellValue::Text(s) => s.is_empty(),
            CellValue::List(items) => items.is_empty(),
            CellValue::Number(_) | CellValue::Boolean(_) | CellValue::Datetime(_) => false,
        }
    }

    /// Bytes of payload this value carries (used for memory accounting in benches and metrics).
    pub fn payload_bytes(&self) -> usize {
        match self {
            CellValue::Empty => 0,
            CellValue::Text(s) => s.len(),
            CellValue::Number(_) | CellValue::Datetime(_) => 8,
            CellValue::Boolean(_) => 1,
            CellValue::List(items) => items.iter().map(String::len).sum(),
        }
    }
}

/// Per-cell translation dependency status (decisions.md section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[repr(u8)]
pub enum DependencyStatus {
    #[default]
    Unset = 0,
    OutOfDate = 1,
    UpToDate = 2,
}

/// Per-cell source status set by clients (decisions.md section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[repr(u8)]
pub enum SourceStatus {
    #[default]
    Unset = 0,
    DoNotTranslate = 1,
    NotReadyForTranslation = 2,
    ReadyForTranslation = 3,
    Locked = 4,
    /// Locks the source cell and every target cell of the record that depends on it, through
    /// chains of dependencies.
    LockAllLanguages = 5,
}

impl DependencyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DependencyStatus::Unset => "unset",
            DependencyStatus::OutOfDate => "outOfDate",
            DependencyStatus::UpToDate => "upToDate",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "unset" => Some(DependencyStatus::Unset),
            "outOfDate" => Some(DependencyStatus::OutOfDate),
            "upToDate" => Some(DependencyStatus::UpToDate),
            _ => None,
        }
    }

    pub fn from_u8(b: u8) -> Self {
        match b {
            1 => DependencyStatus::OutOfDate,
            2 => DependencyStatus::UpToDate,
            _ => DependencyStatus::Unset,
        }
    }
}

impl SourceStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceStatus::Unset => "unset",
            SourceStatus::DoNotTranslate => "doNotTranslate",
            SourceStatus::NotReadyForTranslation => "notReadyForTranslation",
            SourceStatus::ReadyForTranslation => "readyForTranslation",
            SourceStatus::Locked => "locked",
            SourceStatus::LockAllLanguages => "lockAllLanguages",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "unset" => Some(SourceStatus::Unset),
            "doNotTranslate" => Some(SourceStatus::DoNotTranslate),
            "notReadyForTranslation" => Some(SourceStatus::NotReadyForTranslation),
            "readyForTranslation" => Some(SourceStatus::ReadyForTranslation),
            "locked" => Some(SourceStatus::Locked),
            "lockAllLanguages" => Some(SourceStatus::LockAllLanguages),
            _ => None,
        }
    }

    /// Whether a cell with this status refuses changes of its own value.
    pub fn locks_value(self) -> bool {
        matches!(self, SourceStatus::Locked | SourceStatus::LockAllLanguages)
    }

    pub fn from_u8(b: u8) -> Self {
        match b {
            1 => SourceStatus::DoNotTranslate,
            2 => SourceStatus::NotReadyForTranslation,
            3 => SourceStatus::ReadyForTranslation,
            4 => SourceStatus::Locked,
            5 => SourceStatus::LockAllLanguages,
            _ => SourceStatus::Unset,
        }
    }
}
