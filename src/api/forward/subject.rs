//! Which grid, branch or view a request is about, from its method, path and query alone, or
//! (for a few routes) what names it: a JSON body's field, a share token, a task, a CDN.
//!
//! Grammar (the first rule that matches wins; `{id}` is one path segment, not percent-decoded):
//! - `/v1/views/{id}[/...]` -> the view `id`;
//! - `/v1/grids/{id}[/...]` -> the grid `id` (settings, backups, restore, the grid itself);
//! - `/v1/branches/diffcheck` -> the view in the query's `sourceViewId`;
//!   `/v1/branches/diffcheck/{taskId}` -> the grid of task `taskId` (its preview is a file on
//!   the node that computed it): `TaskGrid`;
//! - `/v1/branches/{id}[/...]` -> the branch `id` (merge too);
//! - `/v1/views` -> the query's `branchId`, else its `gridId`; with neither, a `POST` names its
//!   grid in the body (`gridId`): `InBody`;
//! - `/v1/branches` -> the query's `branchId`, else its `gridId`;
//! - `POST /v1/webhooks` -> the view in the body's `viewId` (the hook's columns are checked
//!   against the view's schema): `InBody`;
//! - `/v1/cdns/{cdnId}[/...]` -> the grid of CDN `cdnId` (publishing reads the grid): `CdnGrid`;
//! - `/share/{token}[/...]` -> the view of the share link `token`: `SharedView`;
//! - anything else -> none: catalogue routes (companies, projects, databases, grids' listing and
//!   creation, keys, tasks, webhooks otherwise, glossaries, CDNs' listing and creation,
//!   translation memories), CDN files (`/cdn/...`: any node copies a published version from the
//!   cluster's object store, `api::cdn_replica`), the console, health and metrics are served by
//!   the node that received them.
//!
//! An empty query value counts as absent, as the handlers take it; a query string that does not
//! parse names nothing (the handler answers its 400).

use actix_web::http::Method;

/// What kind of id a request names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    View,
    Branch,
    /// A grid: its master branch's id.
    Grid,
}

/// The grid, branch or view a request is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub kind: Kind,
    pub id: String,
}

/// Where the request's subject is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Named by the path or the query.
    Named(Subject),
    /// The JSON body's `field` names it.
    InBody { kind: Kind, field: &'static str },
    /// The grid of this task (the catalogue's).
    TaskGrid(String),
    /// The grid of this CDN (the route table's).
    CdnGrid(String),
    /// The view of this share link's token (the catalogue's).
    SharedView(String),
}

/// The subject of a request to `path` with `query`, or None when the receiving node serves it.
pub fn target_of(method: &Method, path: &str, query: &str) -> Option<Target> {
    if let Some(rest) = path.strip_prefix("/share/") {
        return first_segment(rest).map(Target::SharedView);
    }
    let rest = path.strip_prefix("/v1/")?;
    let mut segments = rest.split('/');
    let collection = segments.next()?;
    let first = segments.next().filter(|s| !s.is_empty());
    let named = |kind, id: &str| Some(Target::Named(Subject { kind, id: id.to_owned() }));
    match (collection, first) {
        ("views", Some(id)) => named(Kind::View, id),
        ("grids", Some(id)) => named(Kind::Grid, id),
        ("branches", Some("diffcheck")) => match segments.next() {
            None => param(query, "sourceViewId").and_then(|id| named(Kind::View, &id)),
            Some(task) if !task.is_empty() => Some(Target::TaskGrid(task.to_owned())),
            Some(_) => None,
        },
        ("branches", Some(id)) => named(Kind::Branch, id),
        ("views", None) | ("branches", None) => match listing_subject(query) {
            Some(subject) => Some(Target::Named(subject)),
            None if collection == "views" && method == Method::POST => {
                Some(Target::InBody { kind: Kind::Grid, field: "gridId" })
            }
            None => None,
        },
        ("webhooks", None) if method == Method::POST => {
            Some(Target::InBody { kind: Kind::View, field: "viewId" })
        }
        ("cdns", Some(id)) => Some(Target::CdnGrid(id.to_owned())),
        _ => None,
    }
}

/// The first segment of `rest`, when not empty.
fn first_segment(rest: &str) -> Option<String> {
    rest.split('/').next().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// The `branchId`, else `gridId`, of a listing's (or a create's) query.
fn listing_subject(query: &str) -> Option<Subject> {
    if let Some(id) = param(query, "branchId") {
        return Some(Subject { kind: Kind::Branch, id });
    }
    param(query, "gridId").map(|id| Subject { kind: Kind::Grid, id })
}

/// The first non-empty value of `name` in `query`.
fn param(query: &str, name: &str) -> Option<String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).ok()?;
    pairs.into_iter().find(|(k, v)| k == name && !v.is_empty()).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(kind: Kind, id: &str) -> Option<Target> {
        Some(Target::Named(Subject { kind, id: id.to_owned() }))
    }

    /// Every route `api::configure` registers that names a grid, branch or view, and a sample
    /// of those that do not.
    #[test]
    fn every_route_shape() {
        use Kind::*;
        let get = Method::GET;
        let post = Method::POST;
        let table: Vec<(&Method, &str, &str, Option<Target>)> = vec![
            (&get, "/v1/views/v1", "", named(View, "v1")),
            (&Method::PATCH, "/v1/views/v1", "", named(View, "v1")),
            (&Method::DELETE, "/v1/views/v1", "", named(View, "v1")),
            (&get, "/v1/views/v1/statistic", "", named(View, "v1")),
            (&get, "/v1/views/v1/changes", "since=3", named(View, "v1")),
            (&post, "/v1/views/v1/columns", "", named(View, "v1")),
            (&post, "/v1/views/v1/columns/bulk", "", named(View, "v1")),
            (&get, "/v1/views/v1/columns/c1", "", named(View, "v1")),
            (&post, "/v1/views/v1/columns/c1/add", "", named(View, "v1")),
            (&get, "/v1/views/v1/dependencies/d1", "", named(View, "v1")),
            (&get, "/v1/views/v1/export", "fileType=csv", named(View, "v1")),
            (&get, "/v1/views/v1/export/t1", "", named(View, "v1")),
            (&post, "/v1/views/v1/files/zip", "", named(View, "v1")),
            (&get, "/v1/views/v1/files/f1", "", named(View, "v1")),
            (&post, "/v1/views/v1/import", "", named(View, "v1")),
            (&post, "/v1/views/v1/merge", "destinationViewId=v2", named(View, "v1")),
            (&Method::PUT, "/v1/views/v1/paths/a/b/c", "", named(View, "v1")),
            (&get, "/v1/views/v1/paths/tree", "", named(View, "v1")),
            (&post, "/v1/views/v1/record-histories/export", "", named(View, "v1")),
            (&get, "/v1/views/v1/records", "page={}", named(View, "v1")),
            (&Method::PATCH, "/v1/views/v1/records/r1", "", named(View, "v1")),
            (&get, "/v1/views/v1/records/r1/histories", "", named(View, "v1")),
            (&Method::PUT, "/v1/views/v1/shares", "", named(View, "v1")),
            (&get, "/v1/views", "gridId=g1", named(Grid, "g1")),
            (&get, "/v1/views", "gridId=g1&branchId=b1", named(Branch, "b1")),
            (&get, "/v1/views", "branchId=&gridId=g1", named(Grid, "g1")),
            (&get, "/v1/views", "", None),
            (&post, "/v1/views", "", Some(Target::InBody { kind: Grid, field: "gridId" })),
            (&get, "/v1/grids/g1", "", named(Grid, "g1")),
            (&Method::PATCH, "/v1/grids/g1", "", named(Grid, "g1")),
            (&Method::DELETE, "/v1/grids/g1", "", named(Grid, "g1")),
            (&get, "/v1/grids/g1/backups", "", named(Grid, "g1")),
            (&post, "/v1/grids/g1/backups/k1/restore", "", named(Grid, "g1")),
            (&post, "/v1/grids/g1/restore", "", named(Grid, "g1")),
            (&get, "/v1/grids/g1/settings", "", named(Grid, "g1")),
            (&post, "/v1/grids/g1/settings/categories/c1/files", "", named(Grid, "g1")),
            (&get, "/v1/grids/g1/settings/files", "", named(Grid, "g1")),
            (&get, "/v1/grids", "dbId=d1", None),
            (&post, "/v1/grids", "dbId=d1", None),
            (&get, "/v1/branches/b1", "", named(Branch, "b1")),
            (&Method::PATCH, "/v1/branches/b1", "", named(Branch, "b1")),
            (&Method::DELETE, "/v1/branches/b1", "", named(Branch, "b1")),
            (&post, "/v1/branches/b1/merge", "destinationBranchId=g1", named(Branch, "b1")),
            (&get, "/v1/branches", "gridId=g1", named(Grid, "g1")),
            (&post, "/v1/branches", "gridId=g1", named(Grid, "g1")),
            (&post, "/v1/branches", "branchId=b1&gridId=g1", named(Branch, "b1")),
            (&post, "/v1/branches", "", None),
            (
                &post,
                "/v1/branches/diffcheck",
                "sourceViewId=v1&destinationViewId=v2",
                named(View, "v1"),
            ),
            (&post, "/v1/branches/diffcheck", "", None),
            (&get, "/v1/branches/diffcheck/t1", "", Some(Target::TaskGrid("t1".into()))),
            (&get, "/v1/branches/diffcheck/", "", None),
            (&post, "/v1/webhooks", "", Some(Target::InBody { kind: View, field: "viewId" })),
            (&get, "/v1/webhooks/h1", "", None),
            (&Method::PUT, "/v1/cdns/c1/publish", "", Some(Target::CdnGrid("c1".into()))),
            (&get, "/v1/cdns/c1", "", Some(Target::CdnGrid("c1".into()))),
            (&post, "/v1/cdns", "", None),
            (&get, "/cdn/c1/en.json", "", None),
            (&get, "/cdn/c1/v/2/en.json", "", None),
            (&get, "/cdn/", "", None),
            (&get, "/share/tok", "page=2", Some(Target::SharedView("tok".into()))),
            (&get, "/share/tok/records/r1/history", "", Some(Target::SharedView("tok".into()))),
            (&get, "/share/", "", None),
            (&get, "/v1/tasks/t1", "", None),
            (&get, "/v1/projects/p1", "", None),
            (&get, "/v1/databases/d1", "", None),
            (&get, "/v1/webhooks", "viewId=v1", None),
            (&get, "/v1/cdns", "gridId=g1", None),
            (&get, "/v1/glossaries/x", "", None),
            (&get, "/v1/transmems/x", "", None),
            (&get, "/v1/template-grids", "", None),
            (&get, "/admin/v1/api-keys", "", None),
            (&get, "/healthz", "", None),
            (&get, "/metrics", "", None),
            (&get, "/console/index.html", "", None),
            (&get, "/v1/openapi.json", "", None),
            (&get, "/v1/views/", "", None),
            (&get, "/v1/views//records", "", None),
            (&get, "/v1/views", "gridId=%zz", named(Grid, "%zz")),
            (&get, "/v1/views", "gridId=a%20b", named(Grid, "a b")),
        ];
        for (method, path, query, expected) in table {
            assert_eq!(target_of(method, path, query), expected, "{method} {path}?{query}");
        }
    }
}
