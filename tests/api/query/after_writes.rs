//! Results that stay right after writes and column changes (the engine's indexes are
//! maintained).

use super::*;

#[test]
fn filters_and_sorts_follow_updates_additions_and_deletions() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let records = format!("/v1/views/{view}/records");
    let by_num = r#"{"num": "asc"}"#;
    let apple = r#"{"title": {"contains": "APPLE"}}"#;
    let bug = r#"{"kind": {"=": "bug"}}"#;
    let big = r#"{"num": {">": 5}}"#;
    let title_desc = r#"{"title": "desc"}"#;
    let by_id = r#"{"_recordId": "asc"}"#;
    let both = [("query", apple), ("sort", r#"{"num": "desc"}"#)];
    // First queries build the indexes.
    assert_all(&sorted(&app, &view, by_num), &["r4", "r1", "r2", "r5", "r3"], by_num);
    assert_all(&filtered(&app, &view, apple), &["r1", "r4", "r5"], apple);
    assert_all(&filtered(&app, &view, bug), &["r1", "r5"], bug);
    assert_all(&filtered(&app, &view, big), &["r1", "r2", "r5"], big);
    assert_all(&sorted(&app, &view, title_desc), &["r2", "r5", "r4", "r1", "r3"], title_desc);
    assert_all(&fetch(&app, &view, &both), &["r5", "r1", "r4"], "apple by num desc");

    // r5 moves in the order; r1 stops matching `apple`; r2 becomes a bug.
    let res = app.patch(
        &records,
        &json!([
            {"id": "r5", "cells": [{"columnId": "num", "value": 0}]},
            {"id": "r1", "cells": [{"columnId": "title", "value": "Pear"}]},
            {"id": "r2", "cells": [{"columnId": "kind", "value": "bug"}]},
        ]),
    );
    res.assert_status(200);
    assert_all(&sorted(&app, &view, by_num), &["r4", "r5", "r1", "r2", "r3"], "after patch");
    assert_all(&filtered(&app, &view, apple), &["r4", "r5"], "after patch");
    assert_all(&filtered(&app, &view, bug), &["r1", "r2", "r5"], "after patch");
    assert_all(&filtered(&app, &view, big), &["r1", "r2"], "after patch");
    assert_all(&sorted(&app, &view, title_desc), &["r2", "r5", "r1", "r4", "r3"], "after patch");
    assert_all(&fetch(&app, &view, &both), &["r5", "r4"], "after patch");

    // Additions.
    app.add_records(
        &view,
        json!([
            {"id": "r6", "cells": [{"columnId": "num", "value": 5}, {"columnId": "kind", "value": "bug"},
                                   {"columnId": "title", "value": "APPLE tart"}]},
            {"id": "r0", "cells": [{"columnId": "num", "value": -3}, {"columnId": "title", "value": "zucchini"}]},
        ]),
    );
    assert_all(&sorted(&app, &view, by_num), &["r0", "r4", "r5", "r6", "r1", "r2", "r3"], "added");
    assert_all(&filtered(&app, &view, apple), &["r4", "r5", "r6"], "added");
    assert_all(&filtered(&app, &view, bug), &["r1", "r2", "r5", "r6"], "added");
    assert_all(&filtered(&app, &view, big), &["r1", "r2"], "added");
    assert_all(
        &sorted(&app, &view, title_desc),
        &["r0", "r2", "r5", "r1", "r4", "r6", "r3"],
        "added",
    );
    assert_all(&sorted(&app, &view, by_id), &["r0", "r1", "r2", "r3", "r4", "r5", "r6"], "added");
    assert_all(&fetch(&app, &view, &both), &["r6", "r5", "r4"], "added");

    // Deletions.
    app.delete_with(&records, &json!({"ids": ["r5", "r0"]})).assert_status(204);
    assert_all(&sorted(&app, &view, by_num), &["r4", "r6", "r1", "r2", "r3"], "deleted");
    assert_all(&filtered(&app, &view, apple), &["r4", "r6"], "deleted");
    assert_all(&filtered(&app, &view, bug), &["r1", "r2", "r6"], "deleted");
    assert_all(&sorted(&app, &view, by_id), &["r1", "r2", "r3", "r4", "r6"], "deleted");
    assert_all(&fetch(&app, &view, &both), &["r6", "r4"], "deleted");

    // Emptying a value sends it last; renaming a record moves it by id; a path change counts.
    app.patch(
        &records,
        &json!([{"id": "r4", "cells": [{"columnId": "num", "value": null},
                                       {"columnId": "title", "value": ""}]}]),
    )
    .assert_status(200);
    app.patch(&format!("{records}/r2"), &json!({"id": "a2", "path": "zzz"})).assert_status(200);
    assert_all(&sorted(&app, &view, by_num), &["r6", "r1", "a2", "r3", "r4"], "emptied");
    assert_all(&sorted(&app, &view, by_id), &["a2", "r1", "r3", "r4", "r6"], "renamed");
    assert_all(
        &sorted(&app, &view, r#"{"_path": "desc"}"#),
        &["a2", "r4", "r1", "r3", "r6"],
        "moved",
    );
    assert_all(&filtered(&app, &view, apple), &["r6"], "emptied");
    assert_all(&filtered(&app, &view, bug), &["r1", "a2", "r6"], "renamed");
    assert_all(&filtered(&app, &view, r#"{"_recordId": {"startsWith": "A"}}"#), &["a2"], "renamed");
    assert_all(&sorted(&app, &view, title_desc), &["a2", "r1", "r6", "r3", "r4"], "emptied");
    let query = r#"{"title": {"isEmpty": null}}"#;
    assert_all(&filtered(&app, &view, query), &["r3", "r4"], query);
    // Re-adding a deleted id puts a new record last in insertion order.
    app.add_records(&view, json!([{"id": "r5", "cells": [{"columnId": "num", "value": 5}]}]));
    assert_all(&sorted(&app, &view, by_num), &["r6", "r5", "r1", "a2", "r3", "r4"], "re-added");
    assert_all(&filtered(&app, &view, r#"{"num": {"=": 5}}"#), &["r6", "r5"], "re-added");
}

#[test]
fn filters_and_sorts_follow_column_type_changes_renames_and_deletion() {
    let app = spawn_app();
    let (_, view) = app.create_grid("Columns");
    app.create_column(&view, json!({"id": "v", "name": "V", "type": "singleLine"}));
    let column = |id: &str| format!("/v1/views/{view}/columns/{id}");
    app.add_records(
        &view,
        json!([
            {"id": "c1", "cells": [{"columnId": "v", "value": "10"}]},
            {"id": "c2", "cells": [{"columnId": "v", "value": "9"}]},
            {"id": "c3", "cells": [{"columnId": "v", "value": "100"}]},
            {"id": "c4"},
            {"id": "c5", "cells": [{"columnId": "v", "value": "9.5"}]},
        ]),
    );
    assert_all(&sorted(&app, &view, r#"{"v": "asc"}"#), &["c1", "c3", "c2", "c5", "c4"], "text");
    check(
        &app,
        &view,
        &[
            ("v", "=", json!("9"), &["c2"]),
            ("v", "contains", json!("0"), &["c1", "c3"]),
            ("v", "startsWith", json!("9"), &["c2", "c5"]),
        ],
    );

    app.patch(&column("v"), &json!({"type": "number"})).assert_status(200);
    assert_all(&sorted(&app, &view, r#"{"v": "asc"}"#), &["c2", "c5", "c1", "c3", "c4"], "number");
    check(&app, &view, &[("v", "=", json!(9), &["c2"]), ("v", ">", json!(9), &["c1", "c3", "c5"])]);
    let query = cond("v", "contains", &json!("0"));
    assert_refused(&filtered(&app, &view, &query), "invalidFilterOperator", &["contains"], &query);

    app.patch(&column("v"), &json!({"id": "w"})).assert_status(200);
    assert_all(
        &sorted(&app, &view, r#"{"w": "desc"}"#),
        &["c3", "c1", "c5", "c2", "c4"],
        "renamed",
    );
    check(&app, &view, &[("w", "<", json!(10), &["c2", "c5"])]);
    let query = cond("v", "=", &json!(9));
    assert_refused(&filtered(&app, &view, &query), "filterColumnNotFound", &["v"], &query);
    let sort = r#"{"v": "asc"}"#;
    assert_refused(&sorted(&app, &view, sort), "sortColumnNotFound", &["v"], sort);

    app.delete(&column("w")).assert_status(204);
    let sort = r#"{"w": "asc"}"#;
    assert_refused(&sorted(&app, &view, sort), "sortColumnNotFound", &["w"], sort);
    app.create_column(&view, json!({"id": "w", "name": "W", "type": "singleLine"}));
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "c2", "cells": [{"columnId": "w", "value": "b"}]},
                {"id": "c5", "cells": [{"columnId": "w", "value": "a"}]}]),
    )
    .assert_status(200);
    assert_all(&sorted(&app, &view, sort), &["c5", "c2", "c1", "c3", "c4"], "a new column w");
    check(
        &app,
        &view,
        &[
            ("w", "isEmpty", Value::Null, &["c1", "c3", "c4"]),
            ("w", "=", json!("b"), &["c2"]),
            ("w", "contains", json!("A"), &["c5"]),
        ],
    );
}
