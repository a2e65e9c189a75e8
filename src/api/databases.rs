//! `/v1/databases`: list (optionally by project, searched, sorted, paged, with each database's
//! grids or views), get; create (with a description and an id of the client's choosing),
//! rename and describe, delete and duplicate (owner keys).

use std::cmp::Ordering;

use actix_web::{delete, get, patch, post, put, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_actix_web::service_config::ServiceConfig;

use super::grids::{grid_body, status_str, GridBody};
use super::listing::{offset_links, parse_page, set_page_headers, MAX_SEARCH_CHARS};
use super::projects::integer_id;
use super::references::target_branch;
use super::sized_json::JsonObject;
use super::views::branch_views;
use super::{exec, no_content, ok, query_pairs, required};
use crate::auth::{Principal, Privilege};
use crate::catalog::model::{Database, Grid, ProjectId};
use crate::catalog::tenancy::NewDatabase;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::query::parse_sort;
use crate::grid::render::ViewBody;
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseBody {
    pub id: String,
    pub name: String,
    pub description: String,
    #[schema(value_type = i64)]
    pub project_id: ProjectId,
    /// With `expand=grid`: the database's grids, as `GET /v1/grids?dbId=` lists them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grids: Option<Vec<GridBody>>,
    /// With `expand=view`: the views of the database's grids, as `GET /v1/views?gridId=`
    /// lists each grid's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub views: Option<Vec<ViewBody>>,
}

impl From<&Database> for DatabaseBody {
    fn from(d: &Database) -> DatabaseBody {
        DatabaseBody {
            id: d.id.clone(),
            name: d.name.clone(),
            description: d.description.clone(),
            project_id: d.project_id,
            grids: None,
            views: None,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct ProjectQuery {
    /// The project's integer id; anything else is 400 badRequest.
    #[param(value_type = Option<i64>)]
    pub project_id: Option<String>,
}

/// The OpenAPI's CreateDatabase: `id` (`^\w+$`) chooses the new database's id;
/// `enableGuidRecord` is refused when true (gridd's record ids are the client's or random).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseRequest {
    pub name: String,
    pub description: Option<String>,
    pub id: Option<String>,
    pub enable_guid_record: Option<bool>,
}

/// The OpenAPI's UpdateDatabase: `name` required, `description` replaced when given.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateDatabaseRequest {
    pub name: String,
    pub description: Option<String>,
}

/// A create or duplicate request as the catalogue takes it (400 for `enableGuidRecord: true`).
pub(super) fn new_database(req: DatabaseRequest) -> ApiResult<NewDatabase> {
    if req.enable_guid_record == Some(true) {
        return Err(ApiError::bad_request(
            "enableGuidRecord is not supported: record ids are the client's or random.",
        ));
    }
    Ok(NewDatabase { name: req.name, description: req.description, id: req.id })
}

/// A database field `sort` may name, as the API shows it.
#[derive(Debug, Clone, Copy)]
enum DatabaseField {
    Id,
    Name,
    Description,
    ProjectId,
}

impl DatabaseField {
    fn parse(name: &str) -> ApiResult<DatabaseField> {
        match name {
            "id" => Ok(DatabaseField::Id),
            "name" => Ok(DatabaseField::Name),
            "description" => Ok(DatabaseField::Description),
            "projectId" => Ok(DatabaseField::ProjectId),
            other => Err(ApiError::new(
                ErrorCode::InvalidSortField,
                format!(
                    "sort field \"{other}\" is not a database field; expected id, name, \
                     description or projectId."
                ),
            )),
        }
    }

    /// `a` against `b` by this field, ascending: text by code point with an empty text last
    /// whatever the direction (as records sort, decisions 6), project ids as numbers.
    fn compare(self, a: &Database, b: &Database, descending: bool) -> Ordering {
        let directed = |order: Ordering| if descending { order.reverse() } else { order };
        let text = |x: &str, y: &str| match (x.is_empty(), y.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => directed(x.cmp(y)),
        };
        match self {
            DatabaseField::Id => text(&a.id, &b.id),
            DatabaseField::Name => text(&a.name, &b.name),
            DatabaseField::Description => text(&a.description, &b.description),
            DatabaseField::ProjectId => directed(a.project_id.cmp(&b.project_id)),
        }
    }
}

/// What `expand` adds to each listed database.
#[derive(Debug, Clone, Copy, Default)]
struct Expand {
    grids: bool,
    views: bool,
}

/// `GET /v1/databases`'s parameters.
#[derive(Debug)]
struct DatabaseListing {
    project: Option<ProjectId>,
    /// Lowercased: the databases whose name contains it, in any case.
    search: Option<String>,
    /// `(offset, limit)`; none (no `page`, or an empty one): every matching database, as the
    /// listing answered before it took `page` (what the web console and older clients read).
    page: Option<(usize, usize)>,
    /// The fields to sort by, in order, each descending or not; ties keep creation order.
    sort: Vec<(DatabaseField, bool)>,
    expand: Expand,
    /// Every pair but `page`, kept in the `Link` URLs.
    others: Vec<(String, String)>,
}

impl DatabaseListing {
    /// Reads `projectId` (an integer: given empty it is none, 400, rather than absent),
    /// `search` (at most `MAX_SEARCH_CHARS`), `page` (as the record listing's, its limit at
    /// most 1000), `sort` (a JSON
    /// object of fields to `asc`/`desc`, as the record listing's) and `expand` (`grid`,
    /// `view`: repeated or comma-separated); other parameters are ignored.
    fn parse(req: &HttpRequest) -> ApiResult<DatabaseListing> {
        let mut listing = DatabaseListing {
            project: None,
            search: None,
            page: None,
            sort: Vec::new(),
            expand: Expand::default(),
            others: Vec::new(),
        };
        for (key, value) in query_pairs(req)? {
            match key.as_str() {
                "page" => {
                    let blank = value.trim().is_empty();
                    listing.page = if blank { None } else { Some(parse_page(&value)?) };
                    continue;
                }
                "projectId" => listing.project = Some(integer_id(&value, "projectId")?),
                "search" if value.chars().count() > MAX_SEARCH_CHARS => {
                    return Err(ApiError::bad_request(format!(
                        "search is at most {MAX_SEARCH_CHARS} characters."
                    )));
                }
                "search" => listing.search = Some(value.to_lowercase()).filter(|s| !s.is_empty()),
                "sort" => {
                    listing.sort = (parse_sort(&value)?.into_iter())
                        .map(|key| Ok((DatabaseField::parse(&key.field)?, key.descending)))
                        .collect::<ApiResult<_>>()?;
                }
                "expand" => {
                    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                        match item {
                            "grid" => listing.expand.grids = true,
                            "view" => listing.expand.views = true,
                            other => {
                                return Err(ApiError::bad_request(format!(
                                    "expand \"{other}\" is invalid; expected grid or view."
                                )))
                            }
                        }
                    }
                }
                _ => {}
            }
            listing.others.push((key, value));
        }
        Ok(listing)
    }

    fn keeps(&self, db: &Database) -> bool {
        self.search.as_ref().is_none_or(|s| db.name.to_lowercase().contains(s))
    }

    /// The matching databases of `listed` (in creation order) sorted, and how many matched.
    fn select(&self, mut listed: Vec<Database>) -> (Vec<Database>, usize) {
        listed.retain(|db| self.keeps(db));
        // Stable: ties keep the creation order.
        listed.sort_by(|a, b| {
            (self.sort.iter())
                .map(|(field, descending)| field.compare(a, b, *descending))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        });
        let total = listed.len();
        if let Some((offset, limit)) = self.page {
            listed = listed.into_iter().skip(offset).take(limit).collect();
        }
        (listed, total)
    }
}

/// The views of `grids` (each grid's master branch), as `GET /v1/views?gridId=` lists them; a
/// grid deleted since it was listed is left out.
async fn grid_views(state: &AppState, p: &Principal, grids: &[Grid]) -> ApiResult<Vec<ViewBody>> {
    let mut views = Vec::new();
    for grid in grids {
        let remote = state.remote.as_ref();
        let found = target_branch(&state.routes, remote, p.company_id(), &grid.id, &grid.id);
        let Some(found) = found.await? else { continue };
        let schema = found.schema().await?;
        let status = status_str(grid.status);
        views.extend(branch_views(state, p, (&schema, &grid.id), status, None).await?);
    }
    Ok(views)
}

/// The databases the key sees, by project when `projectId` is given, with a name containing
/// `search`; sorted by `sort`, a `page` of them when one is asked (`X-Total-Count` the number
/// matching, `Link` the next and previous pages), each with its grids and views as `expand`
/// asks.
#[utoipa::path(tag = "databases", params(
    ("projectId" = Option<i64>, Query, description = "only this project's databases"),
    ("search" = Option<String>, Query, description = "names containing it, any case (at most 200 characters)"),
    ("sort" = Option<String>, Query, description = "JSON {field: \"asc\"|\"desc\"}, fields id, name, description, projectId; default creation order"),
    ("page" = Option<String>, Query, description = "JSON {offset, limit} (default 0 and 100, limit at most 1000); absent: every database"),
    ("expand" = Option<Vec<String>>, Query, description = "grid: add each database's grids; view: add its grids' views"),
), responses((status = 200, body = [DatabaseBody], description = "databases; X-Total-Count and Link headers")))]
#[get("/v1/databases")]
async fn list_databases(
    state: web::Data<AppState>,
    p: Principal,
    req: HttpRequest,
) -> ApiResult<HttpResponse> {
    let listing = DatabaseListing::parse(&req)?;
    let expand = listing.expand;
    let pc = p.clone();
    // One supervisor step: the page and its grids are of one instant.
    let (page, total, listing) = exec(&state, move |s| {
        let (page, total) = listing.select(s.list_databases(&pc, listing.project)?);
        let grids_too = expand.grids || expand.views;
        let with_grids = page.into_iter().map(|db| {
            let grids = if grids_too { s.list_grids(&pc, &db.id)? } else { Vec::new() };
            Ok((db, grids))
        });
        Ok::<_, ApiError>((with_grids.collect::<ApiResult<Vec<_>>>()?, total, listing))
    })
    .await??;
    let mut bodies = Vec::with_capacity(page.len());
    for (db, grids) in &page {
        let mut body = DatabaseBody::from(db);
        if expand.grids {
            body.grids = Some(grids.iter().map(|g| grid_body(g, None)).collect());
        }
        if expand.views {
            body.views = Some(grid_views(&state, &p, grids).await?);
        }
        bodies.push(body);
    }
    let mut response = ok(&bodies)?;
    let link = (listing.page)
        .and_then(|page| offset_links(&state, req.path(), &listing.others, page, total));
    set_page_headers(&mut response, total, link);
    Ok(response)
}

#[utoipa::path(tag = "databases", responses((status = 200, body = DatabaseBody)))]
#[get("/v1/databases/{id}")]
async fn get_database(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let db = exec(&state, move |s| s.database(&p, &id, Privilege::Read).cloned()).await??;
    ok(&DatabaseBody::from(&db))
}

#[utoipa::path(tag = "databases", params(ProjectQuery), request_body = DatabaseRequest, responses((status = 200, body = DatabaseBody)))]
#[post("/v1/databases")]
async fn create_database(
    state: web::Data<AppState>,
    p: Principal,
    query: web::Query<ProjectQuery>,
    body: JsonObject<DatabaseRequest>,
) -> ApiResult<HttpResponse> {
    let project = integer_id(required(&query.project_id, "projectId")?, "projectId")?;
    let spec = new_database(body.into_inner())?;
    let db = exec(&state, move |s| s.create_database(&p, project, spec)).await??;
    ok(&DatabaseBody::from(&db))
}

async fn rename(
    state: web::Data<AppState>,
    p: Principal,
    id: String,
    req: UpdateDatabaseRequest,
) -> ApiResult<HttpResponse> {
    let db =
        exec(&state, move |s| s.update_database(&p, &id, &req.name, req.description.as_deref()))
            .await??;
    ok(&DatabaseBody::from(&db))
}

#[utoipa::path(tag = "databases", request_body = UpdateDatabaseRequest, responses((status = 200, body = DatabaseBody)))]
#[put("/v1/databases/{id}")]
async fn put_database(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonObject<UpdateDatabaseRequest>,
) -> ApiResult<HttpResponse> {
    rename(state, p, id.into_inner(), body.into_inner()).await
}

#[utoipa::path(tag = "databases", request_body = UpdateDatabaseRequest, responses((status = 200, body = DatabaseBody)))]
#[patch("/v1/databases/{id}")]
async fn patch_database(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonObject<UpdateDatabaseRequest>,
) -> ApiResult<HttpResponse> {
    rename(state, p, id.into_inner(), body.into_inner()).await
}

#[utoipa::path(tag = "databases", responses((status = 204)))]
#[delete("/v1/databases/{id}")]
async fn delete_database(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
) -> ApiResult<HttpResponse> {
    exec(&state, move |s| s.delete_database(&p, &id)).await??;
    no_content()
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(list_databases)
        .service(get_database)
        .service(create_database)
        .service(put_database)
        .service(patch_database)
        .service(delete_database);
}
