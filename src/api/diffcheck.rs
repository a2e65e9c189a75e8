//! `POST /v1/branches/diffcheck?sourceViewId=&destinationViewId=` starts a task previewing what
//! merging the source view's branch into the destination view's branch would change (limited
//! to the source view's columns, as a view merge is); `GET /v1/branches/diffcheck/<taskId>`
//! lists it, in the hosted `BranchDiffRecord` shape (decisions.md section 8). Nothing changes.
//!
//! The task takes copies of both branches (cheap, copy-on-write), computes the preview on a
//! blocking thread (`grid::diff`: at most `MAX_DIFF_RECORDS` records) and stores it as JSON at
//! `<data dir>/diffchecks/<taskId>.json` (temporary file, fsync, rename); in a cluster also in
//! the cluster's files (`files::replicate_result`), where a node that serves the grid after a
//! takeover finds it (`files::read_result`). The listing filters
//! it by `mergeRecordOptions` (`add` shows added records, `update` updated ones, `delete`
//! deleted ones; the default is all three; `override` is accepted) and pages it with `page`;
//! a `query` is refused (400): the preview keeps values, not the branches to run it on.

use std::path::{Path, PathBuf};

use actix_web::{get, post, web, HttpRequest, HttpResponse};
use utoipa_actix_web::service_config::ServiceConfig;

use super::listing::parse_page;
use super::tasks::{require_successful, start_task, NewTask};
use super::{exec, ok, query_pairs, view_route};
use crate::auth::{Principal, Privilege, Tier};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::CopyBranch;
use crate::grid::diff::{diff, Diff, DiffRecord, Sides};
use crate::grid::merge::{merge_base, MergeOptions};
use crate::state::AppState;

/// The task kind of a preview.
const TASK_KIND: &str = "diffcheck";

fn result_path(data_dir: &Path, task_id: &str) -> PathBuf {
    data_dir.join("diffchecks").join(format!("{task_id}.json"))
}

/// The preview's name in a cluster's file store.
fn cluster_name(task_id: &str) -> String {
    format!("diffcheck-{task_id}.json")
}

/// The value of a required query parameter (400 missingParameter naming it).
fn required(pairs: &[(String, String)], name: &str) -> ApiResult<String> {
    pairs
        .iter()
        .find(|(k, v)| k == name && !v.is_empty())
        .map(|(_, v)| v.clone())
        .ok_or_else(|| ApiError::missing_parameter(name))
}

#[utoipa::path(tag = "branches", params(
    ("sourceViewId" = String, Query, description = "a view of the branch that would be merged"),
    ("destinationViewId" = String, Query, description = "a view of the branch it would be merged into"),
), responses((status = 202, description = "a task computing the preview")))]
#[post("/v1/branches/diffcheck")]
async fn create_diffcheck(
    state: web::Data<AppState>,
    p: Principal,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let pairs = query_pairs(&req)?;
    let source_view = required(&pairs, "sourceViewId")?;
    let destination_view = required(&pairs, "destinationViewId")?;
    let source = view_route(&state, &p, &source_view, Privilege::Manage)?;
    let destination = view_route(&state, &p, &destination_view, Privilege::Manage)?;
    if source.grid_id != destination.grid_id {
        return Err(ApiError::new(
            ErrorCode::Unprocessable,
            "The two views belong to different grids.",
        ));
    }
    let schema = source.schema().await?;
    let view = schema
        .view(&source_view)
        .ok_or_else(|| ApiError::not_found(ErrorCode::ViewIsNotFound, "View", &source_view))?;
    let columns: Vec<String> =
        schema.view_columns(view).into_iter().map(|(c, _)| c.id.clone()).collect();
    let (s_id, d_id) = (source.branch_id.clone(), destination.branch_id.clone());
    let new = NewTask {
        kind: TASK_KIND,
        route: destination.clone(),
        view_id: Some(destination_view),
        shows: None,
        creates_branch: None,
    };
    let (task, fork_clock) =
        start_task(&state, &p, new, move |s| s.lineage_point(&s_id, &d_id)).await?;
    let path = result_path(&state.data_dir, task.id());
    let (name, kept) = (cluster_name(task.id()), path.clone());
    Ok(task.run(|_| async move {
        let source_copy = source.addr.send(CopyBranch { pin_for: None }).await?;
        let destination_copy = destination.addr.send(CopyBranch { pin_for: None }).await?;
        let (source_id, destination_id) = (source.branch_id.clone(), destination.branch_id.clone());
        web::block(move || {
            let (s, d) = (&source_copy.state, &destination_copy.state);
            let base = merge_base(&source_id, s, &destination_id, d, fork_clock);
            let sides = Sides { source_id: &source_id, source: s, destination: d, base };
            store(&path, &diff(&sides, Some(columns)))
        })
        .await
        .map_err(|e| ApiError::internal(format!("the preview stopped: {e}")))??;
        // In a cluster the preview follows the grid to the node that serves it next.
        super::files::replicate_result(&state, &name, &kept).await
    }))
}

/// Writes the preview (temporary file, fsync, rename).
fn store(path: &Path, preview: &Diff) -> ApiResult<()> {
    let failed = |e: std::io::Error| ApiError::internal(format!("storing the preview: {e}"));
    let dir = path.parent().ok_or_else(|| ApiError::internal("a preview path has a directory"))?;
    std::fs::create_dir_all(dir).map_err(failed)?;
    let temp = path.with_extension("partial");
    let bytes = serde_json::to_vec(preview)
        .map_err(|e| ApiError::internal(format!("encoding the preview: {e}")))?;
    std::fs::write(&temp, bytes).map_err(failed)?;
    std::fs::File::open(&temp).and_then(|f| f.sync_all()).map_err(failed)?;
    std::fs::rename(&temp, path).map_err(failed)
}

/// The record statuses `mergeRecordOptions` shows (all three by default).
fn shown_statuses(pairs: &[(String, String)]) -> ApiResult<Vec<&'static str>> {
    let named: Vec<String> = pairs
        .iter()
        .filter(|(k, _)| k == "mergeRecordOptions" || k == "mergeRecordOptions[]")
        .map(|(_, v)| v.clone())
        .collect();
    if named.is_empty() {
        return Ok(vec!["added", "updated", "deleted"]);
    }
    let options = MergeOptions::parse(&named)?;
    let mut shown = Vec::new();
    for (on, status) in
        [(options.add, "added"), (options.update, "updated"), (options.delete, "deleted")]
    {
        if on {
            shown.push(status);
        }
    }
    Ok(shown)
}

#[utoipa::path(tag = "branches", params(
    ("taskId" = String, Path, description = "the task of POST /v1/branches/diffcheck"),
    ("mergeRecordOptions" = Option<String>, Query, description = "add, update, delete, override: the records shown (default add,update,delete)"),
    ("page" = Option<String>, Query, description = "JSON {offset, limit}"),
), responses((status = 200, description = "the records a merge would change")))]
#[get("/v1/branches/diffcheck/{taskId}")]
async fn get_diffcheck(
    state: web::Data<AppState>,
    p: Principal,
    task_id: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let task_id = task_id.into_inner();
    let pairs = query_pairs(&req)?;
    let shown = shown_statuses(&pairs)?;
    if pairs.iter().any(|(k, v)| k == "query" && !matches!(v.trim(), "" | "{}" | "null")) {
        return Err(ApiError::bad_request(
            "query is not supported on a diffcheck result: filter with mergeRecordOptions.",
        ));
    }
    let (offset, limit) = match pairs.iter().find(|(k, _)| k == "page") {
        Some((_, page)) => parse_page(page)?,
        None => (0, 100),
    };
    let lookup = task_id.clone();
    let task = exec(&state, move |s| s.task(&p, &lookup)).await??;
    if task.kind != TASK_KIND {
        return Err(ApiError::not_found(ErrorCode::TaskIsNotFound, "Task", &task_id));
    }
    require_successful(&task, "computing the preview")?;
    let path = result_path(&state.data_dir, &task_id);
    let bytes = super::files::read_result(&state, &cluster_name(&task_id), &path)
        .await
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::FileIsNotFound,
                format!("The preview of task \"{task_id}\" is no longer there."),
            )
        })?;
    let preview: Diff = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::internal(format!("the stored preview does not decode: {e}")))?;
    let page: Vec<&DiffRecord> = preview
        .records
        .iter()
        .filter(|r| shown.contains(&r.status.as_str()))
        .skip(offset)
        .take(limit)
        .collect();
    ok(&page)
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(create_diffcheck).service(get_diffcheck);
}
