//! Property tests: for random grids, writes, filters and sorts, the engine's pages equal a plain
//! scan-filter-sort written here from decisions.md section 6, including after writes that the
//! indexes must follow (adds, updates, renames, deletes, compaction).

use std::cmp::Ordering;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::{bind_filters, bind_sort, Direction, Op, QueryEngine, RawFilter, RawSort};
use crate::grid::codec::parse_datetime;
use crate::grid::ops::{CellWrite, GridOp, GridState, RecordWrite};
use crate::grid::schema::{ColumnDef, ColumnType, LocalizationType, SelectionOption};
use crate::grid::store::RecordIdentity;
use crate::grid::value::CellValue;

const VIEW: &str = "view";
const TEXTS: [&str; 14] = [
    "",
    "apple",
    "Apple pie",
    "APPLE",
    "Ärger über",
    "ΟΔΟΣ",
    "straße",
    "x1",
    "pie",
    "zeta 9",
    "two\nlines a",
    "Kelvin \u{212A}K",
    "İstanbul pie",
    "НАСТРОЙКИ сети",
];
const OPTIONS: [&str; 4] = ["Draft", "Review", "Done", "draft"];
const NUMBERS: [f64; 6] = [-2.5, 0.0, 1.0, 1.0, 7.25, 1e6];
const DATES: [&str; 5] = ["2025-01-01", "2025-06-30", "2026-01-31", "2026-01-31", "2027-12-24"];
const USERS: [&str; 3] = ["alice", "Bob", "carol"];
const PATHS: [&str; 3] = ["", "ui/menu", "UI/hud"];
const PATTERNS: [&str; 14] = [
    "^a",
    "(?i)APPLE",
    "e$",
    "[0-9]",
    "ß|Σ",
    r"\Aa",
    r"e\z",
    "(?s)o.*a",
    r"\ba\b|^l",
    // Matches the empty text: absent and empty values match.
    "^$|z*",
    // Runs on past one value into the next in an arena.
    "p.*e",
    // Matches a value's separator in the arena too, also the one of a value before `""`.
    r"\s",
    "^$",
    // Unicode word boundaries: the arena search gives up at a candidate next to a non-ASCII
    // byte (`ber` in `über`).
    r"\bber\b|\bpie\b",
];

fn column(id: &str, column_type: ColumnType) -> ColumnDef {
    ColumnDef {
        id: id.to_owned(),
        name: id.to_owned(),
        description: None,
        column_type,
        language_code: (column_type == ColumnType::Language).then(|| "enUS".to_owned()),
        localization_type: (column_type == ColumnType::Language)
            .then_some(LocalizationType::SourceLanguage),
        number_format: None,
        selection: matches!(
            column_type,
            ColumnType::SingleSelection | ColumnType::MultipleSelections
        )
        .then(|| {
            OPTIONS
                .iter()
                .map(|o| SelectionOption { value: (*o).to_owned(), color: None })
                .collect()
        }),
        reference: None,
        formula: None,
        date_time_format: None,
    }
}

fn columns() -> Vec<ColumnDef> {
    vec![
        column("t", ColumnType::SingleLine),
        column("l", ColumnType::Language),
        column("s", ColumnType::SingleSelection),
        column("n", ColumnType::Number),
        column("d", ColumnType::Datetime),
        column("b", ColumnType::Boolean),
        column("m", ColumnType::MultipleSelections),
    ]
}

/// A cell value drawn from small pools, so that equal values and ties are common.
fn value_for(column: &str, pick: usize) -> CellValue {
    // Not `pick % 7 == 0`: `TEXTS[0]` (`""`, a value that is only a separator in the arena)
    // must stay reachable (pick 14).
    let empty = pick % 7 == 3;
    if empty {
        return CellValue::Empty;
    }
    match column {
        "t" | "l" => CellValue::Text(TEXTS[pick % TEXTS.len()].to_owned()),
        "s" => CellValue::Text(OPTIONS[pick % OPTIONS.len()].to_owned()),
        "n" => CellValue::Number(NUMBERS[pick % NUMBERS.len()]),
        "d" => CellValue::Datetime(parse_datetime(DATES[pick % DATES.len()]).expect("a date")),
        "b" => CellValue::Boolean(pick.is_multiple_of(2)),
        _ => CellValue::List(
            (0..pick % 3).map(|i| OPTIONS[(pick + i) % OPTIONS.len()].to_owned()).collect(),
        ),
    }
}

#[derive(Debug, Clone)]
enum Step {
    Add(Vec<Vec<usize>>),
    Update {
        record: usize,
        column: usize,
        pick: usize,
    },
    Rename {
        record: usize,
        pick: usize,
    },
    Delete(usize),
    Compact,
    Query {
        filters: Vec<(usize, usize, usize)>,
        sort: Vec<(usize, bool)>,
        offset: usize,
        limit: usize,
    },
}

const FIELDS: [&str; 11] = [
    "t",
    "l",
    "s",
    "n",
    "d",
    "b",
    "m",
    "_recordId",
    "_path",
    "_lastModifiedTime",
    "_lastModifiedBy",
];

/// The operators valid on each field, per the operator table.
fn ops_of(field: &str) -> Vec<Op> {
    let common = [Op::Eq, Op::Ne, Op::In, Op::NotIn, Op::IsEmpty, Op::IsNotEmpty, Op::IsNull];
    let ranges = [Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Between, Op::NotBetween];
    let matching = [
        Op::Contains,
        Op::NotContains,
        Op::StartsWith,
        Op::NotStartsWith,
        Op::EndsWith,
        Op::NotEndsWith,
    ];
    let mut ops = common.to_vec();
    match field {
        "n" | "d" | "_lastModifiedTime" => ops.extend(ranges),
        "t" | "l" | "_recordId" | "_lastModifiedBy" => {
            ops.extend(matching);
            ops.extend([Op::Regexp, Op::NotRegexp]);
        }
        "_path" => ops.extend(matching),
        _ => {}
    }
    ops
}

/// A JSON operand for a field and operator.
fn operand(field: &str, op: Op, pick: usize) -> Value {
    let scalar = |pick: usize| -> Value {
        match field {
            "n" => json!(NUMBERS[pick % NUMBERS.len()]),
            "d" => json!(DATES[pick % DATES.len()]),
            "_lastModifiedTime" => json!(1_000 + (pick % 40) as i64 * 1_000),
            "b" => json!(pick.is_multiple_of(2)),
            "s" | "m" => json!(OPTIONS[pick % OPTIONS.len()]),
            "_recordId" => json!(format!("r{}", pick % 30)),
            "_path" => json!(PATHS[pick % PATHS.len()]),
            "_lastModifiedBy" => json!(USERS[pick % USERS.len()]),
            _ => json!(TEXTS[pick % TEXTS.len()]),
        }
    };
    match op {
        Op::In | Op::NotIn => json!([scalar(pick), scalar(pick / 3 + 1)]),
        Op::Between | Op::NotBetween => json!([scalar(pick), scalar(pick / 2 + 2)]),
        Op::Regexp | Op::NotRegexp => json!(PATTERNS[pick % PATTERNS.len()]),
        Op::Contains | Op::StartsWith | Op::EndsWith | Op::NotContains => {
            let s = scalar(pick);
            let s = s.as_str().unwrap_or_default();
            // Take a part of the value, in another case, to exercise matching.
            let part: String = s.chars().skip(pick % 2).take(3).collect();
            json!(if pick.is_multiple_of(3) { part.to_uppercase() } else { part })
        }
        _ => scalar(pick),
    }
}

fn step() -> impl Strategy<Value = Step> {
    let record = prop::collection::vec(0usize..1000, 7);
    prop_oneof![
        3 => prop::collection::vec(record, 1..6).prop_map(Step::Add),
        3 => (0usize..100, 0usize..7, 0usize..1000)
            .prop_map(|(record, column, pick)| Step::Update { record, column, pick }),
        1 => (0usize..100, 0usize..1000).prop_map(|(record, pick)| Step::Rename { record, pick }),
        1 => (0usize..100).prop_map(Step::Delete),
        1 => Just(Step::Compact),
        6 => (
            prop::collection::vec((0usize..11, 0usize..100, 0usize..1000), 0..3),
            prop::collection::vec((0usize..11, any::<bool>()), 0..3),
            0usize..12,
            1usize..8,
        )
            .prop_map(|(filters, sort, offset, limit)| Step::Query { filters, sort, offset, limit }),
    ]
}

/// A value as the reference sees it.
#[derive(Debug, Clone, PartialEq)]
enum Plain {
    Empty,
    Text(String),
    Number(f64),
    Time(i64),
    Bool(bool),
    List(Vec<String>),
}

fn plain(value: &CellValue) -> Plain {
    match value {
        CellValue::Empty => Plain::Empty,
        CellValue::Text(s) if s.is_empty() => Plain::Empty,
        CellValue::Text(s) => Plain::Text(s.clone()),
        CellValue::Number(n) => Plain::Number(*n),
        CellValue::Datetime(t) => Plain::Time(*t),
        CellValue::Boolean(b) => Plain::Bool(*b),
        CellValue::List(items) if items.is_empty() => Plain::Empty,
        CellValue::List(items) => Plain::List(items.clone()),
    }
}

/// Every field of every live record, in insertion order.
fn rows_of(state: &GridState) -> Vec<(String, Vec<Plain>)> {
    let defs = state.schema.columns.clone();
    let refs: Vec<&ColumnDef> = defs.iter().collect();
    state
        .read_rows(&refs, state.store.live_rows())
        .into_iter()
        .map(|r| {
            let mut fields: Vec<Plain> = r.cells.iter().map(|c| plain(&c.value)).collect();
            fields.push(Plain::Text(r.id.clone()));
            fields.push(if r.path.is_empty() { Plain::Empty } else { Plain::Text(r.path.clone()) });
            fields.push(Plain::Time(r.time_ms));
            fields.push(if r.user.is_empty() { Plain::Empty } else { Plain::Text(r.user.clone()) });
            (r.id, fields)
        })
        .collect()
}

/// The reference meaning of one condition.
fn plain_match(field: &str, op: Op, operand: &Value, value: &Plain) -> bool {
    let text_of = |v: &Plain| -> Vec<String> {
        match v {
            Plain::Empty => vec![String::new()],
            Plain::Text(s) => vec![s.clone()],
            Plain::List(items) => items.clone(),
            _ => vec![],
        }
    };
    let number_of = |o: &Value| -> Plain {
        match field {
            "n" => Plain::Number(o.as_f64().expect("a number")),
            "d" => Plain::Time(parse_datetime(o.as_str().expect("a date")).expect("a date")),
            "_lastModifiedTime" => Plain::Time(o.as_i64().expect("ms")),
            "b" => Plain::Bool(o.as_bool().expect("a bool")),
            _ => Plain::Text(o.as_str().expect("a string").to_owned()),
        }
    };
    let equal = |o: &Value| -> bool {
        match (value, number_of(o)) {
            (Plain::List(items), Plain::Text(s)) => items.contains(&s),
            (Plain::Empty, Plain::Text(s)) => s.is_empty(),
            (v, o) => *v == o,
        }
    };
    let cmp = |o: &Value| -> Option<Ordering> {
        match (value, number_of(o)) {
            (Plain::Number(a), Plain::Number(b)) => a.partial_cmp(&b),
            (Plain::Time(a), Plain::Time(b)) => Some(a.cmp(&b)),
            _ => None,
        }
    };
    let fold = |s: &str| s.to_lowercase().replace('ς', "σ");
    let lower_operand = || fold(operand.as_str().expect("a string"));
    let any_text = |test: &dyn Fn(&str) -> bool| text_of(value).iter().any(|s| test(s));
    let empty = *value == Plain::Empty;
    match op {
        Op::IsEmpty | Op::IsNull => empty,
        Op::IsNotEmpty | Op::IsNotNull => !empty,
        Op::Eq => equal(operand),
        Op::Ne => !equal(operand),
        Op::In => operand.as_array().expect("array").iter().any(equal),
        Op::NotIn => !operand.as_array().expect("array").iter().any(equal),
        Op::Lt => cmp(operand) == Some(Ordering::Less),
        Op::Le => matches!(cmp(operand), Some(Ordering::Less | Ordering::Equal)),
        Op::Gt => cmp(operand) == Some(Ordering::Greater),
        Op::Ge => matches!(cmp(operand), Some(Ordering::Greater | Ordering::Equal)),
        Op::Between | Op::NotBetween => {
            let bounds = operand.as_array().expect("array");
            let inside = matches!(cmp(&bounds[0]), Some(Ordering::Greater | Ordering::Equal))
                && matches!(cmp(&bounds[1]), Some(Ordering::Less | Ordering::Equal));
            inside == (op == Op::Between)
        }
        Op::Contains => any_text(&|s| fold(s).contains(&lower_operand())),
        Op::NotContains => !any_text(&|s| fold(s).contains(&lower_operand())),
        Op::StartsWith => any_text(&|s| fold(s).starts_with(&lower_operand())),
        Op::NotStartsWith => !any_text(&|s| fold(s).starts_with(&lower_operand())),
        Op::EndsWith => any_text(&|s| fold(s).ends_with(&lower_operand())),
        Op::NotEndsWith => !any_text(&|s| fold(s).ends_with(&lower_operand())),
        Op::Regexp | Op::NotRegexp => {
            let re = regex::Regex::new(operand.as_str().expect("a pattern")).expect("valid");
            any_text(&|s| re.is_match(s)) == (op == Op::Regexp)
        }
    }
}

/// The reference order of one key: empty values last, then by value in the direction.
fn plain_cmp(a: &Plain, b: &Plain, descending: bool) -> Ordering {
    let by_value = |a: &Plain, b: &Plain| match (a, b) {
        (Plain::Text(a), Plain::Text(b)) => a.cmp(b),
        (Plain::Number(a), Plain::Number(b)) => a.total_cmp(b),
        (Plain::Time(a), Plain::Time(b)) => a.cmp(b),
        (Plain::Bool(a), Plain::Bool(b)) => a.cmp(b),
        (Plain::List(a), Plain::List(b)) => a.cmp(b),
        _ => Ordering::Equal,
    };
    match (a == &Plain::Empty, b == &Plain::Empty) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) if descending => by_value(b, a),
        (false, false) => by_value(a, b),
    }
}

struct World {
    state: GridState,
    engine: QueryEngine,
    /// A read view taken after an earlier query: a copy of the state and a snapshot of the
    /// engine, which the writes since must not have changed.
    view: Option<(GridState, QueryEngine)>,
    next_id: usize,
    clock: i64,
}

impl World {
    /// An empty grid of the test's columns.
    fn new() -> Self {
        World {
            state: GridState::new(VIEW, columns(), RecordIdentity::RecordId),
            engine: QueryEngine::default(),
            view: None,
            next_id: 0,
            clock: 0,
        }
    }

    fn live_ids(&self) -> Vec<String> {
        self.state.store.live_rows().map(|r| self.state.store.id(r).to_owned()).collect()
    }

    fn apply(&mut self, step: &Step) -> Result<(), TestCaseError> {
        self.clock += 1_000;
        let user = USERS[(self.clock / 1_000) as usize % USERS.len()].to_owned();
        let cols = ["t", "l", "s", "n", "d", "b", "m"];
        let ids = self.live_ids();
        match step {
            Step::Add(records) => {
                let records = records
                    .iter()
                    .map(|picks| {
                        self.next_id += 1;
                        RecordWrite {
                            id: format!("r{}", self.next_id),
                            path: PATHS[picks[0] % PATHS.len()].to_owned(),
                            new_id: None,
                            new_path: None,
                            cells: cols
                                .iter()
                                .zip(picks)
                                .map(|(c, &p)| CellWrite {
                                    column_id: (*c).into(),
                                    value: Some(value_for(c, p)),
                                    dependency_status: None,
                                    source_status: None,
                                })
                                .collect(),
                            mark_mt: false,
                        }
                    })
                    .collect();
                self.state.apply(&GridOp::AddRecords { time_ms: self.clock, user, records });
            }
            Step::Update { record, column, pick } if !ids.is_empty() => {
                let id = ids[record % ids.len()].clone();
                let cell = CellWrite {
                    column_id: cols[*column].into(),
                    value: Some(value_for(cols[*column], *pick)),
                    dependency_status: None,
                    source_status: None,
                };
                let write = RecordWrite {
                    id,
                    path: String::new(),
                    new_id: None,
                    new_path: None,
                    cells: vec![cell],
                    mark_mt: false,
                };
                let records = vec![write];
                self.state.apply(&GridOp::UpdateRecords { time_ms: self.clock, user, records });
            }
            Step::Rename { record, pick } if !ids.is_empty() => {
                self.next_id += 1;
                let write = RecordWrite {
                    id: ids[record % ids.len()].clone(),
                    path: String::new(),
                    new_id: Some(format!("r{}", self.next_id)),
                    new_path: Some(PATHS[pick % PATHS.len()].to_owned()),
                    cells: Vec::new(),
                    mark_mt: false,
                };
                let records = vec![write];
                self.state.apply(&GridOp::UpdateRecords { time_ms: self.clock, user, records });
            }
            Step::Delete(record) if !ids.is_empty() => {
                let keys = vec![(String::new(), ids[record % ids.len()].clone())];
                self.state.apply(&GridOp::DeleteRecords { keys });
            }
            Step::Compact => self.state.store.compact(),
            Step::Query { filters, sort, offset, limit } => {
                self.check(filters, sort, *offset, *limit)?
            }
            _ => {}
        }
        Ok(())
    }

    fn check(
        &mut self,
        filters: &[(usize, usize, usize)],
        sort: &[(usize, bool)],
        offset: usize,
        limit: usize,
    ) -> Result<(), TestCaseError> {
        let mut raws: Vec<RawFilter> = Vec::new();
        for &(field, op, pick) in filters {
            let field = FIELDS[field];
            if raws.iter().any(|r| r.field == field) {
                continue;
            }
            let ops = ops_of(field);
            let op = ops[op % ops.len()];
            raws.push(RawFilter { field: field.to_owned(), op, value: operand(field, op, pick) });
        }
        let mut sorts: Vec<RawSort> = Vec::new();
        for &(field, descending) in sort {
            if !sorts.iter().any(|s| s.field == FIELDS[field]) {
                sorts.push(RawSort { field: FIELDS[field].to_owned(), descending });
            }
        }
        // The view taken after an earlier query answers for the state it copied, whatever was
        // written since (when its snapshot holds the indexes this query wants).
        if let Some((state, snapshot)) = &self.view {
            let view = state.schema.view(VIEW).expect("the view");
            let bound = bind_filters(state, view, &raws).expect("valid filters");
            let keys = bind_sort(state, view, &sorts).expect("valid sort");
            let mut from_view = snapshot.clone();
            let got = from_view.query(&state.store, &bound, &keys, offset, limit);
            if !from_view.missed() {
                let mut copy = state.clone();
                let want =
                    QueryEngine::default().run(&mut copy.store, &bound, &keys, offset, limit);
                prop_assert_eq!(got, want, "an old view for {:?} sorted {:?}", raws, sorts);
            }
        }
        let view = self.state.schema.view(VIEW).expect("the view").clone();
        let bound = bind_filters(&self.state, &view, &raws).expect("valid filters");
        let keys = bind_sort(&self.state, &view, &sorts).expect("valid sort");
        let page = self.engine.run(&mut self.state.store, &bound, &keys, offset, limit);
        // A view published now holds every index the query just used: it answers alike.
        let snapshot = self.engine.snapshot(&mut self.state.store);
        let mut from_view = snapshot.clone();
        let got = from_view.query(&self.state.store, &bound, &keys, offset, limit);
        prop_assert!(!from_view.missed(), "a fresh view lacked an index for {:?}", raws);
        prop_assert_eq!(&got, &page, "a fresh view for {:?} sorted {:?}", raws, sorts);
        self.view = Some((self.state.clone(), snapshot));
        let got: Vec<String> =
            page.rows.iter().map(|&r| self.state.store.id(r).to_owned()).collect();

        let position = |field: &str| FIELDS.iter().position(|f| *f == field).expect("a field");
        let mut expected: Vec<(String, Vec<Plain>)> = rows_of(&self.state)
            .into_iter()
            .filter(|(_, fields)| {
                raws.iter()
                    .all(|r| plain_match(&r.field, r.op, &r.value, &fields[position(&r.field)]))
            })
            .collect();
        let total = expected.len();
        expected.sort_by(|(_, a), (_, b)| {
            sorts
                .iter()
                .map(|s| plain_cmp(&a[position(&s.field)], &b[position(&s.field)], s.descending))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        });
        let full: Vec<String> = expected.into_iter().map(|(id, _)| id).collect();
        let want: Vec<String> = full.iter().skip(offset).take(limit).cloned().collect();
        // Cursor pages around a matching record equal the slices of the whole listing.
        if let Some(at) = (!full.is_empty()).then(|| offset % full.len()) {
            let row = self.state.store.find("", &full[at]).expect("a live record");
            for direction in [Direction::After, Direction::Before] {
                let page = self.engine.run_from(
                    &mut self.state.store,
                    &bound,
                    &keys,
                    row,
                    direction,
                    limit,
                );
                let got: Vec<String> =
                    page.rows.iter().map(|&r| self.state.store.id(r).to_owned()).collect();
                let slice = match direction {
                    Direction::After => &full[at + 1..(at + 1 + limit).min(full.len())],
                    Direction::Before => &full[at.saturating_sub(limit)..at],
                };
                prop_assert_eq!(
                    &got[..],
                    slice,
                    "{:?} {} for {:?} sorted {:?}",
                    direction,
                    &full[at],
                    raws,
                    sorts
                );
            }
        }
        prop_assert_eq!(page.total, total, "total for {:?} sorted {:?}", raws, sorts);
        prop_assert_eq!(
            got,
            want,
            "page for {:?} sorted {:?} at {}+{}",
            raws,
            sorts,
            offset,
            limit
        );
        Ok(())
    }
}

/// Adds records whose text column takes the picks `texts`, checks a regexp filter with
/// `pattern` (one of `PATTERNS`) against a plain scan, and answers how many rows it matched.
fn regexp_total(texts: &[usize], pattern: &str) -> usize {
    let mut world = World::new();
    let records = texts.iter().map(|&t| vec![t, 1, 1, 1, 1, 1, 1]).collect();
    world.apply(&Step::Add(records)).expect("added");
    let field = FIELDS.iter().position(|&f| f == "t").expect("the text field");
    let op = ops_of("t").iter().position(|&op| op == Op::Regexp).expect("regexp");
    let pick = PATTERNS.iter().position(|&p| p == pattern).expect("the pattern");
    world.check(&[(field, op, pick)], &[], 0, 100).expect("the rows of a plain scan");
    let view = world.state.schema.view(VIEW).expect("the view").clone();
    let raw = RawFilter { field: "t".into(), op: Op::Regexp, value: json!(pattern) };
    let bound = bind_filters(&world.state, &view, &[raw]).expect("a valid filter");
    world.engine.run(&mut world.state.store, &bound, &[], 0, 100).total
}

/// A search that gives up in an arena (a Unicode word boundary next to `ü`) leaves the rest of
/// the chunk to be tested value by value: every `pie` after it is found.
#[test]
fn a_regexp_whose_arena_search_gives_up_tests_the_rest_one_by_one() {
    // Text picks: "Ärger über", "pie", "İstanbul pie", "Apple pie", "pie".
    assert_eq!(regexp_total(&[4, 8, 12, 2, 8], r"\bber\b|\bpie\b"), 4);
}

/// A regexp that matches an arena's separators, among them the one of the value before `""`
/// (itself only a separator in the arena): the rows with a value after it are still found.
#[test]
fn a_regexp_matching_a_separator_before_an_empty_value_finds_the_rows_after_it() {
    // Text picks: "x1", "", "zeta 9", absent, "Apple pie".
    assert_eq!(regexp_total(&[7, 14, 9, 3, 2], r"\s"), 2, "zeta 9 and Apple pie");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn engine_equals_a_plain_scan_and_sort(steps in prop::collection::vec(step(), 1..60)) {
        let mut world = World::new();
        for step in &steps {
            world.apply(step)?;
        }
        // A last check of every field sorted both ways after all the writes.
        for field in 0..FIELDS.len() {
            world.check(&[], &[(field, false)], 0, 1000)?;
            world.check(&[], &[(field, true), ((field + 3) % FIELDS.len(), false)], 1, 1000)?;
        }
    }
}
