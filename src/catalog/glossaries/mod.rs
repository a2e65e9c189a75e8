//! Glossaries (issue 22): a company's glossaries, each linked to projects (and databases of
//! them) and holding concept entries (terms by language, a definition, a note), kept by the
//! supervisor and persisted through the catalogue's journal like every entity: the
//! [`Glossary`] entity, its entries in chunks (`index`), and the last glossary id handed out.
//!
//! Owns the rules: who may see and change a glossary (`access`), the bounds
//! ([`MAX_GLOSSARIES_PER_COMPANY`], [`MAX_ENTRIES`], [`MAX_LANGS`]), how an import merges into
//! the entries (`merge`), and the published copy handlers read (`index`) and the term lookup
//! (`lookup`). It knows nothing of HTTP or of file formats (`io::glossary` reads those).

mod access;
pub mod error;
pub mod index;
pub mod lookup;
pub mod merge;
mod ops;

use serde::{Deserialize, Serialize};

use super::model::{CompanyId, ProjectId};
use super::store::{load_all, CatalogStore, EntityKind, StoreError};
use crate::io::glossary::{Concept, LangCode};
use index::{parse_chunk_key, Entries, GlossaryIndex, Published};

pub use access::{manages, visible};
pub use error::GlossaryRefused;
pub use merge::{ImportOption, ImportSummary};
pub use ops::{find, prepare_import, PreparedImport};

/// Glossaries one company may have.
pub const MAX_GLOSSARIES_PER_COMPANY: usize = 500;
/// Entries one glossary may have.
pub const MAX_ENTRIES: usize = crate::io::glossary::MAX_FILE_ENTRIES;
/// Languages one glossary may have.
pub const MAX_LANGS: usize = 200;
/// Projects one glossary may be linked to, and databases per project.
pub const MAX_LINKS: usize = 100;
/// The catalogue id of the last glossary id handed out (`EntityKind::GlossarySequence`).
const SEQUENCE_ID: &str = "last";

/// A project a glossary is linked to, with some of its databases (none: the whole project).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GlossaryProject {
    pub project_id: ProjectId,
    #[serde(default)]
    pub database_ids: Vec<String>,
}

/// A glossary as the catalogue keeps it (its entries apart, in chunks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Glossary {
    pub id: u64,
    pub company_id: CompanyId,
    pub name: String,
    pub description: String,
    pub langs: Vec<LangCode>,
    pub projects: Vec<GlossaryProject>,
    pub created_time: String,
    /// The last entry id handed out.
    pub last_entry: u64,
}

impl Glossary {
    /// Its catalogue entity written.
    pub fn change(&self) -> super::store::CatalogChange {
        super::store::CatalogChange::put(EntityKind::Glossary, &self.id.to_string(), self)
    }
}

/// What a create or update asks for (checked by `ops`).
#[derive(Debug, Clone, Default)]
pub struct GlossaryFields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub langs: Option<Vec<String>>,
    pub projects: Option<Vec<GlossaryProject>>,
}

/// Loads every glossary and its entries into `index` (at start).
pub(super) fn load(store: &dyn CatalogStore, index: &GlossaryIndex) -> Result<(), StoreError> {
    let glossaries: Vec<Glossary> = load_all(store, EntityKind::Glossary)?;
    let mut entries: std::collections::HashMap<u64, Entries> = Default::default();
    for (key, json) in store.scan(EntityKind::GlossaryChunk)? {
        let corrupt = |source| StoreError::Corrupt { key: format!("glossary chunk {key}"), source };
        let chunk: Vec<Concept> = serde_json::from_slice(&json).map_err(corrupt)?;
        let Some((glossary, _)) = parse_chunk_key(&key) else { continue };
        let map = entries.entry(glossary).or_default();
        for entry in chunk {
            if let Some(id) = entry.id {
                map.insert(id, entry);
            }
        }
    }
    let last: Vec<u64> = load_all(store, EntityKind::GlossarySequence)?;
    let highest = glossaries.iter().map(|g| g.id).max().unwrap_or(0);
    index.set_last_id(last.into_iter().max().unwrap_or(0).max(highest));
    for glossary in glossaries {
        let map = entries.remove(&glossary.id).unwrap_or_default();
        index.publish(Published::new(glossary, map));
    }
    Ok(())
}

/// The languages `entries` use that `langs` lacks, added to it in first-use order.
fn extend_langs<'a>(langs: &mut Vec<LangCode>, entries: impl IntoIterator<Item = &'a Concept>) {
    for entry in entries {
        for lang in entry.terms.keys() {
            if !langs.contains(lang) {
                langs.push(lang.clone());
            }
        }
    }
}
