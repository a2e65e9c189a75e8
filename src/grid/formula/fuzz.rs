//! Fuzz properties of formulas beyond the token soup of `tests.rs`: expression trees generated
//! over every function and operator, printed and parsed back (the parser keeps the tree), then
//! checked and evaluated for records with realistic and extreme values through the real path
//! (a column created in a branch, recomputed, read back typed). No panic, every result within
//! a size computed from the tree, bounded time; hostile nesting is refused, not a stack
//! overflow.
//!
//! Bounded for CI; more cases with e.g. `PROPTEST_CASES=5000 cargo test --lib formula::fuzz`.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::json;

use super::parse::BinaryOp;
use super::{check, parse, typed_value, Expr, Function};
use crate::grid::columns::{build_column, ColumnRequest};
use crate::grid::ops::{CellWrite, GridOp, GridState, RecordWrite};
use crate::grid::schema::{ColumnDef, Schema};
use crate::grid::store::RecordIdentity;
use crate::grid::value::CellValue;

/// The longest a formula column's creation (evaluation for every record) may take here: a
/// tripwire for work that grows with hostile input.
const EVAL_TIME: Duration = Duration::from_secs(5);
/// Trees whose results could be larger than this (by `text_bound`) are parsed and checked but
/// not evaluated: without a cap in the evaluator they could take gigabytes.
const EVAL_BOUND: u64 = 8 << 20;
/// The longest text a number prints as (`format_number` of 1e-300 writes every digit).
const NUMBER_TEXT: u64 = 400;

/// Cases per property: `PROPTEST_CASES` when set, else `default`.
fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok());
    ProptestConfig { cases: cases.unwrap_or(default), ..ProptestConfig::default() }
}

/// Input columns with the longest text each can read as, in bytes.
const COLUMNS: [(&str, &str, u64); 8] = [
    ("t", "singleLine", 64),
    ("n", "number", NUMBER_TEXT),
    ("b", "boolean", 5),
    ("d", "datetime", 40),
    ("tags", "multipleSelections", 64),
    ("empty", "singleLine", 0),
    ("big", "multipleLines", BIG as u64),
    ("l", "language", 64),
];
/// The size of the `big` cell: long enough that a copy or a replace shows in time and memory.
const BIG: usize = 64 * 1024;

const TEXTS: [&str; 10] =
    ["", "  Hello   World ", "ß", "1e400", " 12 ", "TRUE", "#VALUE!", "a\"b", "ΐΟΣ", "-0"];
const NUMBERS: [f64; 9] = [0.0, -0.0, 2.5, -2.5, 1e308, -1e308, 5e-324, 1e15, 1e-300];

/// A branch with the input columns and six records of realistic and extreme values.
fn branch() -> GridState {
    let mut schema = Schema::default();
    for (id, column_type, _) in COLUMNS {
        let mut body = json!({"id": id, "name": id, "type": column_type});
        if column_type == "multipleSelections" {
            body["selection"] = json!({"options": [{"value": "a"}, {"value": "ß"}]});
        }
        if column_type == "language" {
            body["languageCode"] = json!("enUS");
            body["localizationType"] = json!("sourceLanguage");
        }
        let req: ColumnRequest = serde_json::from_value(body).expect("a valid request");
        schema.columns.push(build_column(&schema, &req).expect("a valid column"));
    }
    let mut state = GridState::new("v", schema.columns, RecordIdentity::RecordId);
    let big: String = "aß ".chars().cycle().take(BIG / 2).collect();
    let records = (0..6)
        .map(|i| {
            let text = TEXTS[(i * 3) % TEXTS.len()].to_owned();
            let cells = [
                ("t", CellValue::Text(text.clone())),
                ("n", CellValue::Number(NUMBERS[(i * 2) % NUMBERS.len()])),
                ("b", CellValue::Boolean(i % 2 == 0)),
                ("d", CellValue::Datetime([0, -62_135_596_800_000, 253_402_300_799_999][i % 3])),
                (
                    "tags",
                    CellValue::List(["a", "ß"][..i % 3].iter().map(|s| (*s).into()).collect()),
                ),
                ("big", if i == 1 { CellValue::Text(big.clone()) } else { CellValue::Empty }),
                ("l", CellValue::Text(TEXTS[(i * 5 + 1) % TEXTS.len()].to_owned())),
            ];
            RecordWrite {
                id: format!("r{i}"),
                path: String::new(),
                new_id: None,
                new_path: None,
                cells: cells
                    .into_iter()
                    .map(|(id, value)| CellWrite {
                        column_id: id.into(),
                        value: Some(value),
                        dependency_status: None,
                        source_status: None,
                    })
                    .collect(),
                mark_mt: false,
            }
        })
        .collect();
    state.apply(&GridOp::AddRecords { time_ms: 1, user: "u".into(), records });
    state
}

const FUNCTIONS: [&str; 19] = [
    "IF",
    "AND",
    "OR",
    "NOT",
    "CONCAT",
    "LEN",
    "LOWER",
    "UPPER",
    "TRIM",
    "LEFT",
    "RIGHT",
    "MID",
    "SUBSTITUTE",
    "ROUND",
    "ABS",
    "MIN",
    "MAX",
    "SUM",
    "NOSUCH",
];

const OPERATORS: [BinaryOp; 12] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Pow,
    BinaryOp::Concat,
    BinaryOp::Eq,
    BinaryOp::Ne,
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
];

fn leaf() -> impl Strategy<Value = Expr> {
    let numbers = vec![0.0, 1.0, 2.0, 0.5, 3.75, 15.0, 16.0, 1e15, 4294967296.0, 1e308, 5e-324];
    let texts = vec!["", "a", "ß", " x  y ", "\"", "12", "1e400", "true", "#DIV/0!", "ΟΣ", "a,b;c"];
    let mut columns: Vec<&str> = COLUMNS.iter().map(|(id, _, _)| *id).collect();
    columns.push("nope");
    prop_oneof![
        4 => prop::sample::select(numbers).prop_map(Expr::Number),
        1 => (0u32..1000).prop_map(|n| Expr::Number(f64::from(n) / 8.0)),
        4 => prop::sample::select(texts).prop_map(|t| Expr::Text(t.to_owned())),
        1 => "\\PC{0,12}".prop_map(Expr::Text),
        1 => any::<bool>().prop_map(Expr::Boolean),
        5 => prop::sample::select(columns).prop_map(|c| Expr::Column(c.to_owned())),
    ]
}

/// Expression trees over every function (with valid and invalid argument counts) and
/// operator, a few levels deep.
fn expr() -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            1 => inner.clone().prop_map(|e| Expr::Negate(Box::new(e))),
            3 => (prop::sample::select(OPERATORS.to_vec()), inner.clone(), inner.clone())
                .prop_map(|(op, l, r)| Expr::Binary(op, Box::new(l), Box::new(r))),
            5 => (prop::sample::select(FUNCTIONS.to_vec()), prop::collection::vec(inner, 0..5),
                  prop::bool::weighted(0.9))
                .prop_map(|(name, args, fit)| call(name, args, fit)),
        ]
    })
}

/// A call of `name`; when `fit`, its arguments cut or padded (with `[t]`) to the function's
/// arity, so that most generated trees pass `check` and get evaluated.
fn call(name: &str, mut args: Vec<Expr>, fit: bool) -> Expr {
    if let (true, Some(function)) = (fit, Function::parse(name)) {
        let (min, max) = function.arity();
        args.truncate(max.unwrap_or(usize::MAX));
        while args.len() < min {
            args.push(Expr::Column("t".to_owned()));
        }
    }
    Expr::Call(name.to_owned(), args)
}

/// `expr` as formula text, fully parenthesized, so that parsing it gives `expr` back.
fn print(expr: &Expr, out: &mut String) {
    match expr {
        Expr::Number(n) => write!(out, "{n:?}").expect("writes to a string"),
        Expr::Text(t) => write!(out, "\"{}\"", t.replace('"', "\"\"")).expect("writes"),
        Expr::Boolean(b) => out.push_str(if *b { "TRUE" } else { "FALSE" }),
        Expr::Column(id) => write!(out, "[{id}]").expect("writes to a string"),
        Expr::Negate(inner) => {
            out.push_str("-(");
            print(inner, out);
            out.push(')');
        }
        Expr::Binary(op, l, r) => {
            out.push('(');
            print(l, out);
            out.push_str(match op {
                BinaryOp::Add => " + ",
                BinaryOp::Sub => " - ",
                BinaryOp::Mul => " * ",
                BinaryOp::Div => " / ",
                BinaryOp::Pow => " ^ ",
                BinaryOp::Concat => " & ",
                BinaryOp::Eq => " = ",
                BinaryOp::Ne => " <> ",
                BinaryOp::Lt => " < ",
                BinaryOp::Le => " <= ",
                BinaryOp::Gt => " > ",
                BinaryOp::Ge => " >= ",
            });
            print(r, out);
            out.push(')');
        }
        Expr::Call(name, args) => {
            out.push_str(name);
            out.push('(');
            for (i, arg) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                print(arg, out);
            }
            out.push(')');
        }
    }
}

/// The most bytes `expr`'s result can take as text, from what each function can do to its
/// arguments' sizes (SUBSTITUTE multiplies, UPPER/LOWER may triple UTF-8 bytes).
fn text_bound(expr: &Expr) -> u64 {
    let arg = |args: &[Expr], i: usize| args.get(i).map_or(0, text_bound);
    match expr {
        Expr::Number(_) | Expr::Negate(_) => NUMBER_TEXT,
        Expr::Text(t) => t.len() as u64,
        Expr::Boolean(_) => 5,
        Expr::Column(id) => COLUMNS.iter().find(|c| c.0 == id).map_or(0, |c| c.2),
        Expr::Binary(BinaryOp::Concat, l, r) => text_bound(l).saturating_add(text_bound(r)),
        Expr::Binary(
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Pow,
            ..,
        ) => NUMBER_TEXT,
        Expr::Binary(..) => 5,
        Expr::Call(name, args) => match Function::parse(name) {
            Some(Function::Concat) => args.iter().map(text_bound).fold(0, u64::saturating_add),
            Some(Function::Lower | Function::Upper) => arg(args, 0).saturating_mul(3),
            Some(Function::Trim | Function::Left | Function::Right | Function::Mid) => arg(args, 0),
            Some(Function::Substitute) => {
                let text = arg(args, 0);
                text.saturating_add(text.saturating_mul(arg(args, 2)))
            }
            Some(Function::If) => arg(args, 1).max(arg(args, 2)).max(5),
            Some(Function::And | Function::Or | Function::Not) => 5,
            Some(_) => NUMBER_TEXT,
            None => 8,
        },
    }
}

/// Creates formula column `f` with `text` in `state` (evaluating it for every record) and
/// checks every record's result; a refused formula must be refused by `check` too.
fn create_and_read(state: &mut GridState, text: &str, bound: u64) -> Result<(), TestCaseError> {
    let body = json!({"id": "f", "name": "f", "type": "formula", "formula": {"formulaText": text}});
    let req: ColumnRequest = serde_json::from_value(body).expect("a valid request");
    let checked = check(&state.schema, "f", text);
    let column: ColumnDef = match build_column(&state.schema, &req) {
        Ok(column) => column,
        Err(e) => {
            prop_assert!(checked.is_err(), "{text}: refused only by build_column: {e}");
            prop_assert_eq!(crate::error::ApiError::from(e).status().as_u16(), 400);
            return Ok(());
        }
    };
    prop_assert!(checked.is_ok(), "{}: accepted though check says {:?}", text, checked);
    let started = Instant::now();
    state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
    let elapsed = started.elapsed();
    prop_assert!(elapsed < EVAL_TIME, "{} took {:?}", text, elapsed);
    let compiled = state.formulas.get("f").expect("compiled").clone();
    let slot = state.slots["f"];
    for row in state.store.live_rows().collect::<Vec<_>>() {
        let stored = state.store.value(row, slot);
        if let CellValue::Text(t) = &stored {
            // An error is stored as its code (at most 7 bytes) whatever the bound.
            let bound = bound.max(7);
            prop_assert!(t.len() as u64 <= bound, "{text}: {} bytes > {bound}", t.len());
        }
        match typed_value(&stored, &compiled) {
            CellValue::Number(n) => prop_assert!(n.is_finite(), "{text}: {n}"),
            CellValue::Empty
            | CellValue::Text(_)
            | CellValue::Boolean(_)
            | CellValue::List(_)
            | CellValue::Datetime(_) => {}
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    /// A printed tree parses back to itself, is checked, and evaluates for every record within
    /// its size bound and in bounded time.
    #[test]
    fn generated_trees_parse_back_and_evaluate_within_bounds(tree in expr()) {
        let mut text = String::new();
        print(&tree, &mut text);
        match parse(&text) {
            Ok(parsed) => prop_assert_eq!(&parsed, &tree, "{}", text),
            Err(e) => {
                // Only the documented limits refuse a printed tree.
                prop_assert!(
                    e.message.contains("nests too deeply") || e.message.contains("longer than"),
                    "{text}: {e}"
                );
                return Ok(());
            }
        }
        let bound = text_bound(&tree);
        let mut state = branch();
        if bound <= EVAL_BOUND {
            create_and_read(&mut state, &text, bound)?;
        } else {
            let _ = check(&state.schema, "f", &text);
        }
    }

    /// Hostile shapes: deep nesting of every kind, long runs of operators, many arguments, long
    /// literals. Parsing refuses or accepts them without exhausting the stack, and what is
    /// accepted evaluates in bounded time.
    #[test]
    fn hostile_nesting_is_refused_or_evaluated(
        shape in 0usize..10,
        n in prop_oneof![1usize..80, 80usize..6000],
        function in prop::sample::select(FUNCTIONS.to_vec()),
    ) {
        let text = match shape {
            0 => format!("{}1{}", "(".repeat(n), ")".repeat(n)),
            1 => format!("{}1", "-".repeat(n)),
            2 => format!("{}1", "+-".repeat(n)),
            3 => format!("{}[t]{}", format!("{function}(").repeat(n), ")".repeat(n)),
            4 => format!("1{}", "^1".repeat(n)),
            5 => format!("[n]{}", " & [t]".repeat(n)),
            6 => format!("{function}({}1)", "[t], ".repeat(n)),
            7 => format!("\"{}\"", "x".repeat(n * 2)),
            8 => format!("1{}", "0".repeat(n)),
            _ => format!("1e{}", "9".repeat(n)),
        };
        let started = Instant::now();
        let _ = parse(&text);
        let mut state = branch();
        // Every shape's result is at most its own text times the longest input, far below
        // what `create_and_read` may evaluate.
        let bound = (text.len() as u64 + 1).saturating_mul(NUMBER_TEXT + 64);
        create_and_read(&mut state, &text, bound.max(EVAL_BOUND))?;
        prop_assert!(started.elapsed() < EVAL_TIME, "{} took {:?}", shape, started.elapsed());
    }
}

#[test]
fn the_bound_and_the_printer_are_what_the_properties_assume() {
    let tree = parse("SUBSTITUTE([t], \"a\", UPPER([tags] & \"xy\"))").expect("parses");
    assert_eq!(text_bound(&tree), 64 + 64 * (3 * (64 + 2)));
    let mut text = String::new();
    print(&tree, &mut text);
    assert_eq!(text, "SUBSTITUTE([t], \"a\", UPPER(([tags] & \"xy\")))");
    assert_eq!(parse(&text).expect("parses"), tree);
    // A record's result really is bounded by it: the 64 KiB cell replaced by itself is 2x.
    let mut state = branch();
    let text = "SUBSTITUTE([big], \"ß\", \"ss\")";
    create_and_read(&mut state, text, BIG as u64 * 2).expect("within the bound");
    let row = state.store.find("", "r1").expect("r1");
    let CellValue::Text(value) = state.store.value(row, state.slots["f"]) else {
        panic!("text");
    };
    assert!(value.len() >= BIG / 2 && !value.contains('ß'));
}
