//! Formula columns (issue 9, `/work/formula-design.md`, decisions.md section 4): every function
//! and operator evaluated on a real record, literals, the error values and how they propagate,
//! the formulas refused at create and at PATCH (parse errors, missing columns, self-references,
//! cycles, wrong argument counts) with nothing changed, result typing
//! (`detectResultValueType`, `alwaysFormatResultValueAsList`), recomputation (record add, cell
//! update, chains, a new formula text, a deleted column), read-only cells, filter and sort, a
//! restart, branches, merges and the record history.
//!
//! Most checks are table-driven: one formula column per case in a grid holding the source
//! columns, then the record `r1` is added and every case is compared in the add response and in
//! the next read, all mismatches reported together.

use serde_json::{json, Value};

use crate::branches::{branch_ids, merge};
use crate::helpers::{cell, column_path, find_record, records_path, spawn_app, TestApp};

// ----- helpers -----

fn columns_path(view: &str) -> String {
    format!("/v1/views/{view}/columns")
}

/// A formula column create request.
fn formula_column(id: &str, text: &str) -> Value {
    json!({"id": id, "name": id.to_uppercase(), "type": "formula",
           "formula": {"formulaText": text}})
}

/// A PATCH body changing only a formula's text.
fn new_text(text: &str) -> Value {
    json!({"formula": {"formulaText": text}})
}

/// Creates a formula column with this text, asserting 201.
fn add_formula(app: &TestApp, view: &str, id: &str, text: &str) -> Value {
    app.create_column(view, formula_column(id, text))
}

/// The value of `column` in `record`.
#[track_caller]
fn value<'a>(record: &'a Value, column: &str) -> &'a Value {
    &cell(record, column)["value"]
}

/// The value of `column` in record `id` as the next read of `view` shows it.
#[track_caller]
fn read(app: &TestApp, view: &str, id: &str, column: &str) -> Value {
    value(find_record(&app.records(view), id), column).clone()
}

/// Whether a cell value is the expected one: numbers compare as `f64` (so `3` and `3.0` are
/// equal, and a result like `0.30000000000000004` is close enough), anything else exactly.
fn same(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Number(a), Value::Number(e)) => {
            let (a, e) = (a.as_f64().unwrap_or(f64::NAN), e.as_f64().unwrap_or(f64::NAN));
            (a - e).abs() <= 1e-9 * e.abs().max(1.0)
        }
        _ => actual == expected,
    }
}

#[track_caller]
fn assert_value(actual: &Value, expected: &Value, context: &str) {
    assert!(same(actual, expected), "{context}: got {actual}, expected {expected}");
}

/// Updates cells of records through `view` with a bulk PATCH, asserting 200, and returns the
/// updated records of the response.
fn update(app: &TestApp, view: &str, records: Value) -> Vec<Value> {
    let res = app.patch(&records_path(view), &records);
    res.assert_status(200).as_array().expect("a list of records").clone()
}

/// Writes one cell of one record through `view`; returns the updated record of the response.
fn set(app: &TestApp, view: &str, id: &str, column: &str, value: Value) -> Value {
    let records =
        update(app, view, json!([{"id": id, "cells": [{"columnId": column, "value": value}]}]));
    records[0].clone()
}

/// The source columns of the calculation grid, and the cells of its record `r1`:
///
/// | column | type | r1 |
/// |---|---|---|
/// | t | singleLine | `Hello` |
/// | s | singleLine | `  a  b   c ` |
/// | u | singleLine | `日本語` |
/// | e | singleLine | (empty) |
/// | n | number | 3 |
/// | m | number | 4 |
/// | zero | number | 0 |
/// | neg | number | -2.5 |
/// | en | number | (empty) |
/// | b | boolean | true |
/// | tags | multipleSelections | x, y |
/// | due | datetime | 2026-01-31T10:15:30.000Z |
fn calc_grid(app: &TestApp) -> (String, String) {
    let (grid, view) = app.create_grid("Calc");
    for (id, kind) in [
        ("t", "singleLine"),
        ("s", "singleLine"),
        ("u", "singleLine"),
        ("e", "singleLine"),
        ("n", "number"),
        ("m", "number"),
        ("zero", "number"),
        ("neg", "number"),
        ("en", "number"),
        ("b", "boolean"),
        ("due", "datetime"),
    ] {
        app.create_column(&view, json!({"id": id, "name": id.to_uppercase(), "type": kind}));
    }
    app.create_column(
        &view,
        json!({"id": "tags", "name": "TAGS", "type": "multipleSelections",
               "selection": {"options": [{"value": "x"}, {"value": "y"}]}}),
    );
    (grid, view)
}

/// The record `r1` of `calc_grid`.
fn calc_record() -> Value {
    json!({"id": "r1", "cells": [
        {"columnId": "t", "value": "Hello"},
        {"columnId": "s", "value": "  a  b   c "},
        {"columnId": "u", "value": "日本語"},
        {"columnId": "n", "value": 3},
        {"columnId": "m", "value": 4},
        {"columnId": "zero", "value": 0},
        {"columnId": "neg", "value": -2.5},
        {"columnId": "b", "value": true},
        {"columnId": "tags", "value": ["x", "y"]},
        {"columnId": "due", "value": "2026-01-31T10:15:30.000Z"},
    ]})
}

/// Creates one formula column per case (`c0`, `c1`, ...; the first value of a case is the
/// column's `formula` object) in a fresh `calc_grid`, adds `r1`, and asserts each case's value in
/// the add response and in the next read. Every refused column and wrong value is reported at
/// once.
#[track_caller]
fn check_formulas(cases: &[(Value, Value)]) {
    let app = spawn_app();
    let (_, view) = calc_grid(&app);
    let mut problems = Vec::new();
    let mut created = Vec::new();
    for (i, (formula, _)) in cases.iter().enumerate() {
        let id = format!("c{i}");
        let body = json!({"id": id, "name": id, "type": "formula", "formula": formula});
        let res = app.post(&columns_path(&view), &body);
        if res.status == 201 {
            created.push(i);
        } else {
            problems.push(format!("{formula}: create answered {} {}", res.status, res.text));
        }
    }
    let added = app.add_records(&view, json!([calc_record()]));
    let listed = app.records(&view);
    for i in created {
        let (formula, expected) = &cases[i];
        let id = format!("c{i}");
        for (what, record) in [("add response", &added[0]), ("read", &listed[0])] {
            let actual = value(record, &id);
            if !same(actual, expected) {
                problems.push(format!("{formula}: {what} gave {actual}, expected {expected}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s) in {} formula cases:\n{}",
        problems.len(),
        cases.len(),
        problems.join("\n")
    );
}

/// `check_formulas` for plain formula texts (default result typing).
#[track_caller]
fn check(cases: &[(&str, Value)]) {
    let cases: Vec<(Value, Value)> = cases
        .iter()
        .map(|(text, expected)| (json!({"formulaText": text}), expected.clone()))
        .collect();
    check_formulas(&cases);
}

// ----- functions -----

#[test]
fn if_evaluates_only_the_chosen_branch_and_defaults_else_to_false() {
    check(&[
        (r#"IF([n] > 2, "big", "small")"#, json!("big")),
        (r#"IF([n] > 5, "big", "small")"#, json!("small")),
        (r#"IF([n] > 5, "big")"#, json!(false)),
        (r#"IF([n] > 2, "big")"#, json!("big")),
        ("IF(TRUE, 1, 1/0)", json!(1)),
        (r#"IF(FALSE, 1/0, "ok")"#, json!("ok")),
        (r#"IF([b], "yes", NOSUCHFUNCTION())"#, json!("yes")),
        (r#"IF(0, "a", "b")"#, json!("b")),
        (r#"IF([n], "a", "b")"#, json!("a")),
        (r#"IF([zero], "a", "b")"#, json!("b")),
        (r#"IF("true", "a", "b")"#, json!("a")),
        (r#"IF("false", "a", "b")"#, json!("b")),
        (r#"IF("maybe", "a", "b")"#, json!("#VALUE!")),
        (r#"IF(1/0, "a", "b")"#, json!("#DIV/0!")),
        (r#"if([b], "lower-case name", "x")"#, json!("lower-case name")),
    ]);
}

#[test]
fn and_or_and_not_combine_conditions() {
    check(&[
        ("AND(TRUE, [b])", json!(true)),
        ("AND(TRUE, FALSE)", json!(false)),
        ("AND([n] > 1, [m] > 1, [b])", json!(true)),
        ("AND([n] > 1, [m] > 5)", json!(false)),
        ("AND([n])", json!(true)),
        ("OR(FALSE, [b])", json!(true)),
        ("OR(FALSE, 0)", json!(false)),
        ("OR([n] > 5, [m] > 5, [zero])", json!(false)),
        ("NOT([b])", json!(false)),
        ("NOT(0)", json!(true)),
        ("NOT([n] = 4)", json!(true)),
        ("Or(false, True)", json!(true)),
    ]);
}

#[test]
fn concat_joins_any_number_of_arguments_as_text() {
    check(&[
        (r#"CONCAT([t], " ", [n])"#, json!("Hello 3")),
        ("CONCAT()", json!("")),
        ("CONCAT([t])", json!("Hello")),
        (r#"CONCAT("a", TRUE, 2.5, [neg])"#, json!("atrue2.5-2.5")),
        (r#"CONCAT([e], "x", [e])"#, json!("x")),
        (r#"[t] & "!""#, json!("Hello!")),
        (r#"concat("a", "b")"#, json!("ab")),
    ]);
}

#[test]
fn len_lower_upper_and_trim_work_in_characters() {
    check(&[
        ("LEN([t])", json!(5)),
        ("LEN([u])", json!(3)),
        ("LEN([e])", json!(0)),
        ("LEN([n] * 100)", json!(3)),
        (r#"LEN("")"#, json!(0)),
        ("LOWER([t])", json!("hello")),
        (r#"LOWER("ÀB")"#, json!("àb")),
        ("UPPER([t])", json!("HELLO")),
        (r#"UPPER("àb")"#, json!("ÀB")),
        ("TRIM([s])", json!("a b c")),
        (r#"TRIM("  x  ")"#, json!("x")),
        (r#"TRIM("no change")"#, json!("no change")),
        ("len(upper([t]))", json!(5)),
    ]);
}

#[test]
fn left_right_and_mid_cut_characters() {
    check(&[
        ("LEFT([t], 2)", json!("He")),
        ("LEFT([t])", json!("H")),
        ("LEFT([t], 99)", json!("Hello")),
        ("LEFT([t], 0)", json!("")),
        ("LEFT([t], -1)", json!("#VALUE!")),
        ("LEFT([u], 2)", json!("日本")),
        ("RIGHT([t], 3)", json!("llo")),
        ("RIGHT([t])", json!("o")),
        ("RIGHT([t], 10)", json!("Hello")),
        ("RIGHT([t], -1)", json!("#VALUE!")),
        ("RIGHT([u], 1)", json!("語")),
        ("MID([t], 2, 3)", json!("ell")),
        ("MID([t], 1, 1)", json!("H")),
        ("MID([t], 4, 10)", json!("lo")),
        ("MID([u], 2, 1)", json!("本")),
        (r#"MID("x", 0, 1)"#, json!("#VALUE!")),
        ("MID([t], 1, -1)", json!("#VALUE!")),
        ("MID([t], 2, 0)", json!("")),
    ]);
}

#[test]
fn substitute_replaces_every_occurrence_or_only_the_given_instance() {
    check(&[
        (r#"SUBSTITUTE("a-b-c", "-", "+")"#, json!("a+b+c")),
        (r#"SUBSTITUTE("a-b-c", "-", "+", 1)"#, json!("a+b-c")),
        (r#"SUBSTITUTE("a-b-c", "-", "+", 2)"#, json!("a-b+c")),
        (r#"SUBSTITUTE("a-b-c", "-", "+", 3)"#, json!("a-b-c")),
        (r#"SUBSTITUTE([t], "l", "L")"#, json!("HeLLo")),
        (r#"SUBSTITUTE([t], "l", "L", 2)"#, json!("HelLo")),
        (r#"SUBSTITUTE([t], "x", "y")"#, json!("Hello")),
        (r#"SUBSTITUTE([t], "ll", "")"#, json!("Heo")),
        (r#"SUBSTITUTE([u], "本", "-")"#, json!("日-語")),
    ]);
}

#[test]
fn round_is_half_away_from_zero_and_abs_drops_the_sign() {
    check(&[
        ("ROUND(2.5)", json!(3)),
        ("ROUND(-2.5)", json!(-3)),
        ("ROUND([neg])", json!(-3)),
        ("ROUND(2.4)", json!(2)),
        ("ROUND(0.5)", json!(1)),
        ("ROUND(-0.5)", json!(-1)),
        ("ROUND(1.234, 2)", json!(1.23)),
        ("ROUND(1.25, 1)", json!(1.3)),
        ("ROUND(-1.25, 1)", json!(-1.3)),
        ("ROUND(7, 2)", json!(7)),
        ("ROUND([n] / [m], 1)", json!(0.8)),
        ("ABS([neg])", json!(2.5)),
        ("ABS(3)", json!(3)),
        ("ABS(-[n])", json!(3)),
        ("ABS([en])", json!(0)),
    ]);
}

#[test]
fn min_max_and_sum_skip_empty_arguments() {
    check(&[
        ("MIN([n], [m], [neg])", json!(-2.5)),
        ("MAX([n], [m], [neg])", json!(4)),
        ("SUM([n], [m], [neg])", json!(4.5)),
        ("SUM([n], [en], [e])", json!(3)),
        ("MIN([n], [en])", json!(3)),
        ("MAX([neg], [en], [e])", json!(-2.5)),
        ("SUM()", json!(0)),
        ("MIN()", json!(0)),
        ("MAX()", json!(0)),
        ("SUM([en])", json!(0)),
        (r#"SUM("2", 1)"#, json!(3)),
        (r#"SUM([n], "abc")"#, json!("#VALUE!")),
        ("MIN([t], 1)", json!("#VALUE!")),
        ("MAX(1, 1/0)", json!("#DIV/0!")),
        ("sum(1, 2, 3, 4)", json!(10)),
    ]);
}

// ----- operators, literals and cell values -----

#[test]
fn arithmetic_follows_spreadsheet_precedence() {
    check(&[
        ("1 + 2 * 3", json!(7)),
        ("(1 + 2) * 3", json!(9)),
        ("10 - 4 - 3", json!(3)),
        ("12 / 3 / 2", json!(2)),
        ("2 ^ 3", json!(8)),
        ("2 * 3 ^ 2", json!(18)),
        ("-2 ^ 2", json!(4)),
        ("-[n] + 1", json!(-2)),
        ("+[n]", json!(3)),
        ("--[n]", json!(3)),
        ("[n] * [m] - [neg]", json!(14.5)),
        ("[m] / 8", json!(0.5)),
        (".5 + 1", json!(1.5)),
        ("[b] + 1", json!(2)),
        ("FALSE * 5", json!(0)),
        (r#"" 2.5 " * 2"#, json!(5)),
        (r#""3" + 1"#, json!(4)),
        ("[en] + 1", json!(1)),
        ("[e] + 1", json!(1)),
        ("((([n])))", json!(3)),
    ]);
}

#[test]
fn ampersand_concatenates_looser_than_arithmetic() {
    check(&[
        ("1 + 2 & 3", json!("33")),
        ("[n] & [m]", json!("34")),
        (r#"[t] & ", " & [t]"#, json!("Hello, Hello")),
        (r#"0.1 + 0.2 & """#, json!("0.3")),
        (r#"2.50 & """#, json!("2.5")),
        (r#"1 / 4 & """#, json!("0.25")),
        (r#"TRUE & """#, json!("true")),
        (r#"[b] & "!""#, json!("true!")),
        (r#"[e] & "x""#, json!("x")),
        (r#"[neg] & """#, json!("-2.5")),
    ]);
}

#[test]
fn comparisons_are_numeric_for_numbers_and_case_insensitive_text_otherwise() {
    check(&[
        ("[n] = 3", json!(true)),
        ("[n] <> 3", json!(false)),
        ("[n] < [m]", json!(true)),
        ("[n] <= 3", json!(true)),
        ("[n] > [m]", json!(false)),
        ("[m] >= 4", json!(true)),
        ("1 + 2 = 3", json!(true)),
        ("10 < 9", json!(false)),
        (r#""a" = "A""#, json!(true)),
        (r#""abc" <> "ABC""#, json!(false)),
        (r#"[t] = "hello""#, json!(true)),
        (r#""b" > "A""#, json!(true)),
        (r#"[n] = "3""#, json!(true)),
        (r#""10" < "9""#, json!(true)),
        ("TRUE = 1", json!(true)),
        ("[b] > 0", json!(true)),
        (r#"[e] = """#, json!(true)),
        (r#"[n] & "" = "3""#, json!(true)),
    ]);
}

#[test]
fn literals_strings_with_doubled_quotes_numbers_and_booleans() {
    check(&[
        (r#""say ""hi""""#, json!("say \"hi\"")),
        (r#""""""#, json!("\"")),
        (r#""""#, json!("")),
        (r#""[n]""#, json!("[n]")),
        (r#""a, b""#, json!("a, b")),
        ("42", json!(42)),
        ("2.5", json!(2.5)),
        (".5", json!(0.5)),
        ("TRUE", json!(true)),
        ("false", json!(false)),
        ("True", json!(true)),
        (r#"LEN("""")"#, json!(1)),
    ]);
}

#[test]
fn cells_of_each_type_are_formula_values() {
    check(&[
        ("[t]", json!("Hello")),
        ("[n]", json!(3)),
        ("[neg]", json!(-2.5)),
        ("[b]", json!(true)),
        (r#"[tags] & """#, json!("x, y")),
        ("LEFT([due], 10)", json!("2026-01-31")),
        ("LEN([tags])", json!(4)),
        ("[e]", json!("")),
        (r#"[e] & [e]"#, json!("")),
    ]);
}

// ----- errors -----

#[test]
fn evaluation_errors_are_cell_values_and_propagate() {
    check(&[
        ("1/0", json!("#DIV/0!")),
        ("[n] / [zero]", json!("#DIV/0!")),
        ("[n] / [en]", json!("#DIV/0!")),
        ("[n] / [e]", json!("#DIV/0!")),
        (r#""abc" * 2"#, json!("#VALUE!")),
        ("[t] * 2", json!("#VALUE!")),
        (r#"MID("x", 0, 1)"#, json!("#VALUE!")),
        ("NOSUCHFUNCTION(1)", json!("#NAME?")),
        ("nosuch()", json!("#NAME?")),
        ("LEN(1/0)", json!("#DIV/0!")),
        (r#"1/0 & "x""#, json!("#DIV/0!")),
        ("1 + 1/0 = 2", json!("#DIV/0!")),
        ("UPPER(NOSUCH([t]))", json!("#NAME?")),
        (r#"CONCAT("a", [t] * 2)"#, json!("#VALUE!")),
        ("NOT(1/0)", json!("#DIV/0!")),
        ("ROUND(1/0, 2)", json!("#DIV/0!")),
        (r#"IF([b], LEN("ok"), 1/0)"#, json!(2)),
    ]);
}

#[test]
fn an_unknown_function_is_name_error_in_every_record() {
    let app = spawn_app();
    let (_, view) = calc_grid(&app);
    let column = add_formula(&app, &view, "f", "FROBNICATE([n], 2)");
    assert_eq!(column["formula"]["formulaText"], json!("FROBNICATE([n], 2)"));
    let added = app.add_records(
        &view,
        json!([calc_record(), {"id": "r2"}, {"id": "r3", "cells": [{"columnId": "n", "value": 1}]}]),
    );
    for record in added.iter().chain(app.records(&view).iter()) {
        assert_eq!(value(record, "f"), &json!("#NAME?"), "{record}");
    }
}

#[test]
fn an_error_in_a_formula_column_propagates_through_a_formula_using_it() {
    let app = spawn_app();
    let (_, view) = calc_grid(&app);
    add_formula(&app, &view, "ratio", "[n] / [zero]");
    add_formula(&app, &view, "label", r#""ratio " & [ratio]"#);
    add_formula(&app, &view, "safe", r#"IF([zero] = 0, "none", [ratio])"#);
    app.add_records(&view, json!([calc_record()]));
    let listed = app.records(&view);
    assert_eq!(value(&listed[0], "ratio"), &json!("#DIV/0!"));
    assert_eq!(value(&listed[0], "label"), &json!("#DIV/0!"));
    assert_eq!(value(&listed[0], "safe"), &json!("none"));
    let updated = set(&app, &view, "r1", "zero", json!(2));
    assert_value(value(&updated, "ratio"), &json!(1.5), "ratio after zero = 2");
    assert_eq!(value(&updated, "label"), &json!("ratio 1.5"));
    assert_value(value(&updated, "safe"), &json!(1.5), "safe after zero = 2");
}

#[test]
fn deleting_a_referenced_column_makes_the_formula_a_ref_error() {
    let app = spawn_app();
    let (grid, view) = calc_grid(&app);
    add_formula(&app, &view, "f", "[n] * 2");
    add_formula(&app, &view, "g", "LEN([f] & \"\")");
    app.add_records(&view, json!([calc_record()]));
    assert_value(&read(&app, &view, "r1", "f"), &json!(6), "f before the delete");
    app.delete(&column_path(&view, "n")).assert_status(204);
    let columns = app.snapshot(&format!("/v1/grids/{grid}"))["columns"].clone();
    let f = columns
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == "f"))
        .unwrap_or_else(|| panic!("the formula column stays: {columns}"));
    assert_eq!(f["formula"]["formulaText"], json!("[n] * 2"));
    assert_eq!(read(&app, &view, "r1", "f"), json!("#REF!"));
    assert_eq!(read(&app, &view, "r1", "g"), json!("#REF!"), "the error propagates");
    let added = app.add_records(&view, json!([{"id": "r2"}]));
    assert_eq!(value(&added[0], "f"), &json!("#REF!"));
    assert_eq!(read(&app, &view, "r2", "f"), json!("#REF!"));
}

// ----- refusals -----

/// A calc grid with the formula column `f` = `[n] + 1` and the record r1: (grid, view).
fn refusal_grid(app: &TestApp) -> (String, String) {
    let (grid, view) = calc_grid(app);
    add_formula(app, &view, "f", "[n] + 1");
    app.add_records(&view, json!([calc_record()]));
    (grid, view)
}

/// Asserts that creating a formula column with `text` and PATCHing `f` to `text` are both 400
/// badRequest, and that neither changed the grid or the records.
#[track_caller]
fn assert_refused_everywhere(app: &TestApp, grid: &str, view: &str, text: &str) {
    let grid_path = format!("/v1/grids/{grid}");
    let columns = app.snapshot(&grid_path);
    let records = app.records(view);
    let res = app.post(&columns_path(view), &formula_column("bad", text));
    assert_eq!(res.status, 400, "create with {text:?}: {}", res.text);
    res.assert_error(400, "badRequest");
    app.assert_unchanged(&grid_path, &columns);
    assert_eq!(app.records(view), records, "create with {text:?} changed the records");
    let res = app.patch(&column_path(view, "f"), &new_text(text));
    assert_eq!(res.status, 400, "PATCH to {text:?}: {}", res.text);
    res.assert_error(400, "badRequest");
    app.assert_unchanged(&grid_path, &columns);
    assert_eq!(app.records(view), records, "PATCH to {text:?} changed the records");
}

/// After refusals: `f` still has its text and value.
#[track_caller]
fn assert_f_intact(app: &TestApp, view: &str) {
    let f = app.snapshot(&column_path(view, "f"));
    assert_eq!(f["formula"]["formulaText"], json!("[n] + 1"));
    assert_value(&read(app, view, "r1", "f"), &json!(4), "f after the refusals");
}

#[test]
fn a_formula_that_does_not_parse_is_refused_at_create_and_at_patch() {
    let app = spawn_app();
    let (grid, view) = refusal_grid(&app);
    for text in [
        "1 +",
        "CONCAT([n]",
        r#""unterminated"#,
        "[n] [m]",
        "",
        "   ",
        "(1 + 2",
        "1 + 2)",
        "1 2",
        "* 3",
        "[n",
        "LEN(,)",
        "1 === 2",
    ] {
        assert_refused_everywhere(&app, &grid, &view, text);
    }
    assert_f_intact(&app, &view);
}

#[test]
fn a_formula_naming_a_missing_column_is_refused_at_create_and_at_patch() {
    let app = spawn_app();
    let (grid, view) = refusal_grid(&app);
    for text in ["[nope]", "[n] + [nope]", r#"IF([b], [nope], 1)"#, r#"LEN([t]) + [nope]"#] {
        assert_refused_everywhere(&app, &grid, &view, text);
    }
    assert_f_intact(&app, &view);
}

#[test]
fn a_formula_referring_to_itself_is_refused_at_create_and_at_patch() {
    let app = spawn_app();
    let (grid, view) = refusal_grid(&app);
    let grid_path = format!("/v1/grids/{grid}");
    let columns = app.snapshot(&grid_path);
    let records = app.records(&view);
    let res = app.post(&columns_path(&view), &formula_column("self", "[self] + 1"));
    res.assert_error(400, "badRequest");
    app.assert_unchanged(&grid_path, &columns);
    for text in ["[f] + 1", "LEN([f])", "IF(FALSE, [f], 1)"] {
        app.patch(&column_path(&view, "f"), &new_text(text)).assert_error(400, "badRequest");
        app.assert_unchanged(&grid_path, &columns);
    }
    assert_eq!(app.records(&view), records);
    assert_f_intact(&app, &view);
}

#[test]
fn a_two_column_cycle_is_refused_and_changes_nothing() {
    let app = spawn_app();
    let (grid, view) = refusal_grid(&app);
    add_formula(&app, &view, "g", "[f] * 2");
    add_formula(&app, &view, "h", "[g] + [n]");
    let grid_path = format!("/v1/grids/{grid}");
    let columns = app.snapshot(&grid_path);
    let records = app.records(&view);
    for (column, text) in [("f", "[g] + 1"), ("f", "[h]"), ("g", "[h] * 2")] {
        let res = app.patch(&column_path(&view, column), &new_text(text));
        assert_eq!(res.status, 400, "PATCH {column} to {text:?}: {}", res.text);
        res.assert_error(400, "badRequest");
        app.assert_unchanged(&grid_path, &columns);
        assert_eq!(app.records(&view), records, "PATCH {column} to {text:?} changed the records");
    }
    assert_f_intact(&app, &view);
    assert_value(&read(&app, &view, "r1", "g"), &json!(8), "g");
    assert_value(&read(&app, &view, "r1", "h"), &json!(11), "h");
}

#[test]
fn a_wrong_number_of_arguments_to_a_known_function_is_refused() {
    let app = spawn_app();
    let (grid, view) = refusal_grid(&app);
    for text in [
        "IF(TRUE)",
        "IF(TRUE, 1, 2, 3)",
        "AND()",
        "OR()",
        "NOT()",
        "NOT(TRUE, FALSE)",
        "LEN()",
        r#"LEN("a", "b")"#,
        "LOWER()",
        r#"UPPER("a", "b")"#,
        "TRIM()",
        r#"LEFT("abc", 1, 2)"#,
        "RIGHT()",
        r#"MID("abc", 1)"#,
        r#"SUBSTITUTE("abc", "b")"#,
        r#"SUBSTITUTE("abc", "b", "c", 1, 2)"#,
        "ROUND()",
        "ROUND(1, 2, 3)",
        "ABS()",
        "ABS(1, 2)",
        "[n] + LEN()",
    ] {
        assert_refused_everywhere(&app, &grid, &view, text);
    }
    assert_f_intact(&app, &view);
}

// ----- result typing -----

#[test]
fn default_result_types_are_json_numbers_booleans_and_strings() {
    let plain = |text: &str| json!({"formulaText": text});
    let na = |text: &str| json!({"formulaText": text, "detectResultValueType": "na"});
    check_formulas(&[
        (plain("[n] + 1"), json!(4)),
        (plain("[n] > 1"), json!(true)),
        (plain("[t]"), json!("Hello")),
        (plain(r#""3""#), json!("3")),
        (plain("1/0"), json!("#DIV/0!")),
        (plain("[e]"), json!("")),
        (na("[n] + 1"), json!(4)),
        (na("[n] > 1"), json!(true)),
        (na("[t]"), json!("Hello")),
    ]);
}

#[test]
fn detect_result_value_type_shapes_the_json_value() {
    let typed =
        |text: &str, kind: &str| json!({"formulaText": text, "detectResultValueType": kind});
    check_formulas(&[
        (typed("[n] + 1", "string"), json!("4")),
        (typed("[neg]", "string"), json!("-2.5")),
        (typed("[n] > 1", "string"), json!("true")),
        (typed("[t]", "string"), json!("Hello")),
        (typed("[n] + 1", "decimal"), json!(4)),
        (typed(r#""2.5""#, "decimal"), json!(2.5)),
        (typed(r#"[n] & """#, "decimal"), json!(3)),
        (typed("[t]", "decimal"), json!("Hello")),
        (typed("[n] > 1", "boolean"), json!(true)),
        (typed(r#""false""#, "boolean"), json!(false)),
        (typed(r#"LOWER("TRUE")"#, "boolean"), json!(true)),
        (typed("[t]", "boolean"), json!("Hello")),
        (typed("[n] + 1", "boolean"), json!("4")),
        (typed(r#""2026-01-31""#, "datetime"), json!("2026-01-31")),
        (typed("[n] + 1", "list"), json!(["4"])),
        (typed("[t]", "list"), json!(["Hello"])),
        (typed("[b]", "list"), json!(["true"])),
        (typed("[e]", "list"), json!([])),
        (typed(r#""""#, "list"), json!([])),
    ]);
}

#[test]
fn always_format_result_value_as_list_gives_arrays_of_strings() {
    let listed = |text: &str| json!({"formulaText": text, "alwaysFormatResultValueAsList": true});
    check_formulas(&[
        (listed("[n] + 1"), json!(["4"])),
        (listed("[t]"), json!(["Hello"])),
        (listed("[n] > 1"), json!(["true"])),
        (listed("[e]"), json!([])),
        (json!({"formulaText": "[n] + 1", "alwaysFormatResultValueAsList": false}), json!(4)),
    ]);
}

#[test]
fn the_formula_settings_are_echoed_in_the_column() {
    let app = spawn_app();
    let (grid, view) = calc_grid(&app);
    let body = app.create_column(
        &view,
        json!({"id": "f", "name": "F", "type": "formula",
               "formula": {"formulaText": "[n] & [t]", "detectResultValueType": "string",
                           "alwaysFormatResultValueAsList": true}}),
    );
    assert_eq!(body["type"], json!("formula"));
    assert_eq!(body["formula"]["formulaText"], json!("[n] & [t]"));
    assert_eq!(body["formula"]["detectResultValueType"], json!("string"));
    assert_eq!(body["formula"]["alwaysFormatResultValueAsList"], json!(true));
    assert_eq!(app.snapshot(&column_path(&view, "f")), body);
    let columns = app.snapshot(&format!("/v1/grids/{grid}"))["columns"].clone();
    assert!(columns.as_array().is_some_and(|c| c.contains(&body)), "{columns}");
    app.add_records(&view, json!([calc_record()]));
    assert_eq!(read(&app, &view, "r1", "f"), json!(["3Hello"]));
}

// ----- recomputation -----

#[test]
fn adding_records_computes_their_formula_values_in_the_response() {
    let app = spawn_app();
    let (_, view) = calc_grid(&app);
    add_formula(&app, &view, "f", r#"[t] & ":" & [n] * 2"#);
    let added = app.add_records(
        &view,
        json!([calc_record(),
               {"id": "r2", "cells": [{"columnId": "t", "value": "x"}, {"columnId": "n", "value": 5}]},
               {"id": "r3"}]),
    );
    assert_eq!(value(&added[0], "f"), &json!("Hello:6"));
    assert_eq!(value(&added[1], "f"), &json!("x:10"));
    assert_eq!(value(&added[2], "f"), &json!(":0"));
    assert_eq!(app.records(&view), added);
}

#[test]
fn a_formula_column_created_after_the_records_computes_them() {
    let app = spawn_app();
    let (_, view) = calc_grid(&app);
    app.add_records(
        &view,
        json!([calc_record(), {"id": "r2", "cells": [{"columnId": "n", "value": 7}]}]),
    );
    add_formula(&app, &view, "f", "[n] * 10");
    let listed = app.records(&view);
    assert_value(value(find_record(&listed, "r1"), "f"), &json!(30), "r1");
    assert_value(value(find_record(&listed, "r2"), "f"), &json!(70), "r2");
}

#[test]
fn updating_a_referenced_cell_recomputes_in_the_write_response_and_the_next_read() {
    let app = spawn_app();
    let (_, view) = calc_grid(&app);
    add_formula(&app, &view, "f", r#"UPPER([t]) & "-" & ([n] + [m])"#);
    app.add_records(
        &view,
        json!([calc_record(), {"id": "r2", "cells": [{"columnId": "t", "value": "b"}]}]),
    );
    assert_eq!(read(&app, &view, "r1", "f"), json!("HELLO-7"));
    let updated = update(
        &app,
        &view,
        json!([{"id": "r1", "cells": [{"columnId": "n", "value": 10}]},
               {"id": "r2", "cells": [{"columnId": "t", "value": "zz"}, {"columnId": "m", "value": 1}]}]),
    );
    assert_eq!(value(find_record(&updated, "r1"), "f"), &json!("HELLO-14"));
    assert_eq!(value(find_record(&updated, "r2"), "f"), &json!("ZZ-1"));
    let listed = app.records(&view);
    assert_eq!(value(find_record(&listed, "r1"), "f"), &json!("HELLO-14"));
    assert_eq!(value(find_record(&listed, "r2"), "f"), &json!("ZZ-1"));
    let res = app.patch(
        &format!("{}/r1", records_path(&view)),
        &json!({"cells": [{"columnId": "t", "value": "single"}]}),
    );
    assert_eq!(value(res.assert_status(200), "f"), &json!("SINGLE-14"));
    assert_eq!(read(&app, &view, "r1", "f"), json!("SINGLE-14"));
    let cleared = set(&app, &view, "r1", "t", Value::Null);
    assert_eq!(value(&cleared, "f"), &json!("-14"));
    assert_eq!(read(&app, &view, "r2", "f"), json!("ZZ-1"), "r2 is untouched");
}

#[test]
fn a_chain_of_two_formula_columns_recomputes_together() {
    let app = spawn_app();
    let (_, view) = calc_grid(&app);
    add_formula(&app, &view, "fa", "[n] * 2");
    add_formula(&app, &view, "fb", "[fa] + 1");
    add_formula(&app, &view, "fc", r#"[fb] & "/" & [fa]"#);
    let added = app.add_records(&view, json!([calc_record()]));
    assert_value(value(&added[0], "fa"), &json!(6), "fa");
    assert_value(value(&added[0], "fb"), &json!(7), "fb");
    assert_eq!(value(&added[0], "fc"), &json!("7/6"));
    let updated = set(&app, &view, "r1", "n", json!(5));
    assert_value(value(&updated, "fa"), &json!(10), "fa after the update");
    assert_value(value(&updated, "fb"), &json!(11), "fb after the update");
    assert_eq!(value(&updated, "fc"), &json!("11/10"));
    let listed = app.records(&view);
    assert_value(value(&listed[0], "fb"), &json!(11), "fb in the next read");
    assert_eq!(value(&listed[0], "fc"), &json!("11/10"));
    let res = app.patch(&column_path(&view, "fa"), &new_text("[n] * 3"));
    assert_eq!(res.assert_status(200)["formula"]["formulaText"], json!("[n] * 3"));
    let listed = app.records(&view);
    assert_value(value(&listed[0], "fb"), &json!(16), "fb after fa's new text");
    assert_eq!(value(&listed[0], "fc"), &json!("16/15"));
}

#[test]
fn patching_the_formula_text_recomputes_every_record() {
    let app = spawn_app();
    let (_, view) = calc_grid(&app);
    add_formula(&app, &view, "f", "[n] + 1");
    app.add_records(
        &view,
        json!([calc_record(), {"id": "r2", "cells": [{"columnId": "n", "value": 10},
                                                    {"columnId": "t", "value": "two"}]}]),
    );
    let listed = app.records(&view);
    assert_value(value(find_record(&listed, "r1"), "f"), &json!(4), "r1 before");
    assert_value(value(find_record(&listed, "r2"), "f"), &json!(11), "r2 before");
    for (text, r1, r2) in [
        (r#"UPPER([t])"#, json!("HELLO"), json!("TWO")),
        ("[n] * [n]", json!(9), json!(100)),
        ("[n] > 5", json!(false), json!(true)),
        (r#"LEFT([t], 2) & [n]"#, json!("He3"), json!("tw10")),
    ] {
        let res = app.patch(&column_path(&view, "f"), &new_text(text));
        let body = res.assert_status(200);
        assert_eq!(body["formula"]["formulaText"], json!(text));
        assert_eq!(body["type"], json!("formula"));
        let listed = app.records(&view);
        assert_value(value(find_record(&listed, "r1"), "f"), &r1, &format!("r1 with {text}"));
        assert_value(value(find_record(&listed, "r2"), "f"), &r2, &format!("r2 with {text}"));
    }
}

#[test]
fn writing_a_formula_cell_is_refused_and_writes_nothing() {
    let app = spawn_app();
    let (_, view) = calc_grid(&app);
    add_formula(&app, &view, "f", "[n] * 2");
    app.add_records(&view, json!([calc_record()]));
    let before = app.records(&view);
    assert_value(value(&before[0], "f"), &json!(6), "f before");
    for value in [json!(99), json!("text"), Value::Null] {
        let cells = json!([{"columnId": "n", "value": 50}, {"columnId": "f", "value": value}]);
        let res = app.post(&records_path(&view), &json!([{"id": "r2", "cells": cells}]));
        crate::records::assert_refused(
            &app,
            &view,
            &res,
            400,
            "columnIsNotEditableInView",
            &before,
        );
        let res = app.patch(&records_path(&view), &json!([{"id": "r1", "cells": cells}]));
        crate::records::assert_refused(
            &app,
            &view,
            &res,
            400,
            "columnIsNotEditableInView",
            &before,
        );
        let res = app.patch(&format!("{}/r1", records_path(&view)), &json!({"cells": cells}));
        crate::records::assert_refused(
            &app,
            &view,
            &res,
            400,
            "columnIsNotEditableInView",
            &before,
        );
    }
}

// ----- filter and sort -----

/// A grid with singleLine `t` and the formula `f` = `UPPER(RIGHT([t], 2))`, and records whose
/// `f` is: r1 apple -> LE, r2 Banana -> NA, r3 cherry -> RY, r4 kiwi -> WI, r5 fig -> IG, r6
/// (empty) -> "".
fn fruit_grid(app: &TestApp) -> String {
    let (_, view) = app.create_grid("Fruit");
    app.create_column(&view, json!({"id": "t", "name": "T", "type": "singleLine"}));
    add_formula(app, &view, "f", "UPPER(RIGHT([t], 2))");
    let fruit = ["apple", "Banana", "cherry", "kiwi", "fig"];
    let mut records: Vec<Value> = fruit
        .iter()
        .enumerate()
        .map(
            |(i, t)| json!({"id": format!("r{}", i + 1), "cells": [{"columnId": "t", "value": t}]}),
        )
        .collect();
    records.push(json!({"id": "r6"}));
    app.add_records(&view, Value::Array(records));
    view
}

#[test]
fn a_formula_column_is_filtered_on_its_text() {
    let app = spawn_app();
    let view = fruit_grid(&app);
    assert_eq!(read(&app, &view, "r2", "f"), json!("NA"));
    for (query, expected) in [
        (r#"{"f": {"contains": "a"}}"#, vec!["r2"]),
        (r#"{"f": {"contains": "I"}}"#, vec!["r4", "r5"]),
        (r#"{"f": {"=": "LE"}}"#, vec!["r1"]),
        (r#"{"f": {"startsWith": "r"}}"#, vec!["r3"]),
        (r#"{"f": {"isEmpty": null}}"#, vec!["r6"]),
        (r#"{"f": {"contains": "an"}}"#, vec![]),
    ] {
        assert_eq!(app.listing_ids(&view, &[("query", query)]), expected, "{query}");
    }
    set(&app, &view, "r1", "t", json!("plum"));
    assert_eq!(
        app.listing_ids(&view, &[("query", r#"{"f": {"contains": "u"}}"#)]),
        ["r1"],
        "the filter sees the recomputed value"
    );
}

#[test]
fn a_formula_column_is_sorted_on_its_text() {
    let app = spawn_app();
    let view = fruit_grid(&app);
    assert_eq!(
        app.listing_ids(&view, &[("sort", r#"{"f": "asc"}"#)]),
        ["r5", "r1", "r2", "r3", "r4", "r6"]
    );
    assert_eq!(
        app.listing_ids(&view, &[("sort", r#"{"f": "desc"}"#)]),
        ["r4", "r3", "r2", "r1", "r5", "r6"]
    );
    assert_eq!(
        app.listing_ids(
            &view,
            &[("query", r#"{"f": {"isNotEmpty": null}}"#), ("sort", r#"{"f": "asc"}"#)]
        ),
        ["r5", "r1", "r2", "r3", "r4"]
    );
    set(&app, &view, "r4", "t", json!("aa"));
    assert_eq!(
        app.listing_ids(&view, &[("sort", r#"{"f": "asc"}"#)]),
        ["r4", "r5", "r1", "r2", "r3", "r6"],
        "the sort sees the recomputed value"
    );
}

// ----- restart, branches, merges, history -----

#[test]
fn formula_columns_and_values_survive_a_restart() {
    let app = spawn_app();
    let (grid, view) = calc_grid(&app);
    add_formula(&app, &view, "fa", "[n] * 2");
    add_formula(&app, &view, "fb", r#"[fa] & " " & UPPER([t])"#);
    app.add_records(&view, json!([calc_record()]));
    let columns = app.snapshot(&format!("/v1/grids/{grid}"));
    let before = app.records(&view);
    assert_eq!(value(&before[0], "fb"), &json!("6 HELLO"));
    let app = app.restart();
    app.assert_unchanged(&format!("/v1/grids/{grid}"), &columns);
    assert_eq!(app.records(&view), before);
    let updated = set(&app, &view, "r1", "n", json!(21));
    assert_eq!(value(&updated, "fb"), &json!("42 HELLO"), "formulas still compute after a restart");
    let added =
        app.add_records(&view, json!([{"id": "r2", "cells": [{"columnId": "t", "value": "x"}]}]));
    assert_eq!(value(&added[0], "fb"), &json!("0 X"));
}

/// A grid with numbers `n`, `m` and the formula `f` = `[n] + [m]`, records r1 (1, 10) and
/// r2 (2, 20): (grid, view).
fn sum_grid(app: &TestApp) -> (String, String) {
    let (grid, view) = app.create_grid("Sums");
    for id in ["n", "m"] {
        app.create_column(&view, json!({"id": id, "name": id.to_uppercase(), "type": "number"}));
    }
    add_formula(app, &view, "f", "[n] + [m]");
    app.add_records(
        &view,
        json!([{"id": "r1", "cells": [{"columnId": "n", "value": 1}, {"columnId": "m", "value": 10}]},
               {"id": "r2", "cells": [{"columnId": "n", "value": 2}, {"columnId": "m", "value": 20}]}]),
    );
    (grid, view)
}

/// Creates a branch of the master of `grid`: (branch id, its default view id).
fn branch_of(app: &TestApp, grid: &str) -> (String, String) {
    let res = app.post(&format!("/v1/branches?gridId={grid}"), &json!({"name": "rel-1"}));
    branch_ids(res.assert_status(201))
}

#[test]
fn a_branch_has_the_formula_values_and_recomputes_its_own_edits() {
    let app = spawn_app();
    let (grid, master) = sum_grid(&app);
    let (_, branch_view) = branch_of(&app, &grid);
    let listed = app.records(&branch_view);
    assert_value(value(find_record(&listed, "r1"), "f"), &json!(11), "branch r1");
    assert_value(value(find_record(&listed, "r2"), "f"), &json!(22), "branch r2");
    let updated = set(&app, &branch_view, "r1", "n", json!(100));
    assert_value(value(&updated, "f"), &json!(110), "branch r1 in the write response");
    assert_value(&read(&app, &branch_view, "r1", "f"), &json!(110), "branch r1 read");
    let added = app.add_records(
        &branch_view,
        json!([{"id": "b1", "cells": [{"columnId": "n", "value": 5}, {"columnId": "m", "value": 6}]}]),
    );
    assert_value(value(&added[0], "f"), &json!(11), "a record added in the branch");
    let master_records = app.records(&master);
    assert_eq!(master_records.len(), 2, "master got the branch's record");
    assert_value(value(find_record(&master_records, "r1"), "f"), &json!(11), "master r1");
    assert_value(value(find_record(&master_records, "r2"), "f"), &json!(22), "master r2");
}

#[test]
fn after_a_merge_master_recomputes_from_its_merged_cells() {
    let app = spawn_app();
    let (grid, master) = sum_grid(&app);
    let (branch, branch_view) = branch_of(&app, &grid);
    set(&app, &branch_view, "r1", "n", json!(5));
    set(&app, &master, "r1", "m", json!(30));
    assert_value(&read(&app, &branch_view, "r1", "f"), &json!(15), "branch r1 before the merge");
    assert_value(&read(&app, &master, "r1", "f"), &json!(31), "master r1 before the merge");
    merge(&app, &branch, &grid, "update");
    let listed = app.records(&master);
    let r1 = find_record(&listed, "r1");
    assert_value(value(r1, "n"), &json!(5), "merged n");
    assert_value(value(r1, "m"), &json!(30), "master's m");
    assert_value(value(r1, "f"), &json!(35), "master r1 after the merge");
    assert_value(value(find_record(&listed, "r2"), "f"), &json!(22), "master r2 after the merge");
    assert_value(&read(&app, &branch_view, "r1", "f"), &json!(15), "the branch is unchanged");
}

#[test]
fn formula_cells_are_not_in_the_record_history() {
    let app = spawn_app();
    let (_, view) = calc_grid(&app);
    add_formula(&app, &view, "f", r#"[t] & "!""#);
    app.add_records(&view, json!([calc_record()]));
    let updated = set(&app, &view, "r1", "t", json!("Bye"));
    assert_eq!(value(&updated, "f"), &json!("Bye!"));
    assert_eq!(read(&app, &view, "r1", "f"), json!("Bye!"));
    let res = app.get(&format!("{}/r1/histories", records_path(&view)));
    let entries = res.assert_status(200).as_array().expect("a list of entries").clone();
    assert_eq!(entries.len(), 2, "{entries:?}");
    let written: Vec<Value> = entries
        .iter()
        .map(|e| {
            let cells = e["cells"].as_array().expect("cells");
            cells.iter().find(|c| c["columnId"] == "t").map_or(Value::Null, |c| c["value"].clone())
        })
        .collect();
    assert_eq!(written, [json!("Bye"), json!("Hello")]);
    for entry in &entries {
        let cells = entry["cells"].as_array().expect("cells");
        assert!(!cells.iter().any(|c| c["columnId"] == "f"), "a formula cell in history: {entry}");
    }
}
