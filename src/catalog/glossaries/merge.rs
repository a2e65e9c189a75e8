//! How imported entries merge into a glossary's (`importOption` of `POST
//! /v1/glossaries/{id}/import`).
//!
//! An imported entry matches an existing one when it carries that entry's id (a file gridd
//! exported), else when they share a term in one language (compared lower-cased); entries
//! added earlier in the same import count, so a file's duplicates merge. Then:
//! - `ADD`: entries that match none are added; matching ones are skipped.
//! - `UPDATE` (the default): as `ADD`, and a matching entry is updated: each language of the
//!   imported entry replaces that language's terms, its definition and note (when given)
//!   replace the existing ones; other languages stay.
//! - `UPDATE_ONLY`: matching entries are updated; the others are skipped.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::index::Entries;
use crate::io::glossary::{Concept, LangCode};

/// The OpenAPI's `ImportOption`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ImportOption {
    Add,
    #[default]
    Update,
    UpdateOnly,
}

impl ImportOption {
    /// The query parameter (absent or empty is `UPDATE`); the error is a 400 message.
    pub fn parse(value: Option<&str>) -> Result<ImportOption, String> {
        match value.map(str::trim).unwrap_or_default().to_ascii_uppercase().as_str() {
            "" | "UPDATE" => Ok(ImportOption::Update),
            "ADD" => Ok(ImportOption::Add),
            "UPDATE_ONLY" => Ok(ImportOption::UpdateOnly),
            _ => Err("importOption must be ADD, UPDATE or UPDATE_ONLY.".into()),
        }
    }
}

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportSummary {
    pub added: usize,
    pub updated: usize,
    pub skipped: usize,
}

/// The merged entries, the ids changed, and the summary.
#[derive(Debug)]
pub struct Merged {
    pub entries: Entries,
    pub touched: BTreeSet<u64>,
    pub last_entry: u64,
    pub summary: ImportSummary,
}

/// Finds existing entries by their terms.
struct TermKeys(HashMap<(LangCode, String), u64>);

impl TermKeys {
    fn new(entries: &Entries) -> TermKeys {
        let mut keys = TermKeys(HashMap::with_capacity(entries.len() * 2));
        for (id, entry) in entries {
            keys.add(*id, entry);
        }
        keys
    }

    fn add(&mut self, id: u64, entry: &Concept) {
        for (lang, terms) in &entry.terms {
            for term in terms {
                self.0.entry((lang.clone(), term.to_lowercase())).or_insert(id);
            }
        }
    }

    fn find(&self, entry: &Concept) -> Option<u64> {
        entry.terms.iter().find_map(|(lang, terms)| {
            terms.iter().find_map(|t| self.0.get(&(lang.clone(), t.to_lowercase())).copied())
        })
    }
}

/// Merges `imported` into `entries` (ids after `last_entry` for new ones) under `option`. The
/// error (an updated entry over a bound) names the imported entry, 1-based.
pub fn merge(
    entries: &Entries,
    last_entry: u64,
    imported: Vec<Concept>,
    option: ImportOption,
) -> Result<Merged, String> {
    let mut merged = Merged {
        entries: entries.clone(),
        touched: BTreeSet::new(),
        last_entry,
        summary: ImportSummary::default(),
    };
    let mut keys = TermKeys::new(entries);
    for (n, mut entry) in imported.into_iter().enumerate() {
        let by_id = entry.id.filter(|id| merged.entries.contains_key(id));
        let found = by_id.or_else(|| keys.find(&entry));
        match (found, option) {
            (Some(_), ImportOption::Add) | (None, ImportOption::UpdateOnly) => {
                merged.summary.skipped += 1;
            }
            (Some(id), ImportOption::Update | ImportOption::UpdateOnly) => {
                let mut current = merged.entries.get(&id).cloned().unwrap_or_default();
                current.update(entry);
                current.check().map_err(|e| format!("entry {}: {e}", n + 1))?;
                keys.add(id, &current);
                merged.entries.insert(id, current);
                merged.touched.insert(id);
                merged.summary.updated += 1;
            }
            (None, ImportOption::Add | ImportOption::Update) => {
                merged.last_entry += 1;
                let id = merged.last_entry;
                entry.id = Some(id);
                keys.add(id, &entry);
                merged.entries.insert(id, entry);
                merged.touched.insert(id);
                merged.summary.added += 1;
            }
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concept(id: Option<u64>, pairs: &[(&str, &str)], definition: Option<&str>) -> Concept {
        let mut c = Concept { id, definition: definition.map(str::to_owned), ..Concept::default() };
        for (lang, term) in pairs {
            c.add_term(LangCode::parse(lang).expect("lang"), term);
        }
        c
    }

    fn existing() -> Entries {
        let mut e = Entries::new();
        e.insert(1, concept(Some(1), &[("en", "Quest"), ("fr", "quête")], Some("old")));
        e
    }

    #[test]
    fn update_matches_by_term_and_adds_the_rest() {
        let imported = vec![
            concept(None, &[("en", "quest"), ("de", "Quest")], Some("new")),
            concept(None, &[("en", "ally")], None),
            concept(None, &[("en", "Ally")], Some("dup")),
        ];
        let m = merge(&existing(), 1, imported, ImportOption::Update).expect("merge");
        assert_eq!(m.summary, ImportSummary { added: 1, updated: 2, skipped: 0 });
        let quest = &m.entries[&1];
        assert_eq!(quest.terms.len(), 3);
        assert_eq!(quest.definition.as_deref(), Some("new"));
        assert_eq!(m.entries[&2].definition.as_deref(), Some("dup"));
        assert_eq!(m.last_entry, 2);
    }

    #[test]
    fn add_and_update_only_skip_what_they_do_not_take() {
        let imported = || {
            vec![concept(Some(1), &[("en", "other")], None), concept(None, &[("en", "new")], None)]
        };
        let add = merge(&existing(), 1, imported(), ImportOption::Add).expect("merge");
        assert_eq!(add.summary, ImportSummary { added: 1, updated: 0, skipped: 1 });
        let only = merge(&existing(), 1, imported(), ImportOption::UpdateOnly).expect("merge");
        assert_eq!(only.summary, ImportSummary { added: 0, updated: 1, skipped: 1 });
        assert_eq!(only.entries[&1].terms[&LangCode::parse("en").expect("en")], vec!["other"]);
    }

    #[test]
    fn import_options_parse() {
        assert_eq!(ImportOption::parse(None), Ok(ImportOption::Update));
        assert_eq!(ImportOption::parse(Some("update_only")), Ok(ImportOption::UpdateOnly));
        assert!(ImportOption::parse(Some("MERGE")).is_err());
    }
}
