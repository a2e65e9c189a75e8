//! Case-insensitive matching of non-ASCII text: contains, starts and ends with fold case beyond
//! ASCII while equality is exact; regexps and contains test each value whole.

use super::*;

#[test]
fn contains_starts_and_ends_with_ignore_case_beyond_ascii_while_equality_is_exact() {
    let app = spawn_app();
    let (_, view) = title_grid(&app);
    app.add_records(
        &view,
        titled(&[
            ("u1", "Straße"),
            ("u2", "ÄRGER im Büro"),
            ("u3", "Αθήνα ΟΔΟΣ"),
            ("u4", "東京タワー"),
            ("u5", "ÉCOLE"),
            ("u6", "strasse"),
        ]),
    );
    check(
        &app,
        &view,
        &[
            ("title", "contains", json!("straße"), &["u1"]),
            ("title", "contains", json!("STRA\u{1e9e}E"), &["u1"]),
            ("title", "startsWith", json!("STRA"), &["u1", "u6"]),
            ("title", "contains", json!("ärger"), &["u2"]),
            ("title", "contains", json!("BÜRO"), &["u2"]),
            ("title", "startsWith", json!("äRGER"), &["u2"]),
            ("title", "endsWith", json!("büRO"), &["u2"]),
            ("title", "notContains", json!("ÄRGER"), &["u1", "u3", "u4", "u5", "u6"]),
            ("title", "contains", json!("αθήνα"), &["u3"]),
            ("title", "startsWith", json!("ΑΘΉΝΑ"), &["u3"]),
            ("title", "endsWith", json!("ΟΔΟΣ"), &["u3"]),
            ("title", "endsWith", json!("οδος"), &["u3"]),
            ("title", "contains", json!("ΔΟΣ"), &["u3"]),
            ("title", "notEndsWith", json!("ΟΔΟΣ"), &["u1", "u2", "u4", "u5", "u6"]),
            ("title", "contains", json!("タワー"), &["u4"]),
            ("title", "startsWith", json!("東京"), &["u4"]),
            ("title", "endsWith", json!("タワー"), &["u4"]),
            ("title", "notStartsWith", json!("東"), &["u1", "u2", "u3", "u5", "u6"]),
            ("title", "contains", json!("école"), &["u5"]),
            ("title", "startsWith", json!("é"), &["u5"]),
            ("title", "=", json!("Straße"), &["u1"]),
            ("title", "=", json!("straße"), &[]),
            ("title", "=", json!("STRASSE"), &[]),
            ("title", "=", json!("strasse"), &["u6"]),
            ("title", "=", json!("école"), &[]),
            ("title", "=", json!("ÉCOLE"), &["u5"]),
            ("title", "!=", json!("ÉCOLE"), &["u1", "u2", "u3", "u4", "u6"]),
            ("title", "in", json!(["straße", "Straße", "東京"]), &["u1"]),
            ("title", "regexp", json!("ärger"), &[]),
            ("title", "regexp", json!("(?i)ärger"), &["u2"]),
            ("title", "regexp", json!("(?i)^straße$"), &["u1"]),
            ("title", "regexp", json!("ΟΔΟΣ$"), &["u3"]),
            ("title", "regexp", json!("οδος$"), &[]),
            ("title", "regexp", json!("^東京"), &["u4"]),
            ("title", "notRegexp", json!("(?i)ß|ss"), &["u2", "u3", "u4", "u5"]),
        ],
    );
}

#[test]
fn regexp_and_contains_test_each_value_whole_even_with_newlines() {
    let app = spawn_app();
    let (_, view) = title_grid(&app);
    app.add_records(
        &view,
        titled(&[
            ("l1", "alpha\nbeta"),
            ("l2", "gamma"),
            ("l3", ""),
            ("l4", "beta"),
            ("l5", "delta\n"),
            ("l6", "x"),
        ]),
    );
    let all: &[&str] = &["l1", "l2", "l3", "l4", "l5", "l6"];
    check(
        &app,
        &view,
        &[
            ("title", "regexp", json!("^beta"), &["l4"]),
            ("title", "regexp", json!("(?m)^beta"), &["l1", "l4"]),
            ("title", "regexp", json!("(?-m)^beta"), &["l4"]),
            ("title", "regexp", json!("\\Abeta\\z"), &["l4"]),
            ("title", "regexp", json!("alpha$"), &[]),
            ("title", "regexp", json!("(?m)alpha$"), &["l1"]),
            ("title", "regexp", json!("a$"), &["l1", "l2", "l4"]),
            ("title", "regexp", json!("^$"), &["l3"]),
            ("title", "regexp", json!("(?m)^$"), &["l3", "l5"]),
            ("title", "regexp", json!("a\nb"), &["l1"]),
            // Matches only across two values (joined by a newline) do not count.
            ("title", "regexp", json!("a\nd"), &[]),
            ("title", "regexp", json!("(?s)a.+b"), &["l1"]),
            ("title", "regexp", json!("(?s)a.+x"), &[]),
            ("title", "regexp", json!("mma\\b"), &["l2"]),
            ("title", "regexp", json!("\\Bet"), &["l1", "l4"]),
            ("title", "regexp", json!(""), all),
            ("title", "regexp", json!("z*"), all),
            ("title", "notRegexp", json!("(?m)^beta"), &["l2", "l3", "l5", "l6"]),
            ("title", "notRegexp", json!("^$"), &["l1", "l2", "l4", "l5", "l6"]),
            ("title", "contains", json!("A\nB"), &["l1"]),
            ("title", "contains", json!("A\nD"), &[]),
            ("title", "contains", json!("\n"), &["l1", "l5"]),
            ("title", "contains", json!(""), all),
            ("title", "startsWith", json!("BETA"), &["l4"]),
            ("title", "endsWith", json!("\n"), &["l5"]),
            ("title", "endsWith", json!("A"), &["l1", "l2", "l4"]),
            ("title", "notEndsWith", json!("a"), &["l3", "l5", "l6"]),
        ],
    );
}

/// Case folding reads the word-final sigma as sigma on both sides: a capital sigma ending a
/// needle is found inside a word as well as at its end.
#[test]
fn a_capital_sigma_ending_a_needle_is_found_inside_a_word() {
    let app = spawn_app();
    let (_, view) = title_grid(&app);
    app.add_records(&view, titled(&[("g1", "ΟΣΑ"), ("g2", "ΟΔΟΣ"), ("g3", "ΑΒΓ")]));
    check(
        &app,
        &view,
        &[
            ("title", "contains", json!("ΟΣ"), &["g1", "g2"]),
            ("title", "startsWith", json!("ΟΣ"), &["g1"]),
            ("title", "endsWith", json!("ΟΣ"), &["g2"]),
            ("title", "contains", json!("οσ"), &["g1", "g2"]),
        ],
    );
}

/// `contains` searches text as stored for every spelling of the needle: the Kelvin sign is a
/// `k`, Cyrillic capitals their small letters, `İ` lowercases to `i` and a combining dot; a
/// value replaced (its old text still in the column's storage) no longer matches.
#[test]
fn contains_finds_every_spelling_and_not_replaced_text() {
    let app = spawn_app();
    let (_, view) = title_grid(&app);
    app.add_records(
        &view,
        titled(&[
            ("k1", "Kelvin \u{212A}"),
            ("k2", "НАСТРОЙКИ сети"),
            ("k3", "открыть настройки"),
            ("k4", "İstanbul"),
            ("k5", "istanbul"),
        ]),
    );
    let cases: &[Case] = &[
        ("title", "contains", json!("kelvin k"), &["k1"]),
        ("title", "contains", json!("НаСтРоЙкИ"), &["k2", "k3"]),
        ("title", "contains", json!("ISTANBUL"), &["k5"]),
        ("title", "contains", json!("i\u{307}stanbul"), &["k4"]),
        ("title", "notContains", json!("настройки"), &["k1", "k4", "k5"]),
    ];
    check(&app, &view, cases);
    app.patch(
        &format!("/v1/views/{view}/records"),
        &json!([{"id": "k3", "cells": [{"columnId": "title", "value": "сеть"}]}]),
    )
    .assert_status(200);
    check(&app, &view, &[("title", "contains", json!("настройки"), &["k2"])]);
}
