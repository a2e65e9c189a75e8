//! The admin subcommands of the `gridd` binary on a data directory no server is using: the keys
//! and companies they make work once a server starts on that directory.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::helpers::{start, OWNER_KEY};

/// Runs `gridd --data-dir <dir> <args>` and returns its exit status and stdout as JSON.
fn gridd(dir: &Path, args: &[&str]) -> (bool, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gridd"))
        .arg("--data-dir")
        .arg(dir)
        .args(["--api-key", OWNER_KEY, "--log-level", "warn"])
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("gridd runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (out.status.success(), value, format!("stdout: {stdout}\nstderr: {stderr}"))
}

#[test]
fn keys_created_by_the_cli_work_on_the_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ok, key, log) = gridd(
        dir.path(),
        &["keys", "create", "--name", "ci", "--user", "ci-bot", "--privileges", "read,write"],
    );
    assert!(ok, "{log}");
    assert_eq!(key["name"], json!("ci"), "{log}");
    assert_eq!(key["user"], json!("ci-bot"));
    assert_eq!(key["kind"], json!("company"));
    assert_eq!(key["privileges"], json!(["read", "write"]));
    assert_eq!(key["access"]["all"], json!(true));
    let secret = key["key"].as_str().expect("the secret is printed").to_owned();
    let id = key["id"].as_str().expect("id").to_owned();

    let (ok, list, log) = gridd(dir.path(), &["keys", "list"]);
    assert!(ok, "{log}");
    let list = list.as_array().expect("a JSON list").clone();
    let listed = list.iter().find(|k| k["id"] == json!(id)).expect("the new key is listed");
    assert!(listed.get("key").is_none(), "no secret in the list: {listed}");
    assert!(!log.contains(&secret), "the secret is not printed again");

    let app = start(dir.path(), OWNER_KEY);
    app.get_as(&secret, "/v1/projects").assert_status(200);
    let db = app.default_db();
    app.post_as(&secret, &format!("/v1/grids?dbId={db}"), &json!({"name": "x"}))
        .assert_error(403, "accessDenied");
    let ids: Vec<Value> = app
        .snapshot("/admin/v1/api-keys")
        .as_array()
        .expect("list")
        .iter()
        .map(|k| k["id"].clone())
        .collect();
    assert!(ids.contains(&json!(id)));
}

#[test]
fn a_company_created_by_the_cli_works_on_the_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ok, company, log) =
        gridd(dir.path(), &["companies", "create", "--name", "Acme", "--tier", "team"]);
    assert!(ok, "{log}");
    assert_eq!(company["name"], json!("Acme"), "{log}");
    assert_eq!(company["tier"], json!("team"));
    let owner = company["ownerKey"].as_str().expect("owner key").to_owned();
    let project = company["projectId"].clone();
    let db = company["databaseId"].as_str().expect("database").to_owned();
    let company_id = company["id"].to_string();

    let (ok, key, log) = gridd(
        dir.path(),
        &["keys", "create", "--name", "reader", "--company", &company_id, "--privileges", "read"],
    );
    assert!(ok, "{log}");
    let reader = key["key"].as_str().expect("secret").to_owned();

    let app = start(dir.path(), OWNER_KEY);
    let projects = app.get_as(&owner, "/v1/projects").assert_status(200).clone();
    assert_eq!(projects.as_array().map(Vec::len), Some(1));
    assert_eq!(projects[0]["id"], json!(project));
    app.get_as(&reader, &format!("/v1/projects/{project}")).assert_status(200);
    let res = app.post_as(&owner, &format!("/v1/grids?dbId={db}"), &json!({"name": "g"}));
    let view = res.assert_status(201)["defaultAccessViewId"].as_str().expect("view").to_owned();
    app.post_as(
        &owner,
        &format!("/v1/views/{view}/columns"),
        &json!({"id": "a", "name": "A", "type": "singleLine"}),
    )
    .assert_status(201);
    let res = app.post_as(&owner, &format!("/v1/views/{view}/columns/a/remove"), &json!({}));
    res.assert_error(403, "accessDenied");
    app.get(&format!("/v1/projects/{project}")).assert_error(404, "projectIsNotFound");
}

#[test]
fn the_cli_works_on_a_directory_a_server_has_used() {
    let dir = tempfile::tempdir().expect("temp dir");
    let grid = {
        let app = start(dir.path(), OWNER_KEY);
        app.create_grid("Before").0
    };
    let (ok, key, log) =
        gridd(dir.path(), &["keys", "create", "--name", "late", "--privileges", "manage"]);
    assert!(ok, "{log}");
    let secret = key["key"].as_str().expect("secret").to_owned();
    let app = start(dir.path(), OWNER_KEY);
    app.get_as(&secret, &format!("/v1/grids/{grid}")).assert_status(200);
    app.patch_as(&secret, &format!("/v1/grids/{grid}"), &json!({"name": "After"}))
        .assert_status(200);
}

/// Starts `gridd` serving on `dir` at info level with stderr piped (and no `NO_COLOR`: a log
/// written to a pipe is plain whatever the environment says) and reads its log up to the "gridd
/// listening" line, or all of it if the server ends before listening.
fn serve_until_listening(dir: &Path) -> (std::process::Child, std::process::ChildStderr, String) {
    use std::io::Read;
    use std::process::Stdio;
    let mut command = Command::new(env!("CARGO_BIN_EXE_gridd"));
    command
        .args(["--bind", "127.0.0.1:0", "--log-level", "info", "--api-key", OWNER_KEY])
        .arg("--data-dir")
        .arg(dir)
        .env_remove("NO_COLOR")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("gridd starts");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let mut log = Vec::new();
    let mut byte = [0u8; 1];
    let listening = |log: &[u8]| {
        let text = String::from_utf8_lossy(log);
        text.lines().any(|l| l.contains("gridd listening")) && text.ends_with('\n')
    };
    while !listening(&log) {
        match stderr.read(&mut byte) {
            Ok(1) => log.push(byte[0]),
            _ => break,
        }
    }
    (child, stderr, String::from_utf8_lossy(&log).into_owned())
}

#[test]
fn bad_cli_input_fails_without_changing_the_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ok, _, log) = gridd(dir.path(), &["keys", "list"]);
    assert!(ok, "{log}");
    let (ok, _, log) =
        gridd(dir.path(), &["keys", "create", "--name", "x", "--privileges", "root"]);
    assert!(!ok, "an unknown privilege is refused: {log}");
    let (ok, _, log) = gridd(dir.path(), &["companies", "create", "--name", "x", "--tier", "gold"]);
    assert!(!ok, "an unknown tier is refused: {log}");
    let (ok, _, log) = gridd(dir.path(), &["keys", "revoke", "nosuchkey00001"]);
    assert!(!ok, "an unknown key is refused: {log}");
    let (ok, list, log) = gridd(dir.path(), &["keys", "list"]);
    assert!(ok, "{log}");
    assert_eq!(list.as_array().map(Vec::len), Some(1), "only the owner key: {list}");
}

#[test]
fn the_server_stops_on_sigterm_even_when_its_log_cannot_be_written() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut child, stderr, log) = serve_until_listening(dir.path());
    assert!(log.contains("gridd listening"), "gridd ended before listening: {log}");
    drop(stderr);
    // SIGTERM once serving: the handler is installed when the server starts running.
    let addr = regex::Regex::new(r"addr\S*=\S*?(127\.0\.0\.1:\d+)").expect("regex");
    let addr = addr.captures(&log).map(|c| c[1].to_owned()).expect("the address is logged");
    let client = reqwest::blocking::Client::new();
    let ready = (0..100).any(|_| {
        let ok =
            client.get(format!("http://{addr}/healthz")).send().is_ok_and(|r| r.status() == 200);
        if !ok {
            std::thread::sleep(Duration::from_millis(50));
        }
        ok
    });
    assert!(ready, "gridd answers /healthz");
    let status =
        Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill runs");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let exited = loop {
        match child.try_wait().expect("wait") {
            Some(status) => break Some(status),
            None if Instant::now() > deadline => break None,
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    if exited.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(exited.is_some_and(|s| s.success()), "gridd did not stop: {exited:?}");
}

#[test]
fn a_log_written_to_a_pipe_has_no_colour_codes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut child, _stderr, log) = serve_until_listening(dir.path());
    let _ = child.kill();
    let _ = child.wait();
    assert!(log.contains("gridd listening"), "gridd ended before listening: {log}");
    assert!(!log.contains('\u{1b}'), "colour codes in a log written to a pipe: {log:?}");
}
