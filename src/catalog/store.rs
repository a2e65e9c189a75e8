//! `CatalogStore`: where the catalogue's entities are persisted, behind a small trait, with sled
//! as the implementation.
//!
//! A change set is applied atomically and flushed to disk before `apply` returns, so a catalogue
//! change is durable when the supervisor acknowledges it. Owns no in-memory state.

use serde::{de::DeserializeOwned, Serialize};

/// The kinds of catalogue entity, each its own key prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
}

impl EntityKind {
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
        }
    }
}

/// One entity written or removed.
#[derive(Debug, Clone, PartialEq)]
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
}

/// Persistence of catalogue entities.
pub trait CatalogStore: Send {
    /// Applies the changes atomically and makes them durable before returning.
    fn apply(&self, changes: &[CatalogChange]) -> Result<(), StoreError>;
    /// Every stored entity of a kind, as raw JSON.
    fn scan(&self, kind: EntityKind) -> Result<Vec<(String, Vec<u8>)>, StoreError>;
}

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

impl CatalogStore for SledCatalogStore {
    fn apply(&self, changes: &[CatalogChange]) -> Result<(), StoreError> {
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
        self.tree.apply_batch(batch)?;
        self.db.flush()?;
        Ok(())
    }

    fn scan(&self, kind: EntityKind) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let prefix = kind.prefix();
        self.tree
            .scan_prefix(prefix.as_bytes())
            .map(|entry| {
                let (key, value) = entry?;
                let id = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
                Ok((id, value.to_vec()))
            })
            .collect()
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
