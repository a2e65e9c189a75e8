//! The request kinds a load mixes, and how each one is drawn at random from a workload: which
//! page, which filter, which record and which new text. Building requests only; sending them is
//! the runner's job.

use std::str::FromStr;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::{json, Value};

use crate::data::{self, Language, EXTRA_LANGUAGES, LANGUAGES};

/// A kind of request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scenario {
    /// `GET /v1/views/<id>/records` at a random offset.
    Page,
    /// The same with a filter (`query`) and a sort, first page of the result.
    Query,
    /// `PATCH /v1/views/<id>/records/<recordId>` of the source cell: its targets turn outOfDate.
    Edit,
    /// `PATCH /v1/views/<id>/records` of many records at once (a target and a number).
    Bulk,
    /// A heavy filter: an unanchored regexp of two random words of a target language (or the
    /// source), which no index narrows, over every record.
    Regexp,
}

impl Scenario {
    pub const ALL: [Scenario; 5] =
        [Scenario::Page, Scenario::Query, Scenario::Edit, Scenario::Bulk, Scenario::Regexp];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Page => "page",
            Scenario::Query => "query",
            Scenario::Edit => "edit",
            Scenario::Bulk => "bulk",
            Scenario::Regexp => "regexp",
        }
    }
}

impl FromStr for Scenario {
    type Err = String;

    fn from_str(name: &str) -> Result<Scenario, String> {
        Scenario::ALL.into_iter().find(|s| s.name() == name).ok_or_else(|| {
            format!("unknown scenario {name:?}; the scenarios are page, query, edit, bulk, regexp")
        })
    }
}

/// A filtered, sorted read; each needs some columns of the seeded grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadQuery {
    /// A workflow state, sorted by the number column.
    StateSortedByCount,
    /// Two record paths, sorted by the date column.
    PathsSortedByDue,
    /// A word of the source text (case-insensitive), sorted by the source.
    WordSortedBySource,
    /// A range of the number column, sorted by it.
    CountRange,
    /// Translated and final, latest changes first.
    FinalTranslatedByTime,
}

impl ReadQuery {
    const ALL: [ReadQuery; 5] = [
        ReadQuery::StateSortedByCount,
        ReadQuery::PathsSortedByDue,
        ReadQuery::WordSortedBySource,
        ReadQuery::CountRange,
        ReadQuery::FinalTranslatedByTime,
    ];

    /// Column ids it reads besides the source.
    fn needs(self) -> &'static [&'static str] {
        match self {
            ReadQuery::StateSortedByCount => &["state", "count"],
            ReadQuery::PathsSortedByDue => &["due"],
            ReadQuery::WordSortedBySource => &[],
            ReadQuery::CountRange => &["count"],
            ReadQuery::FinalTranslatedByTime => &["deDE", "final"],
        }
    }

    /// `(query, sort)` with random values.
    fn draw(self, rng: &mut StdRng, source: &str) -> (String, String) {
        let (query, sort) = match self {
            ReadQuery::StateSortedByCount => {
                let state = data::STATES.choose(rng).expect("states");
                (json!({"state": {"=": state}}), json!({"count": "desc"}))
            }
            ReadQuery::PathsSortedByDue => {
                let path = |rng: &mut StdRng| {
                    let area = data::AREAS.choose(rng).expect("areas");
                    let section = data::SECTIONS.choose(rng).expect("sections");
                    format!("{area}/{section}")
                };
                (json!({"_path": {"in": [path(rng), path(rng)]}}), json!({"due": "asc"}))
            }
            ReadQuery::WordSortedBySource => {
                let word = data::EN.choose(rng).expect("words").to_uppercase();
                (json!({source: {"contains": word}}), json!({source: "asc"}))
            }
            ReadQuery::CountRange => {
                let low = rng.gen_range(0..480);
                (json!({"count": {"between": [low, low + 20]}}), json!({"count": "asc"}))
            }
            ReadQuery::FinalTranslatedByTime => (
                json!({"deDE": {"isNotEmpty": null}, "final": {"=": true}}),
                json!({"_lastModifiedTime": "desc"}),
            ),
        };
        (query.to_string(), sort.to_string())
    }
}

/// What the requests are drawn from: a view, its record ids and the columns to read and write.
#[derive(Debug, Clone)]
pub struct Workload {
    pub view: String,
    pub ids: Vec<String>,
    /// The source language column (or the first text column).
    pub source: String,
    /// The target column bulk updates write, when the view has one.
    pub target: Option<String>,
    /// Whether the view has the number column `count` (bulk updates write it too).
    pub has_count: bool,
    pub queries: Vec<ReadQuery>,
    pub page_size: usize,
    pub bulk_size: usize,
}

/// One request ready to send: method, path with query string, JSON body.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub method: reqwest::Method,
    pub path: String,
    pub body: Option<Value>,
}

impl Workload {
    /// The filtered reads this view's columns allow.
    pub fn read_queries(columns: &[String]) -> Vec<ReadQuery> {
        ReadQuery::ALL
            .into_iter()
            .filter(|q| q.needs().iter().all(|c| columns.iter().any(|have| have == c)))
            .collect()
    }

    pub fn prepare(&self, scenario: Scenario, rng: &mut StdRng) -> Prepared {
        match scenario {
            Scenario::Page => {
                let last = self.ids.len().saturating_sub(self.page_size);
                let page = json!({"offset": rng.gen_range(0..=last), "limit": self.page_size});
                self.get(&[("page", &page.to_string())])
            }
            Scenario::Query => {
                let read = *self.queries.choose(rng).expect("a workload has a read query");
                let (query, sort) = read.draw(rng, &self.source);
                let page = json!({"offset": 0, "limit": self.page_size}).to_string();
                self.get(&[("query", &query), ("sort", &sort), ("page", &page)])
            }
            Scenario::Edit => {
                let id = self.ids.choose(rng).expect("a workload has records");
                let text = data::sentence(rng, &LANGUAGES[0]);
                Prepared {
                    method: reqwest::Method::PATCH,
                    path: format!("/v1/views/{}/records/{}", encode(&self.view), encode(id)),
                    body: Some(json!({"cells": [{"columnId": self.source, "value": text}]})),
                }
            }
            Scenario::Regexp => {
                let column = self.target.as_deref().unwrap_or(&self.source);
                let language = language_of(column);
                let mut word = || escape_regex(language.words.choose(rng).expect("words"));
                let pattern = format!("{}.+{}", word(), word());
                let query = json!({column: {"regexp": pattern}}).to_string();
                let page = json!({"offset": 0, "limit": self.page_size}).to_string();
                self.get(&[("query", &query), ("page", &page)])
            }
            Scenario::Bulk => {
                let column = self.target.as_deref().unwrap_or(&self.source);
                let language = language_of(column);
                let records: Vec<Value> = self
                    .ids
                    .choose_multiple(rng, self.bulk_size)
                    .map(|id| {
                        let mut cells = vec![
                            json!({"columnId": column, "value": data::sentence(rng, language)}),
                        ];
                        if self.has_count {
                            cells
                                .push(json!({"columnId": "count", "value": rng.gen_range(0..500)}));
                        }
                        json!({"id": id, "cells": cells})
                    })
                    .collect();
                Prepared {
                    method: reqwest::Method::PATCH,
                    path: format!("/v1/views/{}/records", encode(&self.view)),
                    body: Some(Value::Array(records)),
                }
            }
        }
    }

    fn get(&self, params: &[(&str, &str)]) -> Prepared {
        let query: Vec<String> =
            params.iter().map(|(name, value)| format!("{name}={}", encode(value))).collect();
        Prepared {
            method: reqwest::Method::GET,
            path: format!("/v1/views/{}/records?{}", encode(&self.view), query.join("&")),
            body: None,
        }
    }
}

/// The word list of a language column id, English for any other column.
/// `text` with every regexp metacharacter escaped.
fn escape_regex(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn language_of(column: &str) -> &'static Language {
    LANGUAGES
        .iter()
        .chain(EXTRA_LANGUAGES.iter())
        .find(|l| l.code == column)
        .unwrap_or(&LANGUAGES[0])
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn workload() -> Workload {
        let columns: Vec<String> =
            data::columns(12).iter().map(|c| c["id"].as_str().expect("id").to_owned()).collect();
        Workload {
            view: "v1".into(),
            ids: (0..500).map(|n| format!("r/{n}")).collect(),
            source: "enUS".into(),
            target: Some("deDE".into()),
            has_count: true,
            queries: Workload::read_queries(&columns),
            page_size: 100,
            bulk_size: 10,
        }
    }

    #[test]
    fn requests_are_well_formed() {
        let workload = workload();
        assert_eq!(workload.queries.len(), 5);
        let mut rng = StdRng::seed_from_u64(7);
        let edit = workload.prepare(Scenario::Edit, &mut rng);
        assert!(edit.path.starts_with("/v1/views/v1/records/r%2F"), "{}", edit.path);
        let bulk = workload.prepare(Scenario::Bulk, &mut rng);
        assert_eq!(bulk.body.as_ref().and_then(Value::as_array).map(Vec::len), Some(10));
        let query = workload.prepare(Scenario::Query, &mut rng);
        assert!(query.path.contains("query=%7B") && query.path.contains("&sort="));
        assert_eq!(encode("a b/é"), "a%20b%2F%C3%A9");
        let heavy = workload.prepare(Scenario::Regexp, &mut rng);
        assert!(heavy.path.contains("regexp") && heavy.path.contains("deDE"), "{}", heavy.path);
    }

    #[test]
    fn an_escaped_word_matches_itself_only() {
        for word in ["a.b", "(x)", "1+1", "[-]", "^$", "a|b", "c#~&"] {
            let pattern = regex::Regex::new(&format!("^{}$", escape_regex(word))).expect("valid");
            assert!(pattern.is_match(word), "{word}");
            assert!(!pattern.is_match(&format!("{word}!")), "{word}");
        }
        assert!(!regex::Regex::new(&escape_regex("a.b")).expect("valid").is_match("axb"));
    }

    #[test]
    fn a_view_without_the_seeded_columns_keeps_the_source_query() {
        assert_eq!(Workload::read_queries(&["title".into()]), vec![ReadQuery::WordSortedBySource]);
    }
}
