//! `GridError`: what a grid branch answers when it cannot do what a message asked: its own
//! refusals (a view, column or record it does not have, a branch too busy to take more), its
//! failures (the WAL, a stopped thread, a broken invariant), and the refusals of the grid's
//! other domains it passes on as they are (`SchemaError`, `QueryError`, `WriteError`), each
//! keeping its own code.
//!
//! It knows nothing of HTTP: every case maps to one code (`impl Coded`, exhaustive) and handlers
//! turn it into an `ApiError` with `?`, its message as displayed.

use actix::MailboxError;
use tokio::task::JoinError;

use super::actor::MAX_HELD;
use super::paths::PathError;
use super::preconditions::Stale;
use super::query::QueryError;
use super::read_pool::MAX_WAITING;
use super::schema::PREDEFINED_COLUMNS;
use super::schema_error::SchemaError;
use super::write_error::WriteError;
use crate::error::{Coded, ErrorCode};
use crate::persist::wal::WalError;

/// A refused or failed grid message.
#[derive(Debug, thiserror::Error)]
pub enum GridError {
    /// A view the branch does not have.
    #[error("View \"{0}\" could not be found.")]
    ViewNotFound(String),
    /// A column a read, a history page or a files change names that the view does not show.
    #[error("Column \"{column_id}\" could not be found in view \"{view_id}\".")]
    ColumnNotInView { column_id: String, view_id: String },
    /// A column a history export asks for that the view does not show.
    #[error("Column \"{column_id}\" is not in view \"{view_id}\".")]
    ColumnNotExported { column_id: String, view_id: String },
    /// A files change to a column of another type.
    #[error("Column \"{0}\" is not of type files.")]
    NotFilesColumn(String),
    /// The ids of records a request names that the branch does not have: one is the message,
    /// several are listed.
    #[error("{}", nonexistent_summary(.0))]
    NonexistentRecords(Vec<String>),
    /// A `columnIds` list naming more distinct columns than a view showing `shown` columns
    /// (and the predefined ones) could.
    #[error(
        "columnIds names more than {most} distinct columns: the view has {shown} columns and \
         there are {predefined} predefined ones.",
        most = .shown + PREDEFINED_COLUMNS.len(),
        predefined = PREDEFINED_COLUMNS.len()
    )]
    TooManyColumnIds { shown: usize },
    /// A `mergeRecordOptions` name other than add, update, delete and override.
    #[error("mergeRecordOptions \"{0}\" is invalid; expected add, update, delete or override.")]
    InvalidMergeOption(String),
    /// No `mergeRecordOptions` name at all.
    #[error("Required request parameter 'mergeRecordOptions' is not present.")]
    NoMergeOptions,
    /// A write into a reference column pointing at grid `grid_id`, which the writer may not
    /// read (`ReferenceLookup` says so).
    #[error(
        "This key has no read access to grid \"{grid_id}\", which a reference column points at."
    )]
    ReferenceUnreadable { grid_id: String },
    /// The company already has `MAX_WAITING` reads waiting in a lane of the read pool.
    #[error(
        "The company already has {MAX_WAITING} filtered or sorted reads waiting; try again \
         shortly."
    )]
    TooManyReads,
    /// The branch already holds `MAX_HELD` writes back behind a heavy write.
    #[error(
        "The branch has {MAX_HELD} writes waiting for a schema change, import or merge; try \
         again shortly."
    )]
    TooManyHeld,
    /// The branch's actor stopped (its grid or branch was deleted) before a write ran.
    #[error("The branch closed before the write ran.")]
    Closed,
    /// The node serving a referenced branch (in a cluster) could not be asked.
    #[error("The node serving branch \"{branch_id}\" could not be asked ({why}); retry.")]
    Elsewhere { branch_id: String, why: String },
    /// An actor's mailbox is closed: the server is stopping.
    #[error("The server is shutting down ({0}).")]
    ShuttingDown(#[from] MailboxError),
    /// The WAL refused a write's record.
    #[error("The write could not be logged: {0}")]
    NotLogged(WalError),
    /// A write's record was appended but never made durable.
    #[error("The write was not logged: {0}")]
    NotDurable(WalError),
    /// A blocking task of the branch (`what`: "a heavy write", "the file scan") panicked.
    #[error("{what} stopped: {source}")]
    TaskStopped { what: &'static str, source: JoinError },
    /// A broken invariant of the branch or the read pool.
    #[error("{0}")]
    Internal(&'static str),
    /// A schema change the schema's rules refuse.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// A listing's `query` or `sort` that does not bind to the view.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A write of records with problems of its own.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A conditional write whose record changed (or went) since its writer read it.
    #[error(transparent)]
    Stale(#[from] Stale),
    /// A folder change or tree read the path rules refuse.
    #[error(transparent)]
    Path(#[from] PathError),
}

/// What a grid message answers.
pub type GridResult<T> = Result<T, GridError>;

impl GridError {
    /// The refusal of a request naming record `id`, which the branch does not have.
    pub fn nonexistent(id: &str) -> GridError {
        GridError::NonexistentRecords(vec![id.to_owned()])
    }

    /// The refusal of a read naming `column_id`, which `view_id` does not show.
    pub fn not_in_view(column_id: &str, view_id: &str) -> GridError {
        GridError::ColumnNotInView { column_id: column_id.to_owned(), view_id: view_id.to_owned() }
    }
}

/// `Record "<id>" does not exist.`
fn nonexistent_record(id: &str) -> String {
    format!("Record \"{id}\" does not exist.")
}

/// The one record's message, or how many there are.
fn nonexistent_summary(ids: &[String]) -> String {
    match ids {
        [id] => nonexistent_record(id),
        _ => format!("{} records do not exist; the request changed nothing.", ids.len()),
    }
}

impl Coded for GridError {
    fn code(&self) -> ErrorCode {
        match self {
            GridError::ViewNotFound(_) => ErrorCode::ViewIsNotFound,
            GridError::ColumnNotInView { .. } => ErrorCode::ColumnNotFoundInView,
            GridError::ColumnNotExported { .. } => ErrorCode::InvalidColumnId,
            GridError::NotFilesColumn(_) => ErrorCode::ColumnIsNotFilesType,
            GridError::NonexistentRecords(_) => ErrorCode::NonexistentRecordId,
            GridError::TooManyColumnIds { .. } | GridError::InvalidMergeOption(_) => {
                ErrorCode::BadRequest
            }
            GridError::NoMergeOptions => ErrorCode::RequestParameterMissing,
            GridError::ReferenceUnreadable { .. } => ErrorCode::AccessDenied,
            GridError::TooManyReads => ErrorCode::TooManyRequests,
            GridError::TooManyHeld
            | GridError::Closed
            | GridError::Elsewhere { .. }
            | GridError::ShuttingDown(_)
            | GridError::NotLogged(_)
            | GridError::NotDurable(_) => ErrorCode::ServiceUnavailable,
            GridError::TaskStopped { .. } | GridError::Internal(_) => {
                ErrorCode::InternalServerError
            }
            GridError::Schema(err) => err.code(),
            GridError::Query(err) => err.code(),
            GridError::Write(err) => err.code(),
            GridError::Stale(err) => err.code(),
            GridError::Path(err) => err.code(),
        }
    }

    fn listed(&self) -> Vec<String> {
        match self {
            GridError::NonexistentRecords(ids) if ids.len() > 1 => {
                ids.iter().map(|id| nonexistent_record(id)).collect()
            }
            GridError::Write(err) => err.listed(),
            _ => Vec::new(),
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            GridError::TooManyReads | GridError::Elsewhere { .. } => Some(1),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;
    use crate::grid::write_error::{At, Problems};

    #[test]
    fn records_that_do_not_exist_are_one_message_or_a_list() {
        let one = ApiError::from(GridError::nonexistent("r1"));
        assert_eq!(
            one,
            ApiError::new(ErrorCode::NonexistentRecordId, "Record \"r1\" does not exist.")
        );
        let two = ApiError::from(GridError::NonexistentRecords(vec!["a".into(), "b".into()]));
        assert_eq!(two.message, "2 records do not exist; the request changed nothing.");
        assert_eq!(two.messages, ["Record \"a\" does not exist.", "Record \"b\" does not exist."]);
    }

    #[test]
    fn messages_are_the_api_s() {
        let view = ApiError::from(GridError::ViewNotFound("v1".into()));
        assert_eq!(view, ApiError::not_found(ErrorCode::ViewIsNotFound, "View", "v1"));
        let columns = ApiError::from(GridError::TooManyColumnIds { shown: 2 });
        assert_eq!(
            columns.message,
            "columnIds names more than 6 distinct columns: the view has 2 columns and there are \
             4 predefined ones."
        );
        let missing = ApiError::from(GridError::NoMergeOptions);
        assert_eq!(missing, ApiError::missing_parameter("mergeRecordOptions"));
        let busy = ApiError::from(GridError::TooManyReads);
        assert_eq!((busy.code, busy.retry_after), (ErrorCode::TooManyRequests, Some(1)));
        assert!(busy.message.starts_with("The company already has 256 filtered or sorted reads"));
        let held = GridError::TooManyHeld.to_string();
        assert_eq!(
            held,
            "The branch has 4096 writes waiting for a schema change, import or merge; try again \
             shortly."
        );
    }

    #[test]
    fn a_wrapped_refusal_keeps_its_code_message_and_list() {
        let mut problems = Problems::default();
        problems.add(ErrorCode::DuplicateRecordId, At::record("records[0]"), "twice.");
        problems.add(ErrorCode::InvalidRecordId, At::record("records[1]"), "empty.");
        let refused = problems.into_result().expect_err("two problems");
        let direct = ApiError::from(refused.clone());
        assert_eq!(ApiError::from(GridError::from(refused)), direct);
        assert_eq!(direct.code, ErrorCode::DuplicateRecordId);
        assert_eq!(direct.messages.len(), 2);
        let schema = SchemaError::ViewNotFound("View \"v\" could not be found.".into());
        let wrapped = ApiError::from(GridError::from(schema.clone()));
        assert_eq!(wrapped, ApiError::from(schema));
    }
}
