//! `POST /v1/databases/<dbId>/duplicate?projectId=` (body: the OpenAPI's CreateDatabase): a new
//! database in that project holding a copy of every grid of the source database: name,
//! metadata, record identifier type, columns, dependencies, views (under new ids) and the
//! master branch's records with their values and statuses. Other branches, record history,
//! backups and shares are not copied.
//!
//! Each grid is copied from one instant of its master branch (`CopyBranch`, copy-on-write):
//! the new grid is created with the schema, then the records are turned into record writes on
//! a blocking thread and written through the new grid's actor as imports of at most
//! `BATCH_RECORDS` records (heavy writes, off the grid threads). The answer comes once every
//! grid's records are durable. A failure part way leaves the new database with the grids
//! copied so far, and the error names the grid.

use actix_web::{post, web, HttpResponse};
use serde::Deserialize;
use utoipa::IntoParams;

use super::databases::{new_database, DatabaseBody, DatabaseRequest};
use super::projects::integer_id;
use super::sized_json::JsonObject;
use super::{branch_route, exec, ok, required};
use crate::auth::{Principal, Privilege, Scope, Tier};
use crate::catalog::cluster_grids::{read_copy, BranchToLoad};
use crate::catalog::grids::identity;
use crate::catalog::grids::NewGrid;
use crate::catalog::model::{Grid, RecordIdentifierType};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::{CopyBranch, ImportRecords, ImportedReferences};
use crate::grid::codec::render_value;
use crate::grid::ops::GridState;
use crate::grid::records::{CellInput, RecordInput};
use crate::state::AppState;

/// Records per import message of a copied grid.
const BATCH_RECORDS: usize = 10_000;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateQuery {
    /// The project the copy goes into.
    pub project_id: Option<String>,
}

#[utoipa::path(tag = "databases", params(DuplicateQuery), request_body = DatabaseRequest, responses((status = 200, body = DatabaseBody)))]
#[post("/v1/databases/{id}/duplicate")]
async fn duplicate_database(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    query: web::Query<DuplicateQuery>,
    body: JsonObject<DatabaseRequest>,
) -> ApiResult<HttpResponse> {
    p.require_tier(Tier::Team)?;
    let project = integer_id(required(&query.project_id, "projectId")?, "projectId")?;
    let spec = new_database(body.into_inner())?;
    let source = id.into_inner();
    let (pc, sc) = (p.clone(), source.clone());
    let (db, grids) = exec(&state, move |s| {
        let grids = s.list_grids(&pc, &sc)?;
        let db = s.create_database(&pc, project, spec)?;
        Ok::<_, ApiError>((db, grids))
    })
    .await??;
    for grid in grids {
        copy_grid(&state, &p, &grid, &db.id).await.map_err(|err| {
            ApiError::new(err.code, format!("Copying grid \"{}\": {}", grid.id, err.message))
        })?;
    }
    ok(&DatabaseBody::from(&db))
}

/// Copies one grid's master branch into database `db_id`.
async fn copy_grid(state: &AppState, p: &Principal, grid: &Grid, db_id: &str) -> ApiResult<()> {
    let copy = source_copy(state, p, grid).await?;
    let schema = copy.schema.clone();
    let spec = NewGrid {
        id: None,
        name: grid.name.clone(),
        metadata: grid.metadata.clone(),
        record_identifier_type: grid.record_identifier_type,
        columns: schema.columns,
        dependencies: schema.dependencies,
        views: schema.views,
    };
    let (pc, dc) = (p.clone(), db_id.to_owned());
    let (made, durable) = exec(state, move |s| s.create_grid(&pc, &dc, spec)).await??;
    durable.await.map_err(|err| {
        ApiError::new(ErrorCode::ServiceUnavailable, format!("The copy was not logged: {err}"))
    })?;
    let not_found = || ApiError::not_found(ErrorCode::GridIsNotFound, "Grid", &made.id);
    let target = branch_route(state, p, &made.id, Privilege::Write, not_found)?;
    let by_path = grid.record_identifier_type == RecordIdentifierType::PathTagRecordId;
    let batches = web::block(move || record_writes(&copy, by_path))
        .await
        .map_err(|e| ApiError::internal(format!("the copy stopped: {e}")))?;
    for rows in batches {
        let msg = ImportRecords {
            view_id: made.default_access_view_id.clone(),
            rows,
            user: p.user().to_owned(),
            // A copy's cells carry their statuses as the source grid holds them.
            source_default: Default::default(),
            // As the source grid holds them: a copy adds no reference the source lacked.
            references: ImportedReferences::Copied,
        };
        target.addr.send(msg).await??;
    }
    Ok(())
}

/// The master branch of `grid` at one instant: from its actor when this node serves it, else
/// (in a cluster) read from the cluster's image and log of it (`cluster_grids::read_copy`).
async fn source_copy(state: &AppState, p: &Principal, grid: &Grid) -> ApiResult<GridState> {
    let not_found = || ApiError::not_found(ErrorCode::GridIsNotFound, "Grid", &grid.id);
    let node = match (&state.cluster, state.routes.branch(&grid.id)) {
        (Some(node), None) => node.clone(),
        _ => {
            let source = branch_route(state, p, &grid.id, Privilege::Read, not_found)?;
            return Ok(source.addr.send(CopyBranch { pin_for: None }).await?.state);
        }
    };
    let scope =
        Scope::of_grid((grid.company_id, grid.project_id), &grid.database_id, &grid.id, None);
    p.authorize(&scope, Privilege::Read, not_found)?;
    let branch = BranchToLoad {
        branch_id: grid.id.clone(),
        default_view_id: grid.default_access_view_id.clone(),
        identity: identity(grid.record_identifier_type),
        copied: false,
    };
    let reader = node.clone();
    let read = node.handle().spawn(async move { read_copy(&reader, &branch).await });
    let unavailable = |why: String| {
        ApiError::new(ErrorCode::ServiceUnavailable, format!("The grid could not be read: {why}"))
    };
    read.await
        .map_err(|err| unavailable(err.to_string()))?
        .map_err(|err| unavailable(err.to_string()))
}

/// The live records of `state` as record writes of their stored cells (formula and lookup
/// cells are computed by the copy), in batches of `BATCH_RECORDS`, each labelled `record <n>`.
fn record_writes(state: &GridState, by_path: bool) -> Vec<Vec<(String, RecordInput)>> {
    let columns: Vec<_> = state
        .schema
        .columns
        .iter()
        .filter(|c| c.is_writable())
        .filter_map(|c| state.slots.get(&c.id).map(|slot| (c, *slot)))
        .collect();
    let store = &state.store;
    let mut batches = Vec::new();
    let mut batch = Vec::new();
    for (n, row) in store.live_rows().enumerate() {
        let cells = columns
            .iter()
            .filter_map(|(column, slot)| {
                let value = store.value(row, *slot);
                let localized = store.is_localized(*slot);
                if value.is_empty() && !localized {
                    return None;
                }
                let statuses = localized.then(|| {
                    (store.dependency_status(row, *slot), store.source_status(row, *slot))
                });
                Some(CellInput::new(
                    column.id.as_str(),
                    Some(render_value(column.column_type, &value)),
                    statuses.map(|(dependency, _)| dependency.as_str()),
                    statuses.map(|(_, source)| source.as_str()),
                ))
            })
            .collect();
        let path = store.path(row);
        let input = RecordInput {
            id: Some(store.id(row).to_owned()),
            path: (by_path || !path.is_empty()).then(|| path.to_owned()),
            cells,
            mark_mt: None,
            if_match: None,
        };
        batch.push((format!("record {}", n + 1), input));
        if batch.len() == BATCH_RECORDS {
            batches.push(std::mem::take(&mut batch));
        }
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    batches
}

pub fn configure(cfg: &mut utoipa_actix_web::service_config::ServiceConfig<'_>) {
    cfg.service(duplicate_database);
}
