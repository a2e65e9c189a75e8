//! `CatalogStore`: where the catalogue's entities are persisted, behind a small trait, with sled
//! as the implementation.
//!
//! The tree is a materialized copy: a change set is made durable in the WAL first
//! (`catalog::journal`), then applied here atomically with the LSN of its WAL record
//! (`apply_at`), so recovery knows which change sets the tree holds. Owns no in-memory state.

use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// The tree's entry holding the LSN of the last change set applied (u64 LE); not under any
/// entity kind's prefix.
const APPLIED_LSN_KEY: &[u8] = b"meta/applied_lsn";

/// The kinds of catalogue entity, each its own key prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EntityKind {
    Company,
    Project,
    Database,
    Grid,
    Branch,
    Key,
    Task,
    Backup,
    Share,
    File,
    /// The last company and project numbers handed out (`numbering::Numbers`).
    Sequence,
    /// The cell choices of the last merge from one branch into another (`MergeResolve`).
    MergeResolve,
    /// A view's changes POSTed to a URL (`model::Webhook`).
    Webhook,
    /// One delivery attempt of a webhook (`model::DeliveryAttempt`), keyed
    /// `<hookId>/<sequence>`; the last `webhooks::LOG_LEN` of each hook are kept.
    WebhookAttempt,
    /// A glossary (`glossaries::Glossary`).
    Glossary,
    /// Consecutive entries of a glossary, keyed `<glossary>/<chunk>` (`glossaries::index`).
    GlossaryChunk,
    /// The last glossary id handed out.
    GlossarySequence,
    /// A grid's published strings (`cdns::Cdn`).
    Cdn,
    /// A translation memory's catalogue entry (`catalog::transmems::TransMem`); its segments
    /// are in `tm::store`.
    TransMem,
}

impl EntityKind {
    /// Every kind, in the order the cluster's catalogue image applies them (what an entity
    /// refers to before it). A new kind goes here too.
    pub const ALL: [EntityKind; 19] = [
        EntityKind::Sequence,
        EntityKind::Company,
        EntityKind::Project,
        EntityKind::Database,
        EntityKind::Grid,
        EntityKind::Branch,
        EntityKind::Key,
        EntityKind::Task,
        EntityKind::Backup,
        EntityKind::Share,
        EntityKind::File,
        EntityKind::MergeResolve,
        EntityKind::Webhook,
        EntityKind::WebhookAttempt,
        EntityKind::GlossarySequence,
        EntityKind::Glossary,
        EntityKind::GlossaryChunk,
        EntityKind::Cdn,
        EntityKind::TransMem,
    ];

    fn prefix(self) -> &'static str {
        match self {
            EntityKind::Company => "company/",
            EntityKind::Project => "project/",
            EntityKind::Database => "database/",
            EntityKind::Grid => "grid/",
            EntityKind::Branch => "branch/",
            EntityKind::Key => "key/",
            EntityKind::Task => "task/",
            EntityKind::Backup => "backup/",
            EntityKind::Share => "share/",
            EntityKind::File => "file/",
            EntityKind::Sequence => "sequence/",
            EntityKind::MergeResolve => "resolve/",
            EntityKind::Webhook => "webhook/",
            EntityKind::WebhookAttempt => "webhook-attempt/",
            EntityKind::Glossary => "glossary/",
            EntityKind::GlossaryChunk => "glossary-chunk/",
            EntityKind::GlossarySequence => "glossary-sequence/",
            EntityKind::Cdn => "cdn/",
            EntityKind::TransMem => "transmem/",
        }
    }
}

/// One stored entry: key and value bytes.
pub type RawEntry = (Vec<u8>, Vec<u8>);

/// One entity written or removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CatalogChange {
    Put { kind: EntityKind, id: String, json: Vec<u8> },
    Delete { kind: EntityKind, id: String },
}

impl CatalogChange {
    pub fn put<T: Serialize>(kind: EntityKind, id: &str, value: &T) -> CatalogChange {
        let json = serde_json::to_vec(value).expect("catalogue entities always serialize");
        CatalogChange::Put { kind, id: id.to_owned(), json }
    }

    pub fn delete(kind: EntityKind, id: &str) -> CatalogChange {
        CatalogChange::Delete { kind, id: id.to_owned() }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("catalogue storage failed: {0}")]
    Storage(#[from] sled::Error),
    #[error("catalogue entry {key} is unreadable: {source}")]
    Corrupt { key: String, source: serde_json::Error },
    #[error("the catalogue change could not be logged: {0}")]
    Journal(String),
}

/// Every entity of `kind` in `tree`, as raw JSON.
fn scan_tree(tree: &sled::Tree, kind: EntityKind) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
    let prefix = kind.prefix();
    tree.scan_prefix(prefix.as_bytes())
        .map(|entry| {
            let (key, value) = entry?;
            let id = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
            Ok((id, value.to_vec()))
        })
        .collect()
}

/// Persistence of catalogue entities.
pub trait CatalogStore: Send {
    /// Applies the changes atomically and flushes (for tools editing a stopped server's
    /// catalogue; the server itself uses `apply_at`).
    fn apply(&self, changes: &[CatalogChange]) -> Result<(), StoreError>;
    /// Applies the change set logged at WAL position `lsn` atomically, with that position.
    fn apply_at(&self, changes: &[CatalogChange], lsn: u64) -> Result<(), StoreError>;
    /// Every stored entity of a kind, as raw JSON.
    fn scan(&self, kind: EntityKind) -> Result<Vec<(String, Vec<u8>)>, StoreError>;
    /// Every entry (for the catalogue's image) and the LSN of the last change set applied.
    fn entries(&self) -> Result<(Vec<RawEntry>, u64), StoreError>;
    /// `scan` from another thread: what it reads is at least as new as the store when this was
    /// called (the cluster's catalogue image is made off the supervisor with it).
    fn scanner(&self) -> Scanner;
}

/// `CatalogStore::scan` for another thread.
pub type Scanner = Box<dyn Fn(EntityKind) -> Result<Vec<(String, Vec<u8>)>, StoreError> + Send>;

/// Loads every entity of a kind.
pub fn load_all<T: DeserializeOwned>(
    store: &dyn CatalogStore,
    kind: EntityKind,
) -> Result<Vec<T>, StoreError> {
    store
        .scan(kind)?
        .into_iter()
        .map(|(id, json)| {
            serde_json::from_slice(&json).map_err(|source| StoreError::Corrupt {
                key: format!("{}{id}", kind.prefix()),
                source,
            })
        })
        .collect()
}

/// The sled implementation: one tree, keys `<kind>/<id>`.
#[derive(Debug, Clone)]
pub struct SledCatalogStore {
    db: sled::Db,
    tree: sled::Tree,
}

impl SledCatalogStore {
    pub fn open(db: sled::Db) -> Result<SledCatalogStore, StoreError> {
        let tree = db.open_tree("catalog")?;
        Ok(SledCatalogStore { db, tree })
    }
}

impl SledCatalogStore {
    /// The LSN of the last change set applied (0 for a tree written before the journal).
    pub fn applied_lsn(&self) -> Result<u64, StoreError> {
        Ok(self.tree.get(APPLIED_LSN_KEY)?.map_or(0, |v| decode_lsn(&v)))
    }

    /// Whether the tree holds any entry (its position aside).
    pub fn holds_entries(&self) -> Result<bool, StoreError> {
        for key in self.tree.iter().keys() {
            if key?.as_ref() != APPLIED_LSN_KEY {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Replaces every entry with `entries` (a catalogue image) at position `lsn`, atomically.
    pub fn replace_all(&self, entries: &[RawEntry], lsn: u64) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        for key in self.tree.iter().keys() {
            batch.remove(key?);
        }
        for (key, value) in entries {
            batch.insert(key.as_slice(), value.as_slice());
        }
        batch.insert(APPLIED_LSN_KEY, &lsn.to_le_bytes()[..]);
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Makes every applied change durable in sled.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        Ok(())
    }
}

/// A stored LSN; a damaged (short) value reads as 0, so the WAL's change sets are replayed.
fn decode_lsn(bytes: &[u8]) -> u64 {
    <[u8; 8]>::try_from(bytes).map_or(0, u64::from_le_bytes)
}

fn batch_of(changes: &[CatalogChange]) -> sled::Batch {
    let mut batch = sled::Batch::default();
    for change in changes {
        match change {
            CatalogChange::Put { kind, id, json } => {
                batch.insert(format!("{}{id}", kind.prefix()).as_bytes(), json.as_slice());
            }
            CatalogChange::Delete { kind, id } => {
                batch.remove(format!("{}{id}", kind.prefix()).as_bytes());
            }
        }
    }
    batch
}

impl CatalogStore for SledCatalogStore {
    fn apply(&self, changes: &[CatalogChange]) -> Result<(), StoreError> {
        self.tree.apply_batch(batch_of(changes))?;
        self.db.flush()?;
        Ok(())
    }

    fn apply_at(&self, changes: &[CatalogChange], lsn: u64) -> Result<(), StoreError> {
        let mut batch = batch_of(changes);
        batch.insert(APPLIED_LSN_KEY, &lsn.to_le_bytes()[..]);
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    fn entries(&self) -> Result<(Vec<RawEntry>, u64), StoreError> {
        let mut entries = Vec::new();
        let mut lsn = 0;
        for entry in self.tree.iter() {
            let (key, value) = entry?;
            if &key[..] == APPLIED_LSN_KEY {
                lsn = decode_lsn(&value);
            } else {
                entries.push((key.to_vec(), value.to_vec()));
            }
        }
        Ok((entries, lsn))
    }

    fn scan(&self, kind: EntityKind) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        scan_tree(&self.tree, kind)
    }

    fn scanner(&self) -> Scanner {
        let tree = self.tree.clone();
        Box::new(move |kind| scan_tree(&tree, kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_round_trip_and_deletes_apply() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = sled::open(dir.path()).expect("open sled");
        let store = SledCatalogStore::open(db).expect("open store");
        store
            .apply(&[
                CatalogChange::put(EntityKind::Project, "p1", &"one"),
                CatalogChange::put(EntityKind::Project, "p2", &"two"),
                CatalogChange::put(EntityKind::Database, "d1", &"db"),
            ])
            .expect("apply");
        store.apply(&[CatalogChange::delete(EntityKind::Project, "p1")]).expect("apply");
        let projects: Vec<String> = load_all(&store, EntityKind::Project).expect("load");
        assert_eq!(projects, vec!["two".to_owned()]);
        let dbs: Vec<String> = load_all(&store, EntityKind::Database).expect("load");
        assert_eq!(dbs, vec!["db".to_owned()]);
    }
}
