//! Paths (the hosted service's `Path` tag): a view's folder tree and its changes, with the
//! hosted shapes (`PathNode`, `CreatePath`, `PathList`, `DeletePath`, `MovePath`, `UpdatePath`,
//! `PathSingle`). The rules are `grid::paths`'; a change is one WAL entry (`ChangePaths`).
//!
//! - `GET /v1/views/<id>/paths/tree?rootPath=`: the folders under `rootPath` (default: all),
//!   depth first, each `{name, parentPath}`; read from the branch's published view.
//! - `POST /v1/views/<id>/paths` `{parentPath, paths}`: new empty folders; `{paths}` answers their
//!   full paths.
//! - `DELETE /v1/views/<id>/paths` `{paths}`: folders, their subfolders and every record in
//!   them; 204.
//! - `POST /v1/views/<id>/paths/move` `{names, fromParentPath, toParentPath, moveBefore?,
//!   moveAfter?}`: folders (and their records) into another folder, or to another place among
//!   their siblings; `{paths}` answers the new full paths.
//! - `PUT /v1/views/<id>/paths/<path>` `{newName}`: a folder renamed; `{path}` its new path.
//!   The path may hold `/` (as it is, or `%2F`).

use actix_web::{delete, get, post, put, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_actix_web::service_config::ServiceConfig;

use super::changes::current_view;
use super::sized_json::JsonObject;
use super::{no_content, ok, view_route};
use crate::auth::{Principal, Privilege};
use crate::error::{ApiError, ApiResult};
use crate::grid::actor::ChangePaths;
use crate::grid::error::GridError;
use crate::grid::paths::{tree, PathChange, PathNode};
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathNodeBody {
    name: String,
    parent_path: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct TreeQuery {
    /// The folder whose subtree is listed (default: the root, every folder).
    root_path: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatePath {
    parent_path: Option<String>,
    paths: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct DeletePath {
    paths: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MovePath {
    names: Vec<String>,
    from_parent_path: Option<String>,
    to_parent_path: Option<String>,
    move_before: Option<String>,
    move_after: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePath {
    new_name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PathList {
    paths: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PathSingle {
    path: String,
}

#[utoipa::path(tag = "Path", params(TreeQuery), responses((status = 200, body = Vec<PathNodeBody>)))]
#[get("/v1/views/{viewId}/paths/tree")]
async fn path_tree(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    query: web::Query<TreeQuery>,
) -> ApiResult<HttpResponse> {
    let route = view_route(&state, &p, &view_id, Privilege::Read)?;
    let view = current_view(&route).await?;
    let root = query.into_inner().root_path.unwrap_or_default();
    let nodes = web::block(move || tree(&view.state, &root))
        .await
        .map_err(|e| ApiError::internal(format!("the tree reader stopped: {e}")))?
        .map_err(GridError::from)?;
    let body: Vec<PathNodeBody> = nodes
        .into_iter()
        .map(|PathNode { name, parent_path }| PathNodeBody { name, parent_path })
        .collect();
    ok(&body)
}

/// Sends a folder change through the view; the folders it made or moved.
async fn change(
    state: &AppState,
    p: &Principal,
    view_id: &str,
    change: PathChange,
) -> ApiResult<Vec<String>> {
    let route = view_route(state, p, view_id, Privilege::Write)?;
    let msg = ChangePaths { view_id: view_id.to_owned(), user: p.user().to_owned(), change };
    Ok(route.addr.send(msg).await??)
}

#[utoipa::path(tag = "Path", request_body = CreatePath, responses((status = 200, body = PathList)))]
#[post("/v1/views/{viewId}/paths")]
async fn create_paths(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    body: JsonObject<CreatePath>,
) -> ApiResult<HttpResponse> {
    let CreatePath { parent_path, paths } = body.into_inner();
    let parent = parent_path.unwrap_or_default();
    let made = change(&state, &p, &view_id, PathChange::Create { parent, names: paths }).await?;
    ok(&PathList { paths: made })
}

#[utoipa::path(tag = "Path", request_body = DeletePath, responses((status = 204)))]
#[delete("/v1/views/{viewId}/paths")]
async fn delete_paths(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    body: JsonObject<DeletePath>,
) -> ApiResult<HttpResponse> {
    let paths = body.into_inner().paths;
    change(&state, &p, &view_id, PathChange::Delete { paths }).await?;
    no_content()
}

#[utoipa::path(tag = "Path", request_body = MovePath, responses((status = 200, body = PathList)))]
#[post("/v1/views/{viewId}/paths/move")]
async fn move_paths(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    body: JsonObject<MovePath>,
) -> ApiResult<HttpResponse> {
    let m = body.into_inner();
    let moved = PathChange::Move {
        names: m.names,
        from: m.from_parent_path.unwrap_or_default(),
        to: m.to_parent_path.unwrap_or_default(),
        before: m.move_before,
        after: m.move_after,
    };
    ok(&PathList { paths: change(&state, &p, &view_id, moved).await? })
}

#[utoipa::path(tag = "Path", params(
    ("viewId" = String, Path, description = "the view"),
    ("path" = String, Path, description = "the folder to rename (its `/` as is or `%2F`)"),
), request_body = UpdatePath, responses((status = 200, body = PathSingle)))]
#[put("/v1/views/{viewId}/paths/{path:.*}")]
async fn rename_path(
    state: web::Data<AppState>,
    p: Principal,
    req: HttpRequest,
    body: JsonObject<UpdatePath>,
) -> ApiResult<HttpResponse> {
    let view_id = req.match_info().get("viewId").unwrap_or_default().to_owned();
    let raw = req.match_info().get("path").unwrap_or_default();
    let path = percent_decoded(raw)?;
    let renamed = PathChange::Rename { path, new_name: body.into_inner().new_name };
    let mut made = change(&state, &p, &view_id, renamed).await?;
    ok(&PathSingle { path: made.pop().unwrap_or_default() })
}

/// A path segment of the URL decoded (`%2F` is a `/` of the folder path).
fn percent_decoded(raw: &str) -> ApiResult<String> {
    let mut bytes = Vec::with_capacity(raw.len());
    let mut rest = raw.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        let hex = (byte == b'%').then(|| tail.get(..2)).flatten();
        match hex
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            Some(decoded) => {
                bytes.push(decoded);
                rest = &tail[2..];
            }
            None => {
                bytes.push(byte);
                rest = tail;
            }
        }
    }
    String::from_utf8(bytes).map_err(|_| ApiError::bad_request("The path is not UTF-8."))
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(path_tree)
        .service(create_paths)
        .service(delete_paths)
        .service(move_paths)
        .service(rename_path);
}
