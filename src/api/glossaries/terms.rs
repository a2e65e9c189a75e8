//! A glossary's entries (gridd's own routes: the OpenAPI has none):
//! - `GET /v1/glossaries/{id}/terms?page={"offset":0,"limit":100}&search=&lang=`: entries in
//!   id order, `X-Total-Count` the number matching; `search` keeps entries with a term
//!   containing it (any case), `lang` those with a term in a language it covers.
//! - `POST /v1/glossaries/{id}/terms` (201), `GET`, `PUT` (replaces the entry) and `DELETE`
//!   (204) `/v1/glossaries/{id}/terms/{termId}`.
//!
//! An entry: `{"id": "12", "terms": {"en": ["save game", "savegame"], "ja": ["セーブデータ"]},
//! "definition": "...", "note": "..."}`; a request may give one term of a language as a
//! string. Bounds are `io::glossary`'s (term and text lengths, languages, synonyms).

use actix_web::{delete, get, post, put, web, HttpRequest, HttpResponse};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::{parse_id, published};
use crate::api::listing::{parse_page, MAX_SEARCH_CHARS};
use crate::api::sized_json::{object_from_slice, JsonBytes};
use crate::api::{created, exec, json_response, no_content, ok, query_pairs};
use crate::auth::{Principal, Privilege};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::io::glossary::{Category, Concept, LangCode};
use crate::state::AppState;

/// An entry as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TermBody {
    id: String,
    /// Terms by language code, synonyms in order.
    #[schema(value_type = Object)]
    terms: IndexMap<String, Vec<String>>,
    definition: Option<String>,
    note: Option<String>,
    /// Other data categories (TBX's part of speech, subject field, ...), as imported or given.
    categories: Vec<Category>,
}

pub(super) fn term_body(entry: &Concept) -> TermBody {
    TermBody {
        id: entry.id.unwrap_or_default().to_string(),
        terms: entry.terms.iter().map(|(l, t)| (l.to_string(), t.clone())).collect(),
        definition: entry.definition.clone(),
        note: entry.note.clone(),
        categories: entry.categories.clone(),
    }
}

/// One language's terms in a request: a term or a list of them.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum TermList {
    One(String),
    Many(Vec<String>),
}

/// An entry as a request gives it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TermRequest {
    #[schema(value_type = Object)]
    terms: IndexMap<String, TermList>,
    definition: Option<String>,
    note: Option<String>,
    /// Data categories; each with `lang` (and `term`) names one of the entry's.
    #[serde(default, deserialize_with = "crate::json_object::objects_only")]
    categories: Vec<Category>,
}

fn parse_entry(body: &[u8]) -> ApiResult<Concept> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::new(ErrorCode::RequestBodyMissing, "A JSON body is required."));
    }
    let request: TermRequest = object_from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("The request body is invalid: {e}")))?;
    let blank = |t: Option<String>| t.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
    let mut entry = Concept {
        definition: blank(request.definition),
        note: blank(request.note),
        categories: request.categories,
        ..Concept::default()
    };
    for (lang, terms) in request.terms {
        let lang =
            LangCode::parse(&lang).map_err(|e| ApiError::bad_request(format!("terms: {e}")))?;
        let terms = match terms {
            TermList::One(term) => vec![term],
            TermList::Many(terms) => terms,
        };
        if terms.iter().any(|t| t.trim().is_empty()) {
            return Err(ApiError::bad_request(format!("terms: a term in {lang} is empty.")));
        }
        for term in terms {
            entry.add_term(lang.clone(), &term);
        }
    }
    entry.check().map_err(ApiError::bad_request)?;
    Ok(entry)
}

/// The listing's filters.
struct TermFilter {
    search: Option<String>,
    lang: Option<LangCode>,
}

impl TermFilter {
    fn keeps(&self, entry: &Concept) -> bool {
        entry.terms.iter().any(|(lang, terms)| {
            self.lang.as_ref().is_none_or(|l| l.covers(lang))
                && self
                    .search
                    .as_ref()
                    .is_none_or(|s| terms.iter().any(|t| t.to_lowercase().contains(s)))
        })
    }
}

fn parse_listing(req: &HttpRequest) -> ApiResult<((usize, usize), TermFilter)> {
    let mut page = (0, crate::api::listing::DEFAULT_LIMIT);
    let mut filter = TermFilter { search: None, lang: None };
    for (key, value) in query_pairs(req)? {
        match key.as_str() {
            "page" => page = parse_page(&value)?,
            "search" if value.chars().count() > MAX_SEARCH_CHARS => {
                return Err(ApiError::bad_request(format!(
                    "search is at most {MAX_SEARCH_CHARS} characters."
                )));
            }
            "search" => filter.search = Some(value.to_lowercase()).filter(|s| !s.is_empty()),
            "lang" => {
                filter.lang = Some(
                    LangCode::parse(&value)
                        .map_err(|e| ApiError::bad_request(format!("lang: {e}")))?,
                );
            }
            _ => {}
        }
    }
    Ok((page, filter))
}

#[utoipa::path(tag = "glossary", params(
    ("id" = i64, Path),
    ("page" = Option<String>, Query, description = "{\"offset\":0,\"limit\":100}"),
    ("search" = Option<String>, Query, description = "entries with a term containing it, any case"),
    ("lang" = Option<String>, Query, description = "entries with a term in a language it covers"),
), responses((status = 200, body = [TermBody], description = "entries in id order; X-Total-Count")))]
#[get("/v1/glossaries/{id}/terms")]
async fn list_terms(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let glossary = published(&state, &p, &id, Privilege::Read)?;
    let ((offset, limit), filter) = parse_listing(&req)?;
    let mut total = 0usize;
    let mut page = Vec::with_capacity(limit.min(1000));
    for entry in glossary.entries.values().filter(|e| filter.keeps(e)) {
        if total >= offset && page.len() < limit {
            page.push(term_body(entry));
        }
        total += 1;
    }
    let mut response = json_response(actix_web::http::StatusCode::OK, &page);
    if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&total.to_string()) {
        response
            .headers_mut()
            .insert(actix_web::http::header::HeaderName::from_static("x-total-count"), value);
    }
    Ok(response)
}

#[utoipa::path(tag = "glossary", params(("id" = i64, Path)), request_body = TermRequest, responses((status = 201, body = TermBody)))]
#[post("/v1/glossaries/{id}/terms")]
async fn add_term(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let id = parse_id(&id, "glossary")?;
    let entry = parse_entry(&body)?;
    let entry = exec(&state, move |s| s.add_glossary_entry(&p, id, entry)).await??;
    created(&term_body(&entry))
}

#[utoipa::path(tag = "glossary", params(("id" = i64, Path), ("termId" = i64, Path)), responses((status = 200, body = TermBody)))]
#[get("/v1/glossaries/{id}/terms/{termId}")]
async fn get_term(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (id, term) = path.into_inner();
    let glossary = published(&state, &p, &id, Privilege::Read)?;
    let term_id = parse_id(&term, "term")?;
    let entry = glossary.entries.get(&term_id).ok_or_else(|| {
        ApiError::from(crate::catalog::CatalogError::not_found(
            crate::catalog::Missing::Term,
            term_id,
        ))
    })?;
    ok(&term_body(entry))
}

#[utoipa::path(tag = "glossary", params(("id" = i64, Path), ("termId" = i64, Path)), request_body = TermRequest, responses((status = 200, body = TermBody)))]
#[put("/v1/glossaries/{id}/terms/{termId}")]
async fn replace_term(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let (id, term) = path.into_inner();
    let (id, term_id) = (parse_id(&id, "glossary")?, parse_id(&term, "term")?);
    let entry = parse_entry(&body)?;
    let entry = exec(&state, move |s| s.replace_glossary_entry(&p, id, term_id, entry)).await??;
    ok(&term_body(&entry))
}

#[utoipa::path(tag = "glossary", params(("id" = i64, Path), ("termId" = i64, Path)), responses((status = 204)))]
#[delete("/v1/glossaries/{id}/terms/{termId}")]
async fn delete_term(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (id, term) = path.into_inner();
    let (id, term_id) = (parse_id(&id, "glossary")?, parse_id(&term, "term")?);
    exec(&state, move |s| s.delete_glossary_entry(&p, id, term_id)).await??;
    no_content()
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_terms)
        .service(add_term)
        .service(get_term)
        .service(replace_term)
        .service(delete_term);
}
