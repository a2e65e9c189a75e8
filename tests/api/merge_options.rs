//! The hosted service's merge request fields beyond `mergeRecordOptions` (issue 19): `query`
//! (an array of `FilterField`: only matching source records are merged), `mergeRecordConflicts`
//! (per-cell choices of which side wins), `useLastMergeResolve` (the last merge's choices between
//! the same branches again), and the refusals of what gridd does not do (operators and options
//! it has no equivalent for): 400 at once, naming the field, and nothing merged.

use serde_json::{json, Value};

use crate::branches::{abc_grid, branch_ids, create_branch, model, set, wait_task, Model};
use crate::helpers::{spawn_app, TestApp};

/// A grid with records r1..r3 and a branch; returns (grid, master view, branch, branch view).
fn branched(app: &TestApp) -> (String, String, String, String) {
    let (grid, view) = abc_grid(app, &["r1", "r2", "r3"]);
    let (branch, branch_view) = branch_ids(&create_branch(app, &grid, "release"));
    (grid, view, branch, branch_view)
}

/// Posts a branch merge of `branch` into `grid` with this JSON body.
fn merge_with(app: &TestApp, branch: &str, grid: &str, body: Value) -> crate::helpers::Resp {
    app.post(&format!("/v1/branches/{branch}/merge?destinationBranchId={grid}"), &body)
}

fn value(model: &Model, id: &str, column: &str) -> String {
    model[id][column].clone()
}

#[test]
fn a_query_merges_only_the_matching_source_records() {
    let app = spawn_app();
    let (grid, view, branch, branch_view) = branched(&app);
    set(&app, &branch_view, "r1", "a", "ready: r1");
    set(&app, &branch_view, "r2", "a", "draft: r2");
    let body = json!({
        "mergeRecordOptions": ["update"],
        "query": [{"columnId": "a", "operator": "startsWith", "values": ["ready"]}]
    });
    wait_task(&app, &merge_with(&app, &branch, &grid, body));
    let master = model(&app, &view);
    assert_eq!(value(&master, "r1", "a"), "ready: r1");
    assert_eq!(value(&master, "r2", "a"), "r2a", "r2 does not match the query");
}

#[test]
fn conflict_choices_decide_cell_by_cell() {
    let app = spawn_app();
    let (grid, view, branch, branch_view) = branched(&app);
    // Both sides change r1.a and r2.a: conflicts.
    for (id, master, source) in [("r1", "m1", "s1"), ("r2", "m2", "s2")] {
        set(&app, &view, id, "a", master);
        set(&app, &branch_view, id, "a", source);
    }
    let body = json!({
        "mergeRecordOptions": ["update", "override"],
        "mergeRecordConflicts": [
            {"recordId": "r1", "cells": [{"columnId": "a", "option": "child"}]},
            {"recordId": "r2", "cells": [{"columnId": "a", "option": "parent"}]}
        ]
    });
    wait_task(&app, &merge_with(&app, &branch, &grid, body));
    let master = model(&app, &view);
    assert_eq!(value(&master, "r1", "a"), "s1", "child: the source's cell");
    assert_eq!(value(&master, "r2", "a"), "m2", "parent: the destination's, despite override");

    // Without override a conflict keeps the destination's cell unless a choice takes the source.
    let (grid, view, branch, branch_view) = branched(&app);
    set(&app, &view, "r1", "a", "m1");
    set(&app, &branch_view, "r1", "a", "s1");
    let body = json!({
        "mergeRecordOptions": ["update"],
        "mergeRecordConflicts": [{"recordId": "r1", "cells": [{"columnId": "a", "option": "source"}]}]
    });
    wait_task(&app, &merge_with(&app, &branch, &grid, body));
    assert_eq!(value(&model(&app, &view), "r1", "a"), "s1");
}

#[test]
fn use_last_merge_resolve_takes_the_last_merges_choices_again() {
    let app = spawn_app();
    let (grid, view, branch, branch_view) = branched(&app);
    // The first merge chooses the source's r1.a.
    conflict_on(&app, &view, &branch_view, "m1", "s1");
    let body = json!({
        "mergeRecordOptions": ["update"],
        "mergeRecordConflicts": [{"recordId": "r1", "cells": [{"columnId": "a", "option": "child"}]}]
    });
    wait_task(&app, &merge_with(&app, &branch, &grid, body));
    assert_eq!(value(&model(&app, &view), "r1", "a"), "s1");

    // A new conflict on the same cell: without the flag the destination's cell stays ...
    conflict_on(&app, &view, &branch_view, "m2", "s2");
    let plain = json!({"mergeRecordOptions": ["update"]});
    wait_task(&app, &merge_with(&app, &branch, &grid, plain));
    assert_eq!(value(&model(&app, &view), "r1", "a"), "m2");
    // ... and that merge, made without choices, is now the last one: the flag finds none.
    conflict_on(&app, &view, &branch_view, "m3", "s3");
    let last = json!({"mergeRecordOptions": ["update"], "useLastMergeResolve": true});
    wait_task(&app, &merge_with(&app, &branch, &grid, last.clone()));
    assert_eq!(value(&model(&app, &view), "r1", "a"), "m3");

    // Choose the source again, then let the flag repeat it, across a restart.
    conflict_on(&app, &view, &branch_view, "m4", "s4");
    let body = json!({
        "mergeRecordOptions": ["update"],
        "mergeRecordConflicts": [{"recordId": "r1", "cells": [{"columnId": "a", "option": "source"}]}]
    });
    wait_task(&app, &merge_with(&app, &branch, &grid, body));
    assert_eq!(value(&model(&app, &view), "r1", "a"), "s4");
    let app = app.restart();
    conflict_on(&app, &view, &branch_view, "m5", "s5");
    wait_task(&app, &merge_with(&app, &branch, &grid, last.clone()));
    assert_eq!(value(&model(&app, &view), "r1", "a"), "s5", "the kept choice took the source's");

    // A choice of the request replaces the kept one for its cell.
    conflict_on(&app, &view, &branch_view, "m6", "s6");
    let body = json!({
        "mergeRecordOptions": ["update"],
        "useLastMergeResolve": true,
        "mergeRecordConflicts": [{"recordId": "r1", "cells": [{"columnId": "a", "option": "parent"}]}]
    });
    wait_task(&app, &merge_with(&app, &branch, &grid, body));
    assert_eq!(value(&model(&app, &view), "r1", "a"), "m6");
}

/// Changes r1.a on both sides: a conflict.
fn conflict_on(app: &TestApp, view: &str, branch_view: &str, master: &str, source: &str) {
    set(app, view, "r1", "a", master);
    set(app, branch_view, "r1", "a", source);
}

#[test]
fn unsupported_merge_fields_are_refused_at_once_and_merge_nothing() {
    let app = spawn_app();
    let (grid, view, branch, branch_view) = branched(&app);
    set(&app, &branch_view, "r1", "a", "changed");
    let before = model(&app, &view);
    let cases = [
        (
            json!({"mergeRecordOptions": ["update"], "mergeRecordConflicts": [{"recordId": "r1", "cells": [{"columnId": "a", "option": "sideways"}]}]}),
            "sideways",
            "badRequest",
        ),
        (
            json!({"mergeRecordOptions": ["update"], "query": [{"columnId": "a", "operator": "hasTag", "values": ["x"]}]}),
            "hasTag",
            "invalidFilterOperator",
        ),
        (
            json!({"mergeRecordOptions": ["update"], "query": [{"columnId": "a", "operator": "=", "values": ["x"], "subField": "_tm"}]}),
            "_tm",
            "badRequest",
        ),
        (
            json!({"mergeRecordOptions": ["update"], "query": [{"columnId": "a", "operator": "=", "values": ["x"], "caseSensitive": true}]}),
            "caseSensitive",
            "badRequest",
        ),
    ];
    for (body, needle, code) in cases {
        let res = merge_with(&app, &branch, &grid, body);
        res.assert_error(400, code);
        assert!(res.text.contains(needle), "{needle}: {}", res.text);
    }
    let unknown = json!({"mergeRecordOptions": ["update"], "query": [{"columnId": "nosuch", "operator": "=", "values": ["x"]}]});
    let res = merge_with(&app, &branch, &grid, unknown);
    assert_eq!(res.status, 400, "{}", res.text);
    assert_eq!(model(&app, &view), before, "nothing was merged");
    // A request the server accepts merges as before.
    let accepted = json!({"mergeRecordOptions": ["update"], "useLastMergeResolve": false, "checkMismatchedColumnType": true});
    wait_task(&app, &merge_with(&app, &branch, &grid, accepted));
    assert_eq!(value(&model(&app, &view), "r1", "a"), "changed");
}
