//! What the multipart endpoints (import, file upload) share: the errors of a body that is not
//! multipart (415), not valid (400) or not received in time (408, `--body-timeout-ms`), a part
//! streamed into a file under a size limit (413), and the `Budget` of a body: at most
//! `MAX_PARTS` parts, text parts of at most `MAX_TEXT_BYTES` together, and parts of names
//! the endpoint does not know drained without being kept.

use std::path::Path;

use actix_multipart::{Field, MultipartError};
use actix_web::error::PayloadError;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use super::storage_error;
use crate::error::{ApiError, ApiResult, ErrorCode};

/// The most parts a multipart body may have.
pub const MAX_PARTS: usize = 64;
/// The most bytes the text parts of a multipart body may have together.
pub const MAX_TEXT_BYTES: usize = 1024 * 1024;

/// The error of a multipart body: 415 when it is not multipart at all, 408 when the body was
/// not received within the body timeout, else 400.
pub fn bad_multipart(err: MultipartError) -> ApiError {
    match err {
        MultipartError::Payload(PayloadError::Io(e))
            if e.kind() == std::io::ErrorKind::TimedOut =>
        {
            ApiError::new(ErrorCode::RequestTimeout, "The request body was not received in time.")
        }
        MultipartError::ContentTypeMissing
        | MultipartError::ContentTypeParse
        | MultipartError::ContentTypeIncompatible => ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "The body must be multipart/form-data with a file part.",
        ),
        err => ApiError::bad_request(format!("The body is not valid multipart/form-data: {err}")),
    }
}

/// Streams a part into a new file at `path` (its directory is created), synced; 413 past
/// `limit` bytes. Returns the size. The caller removes the file if this fails.
pub async fn part_to_file(field: &mut Field, path: &Path, limit: u64) -> Result<u64, ApiError> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| storage_error("creating the uploads directory", e))?;
    }
    let mut out =
        tokio::fs::File::create(path).await.map_err(|e| storage_error("creating the upload", e))?;
    let mut size = 0u64;
    while let Some(chunk) = field.next().await {
        let chunk = chunk.map_err(bad_multipart)?;
        size += chunk.len() as u64;
        if size > limit {
            return Err(ApiError::new(
                ErrorCode::PayloadTooLarge,
                format!("The file is larger than {limit} bytes."),
            ));
        }
        out.write_all(&chunk).await.map_err(|e| storage_error("writing the upload", e))?;
    }
    out.sync_all().await.map_err(|e| storage_error("syncing the upload", e))?;
    Ok(size)
}

/// What one multipart body may still use: parts and bytes of text parts.
#[derive(Debug)]
pub struct Budget {
    parts: usize,
    text: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget { parts: MAX_PARTS, text: MAX_TEXT_BYTES }
    }
}

impl Budget {
    /// Counts the next part: 400 past `MAX_PARTS`.
    pub fn part(&mut self) -> ApiResult<()> {
        if self.parts == 0 {
            return Err(ApiError::bad_request(format!(
                "The body has more than {MAX_PARTS} multipart parts."
            )));
        }
        self.parts -= 1;
        Ok(())
    }

    /// A text part of at most `limit` bytes (400 past it), counted against the text parts'
    /// total (413 past `MAX_TEXT_BYTES`). Never holds more than the smaller of the two.
    pub async fn text(&mut self, field: &mut Field, name: &str, limit: usize) -> ApiResult<String> {
        let mut text = Vec::new();
        while let Some(chunk) = field.next().await {
            let chunk = chunk.map_err(bad_multipart)?;
            if chunk.len() > self.text {
                return Err(ApiError::new(
                    ErrorCode::PayloadTooLarge,
                    format!("The text parts are larger than {MAX_TEXT_BYTES} bytes together."),
                ));
            }
            self.text -= chunk.len();
            if text.len() + chunk.len() > limit {
                return Err(ApiError::bad_request(format!("The {name} part is too long.")));
            }
            text.extend_from_slice(&chunk);
        }
        String::from_utf8(text)
            .map_err(|_| ApiError::bad_request(format!("The {name} part is not UTF-8.")))
    }
}

/// Reads a part the endpoint does not use to its end, keeping nothing.
pub async fn skip_part(field: &mut Field) -> ApiResult<()> {
    while let Some(chunk) = field.next().await {
        chunk.map_err(bad_multipart)?;
    }
    Ok(())
}
