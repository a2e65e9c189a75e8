//! The console on a 1M-record grid, measured in the browser with the Performance API marks the
//! view page sets: `gridd:first-rows` (opening the view to its first rows painted) and
//! `gridd:jump` (asking for row 900,000 in the toolbar's "Go to row" to it being painted). Ignored by default (seeding a
//! million records takes a while); run it in release:
//!
//! `cargo test --release --test api console::scale -- --ignored --nocapture`
//!
//! (`GRIDD_CONSOLE_SCALE_RECORDS` changes the record count.)

#![allow(clippy::print_stdout)] // the figures are the test's output

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::browser::Browser;
use crate::helpers::{page_query, spawn_app, TestApp};

const BATCH: usize = 1000;
const THREADS: usize = 4;

/// Adds `n` records (`r0000000`.., an English text and a French one) on a few connections.
fn seed(app: &TestApp, view: &str, n: usize) {
    let url = format!("{}/v1/views/{view}/records", app.base);
    let batches: Vec<usize> = (0..n).step_by(BATCH).collect();
    std::thread::scope(|scope| {
        for part in batches.chunks(batches.len().div_ceil(THREADS).max(1)) {
            let url = url.clone();
            let key = app.key.clone();
            scope.spawn(move || {
                let client = reqwest::blocking::Client::new();
                for &start in part {
                    let records: Vec<Value> = (start..(start + BATCH).min(n))
                        .map(|i| {
                            json!({"id": format!("r{i:07}"), "cells": [
                            {"columnId": "en", "value": format!("Source text number {i}")},
                            {"columnId": "fr", "value": format!("Texte source numéro {i}")}]})
                        })
                        .collect();
                    let res = client
                        .post(&url)
                        .header("Authorization", format!("ApiKey {key}"))
                        .json(&records)
                        .send()
                        .expect("the add is sent");
                    assert!(res.status().is_success(), "add failed: {}", res.status());
                }
            });
        }
    });
}

/// The duration of the measure `name`, waiting for it up to `timeout`.
fn measure(browser: &mut Browser, name: &str, timeout: Duration) -> f64 {
    let expression = format!("performance.getEntriesByName('{name}', 'measure')[0]?.duration");
    browser.wait_for(&expression, timeout).as_f64().expect("a duration")
}

#[test]
#[ignore = "seeds a million records; run in release with --ignored --nocapture"]
fn a_million_records_open_and_jump_to_row_900000() {
    let n: usize = std::env::var("GRIDD_CONSOLE_SCALE_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let app = spawn_app();
    let (_, view) = app.language_grid(&[("fr", "French", "frFR")], true);
    let started = Instant::now();
    seed(&app, &view, n);
    println!("seeded {n} records in {:.1?}", started.elapsed());

    let mut browser = Browser::launch(1280, 800);
    browser.goto(&format!("{}/", app.base));
    browser
        .wait_for("document.querySelector('form.signin input[name=key]')", Duration::from_secs(10));
    browser.eval(&format!("sessionStorage.setItem('gridd.apiKey', '{}')", app.key));
    let mut opened = Vec::new();
    let mut jumped = Vec::new();
    for _ in 0..3 {
        browser.eval(&format!("location.hash = '#/views/{view}?r=' + Math.random()"));
        opened.push(measure(&mut browser, "gridd:first-rows", Duration::from_secs(30)));
        let target = n * 9 / 10;
        // Asked as a user does: the toolbar's "Go to row" (row numbers count from 1).
        browser.eval("document.querySelector('#go-to-row').value = ''; document.querySelector('#go-to-row').focus()");
        browser.type_text(&(target + 1).to_string());
        browser.press("Enter", 0);
        jumped.push(measure(&mut browser, "gridd:jump", Duration::from_secs(30)));
        let shown = browser.wait_for(
            &format!("document.querySelector('.grid-row[aria-rowindex=\"{}\"] .t-_recordId')?.textContent", target + 2),
            Duration::from_secs(10),
        );
        let at = app.get(&format!("/v1/views/{view}/records?{}", page_query(target, 1)));
        assert_eq!(shown, at.body[0]["id"], "row {target} is the API's record at that offset");
        browser.eval("location.hash = '#/'");
        browser.wait_for("document.querySelector('.entry-name')", Duration::from_secs(10));
    }
    println!("open to first rows painted (ms, 3 runs): {opened:.1?}");
    println!("jump to row {} painted (ms, 3 runs): {jumped:.1?}", n * 9 / 10);
    assert!(browser.errors().is_empty(), "page errors: {:?}", browser.errors());
}
