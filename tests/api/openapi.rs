//! `GET /v1/openapi.json`: a valid OpenAPI 3 description that lists every endpoint the server
//! serves, and only routes that exist.

use reqwest::Method;
use serde_json::Value;

use crate::helpers::spawn_app;

/// Every endpoint of the contract this server serves, as the OpenAPI document names them.
const ENDPOINTS: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/v1/openapi.json"),
    ("get", "/v1/projects"),
    ("post", "/v1/projects"),
    ("get", "/v1/projects/{id}"),
    ("put", "/v1/projects/{id}"),
    ("patch", "/v1/projects/{id}"),
    ("delete", "/v1/projects/{id}"),
    ("get", "/v1/databases"),
    ("post", "/v1/databases"),
    ("get", "/v1/databases/{id}"),
    ("put", "/v1/databases/{id}"),
    ("patch", "/v1/databases/{id}"),
    ("delete", "/v1/databases/{id}"),
    ("get", "/v1/grids"),
    ("post", "/v1/grids"),
    ("get", "/v1/grids/{id}"),
    ("patch", "/v1/grids/{id}"),
    ("delete", "/v1/grids/{id}"),
    ("get", "/v1/views"),
    ("post", "/v1/views"),
    ("get", "/v1/views/{id}"),
    ("delete", "/v1/views/{id}"),
    ("post", "/v1/views/{viewId}/columns"),
    ("get", "/v1/views/{viewId}/columns/{id}"),
    ("patch", "/v1/views/{viewId}/columns/{id}"),
    ("delete", "/v1/views/{viewId}/columns/{id}"),
    ("post", "/v1/views/{viewId}/columns/{id}/add"),
    ("post", "/v1/views/{viewId}/columns/{id}/remove"),
    ("get", "/v1/views/{viewId}/dependencies"),
    ("post", "/v1/views/{viewId}/dependencies"),
    ("get", "/v1/views/{viewId}/dependencies/{id}"),
    ("put", "/v1/views/{viewId}/dependencies/{id}"),
    ("delete", "/v1/views/{viewId}/dependencies/{id}"),
    ("get", "/v1/views/{viewId}/records"),
    ("post", "/v1/views/{viewId}/records"),
    ("patch", "/v1/views/{viewId}/records"),
    ("delete", "/v1/views/{viewId}/records"),
    ("patch", "/v1/views/{viewId}/records/{id}"),
    ("get", "/v1/views/{viewId}/records/{recordId}/histories"),
    ("get", "/v1/tasks/{id}"),
    ("post", "/admin/v1/api-keys"),
    ("get", "/admin/v1/api-keys"),
    ("delete", "/admin/v1/api-keys/{id}"),
    ("post", "/admin/v1/companies"),
    ("patch", "/admin/v1/companies/{id}"),
    ("delete", "/admin/v1/companies/{id}"),
];

/// Endpoints of the contract that later capabilities serve: once one answers, it must be
/// described too.
const LATER_ENDPOINTS: &[(&str, &str)] = &[
    ("get", "/v1/branches"),
    ("post", "/v1/branches"),
    ("get", "/v1/branches/{id}"),
    ("delete", "/v1/branches/{id}"),
    ("patch", "/v1/branches/{id}"),
    ("patch", "/v1/views/{id}"),
    ("post", "/v1/branches/{branchId}/merge"),
    ("post", "/v1/views/{id}/import"),
    ("get", "/v1/views/{id}/export"),
    ("post", "/v1/views/{viewId}/merge"),
    ("put", "/v1/views/{viewId}/shares"),
    ("get", "/v1/views/{viewId}/shares"),
    ("delete", "/v1/views/{viewId}/shares"),
    ("post", "/v1/views/{viewId}/record-histories/export"),
    ("get", "/v1/views/{viewId}/record-histories/export/{taskId}"),
    ("get", "/v1/views/{viewId}/export/{taskId}"),
    ("post", "/v1/views/{viewId}/files"),
    ("get", "/v1/views/{viewId}/files/{id}"),
    ("delete", "/v1/views/{viewId}/files"),
    ("post", "/v1/views/{viewId}/files/zip"),
    ("get", "/v1/grids/{id}/backups"),
    ("post", "/v1/grids/{id}/backups/{backupId}/restore"),
    // Beyond the hosted service (issue 21): live grids.
    ("get", "/v1/views/{viewId}/changes"),
    // The web console (issue 23).
    ("get", "/"),
    ("get", "/console/{path}"),
    ("get", "/admin/v1/api-keys/current"),
    ("get", "/v1/views/{viewId}/records/{recordId}"),
    ("post", "/v1/grids/{gridId}/restore"),
    ("post", "/v1/webhooks"),
    ("get", "/v1/webhooks"),
    ("get", "/v1/webhooks/{id}"),
    ("delete", "/v1/webhooks/{id}"),
    ("post", "/v1/webhooks/{id}/resume"),
    ("get", "/v1/webhooks/{id}/deliveries"),
    ("get", "/v1/glossaries"),
    ("post", "/v1/glossaries"),
    ("get", "/v1/glossaries/{id}"),
    ("put", "/v1/glossaries/{id}"),
    ("delete", "/v1/glossaries/{id}"),
    ("get", "/v1/glossaries/{id}/export"),
    ("post", "/v1/glossaries/{id}/import"),
    ("get", "/v1/glossaries/{id}/terms"),
    ("post", "/v1/glossaries/{id}/terms"),
    ("get", "/v1/glossaries/{id}/terms/{termId}"),
    ("put", "/v1/glossaries/{id}/terms/{termId}"),
    ("delete", "/v1/glossaries/{id}/terms/{termId}"),
    ("post", "/v1/glossaries/{id}/lookup"),
    ("post", "/v1/glossaries/lookup"),
    // CDN publishing (issue 22).
    ("get", "/v1/cdns"),
    ("put", "/v1/cdns/{cdnId}/publish"),
    ("put", "/v1/cdns/{cdnId}/unpublish"),
    ("post", "/v1/cdns"),
    ("get", "/v1/cdns/{cdnId}"),
    ("delete", "/v1/cdns/{cdnId}"),
    ("get", "/cdn/{cdnId}/{file}"),
    ("get", "/cdn/{cdnId}/v/{version}/{file}"),
    ("get", "/v1/transmems"),
    ("post", "/v1/transmems"),
    ("post", "/v1/transmems/upload"),
    ("get", "/v1/transmems/{tmId}"),
    ("put", "/v1/transmems/{tmId}"),
    ("delete", "/v1/transmems/{tmId}"),
    ("put", "/v1/transmems/{tmId}/cleanup"),
    ("get", "/v1/transmems/{tmId}/export"),
    ("post", "/v1/transmems/{tmId}/import"),
    ("post", "/v1/transmems/{tmId}/lookup"),
    ("post", "/v1/transmems/{tmId}/segments"),
];

const METHODS: &[&str] = &["get", "post", "put", "patch", "delete", "head", "options", "trace"];

fn document() -> Value {
    let app = spawn_app();
    let res = app.call(Method::GET, "/v1/openapi.json", None, None);
    res.assert_status(200).clone()
}

/// The (method, path) pairs a document lists.
fn operations(doc: &Value) -> Vec<(String, String)> {
    let paths = doc["paths"].as_object().expect("paths is an object");
    let mut out = Vec::new();
    for (path, item) in paths {
        let item = item.as_object().expect("a path item is an object");
        for method in METHODS {
            if item.contains_key(*method) {
                out.push(((*method).to_owned(), path.clone()));
            }
        }
    }
    out
}

/// A path template with its parameter names dropped (`/v1/views/{}/columns`), to compare
/// templates that name their parameters differently.
fn shape(path: &str) -> String {
    path.split('/')
        .map(|s| if s.starts_with('{') && s.ends_with('}') { "{}" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

fn described(listed: &[(String, String)], method: &str, path: &str) -> bool {
    listed.iter().any(|(m, p)| m == method && shape(p) == shape(path))
}

/// A concrete path for a templated one: every `{param}` becomes a value no resource has.
fn concrete(path: &str) -> String {
    let mut out = String::new();
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push_str("nosuchid000001");
            }
            '}' => in_param = false,
            c if !in_param => out.push(c),
            _ => {}
        }
    }
    out
}

#[test]
fn the_description_is_openapi_3_and_needs_no_key() {
    let app = spawn_app();
    let res = app.call(Method::GET, "/v1/openapi.json", None, None);
    let doc = res.assert_status(200);
    assert_eq!(res.header("content-type"), Some("application/json"));
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")), "{}", doc["openapi"]);
    assert_eq!(doc["info"]["title"], "gridd");
    assert!(doc["info"]["version"].is_string());
    assert!(doc["paths"].as_object().is_some_and(|p| !p.is_empty()));
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["ApiKey"]["type"], "apiKey");
    assert_eq!(schemes["ApiKey"]["in"], "header");
    assert_eq!(schemes["ApiKey"]["name"], "Authorization");
    for (method, path) in operations(doc) {
        let op = &doc["paths"][&path][&method];
        assert!(op["responses"].as_object().is_some_and(|r| !r.is_empty()), "{method} {path}");
        let params: Vec<&str> = path
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .collect();
        for name in params {
            let declared = op["parameters"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["name"] == name && p["in"] == "path"));
            assert!(declared, "{method} {path} declares path parameter {name}");
        }
    }
}

#[test]
fn every_endpoint_we_serve_is_described() {
    let doc = document();
    let listed = operations(&doc);
    let missing: Vec<String> = ENDPOINTS
        .iter()
        .filter(|(m, p)| !described(&listed, m, p))
        .map(|(m, p)| format!("{} {p}", m.to_uppercase()))
        .collect();
    assert!(missing.is_empty(), "not in the OpenAPI description: {missing:?}");
}

#[test]
fn every_described_operation_is_routed() {
    let app = spawn_app();
    let doc = document();
    let ops = operations(&doc);
    assert!(ops.len() >= ENDPOINTS.len(), "{} operations", ops.len());
    for (method, path) in ops {
        let url = concrete(&path);
        let http = Method::from_bytes(method.to_uppercase().as_bytes()).expect("a method");
        let body = serde_json::json!({});
        let res = app.call(http, &url, Some(&app.key), Some(&body));
        let code = res.body["code"].as_str().unwrap_or_default();
        assert!(
            code != "notFound" && code != "methodNotAllowed" && res.status != 500,
            "{method} {path} ({url}) is described but answers {} {}",
            res.status,
            res.text
        );
    }
}

#[test]
fn every_contract_endpoint_the_server_answers_is_described() {
    let app = spawn_app();
    let listed = operations(&document());
    for (method, path) in ENDPOINTS.iter().chain(LATER_ENDPOINTS) {
        let http = Method::from_bytes(method.to_uppercase().as_bytes()).expect("a method");
        let res = app.call(http, &concrete(path), Some(&app.key), Some(&serde_json::json!({})));
        let code = res.body["code"].as_str().unwrap_or_default();
        let routed = code != "notFound" && code != "methodNotAllowed";
        if routed {
            assert!(
                described(&listed, method, path),
                "{method} {path} answers but is not described"
            );
        }
    }
}

/// The rows of README's compatibility table: (method, path, served).
fn compatibility_rows() -> Vec<(String, String, bool)> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let section = readme
        .split("\n## Compatibility with the hosted API\n")
        .nth(1)
        .expect("README has a compatibility section");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let operation = cells[1].trim_matches('`');
            let (method, path) = operation.split_once(' ').expect("`METHOD /path`");
            (method.to_lowercase(), path.to_owned(), cells[2].starts_with("served"))
        })
        .collect()
}

/// README lists every operation of the hosted service's OpenAPI (90 of them) once, and says
/// truly which ones gridd serves: a served one is described and routed, one not served is
/// answered 404 `notFound` (or 405 `methodNotAllowed` where its path is served for another
/// method), never a 500 or a silent success.
#[test]
fn the_readme_compatibility_table_tells_the_truth() {
    let rows = compatibility_rows();
    assert_eq!(rows.len(), 90, "every hosted operation has a row");
    let mut seen = std::collections::HashSet::new();
    for (method, path, _) in &rows {
        assert!(seen.insert((method.clone(), shape(path))), "{method} {path} listed twice");
    }
    let app = spawn_app();
    let listed = operations(&document());
    for (method, path, served) in rows {
        assert_eq!(
            described(&listed, &method, &path),
            served,
            "{method} {path}: README says served={served}"
        );
        if !served {
            let http = Method::from_bytes(method.to_uppercase().as_bytes()).expect("a method");
            let res =
                app.call(http, &concrete(&path), Some(&app.key), Some(&serde_json::json!({})));
            let refused = [(404, "notFound"), (405, "methodNotAllowed")];
            assert!(refused.contains(&(res.status, res.code())), "{method} {path}: {}", res.text);
        }
    }
}
