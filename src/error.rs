//! The one table of error codes: each code's name and HTTP status in one place, and the JSON
//! error body every failure is rendered as.
//!
//! Each domain answers with an error type of its own that maps every case to one code (`Coded`);
//! handlers turn it into an `ApiError` with `?` and none of them picks a status by hand. The
//! request path and timestamp are filled in by `api::errors` middleware, which also maps actix's
//! own errors.

use std::fmt;

use actix_web::http::StatusCode;
use serde::Serialize;

macro_rules! error_codes {
    ($($variant:ident => ($name:literal, $status:expr)),* $(,)?) => {
        /// Every error code the API can answer with (gridly-api.md Errors, decisions.md section 3).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode { $($variant),* }

        impl ErrorCode {
            /// The code as clients see it in the `code` field.
            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $name),* }
            }

            /// The HTTP status this code is always answered with.
            pub fn status(self) -> StatusCode {
                match self { $(ErrorCode::$variant => $status),* }
            }

            /// Every code, for tests and documentation.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];
        }
    };
}

error_codes! {
    BadRequest => ("badRequest", StatusCode::BAD_REQUEST),
    RequestParameterMissing => ("requestParameterMissing", StatusCode::BAD_REQUEST),
    RequestBodyMissing => ("requestBodyMissing", StatusCode::BAD_REQUEST),
    InvalidColumnId => ("invalidColumnId", StatusCode::BAD_REQUEST),
    NullRecordId => ("nullRecordId", StatusCode::BAD_REQUEST),
    InvalidRecordId => ("invalidRecordId", StatusCode::BAD_REQUEST),
    InvalidLengthRecordId => ("invalidLengthRecordId", StatusCode::BAD_REQUEST),
    DuplicateRecordId => ("duplicateRecordId", StatusCode::BAD_REQUEST),
    RequestRecordsExceedLimitation => ("requestRecordsExceedLimitation", StatusCode::BAD_REQUEST),
    InvalidFilterField => ("invalidFilterField", StatusCode::BAD_REQUEST),
    InvalidFilterOperator => ("invalidFilterOperator", StatusCode::BAD_REQUEST),
    InvalidFilterValue => ("invalidFilterValue", StatusCode::BAD_REQUEST),
    MissingFilterValue => ("missingFilterValue", StatusCode::BAD_REQUEST),
    FilterColumnNotFound => ("filterColumnNotFound", StatusCode::BAD_REQUEST),
    InvalidSortField => ("invalidSortField", StatusCode::BAD_REQUEST),
    InvalidSortDirection => ("invalidSortDirection", StatusCode::BAD_REQUEST),
    SortColumnNotFound => ("sortColumnNotFound", StatusCode::BAD_REQUEST),
    InvalidPaging => ("invalidPaging", StatusCode::BAD_REQUEST),
    MetadataExceedMaximumKey => ("metadataExceedMaximumKey", StatusCode::BAD_REQUEST),
    ColumnIsNotEditableInView => ("columnIsNotEditableInView", StatusCode::BAD_REQUEST),
    ColumnIsNotFilesType => ("columnIsNotFilesType", StatusCode::BAD_REQUEST),
    Unauthorized => ("unauthorized", StatusCode::UNAUTHORIZED),
    AccessDenied => ("accessDenied", StatusCode::FORBIDDEN),
    NotFound => ("notFound", StatusCode::NOT_FOUND),
    GridIsNotFound => ("gridIsNotFound", StatusCode::NOT_FOUND),
    ViewIsNotFound => ("viewIsNotFound", StatusCode::NOT_FOUND),
    ColumnNotFoundInView => ("columnNotFoundInView", StatusCode::NOT_FOUND),
    NonexistentRecordId => ("nonexistentRecordId", StatusCode::NOT_FOUND),
    ReferenceRecordNotFound => ("referenceRecordNotFound", StatusCode::NOT_FOUND),
    ProjectIsNotFound => ("projectIsNotFound", StatusCode::NOT_FOUND),
    DatabaseIsNotFound => ("databaseIsNotFound", StatusCode::NOT_FOUND),
    BranchIsNotFound => ("branchIsNotFound", StatusCode::NOT_FOUND),
    DependencyIsNotFound => ("dependencyIsNotFound", StatusCode::NOT_FOUND),
    FileIsNotFound => ("fileIsNotFound", StatusCode::NOT_FOUND),
    TaskIsNotFound => ("taskIsNotFound", StatusCode::NOT_FOUND),
    ShareIsNotFound => ("shareIsNotFound", StatusCode::NOT_FOUND),
    CompanyIsNotFound => ("companyIsNotFound", StatusCode::NOT_FOUND),
    KeyIsNotFound => ("keyIsNotFound", StatusCode::NOT_FOUND),
    BackupIsNotFound => ("backupIsNotFound", StatusCode::NOT_FOUND),
    CategoryIsNotFound => ("categoryIsNotFound", StatusCode::NOT_FOUND),
    WebhookIsNotFound => ("webhookIsNotFound", StatusCode::NOT_FOUND),
    GlossaryIsNotFound => ("glossaryIsNotFound", StatusCode::NOT_FOUND),
    TermIsNotFound => ("termIsNotFound", StatusCode::NOT_FOUND),
    CdnIsNotFound => ("cdnIsNotFound", StatusCode::NOT_FOUND),
    TransMemIsNotFound => ("transMemIsNotFound", StatusCode::NOT_FOUND),
    PathIsNotFound => ("pathIsNotFound", StatusCode::NOT_FOUND),
    MethodNotAllowed => ("methodNotAllowed", StatusCode::METHOD_NOT_ALLOWED),
    RequestTimeout => ("requestTimeout", StatusCode::REQUEST_TIMEOUT),
    PreconditionFailed => ("preconditionFailed", StatusCode::PRECONDITION_FAILED),
    RecordIdAlreadyExists => ("recordIdAlreadyExists", StatusCode::CONFLICT),
    CellIsLocked => ("cellIsLocked", StatusCode::CONFLICT),
    DependencyAlreadyExists => ("dependencyAlreadyExists", StatusCode::CONFLICT),
    TaskIsRunning => ("taskIsRunning", StatusCode::CONFLICT),
    IdAlreadyExists => ("idAlreadyExists", StatusCode::CONFLICT),
    PayloadTooLarge => ("payloadTooLarge", StatusCode::PAYLOAD_TOO_LARGE),
    UnsupportedMediaType => ("unsupportedMediaType", StatusCode::UNSUPPORTED_MEDIA_TYPE),
    Unprocessable => ("unprocessable", StatusCode::UNPROCESSABLE_ENTITY),
    TooManyRequests => ("tooManyRequests", StatusCode::TOO_MANY_REQUESTS),
    InternalServerError => ("internalServerError", StatusCode::INTERNAL_SERVER_ERROR),
    ServiceUnavailable => ("serviceUnavailable", StatusCode::SERVICE_UNAVAILABLE),
}

/// A domain error's place in the one table: each domain's error type (`GridError`,
/// `WriteError`, `DurabilityError`, `QueryError` ...) maps every one of its cases to a code,
/// exhaustively, and becomes an `ApiError` with that code, its own message (`Display`) and what
/// else it says (`From<E: Coded>`).
pub trait Coded: fmt::Display {
    fn code(&self) -> ErrorCode;

    /// Each problem, when the error lists several (the body's `messages`; its `Display` then
    /// sums them up). None by default.
    fn listed(&self) -> Vec<String> {
        Vec::new()
    }

    /// Seconds the client should wait before retrying (`Retry-After`). None by default.
    fn retry_after(&self) -> Option<u64> {
        None
    }
}

impl<E: Coded> From<E> for ApiError {
    fn from(err: E) -> ApiError {
        ApiError {
            code: err.code(),
            message: err.to_string(),
            messages: err.listed(),
            retry_after: err.retry_after(),
        }
    }
}

/// A failed request: the code, one message, and (when several problems were found) one message
/// per problem.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub messages: Vec<String>,
    /// Seconds to wait before retrying (sent as `Retry-After`, with `tooManyRequests`).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError { code, message: message.into(), messages: Vec::new(), retry_after: None }
    }

    /// An error that lists several problems; `message` summarizes them.
    pub fn with_messages(
        code: ErrorCode,
        message: impl Into<String>,
        messages: Vec<String>,
    ) -> Self {
        ApiError { code, message: message.into(), messages, retry_after: None }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::BadRequest, message)
    }

    pub fn missing_parameter(name: &str) -> ApiError {
        ApiError::new(
            ErrorCode::RequestParameterMissing,
            format!("Required request parameter '{name}' is not present."),
        )
    }

    /// `<Kind> "<id>" could not be found.` with the kind's own code.
    pub fn not_found(code: ErrorCode, kind: &str, id: &str) -> ApiError {
        ApiError::new(code, format!("{kind} \"{id}\" could not be found."))
    }

    pub fn access_denied(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::AccessDenied, message)
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::InternalServerError, message)
    }

    /// 503 `serviceUnavailable` with `Retry-After: 1`: the request may succeed at once when
    /// tried again (another node of a cluster, or its replica, is a moment behind or away).
    pub fn retry_soon(message: impl Into<String>) -> ApiError {
        ApiError { retry_after: Some(1), ..ApiError::new(ErrorCode::ServiceUnavailable, message) }
    }

    pub fn status(&self) -> StatusCode {
        self.code.status()
    }

    /// The JSON body for this error, answered at `path` now. A message that repeats a huge
    /// value a request sent is cut to `MAX_MESSAGE_BYTES`, and at most `MAX_MESSAGES` are
    /// listed: an error's answer stays small whatever the request held.
    pub fn body(&self, path: &str) -> ErrorBody<'_> {
        ErrorBody {
            status: self.code.status().as_u16(),
            code: self.code.as_str(),
            message: clipped(&self.message),
            messages: (!self.messages.is_empty())
                .then(|| self.messages.iter().take(MAX_MESSAGES).map(|m| clipped(m)).collect()),
            path: path.to_owned(),
            timestamp: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3f+00:00").to_string(),
        }
    }
}

/// The most bytes of one message an error's answer holds.
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024;
/// The most messages an error's answer lists.
pub const MAX_MESSAGES: usize = 1000;

/// `text`, or its first `MAX_MESSAGE_BYTES` (at a character's boundary) and `...`.
fn clipped(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_MESSAGE_BYTES {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}...", &text[..end]))
}

/// The error body of decisions.md section 3.
#[derive(Debug, Serialize)]
pub struct ErrorBody<'a> {
    pub status: u16,
    pub code: &'static str,
    pub message: std::borrow::Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<std::borrow::Cow<'a, str>>>,
    pub path: String,
    pub timestamp: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl actix_web::ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.code.status()
    }

    /// Rendered without the request path; `api::errors::render_errors` replaces this body with
    /// the full one (it knows the path). Kept complete so the error is valid JSON either way.
    fn error_response(&self) -> actix_web::HttpResponse {
        let body = serde_json::to_vec(&self.body("")).unwrap_or_else(|_| {
            br#"{"status":500,"code":"internalServerError","message":"error serialization failed"}"#
                .to_vec()
        });
        let mut response = actix_web::HttpResponseBuilder::new(self.code.status())
            .content_type("application/json")
            .body(body);
        if let Some(seconds) = self.retry_after {
            response.headers_mut().insert(
                actix_web::http::header::RETRY_AFTER,
                actix_web::http::header::HeaderValue::from(seconds),
            );
        }
        response
    }
}

impl From<actix::MailboxError> for ApiError {
    fn from(err: actix::MailboxError) -> ApiError {
        ApiError::new(
            ErrorCode::ServiceUnavailable,
            format!("The server is shutting down ({err})."),
        )
    }
}

/// Result of every API operation.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// An error's answer stays small whatever the message repeats of a request.
    #[test]
    fn a_huge_message_is_clipped_in_the_answer_at_a_character_boundary() {
        let huge = format!("type \"{}\" is not supported", "é".repeat(5_000_000));
        let err = ApiError::with_messages(ErrorCode::BadRequest, huge.clone(), vec![huge; 3]);
        let body = serde_json::to_string(&err.body("/p")).expect("serializes");
        assert!(body.len() < 5 * MAX_MESSAGE_BYTES, "{}", body.len());
        let parsed: serde_json::Value = serde_json::from_str(&body).expect("valid JSON");
        let message = parsed["message"].as_str().expect("a message");
        assert!(message.starts_with("type \"éé") && message.ends_with("..."), "{message:.40}");
        assert_eq!(parsed["messages"].as_array().map(Vec::len), Some(3));
        let small = ApiError::bad_request("short");
        assert_eq!(small.body("/p").message, "short");
    }

    #[test]
    fn codes_are_unique_and_camel_case() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()), "duplicate {}", code.as_str());
            let first = code.as_str().chars().next().expect("codes are not empty");
            assert!(first.is_ascii_lowercase());
        }
    }

    #[test]
    fn statuses_follow_decisions() {
        assert_eq!(ErrorCode::ViewIsNotFound.status(), StatusCode::NOT_FOUND);
        assert_eq!(ErrorCode::RecordIdAlreadyExists.status(), StatusCode::CONFLICT);
        assert_eq!(ErrorCode::Unprocessable.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(ErrorCode::ColumnIsNotEditableInView.status(), StatusCode::BAD_REQUEST);
    }
}
