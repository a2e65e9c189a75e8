//! `QueryError`: why a listing's `query` or `sort` parameter was refused, one case per error
//! code of the listing (decisions.md section 6), each with its message.

use crate::error::{Coded, ErrorCode};

/// A refused `query` or `sort` parameter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// Not JSON, not an object, an empty or unknown predefined field, statuses of a column that
    /// has none.
    #[error("{0}")]
    InvalidField(String),
    /// Not one operator, an unknown one, or one the column's type does not take.
    #[error("{0}")]
    InvalidOperator(String),
    /// An operand the operator and column type do not take (a regexp too long or too large
    /// included).
    #[error("{0}")]
    InvalidValue(String),
    /// An operator that needs a value got none.
    #[error("{0}")]
    MissingValue(String),
    /// A condition on a column the view does not show.
    #[error("{0}")]
    ColumnNotFound(String),
    /// A sort key that is not JSON, not an object, or names what cannot be sorted.
    #[error("{0}")]
    InvalidSortField(String),
    /// A direction other than `asc` and `desc`.
    #[error("{0}")]
    InvalidSortDirection(String),
    /// A sort key on a column the view does not show.
    #[error("{0}")]
    SortColumnNotFound(String),
}

pub type QueryResult<T> = Result<T, QueryError>;

impl Coded for QueryError {
    fn code(&self) -> ErrorCode {
        match self {
            QueryError::InvalidField(_) => ErrorCode::InvalidFilterField,
            QueryError::InvalidOperator(_) => ErrorCode::InvalidFilterOperator,
            QueryError::InvalidValue(_) => ErrorCode::InvalidFilterValue,
            QueryError::MissingValue(_) => ErrorCode::MissingFilterValue,
            QueryError::ColumnNotFound(_) => ErrorCode::FilterColumnNotFound,
            QueryError::InvalidSortField(_) => ErrorCode::InvalidSortField,
            QueryError::InvalidSortDirection(_) => ErrorCode::InvalidSortDirection,
            QueryError::SortColumnNotFound(_) => ErrorCode::SortColumnNotFound,
        }
    }
}
