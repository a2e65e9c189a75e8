//! Term lookup (gridd's extension): which glossary terms occur in texts, e.g. every cell of a
//! page, to show a translator the glossary's terms and their translations.
//!
//! - `POST /v1/glossaries/{id}/lookup` `{"lang": "en", "text": "..."}` or `{"lang", "texts":
//!   [...]}`: in one glossary.
//! - `POST /v1/glossaries/lookup` with `"glossaryIds": [1, 2]` or `"projectId": 3` (the
//!   glossaries linked to that project the key sees): in several.
//!
//! Answers `{"results": [{"matches": [...]}, ...]}`, one result per text in order; a match is
//! `{"start", "end"}` (character positions, end exclusive), `text` (as in the text),
//! `glossaryId`, `termId`, `lang` and `term` (the glossary's term found), and the entry's
//! `terms` (every language: the translations), `definition` and `note`. Matching is
//! `catalog::glossaries::lookup`'s (case, simple plurals, word boundaries); it reads the
//! published glossaries, never the supervisor. At most [`MAX_TEXTS`] texts of at most
//! [`MAX_TEXT_BYTES`] each, [`MAX_GLOSSARIES`] glossaries.

use actix_web::{post, web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::published;
use crate::api::ok;
use crate::api::sized_json::{object_from_slice, JsonBytes};
use crate::auth::{Principal, Privilege};
use crate::catalog::glossaries::index::Published;
use crate::catalog::glossaries::visible;
use crate::error::{ApiError, ApiResult};
use crate::io::glossary::LangCode;
use crate::state::AppState;

/// The most texts one lookup takes.
pub const MAX_TEXTS: usize = 1000;
/// The longest text, in bytes.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
/// The most glossaries one lookup reads.
pub const MAX_GLOSSARIES: usize = 50;
/// Lookups over more text than this run on the blocking pool.
const INLINE_BYTES: usize = 256 * 1024;

/// A glossary id as a number or a string of one.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum IdValue {
    Number(u64),
    Text(String),
}

/// A lookup's body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LookupRequest {
    /// The texts' language.
    lang: Option<String>,
    text: Option<String>,
    texts: Option<Vec<String>>,
    /// `POST /v1/glossaries/lookup` only: these glossaries.
    glossary_ids: Option<Vec<IdValue>>,
    /// `POST /v1/glossaries/lookup` only: the glossaries linked to this project.
    #[schema(value_type = Option<i64>)]
    project_id: Option<crate::ids::ProjectId>,
}

/// One term found.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchBody {
    start: usize,
    end: usize,
    text: String,
    glossary_id: String,
    term_id: String,
    lang: String,
    term: String,
    #[schema(value_type = Object)]
    terms: indexmap::IndexMap<String, Vec<String>>,
    definition: Option<String>,
    note: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TextResult {
    matches: Vec<MatchBody>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LookupBody {
    results: Vec<TextResult>,
}

/// The request's language and texts, checked.
fn parse(body: &[u8]) -> ApiResult<(LookupRequest, LangCode, Vec<String>)> {
    let mut request: LookupRequest = object_from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("The request body is invalid: {e}")))?;
    let lang = request.lang.as_deref().ok_or_else(|| ApiError::bad_request("lang is required."))?;
    let lang = LangCode::parse(lang).map_err(|e| ApiError::bad_request(format!("lang: {e}")))?;
    let texts = match (request.text.take(), request.texts.take()) {
        (Some(text), None) => vec![text],
        (None, Some(texts)) => texts,
        _ => return Err(ApiError::bad_request("Give either text or texts.")),
    };
    if texts.len() > MAX_TEXTS {
        return Err(ApiError::bad_request(format!("texts lists at most {MAX_TEXTS} texts.")));
    }
    if texts.iter().any(|t| t.len() > MAX_TEXT_BYTES) {
        return Err(ApiError::bad_request(format!("A text is at most {MAX_TEXT_BYTES} bytes.")));
    }
    Ok((request, lang, texts))
}

/// The terms of `glossaries` found in each text.
fn find_all(
    glossaries: &[std::sync::Arc<Published>],
    lang: &LangCode,
    texts: &[String],
) -> LookupBody {
    let matchers: Vec<_> = glossaries.iter().map(|g| (g, g.matcher(lang))).collect();
    let results = texts
        .iter()
        .map(|text| {
            let chars: Vec<(usize, char)> = text.char_indices().collect();
            let byte_at = |i: usize| chars.get(i).map_or(text.len(), |(b, _)| *b);
            let mut matches = Vec::new();
            for (glossary, matcher) in &matchers {
                for found in matcher.find(text) {
                    for owner in matcher.owners(found.pattern) {
                        let Some(entry) = glossary.entries.get(&owner.entry) else { continue };
                        matches.push(MatchBody {
                            start: found.start,
                            end: found.end,
                            text: text[byte_at(found.start)..byte_at(found.end)].to_owned(),
                            glossary_id: glossary.glossary.id.to_string(),
                            term_id: owner.entry.to_string(),
                            lang: owner.lang.to_string(),
                            term: owner.term.clone(),
                            terms: entry
                                .terms
                                .iter()
                                .map(|(l, t)| (l.to_string(), t.clone()))
                                .collect(),
                            definition: entry.definition.clone(),
                            note: entry.note.clone(),
                        });
                    }
                }
            }
            matches.sort_by_key(|m| (m.start, std::cmp::Reverse(m.end)));
            TextResult { matches }
        })
        .collect();
    LookupBody { results }
}

async fn answer(
    glossaries: Vec<std::sync::Arc<Published>>,
    lang: LangCode,
    texts: Vec<String>,
) -> ApiResult<HttpResponse> {
    let bytes: usize = texts.iter().map(String::len).sum();
    let body = if bytes <= INLINE_BYTES {
        find_all(&glossaries, &lang, &texts)
    } else {
        web::block(move || find_all(&glossaries, &lang, &texts))
            .await
            .map_err(|e| ApiError::internal(format!("the lookup stopped: {e}")))?
    };
    ok(&body)
}

#[utoipa::path(tag = "glossary", params(("id" = i64, Path)), request_body = LookupRequest, responses((status = 200, body = LookupBody)))]
#[post("/v1/glossaries/{id}/lookup")]
async fn lookup_one(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let glossary = published(&state, &p, &id, Privilege::Read)?;
    let (request, lang, texts) = parse(&body)?;
    if request.glossary_ids.is_some() || request.project_id.is_some() {
        return Err(ApiError::bad_request(
            "glossaryIds and projectId belong to POST /v1/glossaries/lookup.",
        ));
    }
    answer(vec![glossary], lang, texts).await
}

#[utoipa::path(tag = "glossary", request_body = LookupRequest, responses((status = 200, body = LookupBody)))]
#[post("/v1/glossaries/lookup")]
async fn lookup_many(
    state: web::Data<AppState>,
    p: Principal,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    p.require_company_privilege(Privilege::Read)?;
    let (request, lang, texts) = parse(&body)?;
    let glossaries = match (request.glossary_ids, request.project_id) {
        (Some(ids), None) => {
            if ids.is_empty() || ids.len() > MAX_GLOSSARIES {
                return Err(ApiError::bad_request(format!(
                    "glossaryIds lists 1 to {MAX_GLOSSARIES} glossaries."
                )));
            }
            let mut found = Vec::with_capacity(ids.len());
            for id in ids {
                let id = match id {
                    IdValue::Number(n) => n.to_string(),
                    IdValue::Text(t) => t,
                };
                found.push(published(&state, &p, &id, Privilege::Read)?);
            }
            found
        }
        (None, Some(project)) => {
            let all = state.routes.glossaries.all();
            let linked = all.into_iter().filter(|g| {
                visible(&p, &g.glossary)
                    && g.glossary.projects.iter().any(|l| l.project_id == project)
            });
            linked.take(MAX_GLOSSARIES).collect()
        }
        _ => return Err(ApiError::bad_request("Give either glossaryIds or projectId.")),
    };
    answer(glossaries, lang, texts).await
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(lookup_many).service(lookup_one);
}
