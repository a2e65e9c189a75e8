//! Glossary import and export.
//!
//! `POST /v1/glossaries/{id}/import?importOption=ADD|UPDATE|UPDATE_ONLY` (default `UPDATE`,
//! `catalog::glossaries::merge`), multipart with a `file` part of at most
//! [`MAX_GLOSSARY_FILE_BYTES`], streamed to `<data dir>/imports/` and removed after. The type
//! is told by the content: a zip archive is XLSX, a document starting with `<` (after a BOM
//! and spaces) TBX, anything else CSV; an xls workbook (OLE) is refused. The file is read on
//! a blocking thread (`io::glossary`), then merged and committed in one change set: 201 with
//! `{"added", "updated", "skipped"}`; a bad file is a 400 naming the entry or row and changes
//! nothing.
//!
//! `GET /v1/glossaries/{id}/export?format=tbx|csv|xlsx&fields=&langs=`: `format` defaults to
//! `tbx` (`xls` is refused: use `xlsx`); `fields` picks among `id`, `definition`, `note`
//! (terms are always written); `langs` the languages (each a language of the glossary), all
//! by default. Both lists repeat the parameter or separate by commas. The file is
//! `application/octet-stream` (as every export, decisions.md section 3) with
//! `Content-Disposition: attachment` and the glossary's name.

use std::io::{BufReader, Read};
use std::path::PathBuf;

use actix_multipart::Multipart;
use actix_web::{get, post, web, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use utoipa_actix_web::service_config::ServiceConfig;

use super::published;
use crate::api::multipart::{bad_multipart, part_to_file, skip_part, Budget};
use crate::api::{created, exec, query_pairs};
use crate::auth::{Principal, Privilege};
use crate::catalog::glossaries::{find, prepare_import, ImportOption, ImportSummary};
use crate::error::{ApiError, ApiResult};
use crate::io::error::{FileError, FileResult};
use crate::io::glossary::{table, tbx, Concept, Fields, LangCode};
use crate::state::AppState;

/// The largest glossary file an import takes.
pub const MAX_GLOSSARY_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// An uploaded file, removed when dropped.
struct Upload(PathBuf);

impl Drop for Upload {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Receives the `file` part (other parts are drained).
async fn receive(state: &AppState, mut body: Multipart) -> ApiResult<Option<Upload>> {
    let mut upload = None;
    let mut budget = Budget::default();
    while let Some(field) = body.next().await {
        let mut field = field.map_err(bad_multipart)?;
        budget.part()?;
        if field.name() == Some("file") && upload.is_none() {
            let name = format!("{}.glossary", crate::ids::generate());
            let file = Upload(state.data_dir.join("imports").join(name));
            part_to_file(&mut field, &file.0, MAX_GLOSSARY_FILE_BYTES).await?;
            upload = Some(file);
        } else {
            skip_part(&mut field).await?;
        }
    }
    Ok(upload)
}

/// Reads a glossary file of any of the three types, told by its first bytes.
fn read_file(upload: &Upload) -> FileResult<Vec<Concept>> {
    let open = || {
        std::fs::File::open(&upload.0)
            .map_err(|e| FileError::Content(format!("opening the upload: {e}")))
    };
    let mut file = open()?;
    let size =
        file.metadata().map_err(|e| FileError::Content(format!("reading the upload: {e}")))?.len();
    let mut head = [0u8; 512];
    let read =
        file.read(&mut head).map_err(|e| FileError::Content(format!("reading the upload: {e}")))?;
    let head = &head[..read];
    if head.starts_with(b"PK\x03\x04") {
        return table::read_xlsx(open()?, size);
    }
    if head.starts_with(&[0xD0, 0xCF, 0x11, 0xE0]) {
        return Err(FileError::Content(
            "The file is an xls workbook, which is not read; save it as xlsx.".into(),
        ));
    }
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    if text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<') {
        return tbx::read(BufReader::new(open()?));
    }
    table::read_csv(BufReader::new(open()?))
}

#[utoipa::path(tag = "glossary", params(
    ("id" = i64, Path),
    ("importOption" = Option<String>, Query, description = "ADD, UPDATE (the default) or UPDATE_ONLY"),
), responses((status = 201, body = crate::catalog::glossaries::ImportSummary, description = "what the import added, updated and skipped")))]
#[post("/v1/glossaries/{id}/import")]
async fn import_glossary(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> ApiResult<HttpResponse> {
    let glossary = published(&state, &p, &id, Privilege::Write)?.glossary.id;
    let option = query_pairs(&req)?.into_iter().find(|(k, _)| k == "importOption").map(|(_, v)| v);
    let option = ImportOption::parse(option.as_deref()).map_err(ApiError::bad_request)?;
    let upload = receive(&state, Multipart::new(req.headers(), payload)).await?;
    let upload =
        upload.ok_or_else(|| ApiError::bad_request("The multipart part file is required."))?;
    let entries = web::block(move || read_file(&upload))
        .await
        .map_err(|e| ApiError::internal(format!("the reader stopped: {e}")))??;
    created(&import_entries(&state, p, glossary, entries, option).await?)
}

/// Times an import is merged off the supervisor before it is merged on it.
const MERGE_ATTEMPTS: usize = 3;

/// Merges the file's entries off the supervisor and commits them there; when another write
/// to the glossary came in between, merges again (at most `MERGE_ATTEMPTS` times), then on the
/// supervisor, which nothing can pass: no write is lost, and the supervisor merges only for an
/// import racing a stream of writes to the same glossary.
async fn import_entries(
    state: &AppState,
    p: Principal,
    glossary: u64,
    mut entries: Vec<Concept>,
    option: ImportOption,
) -> ApiResult<ImportSummary> {
    for _ in 0..MERGE_ATTEMPTS {
        let base = find(&state.routes.glossaries, &p, glossary, Privilege::Write)?;
        let (prepared, kept) = web::block(move || {
            let kept = entries.clone();
            (prepare_import(base, entries, option), kept)
        })
        .await
        .map_err(|e| ApiError::internal(format!("the merge stopped: {e}")))?;
        let (prepared, checker) = (prepared?, p.clone());
        let committed = exec(state, move |s| s.commit_glossary_import(&checker, prepared));
        if let Some(summary) = committed.await?? {
            return Ok(summary);
        }
        entries = kept;
    }
    tracing::debug!(glossary, "the glossary kept changing while an import merged");
    Ok(exec(state, move |s| s.import_glossary_entries(&p, glossary, entries, option)).await??)
}

/// A list parameter's values: repeated, or separated by commas.
fn list_values<'a>(
    query: &'a [(String, String)],
    name: &'a str,
) -> impl Iterator<Item = &'a str> + 'a {
    query
        .iter()
        .filter(move |(k, _)| k == name)
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// What an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExportFormat {
    Tbx,
    Csv,
    Xlsx,
}

fn parse_format(value: Option<&str>) -> ApiResult<ExportFormat> {
    match value.map(str::trim).unwrap_or_default().to_ascii_lowercase().as_str() {
        "" | "tbx" => Ok(ExportFormat::Tbx),
        "csv" => Ok(ExportFormat::Csv),
        "xlsx" => Ok(ExportFormat::Xlsx),
        "xls" => Err(ApiError::bad_request("format xls is not written; use xlsx.")),
        other => Err(ApiError::bad_request(format!(
            "format \"{}\" is unknown; use tbx, csv or xlsx.",
            crate::io::csv_import::clip(other, 40)
        ))),
    }
}

#[utoipa::path(tag = "glossary", params(
    ("id" = i64, Path),
    ("format" = Option<String>, Query, description = "tbx (the default), csv or xlsx"),
    ("fields" = Option<Vec<String>>, Query, description = "id, definition, note (all by default)"),
    ("langs" = Option<Vec<String>>, Query, description = "languages of the glossary (all by default)"),
), responses((status = 200, description = "the glossary file, as an attachment")))]
#[get("/v1/glossaries/{id}/export")]
async fn export_glossary(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let glossary = published(&state, &p, &id, Privilege::Read)?;
    let query = query_pairs(&req)?;
    let format = parse_format(query.iter().find(|(k, _)| k == "format").map(|(_, v)| v.as_str()))?;
    let fields = Fields::parse(list_values(&query, "fields"))?;
    let mut langs = Vec::new();
    for value in list_values(&query, "langs") {
        let lang =
            LangCode::parse(value).map_err(|e| ApiError::bad_request(format!("langs: {e}")))?;
        if !glossary.glossary.langs.contains(&lang) {
            return Err(ApiError::bad_request(format!(
                "langs: {lang} is not a language of the glossary."
            )));
        }
        langs.push(lang);
    }
    let chosen = !langs.is_empty();
    if !chosen {
        langs = glossary.glossary.langs.clone();
    }
    let name = glossary.glossary.name.clone();
    let bytes = web::block(move || {
        let entries: Vec<Concept> = glossary.entries.values().cloned().collect();
        match format {
            ExportFormat::Tbx => {
                let only = chosen.then_some(langs.as_slice());
                Ok(tbx::write(
                    &glossary.glossary.name,
                    glossary.glossary.langs.first(),
                    &entries,
                    fields,
                    only,
                ))
            }
            ExportFormat::Csv => table::write_csv(&entries, fields, &langs),
            ExportFormat::Xlsx => table::write_xlsx(&entries, fields, &langs),
        }
    })
    .await
    .map_err(|e| ApiError::internal(format!("the writer stopped: {e}")))??;
    let extension = match format {
        ExportFormat::Tbx => "tbx",
        ExportFormat::Csv => "csv",
        ExportFormat::Xlsx => "xlsx",
    };
    Ok(crate::api::files::attachment(&format!("{name}.{extension}")).body(bytes))
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(import_glossary).service(export_glossary);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_formats_parse() {
        assert_eq!(parse_format(None).ok(), Some(ExportFormat::Tbx));
        assert_eq!(parse_format(Some("XLSX")).ok(), Some(ExportFormat::Xlsx));
        assert!(parse_format(Some("xls")).is_err() && parse_format(Some("po")).is_err());
        let query =
            vec![("langs".to_owned(), "en, fr".to_owned()), ("langs".to_owned(), "ja".to_owned())];
        assert_eq!(list_values(&query, "langs").collect::<Vec<_>>(), vec!["en", "fr", "ja"]);
    }
}
