//! `GET /v1/tasks/<id>`: the task registry answers for the caller's company only.

use reqwest::Method;

use crate::helpers::spawn_app;

#[test]
fn an_unknown_task_is_not_found() {
    let app = spawn_app();
    let res = app.get("/v1/tasks/nosuchtask00001");
    res.assert_error(404, "taskIsNotFound");
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains("nosuchtask00001")));
}

#[test]
fn tasks_need_a_valid_key() {
    let app = spawn_app();
    for key in [None, Some("wrong-key")] {
        app.call(Method::GET, "/v1/tasks/nosuchtask00001", key, None)
            .assert_error(401, "unauthorized");
    }
}
