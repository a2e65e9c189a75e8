//! Formulas evaluated inside a branch: every function, the operators, the errors, result
//! typing, and recomputation after writes and schema ops.

use serde_json::json;

use super::{check, typed_value};
use crate::grid::columns::{build_column, ColumnRequest};
use crate::grid::ops::{CellWrite, GridOp, GridState, RecordWrite};
use crate::grid::schema::{ColumnDef, Schema};
use crate::grid::store::RecordIdentity;
use crate::grid::value::CellValue;

fn column(body: serde_json::Value) -> ColumnDef {
    column_in(&Schema::default(), body)
}

fn column_in(schema: &Schema, body: serde_json::Value) -> ColumnDef {
    let req: ColumnRequest = serde_json::from_value(body).expect("valid request");
    build_column(schema, &req).expect("valid column")
}

/// A branch with text `t`, number `n`, `zero`, boolean `b`, list `tags`, and one record `r`.
fn branch() -> GridState {
    let columns = vec![
        column(json!({"id": "t", "name": "t", "type": "singleLine"})),
        column(json!({"id": "n", "name": "n", "type": "number"})),
        column(json!({"id": "zero", "name": "zero", "type": "number"})),
        column(json!({"id": "b", "name": "b", "type": "boolean"})),
        column(json!({"id": "tags", "name": "tags", "type": "multipleSelections"})),
        column(json!({"id": "empty", "name": "empty", "type": "singleLine"})),
    ];
    let mut state = GridState::new("v", columns, RecordIdentity::RecordId);
    let cell = |id: &str, value: CellValue| CellWrite {
        column_id: id.into(),
        value: Some(value),
        dependency_status: None,
        source_status: None,
    };
    let record = RecordWrite {
        id: "r".into(),
        path: String::new(),
        new_id: None,
        new_path: None,
        cells: vec![
            cell("t", CellValue::Text("  Hello   World ".into())),
            cell("n", CellValue::Number(2.5)),
            cell("zero", CellValue::Number(0.0)),
            cell("b", CellValue::Boolean(true)),
            cell("tags", CellValue::List(vec!["a".into(), "b".into()])),
        ],
        mark_mt: false,
    };
    state.apply(&GridOp::AddRecords { time_ms: 1, user: "u".into(), records: vec![record] });
    state
}

/// Adds formula column `f` with `text` and reads record `r`'s typed value.
fn eval_in(state: &mut GridState, id: &str, text: &str) -> CellValue {
    check(&state.schema, id, text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let body = json!({"id": id, "name": id, "type": "formula", "formula": {"formulaText": text}});
    let column = column_in(&state.schema, body);
    state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
    read(state, id)
}

fn read(state: &GridState, id: &str) -> CellValue {
    let row = state.store.find("", "r").expect("record r");
    let slot = state.slots[id];
    typed_value(&state.store.value(row, slot), state.formulas.get(id).expect("compiled"))
}

fn eval(text: &str) -> CellValue {
    eval_in(&mut branch(), "f", text)
}

fn n(x: f64) -> CellValue {
    CellValue::Number(x)
}

fn s(x: &str) -> CellValue {
    CellValue::Text(x.into())
}

#[test]
fn operators_follow_spreadsheet_precedence() {
    for (text, expected) in [
        ("1 + 2 * 3", n(7.0)),
        ("(1 + 2) * 3", n(9.0)),
        ("-2^2", n(4.0)),
        ("2^-1", n(0.5)),
        ("2^3^2", n(512.0)),
        ("7 / 2", n(3.5)),
        ("[n] * 2", n(5.0)),
        ("[n] + [b]", n(3.5)),
        ("[empty] + 1", n(1.0)),
        ("\"3\" * 2", n(6.0)),
        ("0.1 + 0.2", n(0.3)),
        ("1 & 2", s("12")),
        ("[n] & \"x\"", s("2.5x")),
        ("\"a\" = \"A\"", CellValue::Boolean(true)),
        ("1 <> 2", CellValue::Boolean(true)),
        ("[n] >= 2.5", CellValue::Boolean(true)),
        ("\"10\" < \"9\"", CellValue::Boolean(true)),
        ("[n] = \"2.5\"", CellValue::Boolean(true)),
        ("\"say \"\"hi\"\"\"", s("say \"hi\"")),
        ("[tags]", s("a, b")),
        ("[b]", CellValue::Boolean(true)),
    ] {
        assert_eq!(eval(text), expected, "{text}");
    }
}

#[test]
fn every_function_computes() {
    for (text, expected) in [
        ("IF([n] > 2, \"big\", \"small\")", s("big")),
        ("IF(FALSE, 1)", CellValue::Boolean(false)),
        ("IF(TRUE, 1, 1/0)", n(1.0)),
        ("AND(TRUE, [b], 1)", CellValue::Boolean(true)),
        ("OR(FALSE, 0)", CellValue::Boolean(false)),
        ("NOT([b])", CellValue::Boolean(false)),
        ("CONCAT(\"a\", 1, TRUE)", s("a1true")),
        ("CONCAT()", CellValue::Empty),
        ("LEN(\"héllo\")", n(5.0)),
        ("LOWER(\"ÀB\")", s("àb")),
        ("UPPER(\"straße\")", s("STRASSE")),
        ("TRIM([t])", s("Hello World")),
        ("LEFT(\"abc\")", s("a")),
        ("LEFT(\"abc\", 5)", s("abc")),
        ("RIGHT(\"abc\", 2)", s("bc")),
        ("MID(\"abcdef\", 2, 3)", s("bcd")),
        ("MID(\"abc\", 5, 2)", CellValue::Empty),
        ("SUBSTITUTE(\"a-b-c\", \"-\", \"+\")", s("a+b+c")),
        ("SUBSTITUTE(\"a-b-c\", \"-\", \"+\", 2)", s("a-b+c")),
        ("ROUND(2.5)", n(3.0)),
        ("ROUND(-2.5)", n(-3.0)),
        ("ROUND(1.005, 2)", n(1.01)),
        ("ROUND(1234, -2)", n(1200.0)),
        ("ABS(-3)", n(3.0)),
        ("MIN(3, [n], 7)", n(2.5)),
        ("MAX(3, [n], \"7\")", n(7.0)),
        ("SUM(1, [empty], [n])", n(3.5)),
        ("SUM()", n(0.0)),
    ] {
        assert_eq!(eval(text), expected, "{text}");
    }
}

#[test]
fn errors_are_values() {
    for (text, expected) in [
        ("1 / 0", "#DIV/0!"),
        ("[n] / [zero]", "#DIV/0!"),
        ("1 / [empty]", "#DIV/0!"),
        ("\"abc\" * 2", "#VALUE!"),
        ("MID(\"x\", 0, 1)", "#VALUE!"),
        ("LEFT(\"x\", -1)", "#VALUE!"),
        ("LEN(1/0)", "#DIV/0!"),
        ("IF(\"maybe\", 1, 2)", "#VALUE!"),
        ("NOSUCH(1)", "#NAME?"),
        ("10^400", "#VALUE!"),
    ] {
        assert_eq!(eval(text), s(expected), "{text}");
    }
}

#[test]
fn results_are_typed_by_the_column_settings() {
    let mut state = branch();
    let typed = |state: &mut GridState, id: &str, text: &str, detect: &str, list: bool| {
        let body = json!({"id": id, "name": id, "type": "formula", "formula": {
            "formulaText": text, "detectResultValueType": detect,
            "alwaysFormatResultValueAsList": list}});
        let column = column_in(&state.schema, body);
        state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
        read(state, id)
    };
    assert_eq!(typed(&mut state, "s", "1 + 2", "string", false), s("3"));
    assert_eq!(typed(&mut state, "d", "\"4.5\"", "decimal", false), n(4.5));
    assert_eq!(typed(&mut state, "bo", "\"true\"", "boolean", false), CellValue::Boolean(true));
    assert_eq!(typed(&mut state, "l", "1 + 2", "list", false), CellValue::List(vec!["3".into()]));
    assert_eq!(typed(&mut state, "al", "[t]", "na", true).clone(), {
        CellValue::List(vec!["  Hello   World ".into()])
    });
    assert_eq!(typed(&mut state, "e", "[empty]", "list", false), CellValue::List(vec![]));
    assert_eq!(eval("IF([b], 3, \"\")"), n(3.0));
}

#[test]
fn writes_recompute_through_chains_and_schema_changes_recompute_all() {
    let mut state = branch();
    assert_eq!(eval_in(&mut state, "f1", "[n] * 2"), n(5.0));
    assert_eq!(eval_in(&mut state, "f2", "[f1] + 1"), n(6.0));
    let update = RecordWrite {
        id: "r".into(),
        path: String::new(),
        new_id: None,
        new_path: None,
        cells: vec![CellWrite {
            column_id: "n".into(),
            value: Some(n(10.0)),
            dependency_status: None,
            source_status: None,
        }],
        mark_mt: false,
    };
    state.apply(&GridOp::UpdateRecords { time_ms: 2, user: "u".into(), records: vec![update] });
    assert_eq!(read(&state, "f1"), n(20.0));
    assert_eq!(read(&state, "f2"), n(21.0));

    let mut renamed = state.schema.column("n").expect("n").clone();
    renamed.id = "amount".into();
    state.apply(&GridOp::ReplaceColumn { old_id: "n".into(), column: renamed });
    let f1 = state.schema.column("f1").and_then(|c| c.formula.as_ref()).expect("formula");
    assert_eq!(f1.formula_text, "[amount] * 2");
    assert_eq!(read(&state, "f2"), n(21.0));

    state.apply(&GridOp::DeleteColumn { id: "amount".into() });
    assert_eq!(read(&state, "f1"), s("#REF!"));
    assert_eq!(read(&state, "f2"), s("#REF!"));
}

mod fuzz {
    use proptest::prelude::*;

    use super::{branch, column_in, read};
    use crate::grid::formula::{check, parse};
    use crate::grid::ops::GridOp;

    /// Formula-like text: tokens of the language, glued in any order.
    fn formula_text() -> impl Strategy<Value = String> {
        let token = prop::sample::select(vec![
            "1",
            "0",
            "2.5",
            ".5",
            "1e3",
            "\"a\"",
            "\"\"\"\"",
            "TRUE",
            "[t]",
            "[n]",
            "[zero]",
            "[b]",
            "[tags]",
            "[empty]",
            "[nope]",
            "IF(",
            "AND(",
            "MID(",
            "ROUND(",
            "SUM(",
            "LEN(",
            "SUBSTITUTE(",
            "LEFT(",
            "X(",
            "(",
            ")",
            ",",
            "+",
            "-",
            "*",
            "/",
            "^",
            "&",
            "=",
            "<>",
            "<=",
            " ",
            "[",
            "\"",
        ]);
        prop::collection::vec(token, 0..24).prop_map(|tokens| tokens.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Any text parses or is refused, and any accepted formula evaluates to a value or an
        /// error value: never a panic.
        #[test]
        fn formulas_never_panic(text in formula_text(), raw in "\\PC{0,40}") {
            let _ = parse(&raw);
            let mut state = branch();
            if check(&state.schema, "f", &text).is_ok() {
                let body = serde_json::json!({"id": "f", "name": "f", "type": "formula",
                    "formula": {"formulaText": text}});
                let column = column_in(&state.schema, body);
                state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
                let _ = read(&state, "f");
            }
        }
    }
}
