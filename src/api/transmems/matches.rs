//! `GET /v1/views/<viewId>/records?...&tmMatches=<columnId>`: each record of the page gets
//! `"tmMatches": {"<columnId>": {"source", "target", "score"}}` (or `null` for the column when
//! nothing scores `DEFAULT_MIN_SCORE`): the best match, over the enabled memories linked to the
//! grid's project, of the record's cell in the column's dependency source, from that column's
//! language into the target column's. Without the parameter the page is as documented.
//!
//! The column must be shown by the view (400 invalidColumnId) and be the target of a
//! dependency between language columns (400 badRequest). Lookups run on the blocking pool.

use actix_web::body::MessageBody;
use actix_web::HttpResponse;
use serde_json::{json, Value};

use super::DEFAULT_MIN_SCORE;
use crate::api::exec;
use crate::catalog::BranchRoute;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::state::AppState;
use crate::tm::index::Match;

/// The `tmMatches` column of a listing's query pairs (`ListParams::others`), if any.
pub fn requested(pairs: &[(String, String)]) -> ApiResult<Option<String>> {
    let mut asked = pairs.iter().filter(|(k, _)| k == "tmMatches").map(|(_, v)| v);
    match (asked.next(), asked.next()) {
        (None, _) => Ok(None),
        (Some(one), None) if !one.is_empty() => Ok(Some(one.clone())),
        _ => Err(ApiError::bad_request("Give tmMatches once, with one column id.")),
    }
}

/// The (source column, source language, target language) behind target column `column`.
async fn languages(
    route: &BranchRoute,
    view_id: &str,
    column: &str,
) -> ApiResult<(String, String, String)> {
    let view = crate::api::changes::current_view(route).await?;
    let schema = &view.state.schema;
    let def = schema
        .view(view_id)
        .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", view_id))?;
    let invalid = || {
        let id = crate::io::csv_import::clip(column, 100);
        ApiError::new(
            ErrorCode::InvalidColumnId,
            format!("tmMatches: column \"{id}\" is not in the view."),
        )
    };
    let target = schema.view_column(def, column).ok_or_else(invalid)?;
    let dependency = schema.dependencies.iter().find(|d| d.target_column_id == column);
    let source = dependency.and_then(|d| schema.column(&d.source_column_id));
    match (source, &source.and_then(|s| s.language_code.clone()), &target.0.language_code) {
        (Some(source), Some(from), Some(into)) => Ok((source.id.clone(), from.clone(), into.clone())),
        _ => Err(ApiError::bad_request(format!(
            "tmMatches: column \"{column}\" is not the target of a dependency between language columns."
        ))),
    }
}

/// The page's response with each record's best match added.
pub async fn with_matches(
    state: &AppState,
    route: &BranchRoute,
    view_id: &str,
    column: &str,
    response: HttpResponse,
) -> ApiResult<HttpResponse> {
    let (source_column, from, into) = languages(route, view_id, column).await?;
    let project = route.project_id;
    let memories = exec(state, move |s| s.project_transmems(project)).await?;
    let caught_up = memories.iter().map(|memory| state.transmems.caught_up(&memory.id));
    futures_util::future::try_join_all(caught_up).await?;
    let (status, body) = (response.status(), response.into_body());
    let bytes =
        body.try_into_bytes().map_err(|_| ApiError::internal("a record page was streamed"))?;
    let mut page: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::internal(format!("reading a rendered page: {e}")))?;
    let store = state.transmems.segments.clone();
    let column = column.to_owned();
    let page = super::blocking(move || {
        let opened: Vec<_> = memories.iter().filter_map(|m| store.memory(&m.id).ok()).collect();
        for record in page.as_array_mut().into_iter().flatten() {
            let text = record["cells"]
                .as_array()
                .and_then(|cells| cells.iter().find(|c| c["columnId"] == source_column.as_str()))
                .and_then(|c| c["value"].as_str())
                .unwrap_or_default()
                .to_owned();
            let best: Option<Match> = (!text.trim().is_empty())
                .then(|| {
                    opened
                        .iter()
                        .filter_map(|m| {
                            m.lookup(&text, &from, &into, DEFAULT_MIN_SCORE, 1).into_iter().next()
                        })
                        .max_by_key(|m| m.score)
                })
                .flatten();
            let shown =
                best.map(|m| json!({"source": m.source, "target": m.target, "score": m.score}));
            record["tmMatches"] = json!({ column.as_str(): shown });
        }
        page
    })
    .await?;
    Ok(crate::api::json_response(status, &page))
}
