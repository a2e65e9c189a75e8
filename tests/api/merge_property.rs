//! A property of branch merge (decisions.md section 8): after random edits on both sides of a
//! branch, merging it into master with a random set of options leaves master exactly as a plain
//! three-way merge over simple models says. One server for the whole property, a fresh grid per
//! case.
//!
//! The generator keeps every case unambiguous: each cell is written at most once per side, with a
//! value no other write uses ("s-..." in the branch, "d-..." in master), added records get ids of
//! their own side, and a record deleted on one side is not edited on the other.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::{json, Value};

use crate::branches::{branch_ids, create_branch, delete_records, merge, model, Model};
use crate::helpers::{spawn_app, TestApp};

const COLUMNS: [&str; 3] = ["c0", "c1", "c2"];
const RECORDS: usize = 6;

/// What happens to one base record: which sides delete it, and which of its cells each side
/// writes (only where no side deletes it).
#[derive(Debug, Clone)]
struct Fate {
    deleted_in_source: bool,
    deleted_in_dest: bool,
    source_writes: [bool; 3],
    dest_writes: [bool; 3],
}

#[derive(Debug, Clone)]
struct Case {
    fates: Vec<Fate>,
    /// Records added on each side: which cells each sets.
    source_adds: Vec<[bool; 3]>,
    dest_adds: Vec<[bool; 3]>,
    /// add, update, delete, override.
    options: [bool; 4],
}

fn cells() -> impl Strategy<Value = [bool; 3]> {
    proptest::array::uniform3(proptest::bool::weighted(0.4))
}

fn fate() -> impl Strategy<Value = Fate> {
    let deleted = prop_oneof![5 => Just((false, false)), 1 => Just((true, false)),
                              1 => Just((false, true)), 1 => Just((true, true))];
    (deleted, cells(), cells()).prop_map(|((in_source, in_dest), source, dest)| {
        let untouched = in_source || in_dest;
        Fate {
            deleted_in_source: in_source,
            deleted_in_dest: in_dest,
            source_writes: if untouched { [false; 3] } else { source },
            dest_writes: if untouched { [false; 3] } else { dest },
        }
    })
}

fn case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(fate(), RECORDS),
        proptest::collection::vec(cells(), 0..3),
        proptest::collection::vec(cells(), 0..3),
        proptest::array::uniform4(any::<bool>())
            .prop_filter("at least one option", |o| o.iter().any(|&set| set)),
    )
        .prop_map(|(fates, source_adds, dest_adds, options)| Case {
            fates,
            source_adds,
            dest_adds,
            options,
        })
}

fn record_id(i: usize) -> String {
    format!("r{i}")
}

/// The base records: r<i> with cells "b-<i>-<j>".
fn base() -> Model {
    (0..RECORDS)
        .map(|i| {
            let cells = COLUMNS
                .iter()
                .enumerate()
                .map(|(j, c)| ((*c).to_owned(), format!("b-{i}-{j}")))
                .collect();
            (record_id(i), cells)
        })
        .collect()
}

/// One side's edits: (cell writes as (record, column, value), added records, deleted ids).
struct Edits {
    writes: Vec<(String, String, String)>,
    adds: Model,
    deletes: Vec<String>,
}

/// The edits of one side; `prefix` is "s" for the source (the branch), "d" for master.
fn edits(case: &Case, prefix: &str) -> Edits {
    let source = prefix == "s";
    let mut writes = Vec::new();
    let mut deletes = Vec::new();
    for (i, fate) in case.fates.iter().enumerate() {
        let (deleted, written) = if source {
            (fate.deleted_in_source, fate.source_writes)
        } else {
            (fate.deleted_in_dest, fate.dest_writes)
        };
        if deleted {
            deletes.push(record_id(i));
        }
        for (j, column) in COLUMNS.iter().enumerate() {
            if written[j] {
                writes.push((record_id(i), (*column).to_owned(), format!("{prefix}-{i}-{j}")));
            }
        }
    }
    let added = if source { &case.source_adds } else { &case.dest_adds };
    let adds = added
        .iter()
        .enumerate()
        .map(|(k, set)| {
            let cells = COLUMNS
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    let value = if set[j] { format!("{prefix}-add{k}-{j}") } else { String::new() };
                    ((*c).to_owned(), value)
                })
                .collect();
            (format!("{prefix}a{k}"), cells)
        })
        .collect();
    Edits { writes, adds, deletes }
}

/// The model after applying `edits` to `base`.
fn apply(base: &Model, edits: &Edits) -> Model {
    let mut model = base.clone();
    for (id, column, value) in &edits.writes {
        model.get_mut(id).expect("a base record").insert(column.clone(), value.clone());
    }
    for id in &edits.deletes {
        model.remove(id);
    }
    model.extend(edits.adds.clone());
    model
}

/// The reference three-way merge of `source` into `dest` from their common point `base`.
fn reference_merge(base: &Model, source: &Model, dest: &Model, options: [bool; 4]) -> Model {
    let [add, update, delete, overrides] = options;
    let mut merged = dest.clone();
    for (id, source_cells) in source {
        match base.get(id) {
            Some(base_cells) => {
                // Deleted in the destination: stays deleted, whatever the options.
                let Some(dest_cells) = merged.get_mut(id) else { continue };
                if !update {
                    continue;
                }
                for (column, value) in source_cells {
                    let before = &base_cells[column];
                    let changed_in_source = value != before;
                    let changed_in_dest = &dest_cells[column] != before;
                    if changed_in_source && (!changed_in_dest || overrides) {
                        dest_cells.insert(column.clone(), value.clone());
                    }
                }
            }
            None => {
                if add {
                    merged.insert(id.clone(), source_cells.clone());
                }
            }
        }
    }
    if delete {
        for id in base.keys() {
            if !source.contains_key(id) {
                merged.remove(id);
            }
        }
    }
    merged
}

fn cells_json(cells: &BTreeMap<String, String>) -> Vec<Value> {
    cells
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(c, v)| json!({"columnId": c, "value": v}))
        .collect()
}

/// Applies one side's edits through `view`: one bulk update, one delete, one add.
fn write(app: &TestApp, view: &str, edits: &Edits) {
    if !edits.writes.is_empty() {
        // One entry per record: a bulk update refuses a record id given twice.
        let mut by_record: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
        for (id, c, v) in &edits.writes {
            by_record.entry(id).or_default().push(json!({"columnId": c, "value": v}));
        }
        let records: Vec<Value> =
            by_record.into_iter().map(|(id, cells)| json!({"id": id, "cells": cells})).collect();
        app.patch(&format!("/v1/views/{view}/records"), &Value::Array(records)).assert_status(200);
    }
    if !edits.deletes.is_empty() {
        let ids: Vec<&str> = edits.deletes.iter().map(String::as_str).collect();
        delete_records(app, view, &ids);
    }
    if !edits.adds.is_empty() {
        let records: Vec<Value> = edits
            .adds
            .iter()
            .map(|(id, cells)| json!({"id": id, "cells": cells_json(cells)}))
            .collect();
        app.add_records(view, Value::Array(records));
    }
}

fn options_query(options: [bool; 4]) -> String {
    ["add", "update", "delete", "override"]
        .iter()
        .zip(options)
        .filter(|(_, set)| *set)
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs one case against a fresh grid of `app`.
fn run_case(app: &TestApp, case: &Case) -> Result<(), TestCaseError> {
    let (grid, master) = app.create_grid("Property");
    for column in COLUMNS {
        app.create_column(&master, json!({"id": column, "name": column, "type": "singleLine"}));
    }
    let base = base();
    let records: Vec<Value> =
        base.iter().map(|(id, cells)| json!({"id": id, "cells": cells_json(cells)})).collect();
    app.add_records(&master, Value::Array(records));
    let (branch, branch_view) = branch_ids(&create_branch(app, &grid, "prop"));

    let source_edits = edits(case, "s");
    let dest_edits = edits(case, "d");
    write(app, &branch_view, &source_edits);
    write(app, &master, &dest_edits);
    let source = apply(&base, &source_edits);
    let dest = apply(&base, &dest_edits);
    prop_assert_eq!(&model(app, &branch_view), &source, "the branch before the merge");
    prop_assert_eq!(&model(app, &master), &dest, "master before the merge");

    let options = options_query(case.options);
    merge(app, &branch, &grid, &options);
    let expected = reference_merge(&base, &source, &dest, case.options);
    prop_assert_eq!(&model(app, &master), &expected, "master after merging with {}", options);
    prop_assert_eq!(&model(app, &branch_view), &source, "the branch after the merge");
    Ok(())
}

#[test]
fn branch_merge_matches_a_reference_three_way_merge() {
    let app = spawn_app();
    let config = ProptestConfig {
        cases: 12,
        max_shrink_iters: 32,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    if let Err(err) = runner.run(&case(), |case| run_case(&app, &case)) {
        panic!("{err}");
    }
}
