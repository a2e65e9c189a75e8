//! `SchemaError`: why a change to a branch's schema (a column, a dependency, a view) was
//! refused, one case per error code a schema change answers with.

use crate::error::{Coded, ErrorCode};
use crate::grid::formula::FormulaRefused;

/// A refused schema change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaError {
    /// A request the change cannot take: a bad name, type, setting or formula.
    #[error("{0}")]
    Invalid(String),
    /// A column id that is malformed or already taken.
    #[error("{0}")]
    InvalidColumnId(String),
    /// A column the view (or the grid) does not have.
    #[error("{0}")]
    ColumnNotInView(String),
    #[error("{0}")]
    ViewNotFound(String),
    #[error("{0}")]
    DependencyNotFound(String),
    /// A target column that already depends on a source.
    #[error("{0}")]
    DependencyExists(String),
    /// A change that is well-formed but cannot be made (a dependency cycle).
    #[error("{0}")]
    Unprocessable(String),
    /// A formula that does not parse or refers to what it may not.
    #[error(transparent)]
    Formula(#[from] FormulaRefused),
}

pub type SchemaResult<T> = Result<T, SchemaError>;

impl SchemaError {
    pub fn invalid(message: impl Into<String>) -> SchemaError {
        SchemaError::Invalid(message.into())
    }

    /// The same refusal, its message prefixed with where in the request it is (`columns[2]`).
    pub fn at(self, place: &str) -> SchemaError {
        let prefixed = |message: String| format!("{place}: {message}");
        match self {
            SchemaError::Invalid(m) => SchemaError::Invalid(prefixed(m)),
            SchemaError::InvalidColumnId(m) => SchemaError::InvalidColumnId(prefixed(m)),
            SchemaError::ColumnNotInView(m) => SchemaError::ColumnNotInView(prefixed(m)),
            SchemaError::ViewNotFound(m) => SchemaError::ViewNotFound(prefixed(m)),
            SchemaError::DependencyNotFound(m) => SchemaError::DependencyNotFound(prefixed(m)),
            SchemaError::DependencyExists(m) => SchemaError::DependencyExists(prefixed(m)),
            SchemaError::Unprocessable(m) => SchemaError::Unprocessable(prefixed(m)),
            SchemaError::Formula(refused) => SchemaError::Invalid(prefixed(refused.to_string())),
        }
    }

    /// `<Kind> "<id>" could not be found.`
    pub fn missing(kind: &str, id: &str) -> String {
        format!("{kind} \"{id}\" could not be found.")
    }
}

impl Coded for SchemaError {
    fn code(&self) -> ErrorCode {
        match self {
            SchemaError::Invalid(_) | SchemaError::Formula(_) => ErrorCode::BadRequest,
            SchemaError::InvalidColumnId(_) => ErrorCode::InvalidColumnId,
            SchemaError::ColumnNotInView(_) => ErrorCode::ColumnNotFoundInView,
            SchemaError::ViewNotFound(_) => ErrorCode::ViewIsNotFound,
            SchemaError::DependencyNotFound(_) => ErrorCode::DependencyIsNotFound,
            SchemaError::DependencyExists(_) => ErrorCode::DependencyAlreadyExists,
            SchemaError::Unprocessable(_) => ErrorCode::Unprocessable,
        }
    }
}
