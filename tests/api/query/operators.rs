//! Every operator on each column type that supports it, the predefined columns and the status
//! sub-fields.

use super::*;

#[test]
fn text_operators_on_a_single_line_column() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("title", "=", json!("apple"), &["r5"]),
            ("title", "=", json!("Apple"), &[]),
            ("title", "=", json!(""), &["r3"]),
            ("title", "!=", json!("apple"), &["r1", "r2", "r3", "r4"]),
            ("title", "!=", json!(""), &["r1", "r2", "r4", "r5"]),
            ("title", "contains", json!("APPLE"), &["r1", "r4", "r5"]),
            ("title", "contains", json!("an"), &["r2"]),
            ("title", "notContains", json!("aPPle"), &["r2", "r3"]),
            ("title", "startsWith", json!("apple"), &["r1", "r5"]),
            ("title", "notStartsWith", json!("APP"), &["r2", "r3", "r4"]),
            ("title", "endsWith", json!("APPLE"), &["r4", "r5"]),
            ("title", "notEndsWith", json!("E"), &["r2", "r3"]),
            ("title", "regexp", json!("^[A-Z]"), &["r1", "r4"]),
            ("title", "regexp", json!("apple"), &["r4", "r5"]),
            ("title", "regexp", json!("(?i)^apple"), &["r1", "r5"]),
            ("title", "regexp", json!("^$"), &["r3"]),
            ("title", "notRegexp", json!("^[A-Z]"), &["r2", "r3", "r5"]),
            ("title", "in", json!(["apple", "banana", "nope"]), &["r2", "r5"]),
            ("title", "in", json!(["", "apple"]), &["r3", "r5"]),
            ("title", "notIn", json!(["apple", "banana"]), &["r1", "r3", "r4"]),
            ("title", "isEmpty", Value::Null, &["r3"]),
            ("title", "isNull", json!(true), &["r3"]),
            ("title", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("title", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn number_operators_compare_numerically() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("num", "=", json!(10), &["r2"]),
            ("num", "=", json!("10"), &["r2"]),
            ("num", "=", json!(9.0), &["r1"]),
            ("num", "=", json!(-2.5), &["r4"]),
            ("num", "!=", json!(10), &["r1", "r3", "r4", "r5"]),
            ("num", "<", json!(10), &["r1", "r4"]),
            ("num", "<=", json!(10), &["r1", "r2", "r4"]),
            ("num", ">", json!(9), &["r2", "r5"]),
            ("num", ">=", json!("9"), &["r1", "r2", "r5"]),
            ("num", ">", json!(-100), &["r1", "r2", "r4", "r5"]),
            ("num", "between", json!([9, 10]), &["r1", "r2"]),
            ("num", "between", json!(["-3", 9]), &["r1", "r4"]),
            ("num", "between", json!([10, 9]), &[]),
            ("num", "notBetween", json!([9, 10]), &["r3", "r4", "r5"]),
            ("num", "in", json!([100, 9, 7]), &["r1", "r5"]),
            ("num", "notIn", json!([100, "9"]), &["r2", "r3", "r4"]),
            ("num", "isEmpty", Value::Null, &["r3"]),
            ("num", "isNull", Value::Null, &["r3"]),
            ("num", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("num", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn datetime_operators_compare_chronologically() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("due", "=", json!("2026-01-31"), &["r1"]),
            ("due", "=", json!("2026-01-31T01:00:00+01:00"), &["r1"]),
            ("due", "=", json!(1_769_817_600_000_i64), &["r1"]),
            ("due", "!=", json!("2026-01-31T00:00:00.000Z"), &["r2", "r3", "r4", "r5"]),
            ("due", "<", json!("2026-01-01"), &["r2", "r5"]),
            ("due", "<=", json!("2025-12-31T23:30:00Z"), &["r2", "r5"]),
            ("due", "<", json!("2025-12-31T23:30:00Z"), &["r5"]),
            ("due", ">", json!("2026-01-31"), &["r4"]),
            ("due", ">=", json!("2026-01-31"), &["r1", "r4"]),
            ("due", ">", json!("2026-01-01T00:29:59-05:00"), &["r1", "r4"]),
            ("due", "between", json!(["2025-01-01", "2026-01-31"]), &["r1", "r2"]),
            ("due", "notBetween", json!(["2025-01-01", "2026-01-31"]), &["r3", "r4", "r5"]),
            ("due", "in", json!(["2024-02-29", "2026-03-01T12:00:00.000Z"]), &["r4", "r5"]),
            (
                "due",
                "notIn",
                json!(["2024-02-29", "2026-03-01T12:00:00.000Z"]),
                &["r1", "r2", "r3"],
            ),
            ("due", "isEmpty", Value::Null, &["r3"]),
            ("due", "isNull", Value::Null, &["r3"]),
            ("due", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("due", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn boolean_operators() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("done", "=", json!(true), &["r1", "r4"]),
            ("done", "=", json!("false"), &["r2", "r5"]),
            ("done", "!=", json!(true), &["r2", "r3", "r5"]),
            ("done", "!=", json!("false"), &["r1", "r3", "r4"]),
            ("done", "in", json!([true, false]), &["r1", "r2", "r4", "r5"]),
            ("done", "in", json!(["true"]), &["r1", "r4"]),
            ("done", "notIn", json!([false]), &["r1", "r3", "r4"]),
            ("done", "isEmpty", Value::Null, &["r3"]),
            ("done", "isNull", Value::Null, &["r3"]),
            ("done", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("done", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn selection_operators_on_single_and_multiple_selections() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("kind", "=", json!("bug"), &["r1", "r5"]),
            ("kind", "=", json!("Bug"), &[]),
            ("kind", "=", json!(""), &["r3"]),
            ("kind", "!=", json!("bug"), &["r2", "r3", "r4"]),
            ("kind", "in", json!(["task", "idea"]), &["r2", "r4"]),
            ("kind", "notIn", json!(["task", "idea"]), &["r1", "r3", "r5"]),
            ("kind", "isEmpty", Value::Null, &["r3"]),
            ("kind", "isNull", Value::Null, &["r3"]),
            ("kind", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("kind", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
            // A list matches an item when any of its items does, an array when it is exactly
            // those items in that order.
            ("tags", "=", json!("x"), &["r1", "r4", "r5"]),
            ("tags", "=", json!("z"), &["r4"]),
            ("tags", "=", json!(["x", "y"]), &["r1"]),
            ("tags", "=", json!(["y", "x"]), &[]),
            ("tags", "=", json!(["x"]), &["r5"]),
            ("tags", "!=", json!("x"), &["r2", "r3"]),
            ("tags", "!=", json!(["x"]), &["r1", "r2", "r3", "r4"]),
            ("tags", "in", json!(["z", "y"]), &["r1", "r2", "r4"]),
            ("tags", "notIn", json!(["z", "y"]), &["r3", "r5"]),
            ("tags", "isEmpty", Value::Null, &["r3"]),
            ("tags", "isNull", Value::Null, &["r3"]),
            ("tags", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("tags", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn record_id_and_path_operators() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    check(
        &app,
        &view,
        &[
            ("_recordId", "=", json!("r2"), &["r2"]),
            ("_recordId", "=", json!("R2"), &[]),
            ("_recordId", "!=", json!("r2"), &["r1", "r3", "r4", "r5"]),
            ("_recordId", "contains", json!("R"), &["r1", "r2", "r3", "r4", "r5"]),
            ("_recordId", "notContains", json!("3"), &["r1", "r2", "r4", "r5"]),
            ("_recordId", "startsWith", json!("R1"), &["r1"]),
            ("_recordId", "notStartsWith", json!("r"), &[]),
            ("_recordId", "endsWith", json!("5"), &["r5"]),
            ("_recordId", "notEndsWith", json!("5"), &["r1", "r2", "r3", "r4"]),
            ("_recordId", "regexp", json!("^r[12]$"), &["r1", "r2"]),
            ("_recordId", "regexp", json!("^R"), &[]),
            ("_recordId", "regexp", json!("(?i)^R[45]"), &["r4", "r5"]),
            ("_recordId", "notRegexp", json!("[12]"), &["r3", "r4", "r5"]),
            ("_recordId", "in", json!(["r4", "r1", "zz"]), &["r1", "r4"]),
            ("_recordId", "notIn", json!(["r4", "r1"]), &["r2", "r3", "r5"]),
            ("_recordId", "isEmpty", Value::Null, &[]),
            ("_recordId", "isNull", Value::Null, &[]),
            ("_recordId", "isNotEmpty", Value::Null, &["r1", "r2", "r3", "r4", "r5"]),
            ("_recordId", "isNotNull", Value::Null, &["r1", "r2", "r3", "r4", "r5"]),
            ("_path", "=", json!("src"), &["r5"]),
            ("_path", "=", json!(""), &["r3"]),
            ("_path", "!=", json!("src"), &["r1", "r2", "r3", "r4"]),
            ("_path", "contains", json!("DOCS/"), &["r1", "r2"]),
            ("_path", "notContains", json!("docs"), &["r3", "r4", "r5"]),
            ("_path", "startsWith", json!("SRC"), &["r4", "r5"]),
            ("_path", "notStartsWith", json!("src"), &["r1", "r2", "r3"]),
            ("_path", "endsWith", json!("/A"), &["r1"]),
            ("_path", "notEndsWith", json!("c"), &["r1", "r2", "r3"]),
            ("_path", "in", json!(["src", "docs/b"]), &["r2", "r5"]),
            ("_path", "notIn", json!(["src", "docs/b"]), &["r1", "r3", "r4"]),
            ("_path", "isEmpty", Value::Null, &["r3"]),
            ("_path", "isNull", Value::Null, &["r3"]),
            ("_path", "isNotEmpty", Value::Null, &["r1", "r2", "r4", "r5"]),
            ("_path", "isNotNull", Value::Null, &["r1", "r2", "r4", "r5"]),
        ],
    );
}

#[test]
fn last_modified_time_and_by_filter_sort_and_follow_updates() {
    let app = spawn_app();
    let (_, view) = title_grid(&app);
    let alice = app.create_user_key("alice");
    let bob = app.create_user_key("bob");
    let records = format!("/v1/views/{view}/records");
    let add_as = |key: &str, rows: &[(&str, &str)]| -> Vec<Value> {
        let res = app.post_as(key, &records, &titled(rows));
        res.assert_status(201).as_array().expect("a list").clone()
    };
    let time = |record: &Value| record["lastModifiedTime"].as_str().expect("a time").to_owned();
    let pause = || std::thread::sleep(Duration::from_millis(15));
    let first = add_as(&alice, &[("a1", "one"), ("a2", "two")]);
    pause();
    let second = add_as(&bob, &[("b1", "three")]);
    pause();
    let third = add_as(&app.key, &[("o1", "four")]);
    let (t1, t2, t3) = (time(&first[0]), time(&second[0]), time(&third[0]));
    assert_eq!(time(&first[1]), t1, "one write, one time");
    assert!(t1 < t2 && t2 < t3, "{t1} {t2} {t3}");
    let owner = third[0]["lastModifiedBy"].as_str().expect("a user").to_owned();
    let owner_lower = owner.to_lowercase();
    assert!(
        !owner.is_empty()
            && !owner_lower.contains("lic")
            && !owner_lower.starts_with('b')
            && !owner_lower.ends_with("ob"),
        "the owner's user {owner:?} would match the alice/bob cases"
    );
    let t2_ms = chrono::DateTime::parse_from_rfc3339(&t2).expect("RFC 3339").timestamp_millis();
    let all: &[&str] = &["a1", "a2", "b1", "o1"];
    check(
        &app,
        &view,
        &[
            ("_lastModifiedTime", "=", json!(t2), &["b1"]),
            ("_lastModifiedTime", "=", json!(t2_ms), &["b1"]),
            ("_lastModifiedTime", "!=", json!(t1), &["b1", "o1"]),
            ("_lastModifiedTime", "<", json!(t2), &["a1", "a2"]),
            ("_lastModifiedTime", "<=", json!(t2), &["a1", "a2", "b1"]),
            ("_lastModifiedTime", ">", json!(t2), &["o1"]),
            ("_lastModifiedTime", ">=", json!(t2), &["b1", "o1"]),
            ("_lastModifiedTime", ">", json!("2000-01-01"), all),
            ("_lastModifiedTime", "between", json!([t1, t2]), &["a1", "a2", "b1"]),
            ("_lastModifiedTime", "notBetween", json!([t1, t2]), &["o1"]),
            ("_lastModifiedTime", "in", json!([t1, t3]), &["a1", "a2", "o1"]),
            ("_lastModifiedTime", "notIn", json!([t1, t3]), &["b1"]),
            ("_lastModifiedTime", "isEmpty", Value::Null, &[]),
            ("_lastModifiedTime", "isNull", Value::Null, &[]),
            ("_lastModifiedTime", "isNotEmpty", Value::Null, all),
            ("_lastModifiedTime", "isNotNull", Value::Null, all),
            ("_lastModifiedBy", "=", json!("alice"), &["a1", "a2"]),
            ("_lastModifiedBy", "=", json!(owner), &["o1"]),
            ("_lastModifiedBy", "!=", json!("alice"), &["b1", "o1"]),
            ("_lastModifiedBy", "contains", json!("LIC"), &["a1", "a2"]),
            ("_lastModifiedBy", "notContains", json!("LIC"), &["b1", "o1"]),
            ("_lastModifiedBy", "startsWith", json!("B"), &["b1"]),
            ("_lastModifiedBy", "notStartsWith", json!("b"), &["a1", "a2", "o1"]),
            ("_lastModifiedBy", "endsWith", json!("OB"), &["b1"]),
            ("_lastModifiedBy", "notEndsWith", json!("ob"), &["a1", "a2", "o1"]),
            ("_lastModifiedBy", "regexp", json!("^(alice|bob)$"), &["a1", "a2", "b1"]),
            ("_lastModifiedBy", "regexp", json!("^ALICE$"), &[]),
            ("_lastModifiedBy", "regexp", json!("(?i)^ALICE$"), &["a1", "a2"]),
            ("_lastModifiedBy", "notRegexp", json!("^(alice|bob)$"), &["o1"]),
            ("_lastModifiedBy", "in", json!(["bob", owner]), &["b1", "o1"]),
            ("_lastModifiedBy", "notIn", json!(["bob"]), &["a1", "a2", "o1"]),
            ("_lastModifiedBy", "isEmpty", Value::Null, &[]),
            ("_lastModifiedBy", "isNotEmpty", Value::Null, all),
            ("_lastModifiedBy", "isNull", Value::Null, &[]),
            ("_lastModifiedBy", "isNotNull", Value::Null, all),
        ],
    );
    let mut by_user: Vec<(&str, &str)> =
        vec![("a1", "alice"), ("a2", "alice"), ("b1", "bob"), ("o1", &owner)];
    by_user.sort_by(|a, b| b.1.cmp(a.1).then(b.0.cmp(a.0)));
    let by_user: Vec<&str> = by_user.iter().map(|(id, _)| *id).collect();
    check_sorts(
        &app,
        &view,
        &[
            (r#"{"_lastModifiedTime": "desc"}"#, &["o1", "b1", "a1", "a2"]),
            (r#"{"_lastModifiedTime": "asc"}"#, &["a1", "a2", "b1", "o1"]),
            (r#"{"_lastModifiedTime": "asc", "_recordId": "desc"}"#, &["a2", "a1", "b1", "o1"]),
            (r#"{"_lastModifiedBy": "desc", "_recordId": "desc"}"#, &by_user),
        ],
    );

    // Bob edits a1 later: it moves to the front by time and is now bob's.
    pause();
    let res = app.patch_as(
        &bob,
        &records,
        &json!([{"id": "a1", "cells": [{"columnId": "title", "value": "edited"}]}]),
    );
    let t4 = time(&res.assert_status(200)[0]);
    assert!(t4 > t3, "{t4} {t3}");
    check_sorts(&app, &view, &[(r#"{"_lastModifiedTime": "desc"}"#, &["a1", "o1", "b1", "a2"])]);
    check(
        &app,
        &view,
        &[
            ("_lastModifiedTime", ">", json!(t3), &["a1"]),
            ("_lastModifiedTime", "=", json!(t1), &["a2"]),
            ("_lastModifiedBy", "=", json!("bob"), &["a1", "b1"]),
            ("_lastModifiedBy", "startsWith", json!("ALI"), &["a2"]),
        ],
    );
}

/// A grid with source language `en`, target `fr` depending on it and a singleLine `note`, and
/// records s1..s5; after the writes below:
///
/// | id | en | fr | fr dependency status | en source status |
/// |---|---|---|---|---|
/// | s1 | Hello there | Bonjour le monde | outOfDate (its source changed) | unset |
/// | s2 | Goodbye | Au revoir | upToDate (translated after) | unset |
/// | s3 | | Salut | upToDate | unset |
/// | s4 | Straße | Rue | upToDate | readyForTranslation |
/// | s5 | | | unset | unset |
#[test]
fn language_columns_and_status_sub_fields() {
    let app = spawn_app();
    let (_, view) = app.language_grid(&[("fr", "French", "frFR")], false);
    let dependency = app.add_dependency(&view, "fr");
    let text = |column: &str, value: &str| json!({"columnId": column, "value": value});
    app.add_records(
        &view,
        json!([
            {"id": "s1", "cells": [text("en", "Hello world"), text("fr", "Bonjour le monde")]},
            {"id": "s2", "cells": [text("en", "Goodbye")]},
            {"id": "s3", "cells": [text("fr", "Salut")]},
            {"id": "s4", "cells": [{"columnId": "en", "value": "Straße",
                                    "sourceStatus": "readyForTranslation"}, text("fr", "Rue")]},
            {"id": "s5", "cells": [text("note", "n")]},
        ]),
    );
    let dep_out = cond("fr._dependencyStatus", "=", &json!("outOfDate"));
    assert_all(&filtered(&app, &view, &dep_out), &["s2"], "only s2 lacks its translation");
    let update = |id: &str, cells: Value| {
        app.patch(&format!("/v1/views/{view}/records"), &json!([{"id": id, "cells": cells}]))
            .assert_status(200);
    };
    update("s1", json!([text("en", "Hello there")]));
    assert_all(&filtered(&app, &view, &dep_out), &["s1", "s2"], "s1's source changed");
    update("s2", json!([text("fr", "Au revoir")]));
    assert_all(&filtered(&app, &view, &dep_out), &["s1"], "s2 was translated");

    // The status filters agree with the statuses the listing shows.
    let res = filtered(&app, &view, &cond("fr._dependencyStatus", "=", &json!("upToDate")));
    for record in res.body.as_array().expect("a list") {
        assert_eq!(cell(record, "fr")["dependencyStatus"], "upToDate", "{record}");
    }
    check(
        &app,
        &view,
        &[
            ("fr._dependencyStatus", "=", json!("outOfDate"), &["s1"]),
            ("fr._dependencyStatus", "=", json!("upToDate"), &["s2", "s3", "s4"]),
            ("fr._dependencyStatus", "=", json!("unset"), &["s5"]),
            ("fr._dependencyStatus", "!=", json!("upToDate"), &["s1", "s5"]),
            ("fr._dependencyStatus", "in", json!(["outOfDate", "unset"]), &["s1", "s5"]),
            ("fr._dependencyStatus", "notIn", json!(["outOfDate", "unset"]), &["s2", "s3", "s4"]),
            ("en._dependencyStatus", "=", json!("unset"), &["s1", "s2", "s3", "s4", "s5"]),
            ("en._sourceStatus", "=", json!("readyForTranslation"), &["s4"]),
            ("en._sourceStatus", "!=", json!("readyForTranslation"), &["s1", "s2", "s3", "s5"]),
            ("en._sourceStatus", "in", json!(["locked", "readyForTranslation"]), &["s4"]),
            ("en._sourceStatus", "notIn", json!(["unset"]), &["s4"]),
            ("fr._sourceStatus", "=", json!("unset"), &["s1", "s2", "s3", "s4", "s5"]),
            // Text operators on the source language column.
            ("en", "=", json!("Goodbye"), &["s2"]),
            ("en", "=", json!("goodbye"), &[]),
            ("en", "!=", json!("Goodbye"), &["s1", "s3", "s4", "s5"]),
            ("en", "contains", json!("E"), &["s1", "s2", "s4"]),
            ("en", "notContains", json!("e"), &["s3", "s5"]),
            ("en", "startsWith", json!("STRA"), &["s4"]),
            ("en", "notStartsWith", json!("h"), &["s2", "s3", "s4", "s5"]),
            ("en", "endsWith", json!("BYE"), &["s2"]),
            ("en", "endsWith", json!("\u{1e9e}E"), &["s4"]),
            ("en", "notEndsWith", json!("BYE"), &["s1", "s3", "s4", "s5"]),
            ("en", "regexp", json!("^H"), &["s1"]),
            ("en", "regexp", json!("^h"), &[]),
            ("en", "regexp", json!("(?i)^h"), &["s1"]),
            ("en", "notRegexp", json!("o"), &["s3", "s4", "s5"]),
            ("en", "in", json!(["Goodbye", "Straße"]), &["s2", "s4"]),
            ("en", "notIn", json!(["Goodbye", "Straße"]), &["s1", "s3", "s5"]),
            ("en", "isEmpty", Value::Null, &["s3", "s5"]),
            ("en", "isNull", Value::Null, &["s3", "s5"]),
            ("en", "isNotEmpty", Value::Null, &["s1", "s2", "s4"]),
            ("en", "isNotNull", Value::Null, &["s1", "s2", "s4"]),
            // Text operators on the target language column.
            ("fr", "=", json!("Rue"), &["s4"]),
            ("fr", "!=", json!("Rue"), &["s1", "s2", "s3", "s5"]),
            ("fr", "contains", json!("OU"), &["s1"]),
            ("fr", "contains", json!("R"), &["s1", "s2", "s4"]),
            ("fr", "notContains", json!("r"), &["s3", "s5"]),
            ("fr", "startsWith", json!("sa"), &["s3"]),
            ("fr", "notStartsWith", json!("SA"), &["s1", "s2", "s4", "s5"]),
            ("fr", "endsWith", json!("E"), &["s1", "s4"]),
            ("fr", "notEndsWith", json!("e"), &["s2", "s3", "s5"]),
            ("fr", "regexp", json!("^[A-Z][a-z]+$"), &["s3", "s4"]),
            ("fr", "notRegexp", json!("^[A-Z][a-z]+$"), &["s1", "s2", "s5"]),
            ("fr", "in", json!(["Salut", "Rue", "nope"]), &["s3", "s4"]),
            ("fr", "notIn", json!(["Salut", "Rue"]), &["s1", "s2", "s5"]),
            ("fr", "isEmpty", Value::Null, &["s5"]),
            ("fr", "isNull", Value::Null, &["s5"]),
            ("fr", "isNotEmpty", Value::Null, &["s1", "s2", "s3", "s4"]),
            ("fr", "isNotNull", Value::Null, &["s1", "s2", "s3", "s4"]),
        ],
    );
    // Status and text conditions together, with a sort.
    let query = r#"{"fr._dependencyStatus": {"=": "upToDate"}, "en": {"isNotEmpty": null}}"#;
    let res = fetch(&app, &view, &[("query", query), ("sort", r#"{"fr": "asc"}"#)]);
    assert_all(&res, &["s2", "s4"], query);
    check_sorts(
        &app,
        &view,
        &[
            (r#"{"en": "asc"}"#, &["s2", "s1", "s4", "s3", "s5"]),
            (r#"{"fr": "desc"}"#, &["s3", "s4", "s1", "s2", "s5"]),
        ],
    );

    let refusals: [(&str, &str, &[&str]); 8] = [
        (r#"{"fr._dependencyStatus": {"=": "stale"}}"#, "invalidFilterValue", &["stale"]),
        (r#"{"en._sourceStatus": {"=": "outOfDate"}}"#, "invalidFilterValue", &["outOfDate"]),
        (
            r#"{"fr._dependencyStatus": {"contains": "out"}}"#,
            "invalidFilterOperator",
            &["contains", "fr._dependencyStatus"],
        ),
        (
            r#"{"fr._sourceStatus": {"<": "locked"}}"#,
            "invalidFilterOperator",
            &["<", "fr._sourceStatus"],
        ),
        (
            r#"{"note._dependencyStatus": {"=": "unset"}}"#,
            "invalidFilterField",
            &["note._dependencyStatus"],
        ),
        (r#"{"nope._sourceStatus": {"=": "unset"}}"#, "filterColumnNotFound", &["nope"]),
        (r#"{"en": {"<": "b"}}"#, "invalidFilterOperator", &["<", "en"]),
        (r#"{"fr": {"between": ["a", "b"]}}"#, "invalidFilterOperator", &["between", "fr"]),
    ];
    for (query, code, parts) in refusals {
        assert_refused(&filtered(&app, &view, query), code, parts, query);
    }
    let sort = r#"{"fr._dependencyStatus": "asc"}"#;
    assert_refused(&sorted(&app, &view, sort), "invalidSortField", &["fr._dependencyStatus"], sort);

    // Without the dependency every status is unset again.
    app.delete(&format!("/v1/views/{view}/dependencies/{dependency}")).assert_status(204);
    check(
        &app,
        &view,
        &[
            ("fr._dependencyStatus", "=", json!("unset"), &["s1", "s2", "s3", "s4", "s5"]),
            ("fr._dependencyStatus", "in", json!(["outOfDate", "upToDate"]), &[]),
        ],
    );
}
