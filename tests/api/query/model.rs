//! Larger grids against a model: sorted and filtered pages before and after writes, and indexes
//! across block splits and compaction.

use super::*;

/// A record of the model: id, number `grp` (None = empty), text `name` ("" = empty), `parity`
/// and a distinct text `uniq`.
#[derive(Debug, Clone)]
struct Row {
    id: String,
    grp: Option<f64>,
    name: String,
    parity: &'static str,
    uniq: String,
}

fn model_row(i: usize) -> Row {
    const GROUPS: [f64; 5] = [9.0, 10.0, 100.0, -1.0, 0.5];
    const NAMES: [&str; 4] = ["b", "A", "a", "é"];
    Row {
        id: format!("m{i:04}"),
        grp: (!i.is_multiple_of(11)).then(|| GROUPS[(i * 7) % 5]),
        name: if i % 13 == 5 { String::new() } else { format!("{}{}", NAMES[i % 4], i % 3) },
        parity: if i.is_multiple_of(2) { "even" } else { "odd" },
        uniq: format!("u{i:04}"),
    }
}

fn row_json(row: &Row) -> Value {
    json!({"id": row.id, "cells": [
        {"columnId": "grp", "value": row.grp},
        {"columnId": "name", "value": row.name},
        {"columnId": "parity", "value": row.parity},
        {"columnId": "uniq", "value": row.uniq}]})
}

/// A grid with the model's columns: view id.
fn model_grid(app: &TestApp) -> String {
    let (_, view) = app.create_grid("Model");
    app.create_column(&view, json!({"id": "grp", "name": "Group", "type": "number"}));
    app.create_column(&view, json!({"id": "name", "name": "Name", "type": "singleLine"}));
    app.create_column(&view, json!({"id": "parity", "name": "Parity", "type": "singleLine"}));
    app.create_column(&view, json!({"id": "uniq", "name": "Unique", "type": "singleLine"}));
    view
}

/// Adds model rows, at most 1000 per request.
fn add_rows(app: &TestApp, view: &str, rows: &[Row]) {
    for batch in rows.chunks(1000) {
        app.add_records(view, batch.iter().map(row_json).collect());
    }
}

/// One sort key of the model: empty values last in both directions.
fn cmp_key_model<T: PartialOrd>(a: Option<T>, b: Option<T>, descending: bool) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(a), Some(b)) => {
            let ord = a.partial_cmp(&b).expect("comparable");
            if descending {
                ord.reverse()
            } else {
                ord
            }
        }
    }
}

/// The model's ids matching `keep`, stably sorted by (field, descending) keys.
fn model_ids(rows: &[Row], keep: impl Fn(&Row) -> bool, keys: &[(&str, bool)]) -> Vec<String> {
    let mut matching: Vec<&Row> = rows.iter().filter(|r| keep(r)).collect();
    let name = |r: &Row| (!r.name.is_empty()).then(|| r.name.clone());
    matching.sort_by(|a, b| {
        keys.iter()
            .map(|&(field, desc)| match field {
                "grp" => cmp_key_model(a.grp, b.grp, desc),
                "name" => cmp_key_model(name(a), name(b), desc),
                other => panic!("no model of {other}"),
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
    matching.iter().map(|r| r.id.clone()).collect()
}

/// Reads every page of a listing with `limit` and asserts the whole equals `expected`, every
/// page's `X-Total-Count` is the number of matches and the `Link`s chain the pages; then reads
/// a few pages starting inside the order.
#[track_caller]
fn assert_paged(
    app: &TestApp,
    view: &str,
    query: &str,
    sort: &str,
    limit: usize,
    expected: &[String],
) {
    let context = format!("query {query} sort {sort} limit {limit}");
    let mut seen = Vec::new();
    let first = page(0, limit);
    let mut res = fetch(app, view, &[("query", query), ("sort", sort), ("page", &first)]);
    loop {
        assert_eq!(res.status, 200, "{context}: {}", res.text);
        assert_eq!(total(&res), expected.len(), "{context}: X-Total-Count");
        seen.extend(ids(&res));
        match link(&res, "next") {
            Some(next) => {
                assert_eq!(param(&next, "query").as_deref(), Some(query), "{context}");
                assert_eq!(param(&next, "sort").as_deref(), Some(sort), "{context}");
                res = follow(app, &next);
            }
            None => break,
        }
    }
    assert_eq!(seen, expected, "{context}");
    let n = expected.len();
    for offset in [n / 3 + 1, n / 2, n.saturating_sub(3), n + 2] {
        let p = page(offset, 7);
        let res = fetch(app, view, &[("query", query), ("sort", sort), ("page", &p)]);
        let slice = expected.get(offset..(offset + 7).min(n)).unwrap_or_default();
        assert_page(&res, slice, n, &format!("{context} page {p}"));
    }
}

/// Compares many listings of the model grid with the model, reading pages of `limit`.
#[track_caller]
fn check_model(app: &TestApp, view: &str, rows: &[Row], limit: usize) {
    let few: Vec<String> =
        [3, 17, 44, 45, 99, 120, 121, 200, 277, 298, 640, 1250].map(|i| format!("m{i:04}")).into();
    let uniqs: Vec<String> = [5, 17, 300, 301, 999, 1299].map(|i| format!("u{i:04}")).into();
    let all = |_: &Row| true;
    let even = |r: &Row| r.parity == "even";
    let grp_desc_name_asc: &[(&str, bool)] = &[("grp", true), ("name", false)];
    let name_desc_grp_asc: &[(&str, bool)] = &[("name", true), ("grp", false)];
    let sort1 = r#"{"grp": "desc", "name": "asc"}"#;
    let sort2 = r#"{"name": "desc", "grp": "asc"}"#;
    let even_query = r#"{"parity": {"=": "even"}}"#;
    let few_query = json!({"_recordId": {"in": few}}).to_string();
    let uniq_query = json!({"uniq": {"in": uniqs}}).to_string();
    let range = r#"{"grp": {"between": [0, 10]}, "name": {"startsWith": "A"}}"#;
    let in_range = |r: &Row| {
        r.grp.is_some_and(|g| (0.0..=10.0).contains(&g)) && r.name.to_lowercase().starts_with('a')
    };
    let listings: Vec<(&str, &str, Vec<String>)> = vec![
        ("", sort1, model_ids(rows, all, grp_desc_name_asc)),
        ("", r#"{"name": "asc"}"#, model_ids(rows, all, &[("name", false)])),
        ("{}", r#"{"grp": "asc"}"#, model_ids(rows, all, &[("grp", false)])),
        (even_query, sort2, model_ids(rows, even, name_desc_grp_asc)),
        (even_query, sort1, model_ids(rows, even, grp_desc_name_asc)),
        (&few_query, sort2, model_ids(rows, |r| few.contains(&r.id), name_desc_grp_asc)),
        (range, sort1, model_ids(rows, in_range, grp_desc_name_asc)),
        (
            r#"{"name": {"=": "b0"}}"#,
            r#"{"grp": "desc"}"#,
            model_ids(rows, |r| r.name == "b0", &[("grp", true)]),
        ),
        (
            &uniq_query,
            r#"{"name": "desc"}"#,
            model_ids(rows, |r| uniqs.contains(&r.uniq), &[("name", true)]),
        ),
        (
            r#"{"name": {"startsWith": "a"}}"#,
            "",
            model_ids(rows, |r| r.name.to_lowercase().starts_with('a'), &[]),
        ),
    ];
    for (query, sort, expected) in &listings {
        assert_paged(app, view, query, sort, limit, expected);
    }
}

#[test]
fn sorted_and_filtered_pages_match_a_model_before_and_after_writes() {
    let app = spawn_app();
    let view = model_grid(&app);
    let mut rows: Vec<Row> = (0..300).map(model_row).collect();
    add_rows(&app, &view, &rows);
    check_model(&app, &view, &rows, 37);

    // Writes: change and empty some groups and names, delete some records, add new ones.
    let mut updates = Vec::new();
    for i in (0..300).step_by(13) {
        let row = &mut rows[i];
        row.grp = if i.is_multiple_of(2) { None } else { Some(-(i as f64)) };
        row.name = format!("A{i}");
        updates.push(row_json(row));
    }
    app.patch(&format!("/v1/views/{view}/records"), &json!(updates)).assert_status(200);
    let gone: Vec<String> = (0..300).step_by(17).map(|i| format!("m{i:04}")).collect();
    app.delete_with(&format!("/v1/views/{view}/records"), &json!({"ids": gone})).assert_status(204);
    rows.retain(|r| !gone.contains(&r.id));
    let added: Vec<Row> = (300..330).map(model_row).collect();
    add_rows(&app, &view, &added);
    rows.extend(added);
    check_model(&app, &view, &rows, 37);
}

/// Enough records that the sort index splits its blocks, the hash index of `uniq` outgrows its
/// limit and deleting most records compacts the store (renumbering every row).
#[test]
fn indexes_stay_right_across_block_splits_and_compaction() {
    let app = spawn_app();
    let view = model_grid(&app);
    let records = format!("/v1/views/{view}/records");
    let mut rows: Vec<Row> = (0..600).map(model_row).collect();
    add_rows(&app, &view, &rows);
    check_model(&app, &view, &rows, 250);

    let added: Vec<Row> = (600..1300).map(model_row).collect();
    add_rows(&app, &view, &added);
    rows.extend(added);
    check_model(&app, &view, &rows, 400);

    let mut updates = Vec::new();
    for i in (0..1300).step_by(4) {
        let row = &mut rows[i];
        row.grp = match i % 3 {
            0 => None,
            1 => Some(1000.0 - i as f64),
            _ => Some(0.5),
        };
        row.name = if i.is_multiple_of(5) { String::new() } else { format!("b{}", i % 7) };
        updates.push(row_json(row));
    }
    app.patch(&records, &json!(updates)).assert_status(200);
    check_model(&app, &view, &rows, 400);

    let gone: Vec<String> = rows
        .iter()
        .enumerate()
        .filter(|(i, _)| !i.is_multiple_of(6))
        .map(|(_, r)| r.id.clone())
        .collect();
    assert!(gone.len() > 1024, "enough tombstones to compact");
    for batch in gone.chunks(1000) {
        app.delete_with(&records, &json!({"ids": batch})).assert_status(204);
    }
    rows.retain(|r| !gone.contains(&r.id));
    check_model(&app, &view, &rows, 100);

    let added: Vec<Row> = (1300..1340).map(model_row).collect();
    add_rows(&app, &view, &added);
    rows.extend(added);
    check_model(&app, &view, &rows, 100);
}
