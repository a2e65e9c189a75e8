//! Where translation memory segments live: one sled database (`<data dir>/transmems`), two
//! trees per memory — `tm/<id>` the segments by `SegmentKey` (bincode values), `tm/<id>/feed`
//! the positions of the grid branches feeding it — and each open memory's lookup index in
//! memory, built from its tree when the memory is first used (and for every memory at start).
//!
//! A write goes to the tree as one atomic batch (with the feed position it moves, if any) and
//! is flushed before it is acknowledged; only then does the index take it. Writes to one
//! memory are serialized (`Memory::writer`); lookups read the index under a shared lock.
//! Blocking: every call here does disk I/O or CPU work proportional to the memory, so callers
//! run them on the blocking pool, never on an HTTP worker or an actor.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use dashmap::DashMap;
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

use super::index::{Match, MemoryIndex};
use super::segment::{source_hash, Segment, SegmentKey};
use super::text::{language_key, normalize};
use crate::error::{Coded, ErrorCode};

/// Most segments one memory holds.
pub const MAX_SEGMENTS: usize = 2_000_000;

/// Why a segment store call failed.
#[derive(Debug, thiserror::Error)]
pub enum TmStoreError {
    #[error("A translation memory holds at most {MAX_SEGMENTS} segments; this write would make {would}.")]
    TooManySegments { would: usize },
    #[error("The translation memory store failed: {0}")]
    Storage(#[from] sled::Error),
}

impl Coded for TmStoreError {
    fn code(&self) -> ErrorCode {
        match self {
            TmStoreError::TooManySegments { .. } => ErrorCode::BadRequest,
            TmStoreError::Storage(_) => ErrorCode::ServiceUnavailable,
        }
    }
}

/// What a write did (an import's and a segment batch's answer: `{"added", "updated"}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Written {
    pub added: usize,
    pub updated: usize,
}

/// One memory: its trees and its index.
#[derive(Debug)]
pub struct Memory {
    segments: sled::Tree,
    feed: sled::Tree,
    index: RwLock<MemoryIndex>,
    /// Held by the one write in progress.
    writer: Mutex<()>,
}

/// Every memory's segments.
#[derive(Debug)]
pub struct SegmentStore {
    db: sled::Db,
    open: DashMap<String, Arc<Memory>>,
    /// One memory opened (its index built) at a time.
    opening: Mutex<()>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SegmentStore {
    pub fn new(db: sled::Db) -> SegmentStore {
        SegmentStore { db, open: DashMap::new(), opening: Mutex::new(()) }
    }

    /// Memory `id`'s segments, its index built from its tree on first use.
    pub fn memory(&self, id: &str) -> Result<Arc<Memory>, TmStoreError> {
        if let Some(memory) = self.open.get(id) {
            return Ok(memory.clone());
        }
        let _one = lock(&self.opening);
        if let Some(memory) = self.open.get(id) {
            return Ok(memory.clone());
        }
        let memory = Arc::new(Memory::open(&self.db, id)?);
        self.open.insert(id.to_owned(), memory.clone());
        Ok(memory)
    }

    /// Deletes memory `id`'s trees.
    pub fn drop_memory(&self, id: &str) -> Result<(), TmStoreError> {
        let _one = lock(&self.opening);
        self.open.remove(id);
        self.db.drop_tree(format!("tm/{id}"))?;
        self.db.drop_tree(format!("tm/{id}/feed"))?;
        self.db.flush()?;
        Ok(())
    }

    /// The trees of memories the catalogue no longer has (deleted while the server stopped
    /// before their trees were): dropped.
    pub fn sweep(&self, known: &dyn Fn(&str) -> bool) {
        let names: Vec<String> = self
            .db
            .tree_names()
            .into_iter()
            .filter_map(|n| String::from_utf8(n.to_vec()).ok())
            .filter_map(|n| {
                n.strip_prefix("tm/").map(|id| id.split('/').next().unwrap_or(id).to_owned())
            })
            .collect();
        for id in names.into_iter().filter(|id| !known(id)) {
            if let Err(err) = self.drop_memory(&id) {
                tracing::warn!(memory = %id, error = %err, "dropping a stray memory failed");
            }
        }
    }
}

impl Memory {
    fn open(db: &sled::Db, id: &str) -> Result<Memory, TmStoreError> {
        let started = std::time::Instant::now();
        let segments = db.open_tree(format!("tm/{id}"))?;
        let feed = db.open_tree(format!("tm/{id}/feed"))?;
        let mut index = MemoryIndex::default();
        for entry in segments.iter() {
            let (key, value) = entry?;
            match Segment::decode(&value) {
                Ok(segment) => index_segment(&mut index, &segment),
                Err(err) => {
                    tracing::error!(memory = %id, key = %hex::encode(&key), error = %err, "an unreadable segment was skipped")
                }
            }
        }
        tracing::info!(memory = %id, segments = index.len(), ms = started.elapsed().as_millis() as u64, "translation memory loaded");
        Ok(Memory { segments, feed, index: RwLock::new(index), writer: Mutex::new(()) })
    }

    /// Segments held.
    pub fn len(&self) -> usize {
        self.index.read().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds the segments, or updates those whose source is already held in their language pair
    /// (keeping its creation time and user), with feed position `position` of a branch, in one
    /// flushed batch; refused whole past `MAX_SEGMENTS`.
    pub fn write(
        &self,
        segments: Vec<Segment>,
        position: Option<(&str, u32)>,
    ) -> Result<Written, TmStoreError> {
        let _one = lock(&self.writer);
        let mut batch: HashMap<Vec<u8>, Segment> = HashMap::with_capacity(segments.len());
        let mut written = Written::default();
        for mut segment in segments {
            let key = SegmentKey::of(&segment).0;
            if let Some(earlier) = batch.get(&key) {
                (segment.created_ms, segment.created_by) =
                    (earlier.created_ms, earlier.created_by.clone());
            } else if let Some(stored) = self.segments.get(&key)? {
                if let Ok(stored) = Segment::decode(&stored) {
                    (segment.created_ms, segment.created_by) =
                        (stored.created_ms, stored.created_by);
                }
                written.updated += 1;
            } else {
                written.added += 1;
            }
            batch.insert(key, segment);
        }
        let would = self.len() + written.added;
        if would > MAX_SEGMENTS {
            return Err(TmStoreError::TooManySegments { would });
        }
        self.persist(&batch, position)?;
        self.segments.flush()?;
        let mut index = self.index.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        for segment in batch.values() {
            index_segment(&mut index, segment);
        }
        Ok(written)
    }

    /// Writes the batch (with the feed position, atomically with it) to the trees.
    fn persist(
        &self,
        batch: &HashMap<Vec<u8>, Segment>,
        position: Option<(&str, u32)>,
    ) -> Result<(), TmStoreError> {
        let mut segments = sled::Batch::default();
        for (key, segment) in batch {
            segments.insert(key.as_slice(), segment.encode());
        }
        let Some((branch, at)) = position else {
            return Ok(self.segments.apply_batch(segments)?);
        };
        let mut feed = sled::Batch::default();
        feed.insert(branch.as_bytes(), &at.to_le_bytes());
        (&self.segments, &self.feed)
            .transaction(|(segment_tree, feed_tree)| {
                segment_tree.apply_batch(&segments)?;
                feed_tree.apply_batch(&feed)?;
                Ok::<(), ConflictableTransactionError<()>>(())
            })
            .map_err(|e| match e {
                TransactionError::Storage(e) => e,
                TransactionError::Abort(()) => {
                    sled::Error::Unsupported("transaction aborted".into())
                }
            })?;
        Ok(())
    }

    /// Erases every segment (the feed positions stay: what the grids fed before is not fed
    /// again).
    pub fn clear(&self) -> Result<(), TmStoreError> {
        let _one = lock(&self.writer);
        self.segments.clear()?;
        self.segments.flush()?;
        *self.index.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
            MemoryIndex::default();
        Ok(())
    }

    /// Makes the memory hold exactly `segments` and, for each branch named, the feed position
    /// given (a cluster's compaction, `api::transmems::replica`): segments it lacks are added,
    /// those it holds are overwritten, the others removed, in one batch; the index is rebuilt
    /// aside and swapped in, so a lookup meanwhile sees the memory before or after, never in
    /// between. Refused whole past `MAX_SEGMENTS`.
    pub fn replace(
        &self,
        segments: &[Segment],
        positions: &[(String, u32)],
    ) -> Result<(), TmStoreError> {
        if segments.len() > MAX_SEGMENTS {
            return Err(TmStoreError::TooManySegments { would: segments.len() });
        }
        let _one = lock(&self.writer);
        let mut batch = sled::Batch::default();
        let mut kept = HashSet::with_capacity(segments.len());
        let mut index = MemoryIndex::default();
        for segment in segments {
            let key = SegmentKey::of(segment).0;
            batch.insert(key.as_slice(), segment.encode());
            index_segment(&mut index, segment);
            kept.insert(key);
        }
        for key in self.segments.iter().keys() {
            let key = key?;
            if !kept.contains(key.as_ref()) {
                batch.remove(key);
            }
        }
        self.segments.apply_batch(batch)?;
        for (branch, at) in positions {
            self.feed.insert(branch.as_bytes(), &at.to_le_bytes())?;
        }
        self.segments.flush()?;
        self.feed.flush()?;
        *self.index.write().unwrap_or_else(std::sync::PoisonError::into_inner) = index;
        Ok(())
    }

    /// Every branch's feed position.
    pub fn positions(&self) -> Result<Vec<(String, u32)>, TmStoreError> {
        let mut positions = Vec::new();
        for entry in self.feed.iter() {
            let (branch, at) = entry?;
            let (Ok(branch), Ok(at)) =
                (String::from_utf8(branch.to_vec()), <[u8; 4]>::try_from(at.as_ref()))
            else {
                continue;
            };
            positions.push((branch, u32::from_le_bytes(at)));
        }
        Ok(positions)
    }

    /// The best matches of `text` from `source_lang` into `target_lang` (`index` has the rules).
    pub fn lookup(
        &self,
        text: &str,
        source_lang: &str,
        target_lang: &str,
        min_score: u8,
        limit: usize,
    ) -> Vec<Match> {
        let pair = (language_key(source_lang), language_key(target_lang));
        let hash = source_hash(&normalize(text));
        let index = self.index.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        index.lookup(&pair, &hash, text, min_score, limit)
    }

    /// Every segment in key order (the segments of one source together), unreadable ones
    /// skipped.
    pub fn scan(&self) -> impl Iterator<Item = Result<(SegmentKey, Segment), TmStoreError>> + '_ {
        self.segments.iter().filter_map(|entry| match entry {
            Err(err) => Some(Err(err.into())),
            Ok((key, value)) => {
                Segment::decode(&value).ok().map(|s| Ok((SegmentKey(key.to_vec()), s)))
            }
        })
    }

    /// The feed position of branch `branch` (`None`: it never fed this memory).
    pub fn position(&self, branch: &str) -> Result<Option<u32>, TmStoreError> {
        Ok(self
            .feed
            .get(branch.as_bytes())?
            .and_then(|v| <[u8; 4]>::try_from(v.as_ref()).ok())
            .map(u32::from_le_bytes))
    }

    /// Records branch `branch`'s feed position (flushed).
    pub fn set_position(&self, branch: &str, at: u32) -> Result<(), TmStoreError> {
        self.feed.insert(branch.as_bytes(), &at.to_le_bytes())?;
        self.feed.flush()?;
        Ok(())
    }
}

fn index_segment(index: &mut MemoryIndex, segment: &Segment) {
    let pair = (language_key(&segment.source.lang), language_key(&segment.target.lang));
    let hash = source_hash(&normalize(&segment.source.text));
    index.upsert(pair, hash, &segment.source.text, &segment.target.text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tm::segment::{Origin, Side};

    fn segment(source: &str, target: &str, by: &str) -> Segment {
        let side =
            |lang: &str, text: &str| Side { lang: lang.into(), text: text.into(), markup: None };
        Segment {
            source: side("en-US", source),
            target: side("fr-FR", target),
            created_ms: 1,
            created_by: by.into(),
            changed_ms: 2,
            changed_by: by.into(),
            origin: Origin::Api,
            props: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn writes_survive_reopening_and_updates_keep_the_creation() {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let store = SegmentStore::new(sled::open(dir.path()).expect("sled"));
            let memory = store.memory("m").expect("opens");
            let written =
                memory.write(vec![segment("Save", "Enregistrer", "a")], None).expect("written");
            assert_eq!(written, Written { added: 1, updated: 0 });
            let written = memory
                .write(
                    vec![segment("Save ", "Sauver", "b"), segment("Open", "Ouvrir", "b")],
                    Some(("g", 7)),
                )
                .expect("written");
            assert_eq!(written, Written { added: 1, updated: 1 });
        }
        let store = SegmentStore::new(sled::open(dir.path()).expect("sled"));
        let memory = store.memory("m").expect("opens");
        assert_eq!(memory.len(), 2);
        assert_eq!(memory.position("g").expect("read"), Some(7));
        let found = memory.lookup("Save", "enUS", "frFR", 70, 5);
        assert_eq!(found[0].target, "Sauver");
        let stored: Vec<Segment> = memory.scan().map(|e| e.expect("readable").1).collect();
        let save = stored.iter().find(|s| s.source.text == "Save ").expect("stored");
        assert_eq!((save.created_by.as_str(), save.changed_by.as_str()), ("a", "b"));
        memory.clear().expect("cleared");
        assert!(memory.is_empty() && memory.scan().next().is_none());
        assert_eq!(memory.position("g").expect("read"), Some(7));
        store.drop_memory("m").expect("dropped");
    }

    #[test]
    fn a_replace_leaves_exactly_the_state_given() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SegmentStore::new(sled::open(dir.path()).expect("sled"));
        let memory = store.memory("m").expect("opens");
        let old = vec![segment("Save", "Enregistrer", "a"), segment("Quit", "Quitter", "a")];
        memory.write(old, Some(("g", 3))).expect("written");
        let state = vec![segment("Save", "Sauver", "b"), segment("Open", "Ouvrir", "b")];
        let positions = vec![("g".to_owned(), 9), ("h".to_owned(), 2)];
        memory.replace(&state, &positions).expect("replaced");
        assert_eq!(memory.len(), 2);
        assert_eq!(memory.lookup("Save", "enUS", "frFR", 100, 5)[0].target, "Sauver");
        assert!(memory.lookup("Quit", "enUS", "frFR", 100, 5).is_empty());
        let mut stored: Vec<String> =
            memory.scan().map(|e| e.expect("readable").1.source.text).collect();
        stored.sort();
        assert_eq!(stored, ["Open", "Save"]);
        let mut held = memory.positions().expect("read");
        held.sort();
        assert_eq!(held, positions);
        // The same state again changes nothing.
        memory.replace(&state, &positions).expect("replaced");
        assert_eq!(memory.len(), 2);
    }
}
