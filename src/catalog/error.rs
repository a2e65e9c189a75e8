//! `CatalogError`: why the catalogue (the `Supervisor`'s companies, projects, databases, grids,
//! branches, keys, tasks, backups, share links, files, settings, webhooks and CDNs) refused a
//! request or could not make a change durable: one case per kind of refusal, each answered with
//! one code (`impl Coded`, exhaustive), and the message clients read as its `Display`.
//!
//! It knows nothing of HTTP: handlers turn it into an `ApiError` with `?` (same code, the
//! message as displayed). Access checks refuse with auth's own `Denied`, carried as it is.

use std::fmt;

use super::grids::MAX_METADATA_KEYS;
use crate::auth::Denied;
use crate::error::{Coded, ErrorCode};

/// The catalogue's entities a lookup can miss, each with its own not-found code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    Company,
    Project,
    Database,
    Grid,
    Branch,
    View,
    Key,
    Task,
    Backup,
    File,
    Category,
    Webhook,
    Glossary,
    /// A glossary's entry.
    Term,
    Cdn,
    TransMem,
}

impl Missing {
    /// The code a lookup that misses this entity answers with.
    pub fn code(self) -> ErrorCode {
        match self {
            Missing::Company => ErrorCode::CompanyIsNotFound,
            Missing::Project => ErrorCode::ProjectIsNotFound,
            Missing::Database => ErrorCode::DatabaseIsNotFound,
            Missing::Grid => ErrorCode::GridIsNotFound,
            Missing::Branch => ErrorCode::BranchIsNotFound,
            Missing::View => ErrorCode::ViewIsNotFound,
            Missing::Key => ErrorCode::KeyIsNotFound,
            Missing::Task => ErrorCode::TaskIsNotFound,
            Missing::Backup => ErrorCode::BackupIsNotFound,
            Missing::File => ErrorCode::FileIsNotFound,
            Missing::Category => ErrorCode::CategoryIsNotFound,
            Missing::Webhook => ErrorCode::WebhookIsNotFound,
            Missing::Glossary => ErrorCode::GlossaryIsNotFound,
            Missing::Term => ErrorCode::TermIsNotFound,
            Missing::Cdn => ErrorCode::CdnIsNotFound,
            Missing::TransMem => ErrorCode::TransMemIsNotFound,
        }
    }
}

/// The entity's name as a not-found message starts with it (`Grid "x" could not be found.`).
impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Missing::Company => "Company",
            Missing::Project => "Project",
            Missing::Database => "Database",
            Missing::Grid => "Grid",
            Missing::Branch => "Branch",
            Missing::View => "View",
            Missing::Key => "Key",
            Missing::Task => "Task",
            Missing::Backup => "Backup",
            Missing::File => "File",
            Missing::Category => "Category",
            Missing::Webhook => "Webhook",
            Missing::Glossary => "Glossary",
            Missing::Term => "Term",
            Missing::Cdn => "CDN",
            Missing::TransMem => "Translation memory",
        })
    }
}

/// A refused catalogue request, or a change the catalogue could not make durable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CatalogError {
    /// An entity that does not exist, or that the key may not know of (another company's).
    #[error("{what} \"{id}\" could not be found.")]
    NotFound { what: Missing, id: String },
    /// A view whose share link was never enabled.
    #[error("View \"{view_id}\" has no share link.")]
    NoShareLink { view_id: String },
    /// A request the catalogue cannot take: a bad name, id, description or setting, a limit
    /// reached, or a deletion it forbids.
    #[error("{0}")]
    Invalid(String),
    /// An id the client chose for a `what` (database, grid) that is already in use.
    #[error("A {what} with id \"{id}\" already exists.")]
    IdTaken { what: &'static str, id: String },
    /// Grid metadata with more than `MAX_METADATA_KEYS` keys.
    #[error(
        "A grid has at most {max} metadata keys; this one would have {keys}.",
        max = MAX_METADATA_KEYS
    )]
    TooManyMetadataKeys { keys: usize },
    /// An access check of the calling key refused.
    #[error(transparent)]
    Denied(#[from] Denied),
    /// A key asked to make or revoke a key the catalogue's rules keep from it (one beyond its
    /// reach, or the server's admin key asked by another key).
    #[error("{0}")]
    KeyRefused(&'static str),
    /// A branch merged into itself.
    #[error("A branch cannot be merged into itself.")]
    MergeIntoItself,
    /// Two branches without a common ancestor (of different grids).
    #[error("The two branches are not related.")]
    UnrelatedBranches,
    /// The WAL refused a `what` (its `reason`): the request may succeed later.
    #[error("The {what} could not be logged: {reason}")]
    NotLogged { what: &'static str, reason: String },
    /// A logged change set that was not made durable.
    #[error("The catalogue could not be written.")]
    NotWritten,
    /// Cluster mode: another node's change sets landed first and collide with this one (they
    /// touch one of its entities, or either side hands out numbers): nothing was changed.
    #[error("The catalogue changed on another node; retry.")]
    ChangedElsewhere,
    /// A broken invariant of the catalogue.
    #[error("{0}")]
    Internal(&'static str),
    /// A task that runs one at a time is running.
    #[error("{0}")]
    TaskRunning(std::borrow::Cow<'static, str>),
    /// A glossary request the catalogue refuses (its own code).
    #[error(transparent)]
    Glossary(#[from] super::glossaries::GlossaryRefused),
    /// In a cluster: a grid's lease, log or image that the cluster could not take or store, or
    /// the catalogue's log unreachable (NATS down, no quorum, a timeout).
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
}

/// Result of every catalogue operation.
pub type CatalogResult<T> = Result<T, CatalogError>;

impl CatalogError {
    /// `<What> "<id>" could not be found.` with `what`'s own code.
    pub fn not_found(what: Missing, id: impl fmt::Display) -> CatalogError {
        CatalogError::NotFound { what, id: id.to_string() }
    }

    pub fn invalid(message: impl Into<String>) -> CatalogError {
        CatalogError::Invalid(message.into())
    }

    /// Whether this is a lookup that missed a `what`.
    pub fn is_missing(&self, what: Missing) -> bool {
        matches!(self, CatalogError::NotFound { what: missed, .. } if *missed == what)
    }
}

impl Coded for CatalogError {
    fn code(&self) -> ErrorCode {
        match self {
            CatalogError::NotFound { what, .. } => what.code(),
            CatalogError::NoShareLink { .. } => ErrorCode::ShareIsNotFound,
            CatalogError::Invalid(_) => ErrorCode::BadRequest,
            CatalogError::TaskRunning(_) => ErrorCode::TaskIsRunning,
            CatalogError::IdTaken { .. } => ErrorCode::IdAlreadyExists,
            CatalogError::TooManyMetadataKeys { .. } => ErrorCode::MetadataExceedMaximumKey,
            CatalogError::Denied(denied) => denied.code(),
            CatalogError::KeyRefused(_) => ErrorCode::AccessDenied,
            CatalogError::MergeIntoItself | CatalogError::UnrelatedBranches => {
                ErrorCode::Unprocessable
            }
            CatalogError::NotLogged { .. } | CatalogError::ChangedElsewhere => {
                ErrorCode::ServiceUnavailable
            }
            CatalogError::NotWritten => ErrorCode::InternalServerError,
            CatalogError::Internal(_) => ErrorCode::InternalServerError,
            CatalogError::Glossary(refused) => refused.code(),
            CatalogError::Cluster(err) => err.code(),
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            CatalogError::Cluster(err) => err.retry_after(),
            CatalogError::ChangedElsewhere => Some(1),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;

    #[test]
    fn not_found_keeps_the_api_s_message_and_code() {
        let err = ApiError::from(CatalogError::not_found(Missing::Company, 7));
        assert_eq!(err, ApiError::not_found(ErrorCode::CompanyIsNotFound, "Company", "7"));
        let err = ApiError::from(CatalogError::not_found(Missing::Category, "c1"));
        assert_eq!(err.code, ErrorCode::CategoryIsNotFound);
        assert_eq!(err.message, "Category \"c1\" could not be found.");
    }

    #[test]
    fn refusals_answer_their_codes() {
        let taken = CatalogError::IdTaken { what: "grid", id: "g1".to_owned() };
        assert_eq!(taken.code(), ErrorCode::IdAlreadyExists);
        assert_eq!(taken.to_string(), "A grid with id \"g1\" already exists.");
        let metadata = CatalogError::TooManyMetadataKeys { keys: 51 };
        assert_eq!(
            metadata.to_string(),
            "A grid has at most 50 metadata keys; this one would have 51."
        );
        let denied = ApiError::from(CatalogError::from(Denied::NotAdmin));
        assert_eq!(
            denied,
            ApiError::access_denied("Only the server's admin key may manage companies.")
        );
        assert!(CatalogError::not_found(Missing::Grid, "g").is_missing(Missing::Grid));
        assert!(!CatalogError::not_found(Missing::Grid, "g").is_missing(Missing::Branch));
    }
}
