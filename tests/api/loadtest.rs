//! The load-test harness (`loadtest/`) run for a few seconds in CI: against the real `gridd`
//! binary it starts itself on port 0, and against an in-process server given by URL and key.
//! These check that the harness works and that the server answers every request it sends
//! (zero errors); they do not judge speed.

use std::path::Path;

use clap::Parser;
use loadtest::{Options, Report};
use serde_json::{json, Value};

use crate::helpers::spawn_app;

fn run(args: &[&str]) -> Report {
    let mut argv = vec!["loadtest"];
    argv.extend_from_slice(args);
    let options = Options::try_parse_from(argv).expect("valid loadtest options");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the harness");
    runtime.block_on(loadtest::run(&options)).expect("the load test runs")
}

#[test]
fn the_harness_starts_a_server_seeds_mixes_every_scenario_and_reports_without_errors() {
    let out = tempfile::tempdir().expect("temp dir");
    let json_path = out.path().join("report.json");
    let svg_path = out.path().join("latency.svg");
    let report = run(&[
        "--server-bin",
        env!("CARGO_BIN_EXE_gridd"),
        "--server-arg=--snapshot-every-records=40",
        "--records",
        "2500",
        "--columns",
        "16",
        "--mix",
        "page=3,query=3,edit=3,bulk=1",
        "--bulk-size",
        "20",
        "--rate",
        "40",
        "--warmup",
        "1s",
        "--duration",
        "3s",
        "--interval-ms",
        "250",
        "--json",
        json_path.to_str().expect("utf-8 path"),
        "--plot",
        svg_path.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(report.total_errors(), 0, "{}", report.table());
    assert!(report.started_server);
    assert_eq!((report.records, report.columns), (2500, 16));
    let run = report.phases.iter().find(|p| p.name == "run").expect("a measured phase");
    assert_eq!(run.sent, 120, "3 s at 40/s");
    for scenario in ["page", "query", "edit", "bulk"] {
        assert!(run.scenarios.get(scenario).is_some_and(|s| s.count > 0), "{scenario} ran");
    }
    assert!(report.snapshots_unobserved.is_none(), "{:?}", report.snapshots_unobserved);
    assert!(!report.snapshot_windows_s.is_empty(), "edits every 40 WAL records make snapshots");
    let json: Value =
        serde_json::from_slice(&std::fs::read(&json_path).expect("JSON written")).expect("JSON");
    assert_eq!(json["phases"][1]["sent"], 120);
    assert!(json["timeline"].as_array().is_some_and(|t| t.len() >= 12));
    assert_svg(&svg_path);
}

fn assert_svg(path: &Path) {
    let svg = std::fs::read_to_string(path).expect("plot written");
    assert!(svg.starts_with("<svg") && svg.contains("<polyline"), "an SVG with lines");
    assert!(svg.contains("page p99") && svg.contains("snapshot being written"));
}

#[test]
fn the_harness_steps_the_rate_against_a_view_of_a_running_server() {
    let app = spawn_app();
    let (_, view) = app.create_grid("existing");
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    let records: Vec<Value> = (0..300)
        .map(|n| json!({"id": format!("r{n}"), "cells": [{"columnId": "title", "value": format!("title {n}")}]}))
        .collect();
    app.add_records(&view, Value::Array(records));
    let report = run(&[
        "--url",
        &app.base,
        "--key",
        &app.key,
        "--view",
        &view,
        "--mix",
        "page=2,query=1,edit=1",
        "--rate",
        "20",
        "--warmup",
        "0s",
        "--step",
        "--step-factor",
        "2",
        "--step-duration",
        "1s",
        "--max-rate",
        "40",
        "--p99-max-ms",
        "2000",
    ]);
    assert_eq!(report.total_errors(), 0, "{}", report.table());
    assert_eq!(report.records, 300);
    let steps: Vec<(f64, Option<bool>)> =
        report.phases.iter().map(|p| (p.asked_rate, p.sustained)).collect();
    assert_eq!(steps, vec![(20.0, Some(true)), (40.0, Some(true))]);
    assert_eq!(report.sustainable_rate, Some(40.0));
    assert!(report.table().contains("sustainable: 40 requests/s"), "{}", report.table());
    let listing = app.get(&format!("/v1/views/{view}/records"));
    assert_eq!(listing.header("x-total-count"), Some("300"), "the view is left in place");
}

#[test]
fn a_failed_step_is_retried_once_and_then_ends_the_search() {
    let app = spawn_app();
    let (_, view) = app.create_grid("retry");
    app.create_column(&view, json!({"id": "title", "name": "Title", "type": "singleLine"}));
    app.add_records(&view, json!([{"id": "r1", "cells": [{"columnId": "title", "value": "x"}]}]));
    let report = run(&[
        "--url",
        &app.base,
        "--key",
        &app.key,
        "--view",
        &view,
        "--rate",
        "10",
        "--warmup",
        "0s",
        "--step",
        "--step-duration",
        "500ms",
        "--p99-max-ms",
        "0.001",
    ]);
    let names: Vec<(&str, Option<bool>)> =
        report.phases.iter().map(|p| (p.name.as_str(), p.sustained)).collect();
    assert_eq!(names, vec![("step 1", Some(false)), ("step 1, retry 1", Some(false))]);
    assert_eq!(report.sustainable_rate, None);
    assert!(report.table().contains("no step met p99"), "{}", report.table());
}
