//! The published glossaries: every glossary with its entries, as the supervisor last
//! committed them, read by handlers without a round trip through the supervisor (term listing,
//! export, lookup). Written only by the supervisor, after a change set is durable, so a write
//! acknowledged is a write every later read sees.
//!
//! A [`Published`] glossary is immutable: its entries are an `imbl::OrdMap` (a change makes a
//! new glossary sharing the unchanged parts), and it caches the term matchers built for it
//! (`lookup::Matcher`, one per language asked for, built on the first lookup).
//!
//! Also the layout of a glossary in the catalogue store: the glossary entity, and its entries
//! in chunks of [`CHUNK_ENTRIES`] consecutive entry ids (`<glossary>/<chunk>`), so a change
//! rewrites only the chunks it touches and a 100k-entry glossary is a few hundred entities.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::lookup::Matcher;
use super::Glossary;
use crate::io::glossary::{Concept, LangCode};

/// Entry ids per stored chunk.
pub const CHUNK_ENTRIES: u64 = 256;
/// Matchers cached per glossary (languages asked for); the cache is emptied past it.
const MAX_MATCHERS: usize = 32;

/// A glossary's entries by id.
pub type Entries = imbl::OrdMap<u64, Concept>;

/// One glossary as committed.
#[derive(Debug)]
pub struct Published {
    pub glossary: Glossary,
    pub entries: Entries,
    matchers: Mutex<HashMap<LangCode, Arc<Matcher>>>,
}

impl Published {
    pub fn new(glossary: Glossary, entries: Entries) -> Published {
        Published { glossary, entries, matchers: Mutex::default() }
    }

    /// The matcher of the terms a text in `lang` uses (built on first use, then cached).
    pub fn matcher(&self, lang: &LangCode) -> Arc<Matcher> {
        let cached = self.matchers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(found) = cached.get(lang) {
            return found.clone();
        }
        drop(cached);
        let built = Arc::new(Matcher::build(&self.entries, lang));
        let mut cached = self.matchers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if cached.len() >= MAX_MATCHERS {
            cached.clear();
        }
        cached.insert(lang.clone(), built.clone());
        built
    }
}

/// The glossaries of every company, by id.
#[derive(Debug, Default)]
pub struct GlossaryIndex {
    glossaries: RwLock<BTreeMap<u64, Arc<Published>>>,
    /// The last glossary id handed out.
    last_id: AtomicU64,
}

impl GlossaryIndex {
    pub fn get(&self, id: u64) -> Option<Arc<Published>> {
        self.read().get(&id).cloned()
    }

    /// Every glossary, in id (creation) order.
    pub fn all(&self) -> Vec<Arc<Published>> {
        self.read().values().cloned().collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<u64, Arc<Published>>> {
        self.glossaries.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<u64, Arc<Published>>> {
        self.glossaries.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(in crate::catalog) fn publish(&self, published: Published) -> Arc<Published> {
        let published = Arc::new(published);
        self.write().insert(published.glossary.id, published.clone());
        published
    }

    pub(in crate::catalog) fn remove(&self, id: u64) {
        self.write().remove(&id);
    }

    pub(super) fn remove_company(&self, company: crate::ids::CompanyId) {
        self.write().retain(|_, g| g.glossary.company_id != company);
    }

    pub(in crate::catalog) fn last_id(&self) -> u64 {
        self.last_id.load(Ordering::SeqCst)
    }

    pub(in crate::catalog) fn set_last_id(&self, id: u64) {
        self.last_id.store(id, Ordering::SeqCst);
    }
}

/// The catalogue id of the chunk holding entry `entry` of glossary `glossary`.
pub fn chunk_key(glossary: u64, chunk: u64) -> String {
    format!("{glossary:020}/{chunk:012}")
}

/// The chunk an entry id is in.
pub fn chunk_of(entry: u64) -> u64 {
    entry / CHUNK_ENTRIES
}

/// The glossary and chunk numbers of a chunk's catalogue id.
pub fn parse_chunk_key(key: &str) -> Option<(u64, u64)> {
    let (glossary, chunk) = key.split_once('/')?;
    Some((glossary.parse().ok()?, chunk.parse().ok()?))
}

/// The entries of chunk `chunk` (empty when it has none left).
pub fn chunk_entries(entries: &Entries, chunk: u64) -> Vec<Concept> {
    let start = chunk * CHUNK_ENTRIES;
    entries.range(start..start + CHUNK_ENTRIES).map(|(_, e)| e.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_keys_sort_and_parse_back() {
        assert!(chunk_key(2, 10) < chunk_key(2, 11) && chunk_key(2, 999) < chunk_key(10, 0));
        assert_eq!(parse_chunk_key(&chunk_key(7, 3)), Some((7, 3)));
        assert_eq!(parse_chunk_key("x/1"), None);
        assert_eq!((chunk_of(255), chunk_of(256)), (0, 1));
    }
}
