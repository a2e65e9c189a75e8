//! What the multipart endpoints (import, file upload) share: the errors of a body that is not
//! multipart (415) or not valid (400), a part streamed into a file under a size limit (413),
//! and a text part read under a length limit.

use std::path::Path;

use actix_multipart::{Field, MultipartError};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use super::storage_error;
use crate::error::{ApiError, ErrorCode};

/// The error of a multipart body: 415 when it is not multipart at all, else 400.
pub fn bad_multipart(err: MultipartError) -> ApiError {
    match err {
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

/// A text part of at most `limit` bytes.
pub async fn part_text(field: &mut Field, name: &str, limit: usize) -> Result<String, ApiError> {
    let mut text = Vec::new();
    while let Some(chunk) = field.next().await {
        text.extend_from_slice(&chunk.map_err(bad_multipart)?);
        if text.len() > limit {
            return Err(ApiError::bad_request(format!("The {name} part is too long.")));
        }
    }
    String::from_utf8(text)
        .map_err(|_| ApiError::bad_request(format!("The {name} part is not UTF-8.")))
}
