//! `GET /metrics`: Prometheus text for operators, behind an admin key.

use serde_json::json;

use crate::helpers::spawn_app;

/// The value of the series line that starts with `series` (name and labels), if present.
pub(super) fn value_of(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series).and_then(|rest| rest.trim().parse().ok()))
}

#[test]
fn metrics_need_an_admin_key() {
    let app = spawn_app();
    let res = app.call(reqwest::Method::GET, "/metrics", None, None);
    res.assert_error(401, "unauthorized");
    let reader = app.create_key(&["read"], json!({"all": true}));
    app.get_as(&reader, "/metrics").assert_error(403, "accessDenied");
}

#[test]
fn metrics_count_requests_by_route_and_status_and_show_records_per_branch() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("g");
    app.create_column(&view, json!({"id": "t", "name": "T", "type": "singleLine"}));
    app.add_records(&view, json!([{"id": "a"}, {"id": "b"}, {"id": "c"}]));
    for _ in 0..3 {
        app.get(&format!("/v1/views/{view}/records")).assert_status(200);
    }
    app.get("/v1/views/nosuchview0001/records").assert_error(404, "viewIsNotFound");
    app.get("/no/such/route").assert_error(404, "notFound");

    let res = app.get("/metrics");
    assert_eq!(res.status, 200, "{}", res.text);
    assert_eq!(res.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    let text = &res.text;
    let route = r#"route="/v1/views/{viewId}/records",method="GET""#;
    let ok = value_of(text, &format!("gridd_http_requests_total{{{route},status=\"200\"}}"));
    assert_eq!(ok, Some(3.0), "{text}");
    let missing = value_of(text, &format!("gridd_http_requests_total{{{route},status=\"404\"}}"));
    assert_eq!(missing, Some(1.0), "{text}");
    let unmatched = r#"gridd_http_requests_total{route="unmatched",method="GET",status="404"}"#;
    assert_eq!(value_of(text, unmatched), Some(1.0), "{text}");
    let count = format!("gridd_http_request_duration_seconds_count{{{route},status=\"200\"}}");
    assert_eq!(value_of(text, &count), Some(3.0), "{text}");
    let inf =
        format!("gridd_http_request_duration_seconds_bucket{{{route},status=\"200\",le=\"+Inf\"}}");
    assert_eq!(value_of(text, &inf), Some(3.0), "{text}");

    let records = format!("gridd_branch_records{{grid=\"{grid}\",branch=\"{grid}\"}}");
    assert_eq!(value_of(text, &records), Some(3.0), "{text}");
    assert!(value_of(text, "gridd_wal_fsync_seconds_count").is_some_and(|n| n >= 1.0), "{text}");
    assert!(value_of(text, "gridd_wal_records_total").is_some_and(|n| n >= 1.0), "{text}");
    assert!(text.contains("# TYPE gridd_snapshot_seconds histogram"), "{text}");
    assert!(value_of(text, "gridd_process_resident_bytes").is_some_and(|n| n > 0.0), "{text}");
    assert!(text.contains("# TYPE gridd_process_cpu_seconds_total counter"), "{text}");
    assert!(value_of(text, "gridd_process_cpu_seconds_total").is_some_and(|n| n >= 0.0), "{text}");
}

/// Heap bytes per branch by part: every part is reported, history grows with the changes (an
/// added record's entry is written when it is first changed: then two entries per record, more
/// than the text they hold), and the parts add up to the store's total with history and
/// indexes beside it.
#[test]
fn metrics_report_heap_bytes_per_branch_by_part() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("g");
    app.create_column(&view, json!({"id": "t", "name": "T", "type": "singleLine"}));
    let part = |text: &str, part: &str| {
        let series =
            format!("gridd_branch_heap_bytes{{grid=\"{grid}\",branch=\"{grid}\",part=\"{part}\"}}");
        value_of(text, &series).unwrap_or_else(|| panic!("no {part} part: {text}"))
    };
    let before = app.get("/metrics").text;
    let records: Vec<_> = (0..200)
        .map(|i| json!({"id": format!("r{i}"), "cells": [{"columnId": "t", "value": "x".repeat(100)}]}))
        .collect();
    app.add_records(&view, json!(records));
    let after = app.get("/metrics").text;
    for name in ["cells", "records", "keys", "history", "indexes", "journal"] {
        assert!(part(&after, name) >= 0.0);
    }
    assert!(part(&after, "cells") >= 200.0 * 100.0, "{after}");
    let grown = part(&after, "history") - part(&before, "history");
    assert!(grown < 200.0 * 100.0, "the added records' entries wait: grew {grown}");
    let updates: Vec<_> = (0..200)
        .map(|i| json!({"id": format!("r{i}"), "cells": [{"columnId": "t", "value": "y".repeat(100)}]}))
        .collect();
    let updated = app.patch(&format!("/v1/views/{view}/records"), &json!(updates));
    assert_eq!(updated.status, 200, "{}", updated.text);
    let changed = app.get("/metrics").text;
    let grown = part(&changed, "history") - part(&before, "history");
    assert!(grown >= 2.0 * 200.0 * 100.0, "history holds every entry's text: grew {grown}");
    let store =
        value_of(&after, &format!("gridd_branch_store_bytes{{grid=\"{grid}\",branch=\"{grid}\"}}"));
    let sum = ["cells", "records", "keys", "journal"].iter().map(|p| part(&after, p)).sum::<f64>();
    assert_eq!(store, Some(sum), "{after}");
}

#[test]
fn metrics_report_cell_bytes_per_column_type() {
    let app = spawn_app();
    let (grid, view) = app.create_grid("g");
    app.create_column(&view, json!({"id": "t", "name": "T", "type": "singleLine"}));
    app.create_column(&view, json!({"id": "n", "name": "N", "type": "number"}));
    let records: Vec<_> = (0..300)
        .map(|i| {
            json!({"id": format!("r{i}"), "cells": [
                {"columnId": "t", "value": "y".repeat(200)},
                {"columnId": "n", "value": i}
            ]})
        })
        .collect();
    app.add_records(&view, json!(records));
    let text = app.get("/metrics").text;
    let series = |name: &str, column_type: &str| {
        let key = format!("{name}{{grid=\"{grid}\",branch=\"{grid}\",type=\"{column_type}\"}}");
        value_of(&text, &key).unwrap_or_else(|| panic!("no {key}: {text}"))
    };
    assert_eq!(series("gridd_branch_cells", "number"), 300.0);
    let text_cells = series("gridd_branch_cells", "singleLine");
    assert!(text_cells >= 300.0, "the grid's own text columns count too: {text}");
    let text_bytes = series("gridd_branch_cell_bytes", "singleLine");
    let number_bytes = series("gridd_branch_cell_bytes", "number");
    assert!(text_bytes >= 300.0 * 200.0, "{text}");
    assert!(number_bytes >= 300.0 * 8.0 && number_bytes < text_bytes, "{text}");
    let cells = value_of(
        &text,
        &format!("gridd_branch_heap_bytes{{grid=\"{grid}\",branch=\"{grid}\",part=\"cells\"}}"),
    );
    assert!(cells.is_some_and(|all| all >= text_bytes + number_bytes), "{text}");
}
