//! Every error code of a listing is 400 and names the offending part; large or long regexps are
//! refused quickly.

use super::*;

#[test]
fn each_error_code_is_400_and_names_the_offending_part() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let query_errors: &[(&str, &str, &[&str])] = &[
        ("[1]", "invalidFilterField", &["[1]"]),
        (r#""title""#, "invalidFilterField", &["title"]),
        ("{not json", "invalidFilterField", &["{not json"]),
        (r#"{"_xyz": {"=": 1}}"#, "invalidFilterField", &["_xyz"]),
        (r#"{"title": {"like": "a"}}"#, "invalidFilterOperator", &["like", "title"]),
        (r#"{"title": {"CONTAINS": "a"}}"#, "invalidFilterOperator", &["CONTAINS", "title"]),
        (r#"{"title": {"=": "a", "!=": "b"}}"#, "invalidFilterOperator", &["title"]),
        (r#"{"title": {}}"#, "invalidFilterOperator", &["title"]),
        (r#"{"title": "apple"}"#, "invalidFilterOperator", &["title", "apple"]),
        (r#"{"title": ["apple"]}"#, "invalidFilterOperator", &["title"]),
        (r#"{"title": {"<": "b"}}"#, "invalidFilterOperator", &["<", "title"]),
        (r#"{"title": {"between": ["a", "b"]}}"#, "invalidFilterOperator", &["between", "title"]),
        (r#"{"kind": {"contains": "b"}}"#, "invalidFilterOperator", &["contains", "kind"]),
        (r#"{"kind": {"regexp": "b"}}"#, "invalidFilterOperator", &["regexp", "kind"]),
        (r#"{"tags": {"startsWith": "x"}}"#, "invalidFilterOperator", &["startsWith", "tags"]),
        (r#"{"done": {">": true}}"#, "invalidFilterOperator", &[">", "done"]),
        (r#"{"num": {"contains": "1"}}"#, "invalidFilterOperator", &["contains", "num"]),
        (r#"{"due": {"endsWith": "Z"}}"#, "invalidFilterOperator", &["endsWith", "due"]),
        (r#"{"_path": {"regexp": "a"}}"#, "invalidFilterOperator", &["regexp", "_path"]),
        (r#"{"_path": {"notRegexp": "a"}}"#, "invalidFilterOperator", &["notRegexp", "_path"]),
        (r#"{"_recordId": {"<=": "r2"}}"#, "invalidFilterOperator", &["<=", "_recordId"]),
        (
            r#"{"_lastModifiedTime": {"contains": "2026"}}"#,
            "invalidFilterOperator",
            &["contains", "_lastModifiedTime"],
        ),
        (r#"{"num": {"=": "abc"}}"#, "invalidFilterValue", &["abc", "num"]),
        (r#"{"num": {"<": true}}"#, "invalidFilterValue", &["num"]),
        (r#"{"num": {"in": [1, "abc"]}}"#, "invalidFilterValue", &["abc", "num"]),
        (r#"{"num": {"in": 5}}"#, "invalidFilterValue", &["in", "num"]),
        (r#"{"num": {"between": [1]}}"#, "invalidFilterValue", &["between", "num"]),
        (r#"{"num": {"between": [1, 2, 3]}}"#, "invalidFilterValue", &["between", "num"]),
        (r#"{"num": {"notBetween": 5}}"#, "invalidFilterValue", &["notBetween", "num"]),
        (r#"{"due": {"<": "2026-13-45"}}"#, "invalidFilterValue", &["2026-13-45", "due"]),
        (r#"{"due": {"=": "31/01/2026"}}"#, "invalidFilterValue", &["31/01/2026", "due"]),
        (r#"{"_lastModifiedTime": {">": "yesterday"}}"#, "invalidFilterValue", &["yesterday"]),
        (r#"{"done": {"=": "yes"}}"#, "invalidFilterValue", &["yes", "done"]),
        (r#"{"title": {"regexp": "("}}"#, "invalidFilterValue", &["title"]),
        (r#"{"title": {"regexp": "[z-a]"}}"#, "invalidFilterValue", &["title"]),
        (r#"{"title": {"regexp": 5}}"#, "invalidFilterValue", &["regexp", "title"]),
        (r#"{"title": {"contains": {"a": 1}}}"#, "invalidFilterValue", &["contains", "title"]),
        (r#"{"title": {"=": null}}"#, "missingFilterValue", &["=", "title"]),
        (r#"{"title": {"in": []}}"#, "missingFilterValue", &["in", "title"]),
        (r#"{"num": {"between": []}}"#, "missingFilterValue", &["between", "num"]),
        (r#"{"_recordId": {"contains": null}}"#, "missingFilterValue", &["contains", "_recordId"]),
        (r#"{"nope": {"=": 1}}"#, "filterColumnNotFound", &["nope"]),
        (r#"{"title": {"isEmpty": null}, "nope": {"=": 1}}"#, "filterColumnNotFound", &["nope"]),
        (r#"{"nope._dependencyStatus": {"=": "unset"}}"#, "filterColumnNotFound", &["nope"]),
    ];
    for (query, code, parts) in query_errors {
        assert_refused(&filtered(&app, &view, query), code, parts, query);
        // With a valid sort, the query's error still answers.
        let res = fetch(&app, &view, &[("query", query), ("sort", r#"{"num": "asc"}"#)]);
        assert_refused(&res, code, parts, query);
    }
    let sort_errors: &[(&str, &str, &[&str])] = &[
        (r#"["num"]"#, "invalidSortField", &[r#"["num"]"#]),
        ("{bad", "invalidSortField", &["{bad"]),
        (r#"{"_xyz": "asc"}"#, "invalidSortField", &["_xyz"]),
        (r#"{"num": "up"}"#, "invalidSortDirection", &["up", "num"]),
        (r#"{"num": 1}"#, "invalidSortDirection", &["num"]),
        (r#"{"num": null}"#, "invalidSortDirection", &["num"]),
        (r#"{"title": "asc", "num": "ascending"}"#, "invalidSortDirection", &["ascending", "num"]),
        (r#"{"nope": "asc"}"#, "sortColumnNotFound", &["nope"]),
        (r#"{"num": "asc", "nope": "desc"}"#, "sortColumnNotFound", &["nope"]),
    ];
    for (sort, code, parts) in sort_errors {
        assert_refused(&sorted(&app, &view, sort), code, parts, sort);
        let res = fetch(&app, &view, &[("query", r#"{"num": {">": 1}}"#), ("sort", sort)]);
        assert_refused(&res, code, parts, sort);
    }
    let (query, sort) = (r#"{"num": {">": 1}}"#, r#"{"num": "asc"}"#);
    for bad_page in ["{\"offset\":-1,\"limit\":10}", "{\"offset\":0,\"limit\":0}", "[0, 1]"] {
        let res = fetch(&app, &view, &[("query", query), ("sort", sort), ("page", bad_page)]);
        assert_refused(&res, "invalidPaging", &["page"], bad_page);
    }
}

#[test]
fn a_regexp_too_large_or_too_long_is_refused_quickly() {
    let app = spawn_app();
    let (_, view) = typed_grid(&app);
    let long = "a".repeat(1001);
    for pattern in ["(((a{100}){100}){100})", "\\w{1000}{1000}", long.as_str()] {
        for op in ["regexp", "notRegexp"] {
            let query = cond("title", op, &json!(pattern));
            let started = Instant::now();
            let res = filtered(&app, &view, &query);
            let elapsed = started.elapsed();
            assert_refused(&res, "invalidFilterValue", &["title"], &query);
            assert!(elapsed < Duration::from_secs(2), "{query} took {elapsed:?}");
        }
    }
    // The server is still answering, and a reasonable pattern works.
    let res = filtered(&app, &view, &cond("title", "regexp", &json!("a{1,3}n")));
    assert_all(&res, &["r2"], "banana");
}
