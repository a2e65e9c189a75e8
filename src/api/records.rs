//! `/v1/views/<viewId>/records`: list (paged, `X-Total-Count`, `Link`), add, bulk and single
//! update, delete. A record's history is `record_history`'s.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{delete, get, patch, post, web, HttpRequest, HttpResponse};
use serde::Serialize;
use serde_json::{json, Value};
use utoipa_actix_web::service_config::ServiceConfig;

use super::conditional::{record_tag, with_tag};
use super::listing::{link_header, parse_list_params, set_page_headers, ListParams};
use super::record::expected_versions;
use super::references::{resolve_references, KeyLookup, ReferenceReader};
use super::sized_json::JsonObject;
use super::sized_json::SizedJson;
use super::{exec, json_response, json_response_sized, no_content, query_pairs, view_route};
use crate::auth::{Principal, Privilege};
use crate::catalog::model::FileMeta;
use crate::catalog::BranchRoute;
use crate::error::{ApiError, ApiResult};
use crate::grid::actor::reads::{
    self, export_rows, read_from_view, ExportQuery, ExportSource, PublishView, ReadView,
};
use crate::grid::actor::{
    ReadRecord, ReadRecords, RecordsWrite, WriteAnswer, WriteRecords, WrittenRecords,
};
use crate::grid::codec::{format_timestamp, Rendered};
use crate::grid::preconditions::Expected;
use crate::grid::query::RawFilter;
use crate::grid::read::{CellOut, RecordOut, RecordPage};
use crate::grid::read_pool::ReadKind;
use crate::grid::records::{check_count, DeleteRecordsInput, RecordInput, RecordsBody};
use crate::grid::references::Referenced;
use crate::grid::schema::ColumnType;
use crate::grid::value::CellValue;
use crate::state::AppState;

/// A cell as answered, borrowing from the record read (no copies before serialization).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CellBody<'a> {
    column_id: &'a str,
    value: CellValueBody<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    referenced_ids: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dependency_status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_status: Option<&'static str>,
    #[serde(rename = "isMT", skip_serializing_if = "std::ops::Not::not")]
    is_mt: bool,
}

/// A record as answered, borrowing from the record read.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RecordBody<'a> {
    id: &'a str,
    path: &'a str,
    cells: Vec<CellBody<'a>>,
    last_modified_by: &'a str,
    last_modified_time: String,
}

/// A cell's value: the stored value, or for a reference cell the referenced values.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum CellValueBody<'a> {
    Stored(Rendered<'a>),
    Referenced(ReferencedValues<'a>),
}

/// The referenced column's values of a reference cell, each rendered for that column's type.
#[derive(Debug)]
struct ReferencedValues<'a>(&'a Referenced);

impl Serialize for ReferencedValues<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let column_type = self.0.column_type;
        serializer.collect_seq(self.0.values.iter().map(|value| Rendered { column_type, value }))
    }
}

fn cell_body(cell: &CellOut) -> CellBody<'_> {
    let stored = Rendered { column_type: cell.column_type, value: &cell.value };
    let (value, referenced_ids) = match (cell.column_type, &cell.referenced) {
        (ColumnType::Reference | ColumnType::Lookup, referenced) => {
            let ids = match &cell.value {
                CellValue::List(ids) => ids.as_slice(),
                _ => &[],
            };
            let value = match referenced {
                Some(r) => CellValueBody::Referenced(ReferencedValues(r)),
                None => CellValueBody::Stored(stored),
            };
            (value, Some(ids))
        }
        _ => (CellValueBody::Stored(stored), None),
    };
    CellBody {
        column_id: &cell.column_id,
        value,
        referenced_ids,
        dependency_status: cell.statuses.map(|(d, _)| d.as_str()),
        source_status: cell.statuses.map(|(_, s)| s.as_str()),
        is_mt: cell.mt,
    }
}

pub(super) fn record_body(record: &RecordOut) -> RecordBody<'_> {
    RecordBody {
        id: &record.id,
        path: &record.path,
        cells: record.cells.iter().map(cell_body).collect(),
        last_modified_by: &record.user,
        last_modified_time: format_timestamp(record.time_ms),
    }
}

/// The records a write answers with: as the actor rendered them, or rendered here into a buffer
/// sized from their text (a bulk write's reply is a megabyte: grown by doubling it would be
/// copied a dozen times).
/// The answer of a bulk add or update: the records as the view shows them; one record's
/// answer carries its `ETag`.
fn written_response(status: StatusCode, answer: WriteAnswer) -> HttpResponse {
    let response = records_response(status, answer.records);
    match answer.versions.as_slice() {
        [version] => with_tag(response, &record_tag(*version)),
        _ => response,
    }
}

fn records_response(status: StatusCode, records: WrittenRecords) -> HttpResponse {
    match records {
        WrittenRecords::Rendered(rendered) => rendered_response(status, rendered.into_array()),
        WrittenRecords::Read(records) => {
            let capacity = records.iter().map(json_size_guess).sum::<usize>() + 2;
            let body: Vec<RecordBody<'_>> = records.iter().map(record_body).collect();
            json_response_sized(status, &body, capacity)
        }
    }
}

/// An answer whose JSON is already written.
fn rendered_response(status: StatusCode, json: Vec<u8>) -> HttpResponse {
    actix_web::HttpResponseBuilder::new(status).content_type("application/json").body(json)
}

/// The metadata of every file the files cells of `records` name.
async fn file_metas(
    state: &AppState,
    grid_id: &str,
    records: &[RecordOut],
) -> ApiResult<std::collections::HashMap<String, FileMeta>> {
    let ids: Vec<String> = records
        .iter()
        .flat_map(|r| &r.cells)
        .filter(|c| c.column_type == ColumnType::Files)
        .flat_map(|c| match &c.value {
            CellValue::List(items) => items.clone(),
            _ => Vec::new(),
        })
        .collect();
    if ids.is_empty() {
        return Ok(std::collections::HashMap::new());
    }
    let grid = grid_id.to_owned();
    let metas = exec(state, move |s| s.files_of(&grid, &ids)).await?;
    Ok(metas.into_iter().map(|m| (m.id.clone(), m)).collect())
}

/// The listing with files cells shown by `fetchFileOption`: original names, or (`all`) objects
/// `{id, originalName, size, contentType}`. An id without metadata (written by a client, or its
/// file gone) is shown by the id itself: as its name, and under `all` as an object of the same
/// shape (its id for a name, size 0, `application/octet-stream`), since clients asking `all`
/// read each item as an object.
fn with_file_details(
    body: &[RecordBody<'_>],
    records: &[RecordOut],
    files: &std::collections::HashMap<String, FileMeta>,
    all: bool,
) -> ApiResult<Value> {
    let mut value = serde_json::to_value(body)
        .map_err(|e| ApiError::internal(format!("rendering records: {e}")))?;
    let Some(rendered) = value.as_array_mut() else { return Ok(value) };
    for (json, record) in rendered.iter_mut().zip(records) {
        for (at, cell) in record.cells.iter().enumerate() {
            if cell.column_type != ColumnType::Files {
                continue;
            }
            let CellValue::List(ids) = &cell.value else { continue };
            let shown: Vec<Value> = ids
                .iter()
                .map(|id| match (files.get(id), all) {
                    (Some(meta), true) => json!({
                        "id": meta.id, "originalName": meta.original_name,
                        "size": meta.size, "contentType": meta.content_type
                    }),
                    (Some(meta), false) => Value::String(meta.original_name.clone()),
                    (None, true) => json!({
                        "id": id, "originalName": id, "size": 0,
                        "contentType": "application/octet-stream"
                    }),
                    (None, false) => Value::String(id.clone()),
                })
                .collect();
            json["cells"][at]["value"] = Value::Array(shown);
        }
    }
    Ok(value)
}

/// One page of a view's records as JSON, as the record listing shows them (`columnIds`,
/// `fetchFileOption`, `page`, `query`, `sort` and the cursors), for `GET /v1/views/<id>?include=
/// records`.
pub(super) async fn records_value(
    state: &AppState,
    p: &Principal,
    route: &BranchRoute,
    view_id: &str,
    params: &ListParams,
) -> ApiResult<Value> {
    let msg = ReadRecords {
        view_id: view_id.to_owned(),
        offset: params.offset,
        limit: params.limit,
        column_ids: params.column_ids.clone(),
        filters: params.filters.clone(),
        sort: params.sort.clone(),
        cursor: params.cursor.clone(),
        rendered: false,
    };
    let mut page = route.addr.send(msg).await??;
    resolve_references(state, ReferenceReader::Refuse(p), route, &mut page.records).await?;
    let body: Vec<RecordBody> = page.records.iter().map(record_body).collect();
    match params.fetch_file_option.as_deref() {
        Some(option @ ("name" | "all")) => {
            let files = file_metas(state, &route.grid_id, &page.records).await?;
            with_file_details(&body, &page.records, &files, option == "all")
        }
        _ => serde_json::to_value(&body)
            .map_err(|e| ApiError::internal(format!("rendering records: {e}"))),
    }
}

/// About the length of a record's JSON (a little over, so the buffer rarely grows).
fn json_size_guess(record: &RecordOut) -> usize {
    let cells: usize = record
        .cells
        .iter()
        .map(|cell| {
            let value = match &cell.value {
                CellValue::Text(text) => text.len() + text.len() / 16 + 2,
                CellValue::List(items) => items.iter().map(|i| i.len() + 4).sum::<usize>() + 2,
                _ => 26,
            };
            cell.column_id.len() + value + 80
        })
        .sum();
    record.id.len() + record.path.len() + record.user.len() + cells + 120
}

/// The branch's published view, asking the actor to publish one when none is held.
pub(crate) async fn read_view(route: &BranchRoute) -> ApiResult<Arc<ReadView>> {
    Ok(match route.reads.current() {
        Some(view) => view,
        None => route.addr.send(PublishView).await?,
    })
}

/// Every row of a view a listing's query matches, read from the published view on the read
/// pool (for an export): text matching in the background lane. Counted as a read a view
/// answered (`GET /metrics`).
pub(crate) async fn export_source(
    state: &AppState,
    route: &BranchRoute,
    query: ExportQuery,
) -> ApiResult<ExportSource> {
    let view = read_view(route).await?;
    let kind = lane_of(&query.filters);
    let source = state.read_pool.run(route.company_id, kind, move || export_rows(view, &query));
    let source = source.await??;
    state.reads_answered.by_view.fetch_add(1, Ordering::Relaxed);
    Ok(source)
}

/// The read pool's lane for a query: text matching and regexps read whole columns, background
/// work that writes and light reads preempt.
fn lane_of(filters: &[RawFilter]) -> ReadKind {
    if filters.iter().any(|f| f.op.matches_text()) {
        ReadKind::Scan
    } else {
        ReadKind::Light
    }
}

/// Reads a page of a branch: from its published view (asking the actor to publish one when
/// none is held), not on the actor's thread: a plain page right here, one that may scan on the
/// read pool (in the queue of the company owning the grid; reads that scan whole columns in its
/// background lane). Only a query wanting an index the
/// view lacks goes to the actor.
pub(crate) async fn read_records(
    state: &AppState,
    route: &BranchRoute,
    msg: ReadRecords,
) -> ApiResult<RecordPage> {
    let view = read_view(route).await?;
    let (from_view, msg) = if reads::plain(&msg) {
        (read_from_view(&view, &msg), msg)
    } else {
        let kind = lane_of(&msg.filters);
        let read = move || (read_from_view(&view, &msg), msg);
        state.read_pool.run(route.company_id, kind, read).await?
    };
    let answered = &state.reads_answered;
    match from_view {
        Some(page) => {
            answered.by_view.fetch_add(1, Ordering::Relaxed);
            Ok(page?)
        }
        None => {
            answered.by_actor.fetch_add(1, Ordering::Relaxed);
            Ok(route.addr.send(msg).await??)
        }
    }
}

#[utoipa::path(tag = "records", params(
    ("page" = Option<String>, Query, description = "JSON {offset, limit}"),
    ("columnIds" = Option<String>, Query, description = "comma-separated column ids"),
    ("fetchFileOption" = Option<String>, Query, description = "id, name or all"),
    ("query" = Option<String>, Query, description = "JSON {columnId: {operator: value}}, ANDed"),
    ("sort" = Option<String>, Query, description = "JSON {columnId: \"asc\"|\"desc\"}, in order"),
    ("afterRecordId" = Option<String>, Query, description = "cursor: the page starts right after this record (page.offset 0 or absent)"),
    ("beforeRecordId" = Option<String>, Query, description = "cursor: the page ends right before this record (page.offset 0 or absent)"),
    ("tmMatches" = Option<String>, Query, description = "gridd: a target column; each record gets its best translation memory match (`tmMatches`)"),
), responses((status = 200, description = "records; X-Total-Count and Link headers")))]
#[get("/v1/views/{viewId}/records")]
async fn list_records(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let params = parse_list_params(req.query_string())?;
    let route = view_route(&state, &p, &view_id, Privilege::Read)?;
    let tm_matches = super::transmems::matches::requested(&params.others)?;
    let listed_view = view_id.clone();
    let msg = ReadRecords {
        view_id: view_id.into_inner(),
        offset: params.offset,
        limit: params.limit,
        column_ids: params.column_ids.clone(),
        filters: params.filters.clone(),
        sort: params.sort.clone(),
        cursor: params.cursor.clone(),
        // Files cells shown by name need the files' metadata: such pages are read as records.
        rendered: !matches!(params.fetch_file_option.as_deref(), Some("name" | "all")),
    };
    let mut page = read_records(&state, &route, msg).await?;
    let mut response = match page.rendered.take() {
        Some(rendered) => rendered_response(StatusCode::OK, rendered.into_array()),
        None => {
            resolve_references(&state, ReferenceReader::Refuse(&p), &route, &mut page.records)
                .await?;
            let body: Vec<RecordBody> = page.records.iter().map(record_body).collect();
            let capacity = page.records.iter().map(json_size_guess).sum::<usize>() + 2;
            match params.fetch_file_option.as_deref() {
                Some(option @ ("name" | "all")) => {
                    let files = file_metas(&state, &route.grid_id, &page.records).await?;
                    let body = with_file_details(&body, &page.records, &files, option == "all")?;
                    json_response_sized(StatusCode::OK, &body, capacity)
                }
                _ => json_response_sized(StatusCode::OK, &body, capacity),
            }
        }
    };
    if let Some(column) = tm_matches {
        response = super::transmems::matches::with_matches(
            &state,
            &route,
            &listed_view,
            &column,
            response,
        )
        .await?;
    }
    set_page_headers(&mut response, page.total, link_header(&state, req.path(), &params, &page));
    Ok(response)
}

/// Sends a records write through view `view_id`, with the versions `req` says the records
/// must be at; answers the written records (references resolved) and their versions.
async fn write(
    state: &AppState,
    p: &Principal,
    (view_id, req): (String, &HttpRequest),
    write: RecordsWrite,
) -> ApiResult<WriteAnswer> {
    let expected = expected_versions(req, &write)?;
    let route = view_route(state, p, &view_id, Privilege::Write)?;
    write_to(state, p, view_id, route, write, expected).await
}

/// `write` of a bulk body's records, refused when the body held more than a write may carry
/// (once the view is found and the key may write through it, as the branch would refuse it).
async fn write_records(
    state: &AppState,
    p: &Principal,
    (view_id, req): (String, &HttpRequest),
    body: RecordsBody,
    write: fn(Vec<RecordInput>) -> RecordsWrite,
) -> ApiResult<WriteAnswer> {
    let (count, write) = (body.count, write(body.records));
    let expected = expected_versions(req, &write)?;
    let route = view_route(state, p, &view_id, Privilege::Write)?;
    check_count(count)?;
    write_to(state, p, view_id, route, write, expected).await
}

/// Sends a checked records write to its branch (see `write`).
async fn write_to(
    state: &AppState,
    p: &Principal,
    view_id: String,
    route: Arc<BranchRoute>,
    write: RecordsWrite,
    expected: Vec<Expected>,
) -> ApiResult<WriteAnswer> {
    let msg = WriteRecords {
        view_id,
        user: p.user().to_owned(),
        write,
        source_default: state.routes.source_default(&route.grid_id),
        references: KeyLookup::boxed(state, p),
        expected,
    };
    let mut answer = route.addr.send(msg).await??;
    if let WrittenRecords::Read(records) = &mut answer.records {
        resolve_references(state, ReferenceReader::Hide(p), &route, records).await?;
    }
    Ok(answer)
}

/// One record of view `msg.view_id` read for `p`, references resolved, with its version.
pub(super) async fn view_record(
    state: &AppState,
    p: &Principal,
    msg: ReadRecord,
) -> ApiResult<(WrittenRecords, u32)> {
    let route = view_route(state, p, &msg.view_id, Privilege::Read)?;
    let (mut record, version) = route.addr.send(msg).await??;
    if let WrittenRecords::Read(records) = &mut record {
        resolve_references(state, ReferenceReader::Refuse(p), &route, records).await?;
    }
    Ok((record, version))
}

/// The answer holding one record (a single record's read or update).
pub(super) fn record_response(
    status: StatusCode,
    record: WrittenRecords,
) -> ApiResult<HttpResponse> {
    let missing = || ApiError::internal("the record is missing from its answer");
    match record {
        WrittenRecords::Rendered(rendered) => {
            Ok(rendered_response(status, rendered.into_single().ok_or_else(missing)?))
        }
        WrittenRecords::Read(records) => {
            let record = records.first().ok_or_else(missing)?;
            Ok(json_response(status, &record_body(record)))
        }
    }
}

#[utoipa::path(tag = "records", request_body = Vec<RecordInput>, responses((status = 201, description = "the added records")))]
#[post("/v1/views/{viewId}/records")]
async fn add_records(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
    body: SizedJson<RecordsBody>,
) -> ApiResult<HttpResponse> {
    let target = (view_id.into_inner(), &req);
    let answer = write_records(&state, &p, target, body.into_inner(), RecordsWrite::Add).await?;
    Ok(written_response(StatusCode::CREATED, answer))
}

#[utoipa::path(tag = "records", request_body = Vec<RecordInput>, responses((status = 200, description = "the updated records")))]
#[patch("/v1/views/{viewId}/records")]
async fn update_records(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
    body: SizedJson<RecordsBody>,
) -> ApiResult<HttpResponse> {
    let target = (view_id.into_inner(), &req);
    let answer = write_records(&state, &p, target, body.into_inner(), RecordsWrite::Update).await?;
    Ok(written_response(StatusCode::OK, answer))
}

#[utoipa::path(tag = "records", params(
    ("path" = Option<String>, Query, description = "the record's path: picks the record in a path and id grid, must be the record's own elsewhere"),
), request_body = RecordInput, responses((status = 200, description = "the updated record")))]
#[patch("/v1/views/{viewId}/records/{id}")]
async fn update_record(
    state: web::Data<AppState>,
    p: Principal,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    body: SizedJson<RecordInput>,
) -> ApiResult<HttpResponse> {
    let (view_id, record_id) = path.into_inner();
    let at_path = query_pairs(&req)?.into_iter().find(|(k, _)| k == "path").map(|(_, v)| v);
    let write_one = RecordsWrite::UpdateOne { record_id, at_path, input: body.into_inner() };
    let answer = write(&state, &p, (view_id, &req), write_one).await?;
    let version = answer.versions.first().copied();
    let response = record_response(StatusCode::OK, answer.records)?;
    Ok(match version {
        Some(version) => with_tag(response, &record_tag(version)),
        None => response,
    })
}

#[utoipa::path(tag = "records", request_body = DeleteRecordsInput, responses((status = 204)))]
#[delete("/v1/views/{viewId}/records")]
async fn delete_records(
    state: web::Data<AppState>,
    p: Principal,
    view_id: web::Path<String>,
    req: HttpRequest,
    body: JsonObject<DeleteRecordsInput>,
) -> ApiResult<HttpResponse> {
    let target = (view_id.into_inner(), &req);
    write(&state, &p, target, RecordsWrite::Delete(body.into_inner())).await?;
    no_content()
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_records)
        .service(add_records)
        .service(update_records)
        .service(update_record)
        .service(delete_records);
}

#[cfg(test)]
mod tests {
    use super::record_body;
    use crate::grid::ops::{CellWrite, GridOp, RecordWrite};
    use crate::grid::read_json::renders_alone;
    use crate::grid::schema::ColumnDef;
    use crate::grid::value::{CellValue, DependencyStatus, SourceStatus};

    /// `GridState::render_rows` writes the bytes `read_rows`, `record_body` and serde_json give,
    /// for every column type, extreme values, statuses, MT flags and a column with no slot.
    #[test]
    fn records_rendered_from_the_columns_are_the_bytes_of_the_records_read() {
        let mut state = crate::grid::query::fuzz::world(60);
        let statuses = [
            (DependencyStatus::OutOfDate, SourceStatus::DoNotTranslate),
            (DependencyStatus::UpToDate, SourceStatus::LockAllLanguages),
        ];
        let records = (0..60)
            .step_by(3)
            .map(|i: usize| RecordWrite {
                id: format!("r{i}"),
                path: String::new(),
                new_id: None,
                new_path: None,
                cells: vec![CellWrite {
                    column_id: "l".into(),
                    value: Some(CellValue::Text(format!("\"quoted\"\t{i}\u{1}"))),
                    dependency_status: Some(statuses[i % 2].0),
                    source_status: Some(statuses[i % 2].1),
                }],
                mark_mt: i.is_multiple_of(2),
            })
            .collect();
        state.apply(&GridOp::UpdateRecords { time_ms: -5, user: "ü\"ser".into(), records });
        let view = state.schema.view("v").expect("the default view").clone();
        let mut columns: Vec<ColumnDef> =
            state.schema.view_columns(&view).into_iter().map(|(c, _)| c.clone()).collect();
        let mut missing = columns[0].clone();
        missing.id = "not-stored".into();
        columns.push(missing);
        let columns: Vec<&ColumnDef> = columns.iter().collect();
        assert!(renders_alone(&columns));
        let read = state.read_rows(&columns, state.store.live_rows());
        let expected =
            serde_json::to_vec(&read.iter().map(record_body).collect::<Vec<_>>()).expect("JSON");
        let rendered = state.render_rows(&columns, state.store.live_rows());
        assert_eq!(rendered.len(), 60);
        let rendered = rendered.into_array();
        if let Some(at) = rendered.iter().zip(&expected).position(|(a, b)| a != b) {
            let around = |bytes: &[u8]| {
                String::from_utf8_lossy(&bytes[at.saturating_sub(80)..(at + 40).min(bytes.len())])
                    .into_owned()
            };
            panic!("rendered {:?}\nexpected {:?}", around(&rendered), around(&expected));
        }
        assert_eq!(rendered.len(), expected.len());
        let one = state.render_rows(&columns, state.store.live_rows().take(1));
        let expected = serde_json::to_vec(&record_body(&read[0])).expect("JSON");
        assert_eq!(one.into_single(), Some(expected));
    }
}
