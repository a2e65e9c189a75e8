//! Fuzz properties of the `query` and `sort` parameters, run on the stable toolchain with
//! proptest: any text or JSON a client sends is either refused with one of the documented 400
//! codes or accepted, bound and run, never a panic; an accepted query's page agrees with the
//! filters' reference meaning (`Filter::test`) even on hostile operands; a hostile regular
//! expression is refused or compiled within the size limits, and a query runs in bounded time.
//!
//! Bounded for CI (a few seconds); more cases with e.g.
//! `PROPTEST_CASES=20000 cargo test --lib grid::query::fuzz`.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{json, Map, Number, Value};

use super::{bind_filters, bind_sort, parse_query, parse_sort, Pred, QueryEngine, QueryError};
use crate::error::{ApiError, ErrorCode};
use crate::grid::columns::{build_column, ColumnRequest};
use crate::grid::ops::{CellWrite, GridOp, GridState, RecordWrite};
use crate::grid::schema::ColumnDef;
use crate::grid::store::RecordIdentity;
use crate::grid::value::CellValue;

/// The longest a query may take here (debug build, a shared machine): a tripwire for work that
/// grows with hostile input, far above the few milliseconds a query takes.
const QUERY_TIME: Duration = Duration::from_secs(5);

/// Cases per property: `PROPTEST_CASES` when set, else `default`.
fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok());
    ProptestConfig { cases: cases.unwrap_or(default), ..ProptestConfig::default() }
}

const VIEW: &str = "v";

/// Every column type that needs no other grid, as `(id, create request)`.
fn column_requests() -> Vec<Value> {
    let options = json!({"options": [{"value": "Draft"}, {"value": "Done"}, {"value": "draft"}]});
    vec![
        json!({"id": "t", "type": "singleLine"}),
        json!({"id": "ml", "type": "multipleLines"}),
        json!({"id": "rt", "type": "richText"}),
        json!({"id": "md", "type": "markdown"}),
        json!({"id": "h", "type": "html"}),
        json!({"id": "j", "type": "json"}),
        json!({"id": "y", "type": "yaml"}),
        json!({"id": "s", "type": "singleSelection", "selection": options}),
        json!({"id": "m", "type": "multipleSelections", "selection": options}),
        json!({"id": "b", "type": "boolean"}),
        json!({"id": "n", "type": "number"}),
        json!({"id": "d", "type": "datetime"}),
        json!({"id": "fl", "type": "files"}),
        json!({"id": "l", "type": "language", "languageCode": "enUS",
               "localizationType": "sourceLanguage"}),
        json!({"id": "f", "type": "formula", "formula": {"formulaText": "[t] & [n]"}}),
    ]
}

const TEXTS: [&str; 10] =
    ["", "apple", "APPLE pie", "ΟΔΟΣ", "straße", "two\nlines", "a.b*c", "x\u{0}y", "-1", "1e400"];
const NUMBERS: [f64; 8] = [0.0, -0.0, 1.0, -2.5, 1e308, -1e308, 5e-324, 123456789.125];
const TIMES: [i64; 5] = [0, -62_135_596_800_000, 253_402_300_799_999, 1_700_000_000_000, -1];

/// A branch with a column of every type and `rows` records whose values come from small
/// pools with extremes, one record holding a 256 KiB text.
pub(crate) fn world(rows: usize) -> GridState {
    let mut columns: Vec<ColumnDef> = Vec::new();
    let mut schema = crate::grid::schema::Schema::default();
    for mut body in column_requests() {
        body["name"] = body["id"].clone();
        let req: ColumnRequest = serde_json::from_value(body).expect("a valid request");
        let column = build_column(&schema, &req).expect("a valid column");
        schema.columns.push(column.clone());
        columns.push(column);
    }
    let mut state = GridState::new(VIEW, columns, RecordIdentity::RecordId);
    let big = "ab".repeat(128 * 1024);
    let records = (0..rows)
        .map(|i| {
            let text = if i == 3 { big.clone() } else { TEXTS[i % TEXTS.len()].to_owned() };
            let value = |column: &str| -> CellValue {
                if i % 7 == 0 {
                    return CellValue::Empty;
                }
                match column {
                    "s" => CellValue::Text(["Draft", "Done", "draft"][i % 3].to_owned()),
                    "m" | "fl" => {
                        CellValue::List(TEXTS[..i % 4].iter().map(|t| (*t).to_owned()).collect())
                    }
                    "b" => CellValue::Boolean(i % 2 == 0),
                    "n" => CellValue::Number(NUMBERS[i % NUMBERS.len()]),
                    "d" => CellValue::Datetime(TIMES[i % TIMES.len()]),
                    _ => CellValue::Text(text.clone()),
                }
            };
            let cells = ["t", "ml", "rt", "md", "h", "j", "y", "s", "m", "b", "n", "d", "fl", "l"]
                .into_iter()
                .map(|id| CellWrite {
                    column_id: id.into(),
                    value: Some(value(id)),
                    dependency_status: None,
                    source_status: None,
                })
                .collect();
            RecordWrite {
                id: format!("r{i}"),
                path: String::new(),
                new_id: None,
                new_path: None,
                cells,
                mark_mt: false,
            }
        })
        .collect();
    state.apply(&GridOp::AddRecords { time_ms: 1_700_000_000_000, user: "u".into(), records });
    state
}

const FIELDS: [&str; 26] = [
    "t",
    "ml",
    "rt",
    "md",
    "h",
    "j",
    "y",
    "s",
    "m",
    "b",
    "n",
    "d",
    "fl",
    "l",
    "f",
    "_recordId",
    "_path",
    "_lastModifiedTime",
    "_lastModifiedBy",
    "l._dependencyStatus",
    "l._sourceStatus",
    "t._sourceStatus",
    "nope._dependencyStatus",
    "_nope",
    "nope",
    " ",
];

const OPERATORS: [&str; 26] = [
    "=",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "contains",
    "notContains",
    "startsWith",
    "notStartsWith",
    "endsWith",
    "notEndsWith",
    "regexp",
    "notRegexp",
    "in",
    "notIn",
    "between",
    "notBetween",
    "isEmpty",
    "isNotEmpty",
    "isNull",
    "isNotNull",
    "like",
    "CONTAINS",
    "",
    "==",
];

/// Regular expressions that are large, deep or slow to compile once expanded.
fn hostile_regex() -> impl Strategy<Value = String> {
    prop_oneof![
        (1usize..2000, 1usize..2000).prop_map(|(a, b)| format!("(a{{{a}}}){{{b}}}")),
        (1usize..5000).prop_map(|n| format!("\\w{{{n}}}")),
        (1usize..3000).prop_map(|n| format!("\\p{{L}}{{{n}}}[\\p{{Greek}}\\d]{{1,{n}}}")),
        (1usize..200).prop_map(|n| format!("{}a{}", "(".repeat(n), ")".repeat(n))),
        (1usize..200).prop_map(|n| format!("{}a", "(?:a|b)*".repeat(n))),
        (1usize..1500).prop_map(|n| "x".repeat(n)),
        (1usize..400).prop_map(|n| (0..n).map(|i| format!("w{i}")).collect::<Vec<_>>().join("|")),
        Just("(?i)ΟΣ$|^a|\\bb\\b|\\Aap|e\\z|(?s).*".to_owned()),
        Just("[".to_owned()),
        Just("(?P<x>a)(?P<x>b)".to_owned()),
        Just("a{4294967295}".to_owned()),
        "\\PC{0,30}",
    ]
}

/// JSON scalars with the extremes of each kind.
fn scalar() -> impl Strategy<Value = Value> {
    let strings = prop::sample::select(vec![
        "",
        "apple",
        "ΟΣ",
        "2025-01-01",
        "2025-13-45",
        "9999-12-31T23:59:59Z",
        "+275760-09-13T00:00:00Z",
        "1970-01-01T00:00:00+25:00",
        "-1",
        "1e400",
        "NaN",
        "inf",
        "true",
        "outOfDate",
        "readyForTranslation",
        "Draft",
        "\u{0}",
    ]);
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        prop::sample::select(vec![0.5, -0.0, 1e308, -1e308, 5e-324, 9.007_199_254_740_993e15])
            .prop_map(|n| Value::Number(Number::from_f64(n).expect("finite"))),
        strings.prop_map(|s| json!(s)),
        hostile_regex().prop_map(Value::String),
        "\\PC{0,24}".prop_map(Value::String),
    ]
}

/// Any JSON value, nested a little.
fn any_json() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("\\PC{0,8}", inner), 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// A field name: a known one most of the time, else any text.
fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(FIELDS.to_vec()).prop_map(str::to_owned),
        1 => "\\PC{0,12}",
    ]
}

/// One `{operator: value}` condition, well formed most of the time.
fn condition() -> impl Strategy<Value = Value> {
    let operand = prop_oneof![
        4 => scalar(),
        2 => prop::collection::vec(scalar(), 0..4).prop_map(Value::Array),
        1 => any_json(),
    ];
    prop_oneof![
        6 => (prop::sample::select(OPERATORS.to_vec()), operand)
            .prop_map(|(op, value)| json!({ op: value })),
        1 => any_json(),
    ]
}

/// The text of a `query` parameter: a query object, any JSON, damaged JSON or any text.
fn query_text() -> impl Strategy<Value = String> {
    let object = prop::collection::vec((field(), condition()), 0..4)
        .prop_map(|c| Value::Object(c.into_iter().collect::<Map<_, _>>()).to_string())
        .boxed();
    text_around(object)
}

/// The text of a `sort` parameter.
fn sort_text() -> impl Strategy<Value = String> {
    let direction = prop_oneof![
        4 => prop::sample::select(vec!["asc", "desc", "ASC", "Desc", "up", ""]).prop_map(|d| json!(d)),
        1 => any_json(),
    ];
    let object = prop::collection::vec((field(), direction), 0..4)
        .prop_map(|k| Value::Object(k.into_iter().collect::<Map<_, _>>()).to_string())
        .boxed();
    text_around(object)
}

/// `object` as it is, or replaced by any JSON, cut short, or any text.
fn text_around(object: BoxedStrategy<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        6 => object.clone(),
        1 => any_json().prop_map(|v| v.to_string()),
        1 => (object, any::<prop::sample::Index>()).prop_map(|(text, cut)| {
            let chars: Vec<char> = text.chars().collect();
            chars[..cut.index(chars.len() + 1)].iter().collect()
        }),
        1 => prop::sample::select(vec!["", "null", "{}", " {} ", "[]", "\"x\"", "{", "}"])
            .prop_map(str::to_owned),
        1 => "\\PC{0,60}",
    ]
}

/// Asserts that a refusal is a 400 with one of `codes`.
fn assert_refusal(
    error: &QueryError,
    codes: &[ErrorCode],
    what: &str,
) -> Result<(), TestCaseError> {
    let error = ApiError::from(error.clone());
    prop_assert!(
        codes.contains(&error.code),
        "{what}: unexpected code {} ({})",
        error.code.as_str(),
        error.message
    );
    prop_assert_eq!(error.status().as_u16(), 400, "{}: {}", what, error.message);
    Ok(())
}

/// Parses, binds and runs a query and a sort the way `GET /records` does, checking every
/// refusal's code and an accepted query's page against the reference meaning of its filters.
fn run(state: &mut GridState, query: &str, sort: &str) -> Result<(), TestCaseError> {
    let started = Instant::now();
    let view = state.schema.view(VIEW).expect("the view").clone();
    let raw_filters = match parse_query(query) {
        Ok(raw) => raw,
        Err(e) => {
            use ErrorCode::{InvalidFilterField, InvalidFilterOperator, MissingFilterValue};
            let codes = [InvalidFilterField, InvalidFilterOperator, MissingFilterValue];
            return assert_refusal(&e, &codes, "parse_query");
        }
    };
    let raw_sort = match parse_sort(sort) {
        Ok(raw) => raw,
        Err(e) => {
            let codes = [ErrorCode::InvalidSortField, ErrorCode::InvalidSortDirection];
            return assert_refusal(&e, &codes, "parse_sort");
        }
    };
    let filters = match bind_filters(state, &view, &raw_filters) {
        Ok(filters) => filters,
        Err(e) => {
            use ErrorCode::{FilterColumnNotFound, InvalidFilterField, InvalidFilterOperator};
            let codes = [
                FilterColumnNotFound,
                InvalidFilterField,
                InvalidFilterOperator,
                ErrorCode::InvalidFilterValue,
            ];
            return assert_refusal(&e, &codes, "bind_filters");
        }
    };
    for filter in &filters {
        if let Pred::Regex(pattern) = &filter.pred {
            prop_assert!(pattern.regex.as_str().len() <= 1000, "an accepted regex is short");
        }
    }
    let keys = match bind_sort(state, &view, &raw_sort) {
        Ok(keys) => keys,
        Err(e) => {
            let codes = [ErrorCode::SortColumnNotFound, ErrorCode::InvalidSortField];
            return assert_refusal(&e, &codes, "bind_sort");
        }
    };
    let page = QueryEngine::default().run(&mut state.store, &filters, &keys, 0, 1000);
    let store = &state.store;
    let expected = store.live_rows().filter(|&row| filters.iter().all(|f| f.test(store, row)));
    prop_assert_eq!(page.total, expected.count(), "total of {} sorted {}", query, sort);
    prop_assert_eq!(page.rows.len(), page.total.min(1000));
    prop_assert!(page.rows.iter().all(|&row| filters.iter().all(|f| f.test(store, row))));
    prop_assert!(started.elapsed() < QUERY_TIME, "{query} took {:?}", started.elapsed());
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    /// Any `query`/`sort` text: a documented 400 or a page that agrees with `Filter::test`.
    #[test]
    fn any_query_and_sort_is_refused_cleanly_or_runs(query in query_text(), sort in sort_text()) {
        let mut state = world(24);
        run(&mut state, &query, &sort)?;
    }

    /// Hostile patterns: refused with `invalidFilterValue`, or compiled within the limits and
    /// run over a 256 KiB cell in bounded time.
    #[test]
    fn hostile_regexes_are_refused_or_bounded(
        pattern in hostile_regex(),
        field in prop::sample::select(vec!["t", "l", "f", "m", "_recordId", "_path", "n"]),
        negate in any::<bool>(),
    ) {
        let mut state = world(8);
        let op = if negate { "notRegexp" } else { "regexp" };
        let query = json!({ field: { op: pattern } }).to_string();
        let started = Instant::now();
        run(&mut state, &query, "")?;
        prop_assert!(started.elapsed() < QUERY_TIME);
    }
}

#[test]
fn the_world_holds_every_kind_of_value() {
    // The fixture the properties run on is what they claim: a query on each kind finds rows.
    let mut state = world(24);
    let view = state.schema.view(VIEW).expect("the view").clone();
    for query in [
        r#"{"n": {">": 0}}"#,
        r#"{"d": {"<": "2000-01-01"}}"#,
        r#"{"b": {"=": true}}"#,
        r#"{"m": {"=": "apple"}}"#,
        r#"{"t": {"regexp": "^(ab){1000}"}}"#,
        r#"{"f": {"contains": "apple"}}"#,
        r#"{"l._dependencyStatus": {"in": ["unset", "upToDate", "outOfDate"]}}"#,
    ] {
        let raw = parse_query(query).expect("parses");
        let filters = bind_filters(&state, &view, &raw).expect("binds");
        let page = QueryEngine::default().run(&mut state.store, &filters, &[], 0, 100);
        assert!(page.total > 0, "{query} finds rows");
    }
    let e = parse_query(r#"{"t": {"regexp": "(a{2000}){2000}"}}"#)
        .and_then(|raw| bind_filters(&state, &view, &raw))
        .expect_err("too large");
    assert_eq!(ApiError::from(e).code, ErrorCode::InvalidFilterValue);
}

#[test]
fn the_openapi_description_lets_a_fuzzer_reach_the_handlers() {
    // api-fuzz.sh generates requests from it: the key is declared for every route, a cell's
    // value may be any JSON, and the bodies of merges and history exports are described.
    let api: Value =
        serde_json::from_str(&crate::openapi().to_json().expect("renders")).expect("JSON");
    assert_eq!(api["security"], json!([{"ApiKey": []}]));
    let value = &api["components"]["schemas"]["CellWire"]["properties"]["value"];
    assert!(value.is_object(), "a cell's schema names its value");
    assert_ne!(value["type"], json!(["object", "null"]), "{value}");
    for (path, param) in [
        ("/v1/branches/{id}/merge", "destinationBranchId"),
        ("/v1/views/{viewId}/merge", "destinationViewId"),
    ] {
        let op = &api["paths"][path]["post"];
        let params = op["parameters"].as_array().expect("parameters");
        assert!(params.iter().any(|p| p["name"] == param), "{path}");
        assert!(op["requestBody"]["content"]["application/json"].is_object(), "{path}");
    }
    let export = &api["paths"]["/v1/views/{viewId}/record-histories/export"]["post"];
    let schema = &export["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(schema["$ref"], json!("#/components/schemas/ExportRequest"));
}
