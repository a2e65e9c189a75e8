//! `spawn_app()`: the real server on port 0 with its own temporary data directory, and a small
//! blocking HTTP client for the tests.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use reqwest::blocking::{Client, RequestBuilder};
use reqwest::Method;
use serde_json::{json, Value};

pub const OWNER_KEY: &str = "test-owner-key-0123456789";

/// A running server and what a test needs to talk to it.
pub struct TestApp {
    pub base: String,
    pub key: String,
    pub data_dir: PathBuf,
    system: Option<actix_web::rt::System>,
    server: Option<gridd::StopHandle>,
    kill: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    _dir: Option<tempfile::TempDir>,
    client: Client,
}

/// A response: status, headers and the body parsed as JSON (Value::Null when empty or not JSON).
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    /// The body as received (`text` replaces invalid UTF-8).
    pub bytes: Vec<u8>,
    pub body: Value,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The error code of an error body.
    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }

    /// Asserts the status and, for errors, the code and the error body's shape.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "unexpected status, body: {}", self.text);
        assert_eq!(self.code(), code, "unexpected code, body: {}", self.text);
        assert_eq!(self.body["status"], json!(status));
        assert!(self.body["message"].is_string(), "{}", self.text);
        assert!(self.body["path"].as_str().is_some_and(|p| p.starts_with('/')), "{}", self.text);
        assert!(
            self.body["timestamp"].as_str().is_some_and(|t| t.ends_with("+00:00")),
            "{}",
            self.text
        );
        assert_eq!(self.header("content-type"), Some("application/json"));
    }

    #[track_caller]
    pub fn assert_status(&self, status: u16) -> &Value {
        assert_eq!(self.status, status, "unexpected status, body: {}", self.text);
        &self.body
    }
}

/// Starts a server on a fresh temporary data directory.
pub fn spawn_app() -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_path_buf();
    let mut app = start(&path, OWNER_KEY);
    app._dir = Some(dir);
    app
}

/// Starts a server on a fresh temporary data directory with a changed configuration.
pub fn spawn_app_with(change: impl FnOnce(&mut gridd::Config)) -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = gridd::Config::for_data_dir(dir.path(), OWNER_KEY);
    change(&mut config);
    let mut app = start_with(config);
    app._dir = Some(dir);
    app
}

/// Starts a server on an existing data directory (the caller keeps the directory alive).
pub fn start(data_dir: &Path, key: &str) -> TestApp {
    start_with(gridd::Config::for_data_dir(data_dir, key))
}

/// Starts a server with this configuration (the caller keeps the data directory alive).
pub fn start_with(config: gridd::Config) -> TestApp {
    let data_dir = config.data_dir.clone();
    let key = config.api_key.clone().unwrap_or_default();
    let (tx, rx) = mpsc::channel();
    let (kill_tx, kill_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let system = actix_web::rt::System::new();
        let handle = actix_web::rt::System::current();
        system.block_on(async move {
            match gridd::Application::build(config).await {
                Ok(app) => {
                    tx.send(Ok((app.local_addr(), handle, app.handle()))).expect("test is waiting");
                    // A kill drops the server without its graceful shutdown (no snapshot).
                    tokio::select! {
                        _ = app.run_until_stopped() => {}
                        _ = kill_rx => actix_web::rt::System::current().stop(),
                    }
                }
                Err(err) => tx.send(Err(err.to_string())).expect("test is waiting"),
            }
        });
    });
    let (addr, system, server) = rx.recv().expect("server thread answers").expect("server starts");
    TestApp {
        base: format!("http://{addr}"),
        key,
        data_dir,
        system: Some(system),
        server: Some(server),
        kill: Some(kill_tx),
        thread: Some(thread),
        _dir: None,
        client: Client::builder().build().expect("http client"),
    }
}

impl TestApp {
    /// Stops this server and starts a new one on the same data directory and key.
    pub fn restart(mut self) -> TestApp {
        let dir = self._dir.take();
        self.stop();
        let mut app = start(&self.data_dir, &self.key);
        app._dir = dir;
        app
    }

    /// Stops the server gracefully (the node closes its WAL and store) and waits for it.
    fn stop(&mut self) {
        if let (Some(system), Some(server)) = (self.system.take(), self.server.take()) {
            system.arbiter().spawn(async move { server.stop(true).await });
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    pub fn request(&self, method: Method, path: &str, key: Option<&str>) -> RequestBuilder {
        let mut req = self.client.request(method, format!("{}{}", self.base, path));
        if let Some(key) = key {
            req = req.header("Authorization", format!("ApiKey {key}"));
        }
        req
    }

    pub fn send(&self, req: RequestBuilder) -> Resp {
        let res = req.send().expect("request is sent");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let bytes = res.bytes().expect("body is read").to_vec();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Resp { status, headers, text, bytes, body }
    }

    pub fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> Resp {
        let mut req = self.request(method, path, key);
        if let Some(body) = body {
            req = req.json(body);
        }
        self.send(req)
    }

    pub fn get(&self, path: &str) -> Resp {
        self.call(Method::GET, path, Some(&self.key), None)
    }

    pub fn post(&self, path: &str, body: &Value) -> Resp {
        self.call(Method::POST, path, Some(&self.key), Some(body))
    }

    pub fn patch(&self, path: &str, body: &Value) -> Resp {
        self.call(Method::PATCH, path, Some(&self.key), Some(body))
    }

    pub fn put(&self, path: &str, body: &Value) -> Resp {
        self.call(Method::PUT, path, Some(&self.key), Some(body))
    }

    pub fn delete(&self, path: &str) -> Resp {
        self.call(Method::DELETE, path, Some(&self.key), None)
    }

    pub fn delete_with(&self, path: &str, body: &Value) -> Resp {
        self.call(Method::DELETE, path, Some(&self.key), Some(body))
    }

    /// The id of the bootstrap database.
    pub fn default_db(&self) -> String {
        let dbs = self.get("/v1/databases");
        dbs.body[0]["id"].as_str().expect("bootstrap database").to_owned()
    }

    /// Creates a grid in the bootstrap database: (grid id, default view id).
    pub fn create_grid(&self, name: &str) -> (String, String) {
        let db = self.default_db();
        let res = self.post(&format!("/v1/grids?dbId={db}"), &json!({ "name": name }));
        let body = res.assert_status(201);
        (
            body["id"].as_str().expect("grid id").to_owned(),
            body["defaultAccessViewId"].as_str().expect("view id").to_owned(),
        )
    }

    /// Creates a column through a view and returns its body.
    pub fn create_column(&self, view: &str, column: Value) -> Value {
        let res = self.post(&format!("/v1/views/{view}/columns"), &column);
        res.assert_status(201).clone()
    }

    /// Creates a company key with the given privileges and access, returning its secret.
    pub fn create_key(&self, privileges: &[&str], access: Value) -> String {
        let res = self.post(
            "/admin/v1/api-keys",
            &json!({"name": "test", "kind": "company", "privileges": privileges, "access": access}),
        );
        res.assert_status(201)["key"].as_str().expect("secret").to_owned()
    }

    /// Creates a company on the given tier: (owner key, project id, database id).
    pub fn create_company(&self, tier: &str) -> (String, String, String) {
        let res =
            self.post("/admin/v1/companies", &json!({"name": format!("{tier} co"), "tier": tier}));
        let body = res.assert_status(201);
        // Ids as text: the project id is a JSON number, the others strings.
        let field = |name: &str| match &body[name] {
            Value::String(text) => text.clone(),
            Value::Number(n) => n.to_string(),
            other => panic!("company field {name} is {other}"),
        };
        (field("ownerKey"), field("projectId"), field("databaseId"))
    }
}

/// Calls made with another key than the app's own, and state checks after refused writes.
impl TestApp {
    pub fn get_as(&self, key: &str, path: &str) -> Resp {
        self.call(Method::GET, path, Some(key), None)
    }

    pub fn post_as(&self, key: &str, path: &str, body: &Value) -> Resp {
        self.call(Method::POST, path, Some(key), Some(body))
    }

    pub fn patch_as(&self, key: &str, path: &str, body: &Value) -> Resp {
        self.call(Method::PATCH, path, Some(key), Some(body))
    }

    pub fn put_as(&self, key: &str, path: &str, body: &Value) -> Resp {
        self.call(Method::PUT, path, Some(key), Some(body))
    }

    pub fn delete_as(&self, key: &str, path: &str) -> Resp {
        self.call(Method::DELETE, path, Some(key), None)
    }

    /// Sends a raw body with the given content type (no JSON encoding).
    pub fn raw(&self, method: Method, path: &str, content_type: &str, body: Vec<u8>) -> Resp {
        let req = self
            .request(method, path, Some(&self.key))
            .header("Content-Type", content_type)
            .body(body);
        self.send(req)
    }

    /// Creates a view key bound to `view`, returning its secret.
    pub fn create_view_key(&self, view: &str) -> String {
        let res = self.post(
            "/admin/v1/api-keys",
            &json!({"name": "view key", "kind": "view", "viewId": view}),
        );
        res.assert_status(201)["key"].as_str().expect("secret").to_owned()
    }

    /// Creates a company on the given tier and returns the whole answer (id, tier, projectId,
    /// databaseId, ownerKey).
    pub fn create_company_body(&self, tier: &str) -> Value {
        let res =
            self.post("/admin/v1/companies", &json!({"name": format!("{tier} co"), "tier": tier}));
        res.assert_status(201).clone()
    }

    /// A company on `tier` and a grid created by its owner key: (company body, owner key, grid
    /// body with id and defaultAccessViewId).
    pub fn tier_grid(&self, tier: &str) -> (Value, String, Value) {
        let company = self.create_company_body(tier);
        let owner = company["ownerKey"].as_str().expect("key").to_owned();
        let db = company["databaseId"].as_str().expect("db");
        let res = self.post_as(&owner, &format!("/v1/grids?dbId={db}"), &json!({"name": "g"}));
        let grid = res.assert_status(201).clone();
        (company, owner, grid)
    }

    /// The body of a GET that must succeed, to compare before and after a refused write.
    #[track_caller]
    pub fn snapshot(&self, path: &str) -> Value {
        self.get(path).assert_status(200).clone()
    }

    /// Asserts that GET `path` still answers exactly `before`.
    #[track_caller]
    pub fn assert_unchanged(&self, path: &str, before: &Value) {
        let now = self.snapshot(path);
        assert_eq!(&now, before, "{path} changed after a refused request");
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The `page` query parameter, URL-encoded: `?page={"offset":..,"limit":..}`.
pub fn page_query(offset: usize, limit: usize) -> String {
    let page = format!("{{\"offset\":{offset},\"limit\":{limit}}}");
    serde_urlencoded::to_string([("page", page)]).expect("a page encodes")
}

impl TestApp {
    /// Every record of a view (up to 1000) as the listing shows them.
    pub fn records(&self, view: &str) -> Vec<Value> {
        let res = self.get(&format!("/v1/views/{view}/records?{}", page_query(0, 1000)));
        res.assert_status(200).as_array().expect("a list of records").clone()
    }

    /// Adds records through a view, asserting 201, and returns the added records.
    pub fn add_records(&self, view: &str, records: Value) -> Vec<Value> {
        let res = self.post(&format!("/v1/views/{view}/records"), &records);
        res.assert_status(201).as_array().expect("a list of records").clone()
    }

    /// Creates a company key with read and write for the user `user`, returning its secret.
    pub fn create_user_key(&self, user: &str) -> String {
        let res = self.post(
            "/admin/v1/api-keys",
            &json!({"name": user, "user": user, "kind": "company",
                    "privileges": ["read", "write"], "access": {"all": true}}),
        );
        res.assert_status(201)["key"].as_str().expect("secret").to_owned()
    }
}

/// `/v1/views/<view>/records`.
pub fn records_path(view: &str) -> String {
    format!("/v1/views/{view}/records")
}

/// `/v1/views/<view>/columns/<column>`.
pub fn column_path(view: &str, column: &str) -> String {
    format!("/v1/views/{view}/columns/{column}")
}

/// The record `id` of a listing (panics when it has none).
#[track_caller]
pub fn find_record<'a>(records: &'a [Value], id: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no record {id} in {records:?}"))
}

impl TestApp {
    /// The ids of a listing of `view` with these parameters (URL-encoded), in order.
    #[track_caller]
    pub fn listing_ids(&self, view: &str, params: &[(&str, &str)]) -> Vec<String> {
        let encoded = serde_urlencoded::to_string(params).expect("parameters encode");
        let res = self.get(&format!("{}?{encoded}", records_path(view)));
        res.assert_status(200)
            .as_array()
            .unwrap_or_else(|| panic!("a list of records: {}", res.text))
            .iter()
            .map(|r| r["id"].as_str().expect("record id").to_owned())
            .collect()
    }

    /// Asserts the server still answers `/healthz`, within 2 s (after a hostile request: it
    /// is not held up).
    #[track_caller]
    pub fn assert_healthy(&self) {
        let started = std::time::Instant::now();
        self.get("/healthz").assert_status(200);
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(2), "/healthz took {took:?}");
    }
}

impl TestApp {
    /// The language grid most localization tests start from: source `en` (enUS), targets `fr`
    /// (frFR) and `de` (deDE), depending on it when `with_dependencies`, and a plain column
    /// `note`: (grid id, view id).
    pub fn localized_grid(&self, with_dependencies: bool) -> (String, String) {
        let targets = [("fr", "French", "frFR"), ("de", "German", "deDE")];
        self.language_grid(&targets, with_dependencies)
    }

    /// A grid "Strings" with source `en` (English, enUS), the target language columns
    /// `targets` ((id, name, languageCode)), each depending on `en` when `with_dependencies`,
    /// and a plain column `note`: (grid id, view id).
    pub fn language_grid(
        &self,
        targets: &[(&str, &str, &str)],
        with_dependencies: bool,
    ) -> (String, String) {
        let (grid, view) = self.create_grid("Strings");
        self.create_column(
            &view,
            json!({"id": "en", "name": "English", "type": "language", "languageCode": "enUS",
                   "localizationType": "sourceLanguage"}),
        );
        for (id, name, code) in targets {
            self.create_column(
                &view,
                json!({"id": id, "name": name, "type": "language", "languageCode": code,
                       "localizationType": "targetLanguage"}),
            );
        }
        self.create_column(&view, json!({"id": "note", "name": "Note", "type": "singleLine"}));
        if with_dependencies {
            for (target, _, _) in targets {
                self.add_dependency(&view, target);
            }
        }
        (grid, view)
    }

    /// Makes `target` depend on `en`; returns the dependency id.
    pub fn add_dependency(&self, view: &str, target: &str) -> String {
        let res = self.post(
            &format!("/v1/views/{view}/dependencies"),
            &json!({"sourceColumnId": "en", "targetColumnId": target}),
        );
        res.assert_status(201)["id"].as_str().expect("dependency id").to_owned()
    }
}

/// The cell of `column` in a record body (panics when the record has none).
#[track_caller]
pub fn cell<'a>(record: &'a Value, column: &str) -> &'a Value {
    record["cells"]
        .as_array()
        .and_then(|cells| cells.iter().find(|c| c["columnId"] == column))
        .unwrap_or_else(|| panic!("record has no cell {column}: {record}"))
}

impl TestApp {
    /// Stops the server gracefully (its catalogue and store closed) and hands back its data
    /// directory, for tests that read the stored files themselves.
    pub fn shut_down(mut self) -> (PathBuf, Option<tempfile::TempDir>) {
        let dir = self._dir.take();
        self.stop();
        (self.data_dir.clone(), dir)
    }

    /// Stops the server abruptly (no shutdown snapshot, like a crash after the last
    /// acknowledged write) and hands back its data directory.
    pub fn kill(mut self) -> (PathBuf, Option<tempfile::TempDir>) {
        let dir = self._dir.take();
        self.server.take();
        self.system.take();
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        (self.data_dir.clone(), dir)
    }
}

/// Copies a data directory (for tests that damage files and restart on the copy).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("target dir");
    for entry in std::fs::read_dir(from).expect("readable dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("file copied");
        }
    }
}

/// The `<url>; rel="..."` entries of a `Link` header as (rel, url).
pub fn links(res: &Resp) -> Vec<(String, String)> {
    let Some(header) = res.header("link") else { return Vec::new() };
    header
        .split(", <")
        .map(|part| {
            let part = part.trim_start_matches('<');
            let (url, rel) = part.split_once(">; rel=\"").expect("a Link entry");
            (rel.trim_end_matches('"').to_owned(), url.to_owned())
        })
        .collect()
}

pub fn link(res: &Resp, rel: &str) -> Option<String> {
    links(res).into_iter().find(|(r, _)| r == rel).map(|(_, url)| url)
}

/// GETs an absolute URL of this server (as found in a `Link` header).
pub fn follow(app: &TestApp, url: &str) -> Resp {
    let path = url.strip_prefix(&app.base).unwrap_or_else(|| panic!("{url} is not absolute"));
    app.get(path)
}

impl TestApp {
    /// The record `id` as `view` lists it (found with a `_recordId` query), asserting it exists.
    #[track_caller]
    pub fn record_by_id(&self, view: &str, id: &str) -> Value {
        let query = json!({"_recordId": {"=": id}}).to_string();
        let encoded = serde_urlencoded::to_string([("query", query)]).expect("query encodes");
        let res = self.get(&format!("/v1/views/{view}/records?{encoded}"));
        let found = res.assert_status(200).as_array().expect("a list of records");
        assert_eq!(found.len(), 1, "record {id}: {}", res.text);
        found[0].clone()
    }

    /// Waits for the task `id` to end (up to 10 minutes); its final body.
    #[track_caller]
    pub fn wait_task(&self, id: &str) -> Value {
        for _ in 0..24_000 {
            let body = self.get(&format!("/v1/tasks/{id}")).assert_status(200).clone();
            if body["status"] != json!("running") {
                return body;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("task {id} did not finish");
    }
}

/// What a raw connection reads until the answer's JSON body closes (a `}`), the peer closes, or
/// `timeout` passes; for tests that write requests by hand.
pub fn read_answer(stream: &mut std::net::TcpStream, timeout: std::time::Duration) -> String {
    use std::io::Read;
    stream.set_read_timeout(Some(timeout)).expect("timeout");
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains('}') {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}
