//! The catalogue's journal: every catalogue change set is a WAL record (`WalRecord::Catalog`)
//! made durable before the supervisor acknowledges it; sled's `catalog` tree is a materialized
//! copy written after the WAL, tagged with the LSN of the last change set it holds.
//!
//! A catalogue image (every entry of the tree, checksummed, with that LSN) is stored in the
//! snapshot store under [`CATALOG_IMAGE_KEY`] now and then and at shutdown, two generations
//! kept; the older image's position is a WAL floor, so the change sets after it stay in the WAL.
//!
//! At start [`recover`] brings the tree up to date: its base is sled's tree when it is at least
//! as new as the newest intact image (sled dropping the tail of its log leaves an older but
//! consistent tree), else the image; then the WAL's change sets after the base's LSN are
//! applied. [`rebuild_from_image`] is the fallback when the tree holds an unreadable entry. With
//! neither a tree nor an image, and the live WAL cut past the catalogue's start, the change sets
//! before it come from the WAL archive; without them the start stops (`JournalError::Lost`).

use std::ops::ControlFlow;

use super::store::{CatalogChange, CatalogStore, RawEntry, SledCatalogStore, StoreError};
use crate::persist::durability::{Durability, DurabilityError};
use crate::persist::entry::{WalRecord, CATALOG_MARKER};
use crate::persist::wal::{read_retained, WalRecords};

/// A catalogue change set as a WAL payload: the WAL's catalogue marker, then the changes.
pub fn encode_changes(changes: &[CatalogChange]) -> Vec<u8> {
    let mut out = CATALOG_MARKER.to_vec();
    bincode::serialize_into(&mut out, changes).expect("catalogue changes always serialize");
    out
}

/// The changes of a catalogue record's body (`WalRecord::Catalog`).
pub fn decode_changes(body: &[u8]) -> Result<Vec<CatalogChange>, bincode::Error> {
    bincode::deserialize(body)
}

/// The snapshot store key of the catalogue's images (no branch id contains `~`).
pub const CATALOG_IMAGE_KEY: &str = "~catalog";
/// Version of the image payload layout: bincode of `Vec<(key, value)>`.
const IMAGE_FORMAT: u32 = 1;
/// How far sled's catalogue position may be ahead of the WAL's end (records lost to WAL damage
/// after sled flushed) before it is taken for damage.
const MAX_LEAD: u64 = 100_000;

/// Why the catalogue could not be recovered.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no intact catalogue image to rebuild from: {0}")]
    NoImage(String),
    #[error("reading the WAL again: {0}")]
    Wal(String),
    /// Sled's tree and the images are gone, and the live WAL no longer starts at the
    /// catalogue's first change set.
    #[error(
        "the catalogue is lost: sled's catalogue (<data-dir>/db) is empty, no catalogue image \
         loads (<data-dir>/snapshots/~catalog), and the WAL starts at record {first_lsn}, after \
         the catalogue's first changes ({why}); restore db/ or snapshots/~catalog from a backup"
    )]
    Lost { first_lsn: u64, why: String },
}

/// An image loaded from the snapshot store: its entries and the LSN it covers.
struct LoadedImage {
    entries: Vec<RawEntry>,
    wal_lsn: u64,
}

/// The newest intact catalogue image; damage is logged at error level.
fn load_image(durability: &Durability) -> Result<Option<LoadedImage>, String> {
    let loaded = match durability.snapshots.load_latest(CATALOG_IMAGE_KEY) {
        Ok(Some(loaded)) => loaded,
        Ok(None) => return Ok(None),
        Err(err) => return Err(err.to_string()),
    };
    if !loaded.damaged_newer.is_empty() {
        tracing::error!(
            damaged = ?loaded.damaged_newer,
            "the newest catalogue image is damaged; using the older generation"
        );
    }
    if loaded.format_version != IMAGE_FORMAT {
        return Err(format!("unknown catalogue image format {}", loaded.format_version));
    }
    let bytes = loaded.bytes.whole().map_err(|e| format!("reading the catalogue image: {e}"))?;
    let entries = bincode::deserialize(&bytes).map_err(|e| e.to_string())?;
    Ok(Some(LoadedImage { entries, wal_lsn: loaded.wal_lsn }))
}

/// The catalogue change sets in the WAL after `after`, in LSN order.
fn change_sets_after(
    records: &WalRecords,
    after: u64,
) -> Result<Vec<(u64, Vec<CatalogChange>)>, JournalError> {
    let mut sets = Vec::new();
    records
        .for_each_marked_after(after, |lsn, bytes| {
            sets.extend(change_set(lsn, bytes).map(|changes| (lsn, changes)));
        })
        .map_err(|e| JournalError::Wal(e.to_string()))?;
    Ok(sets)
}

/// The changes of WAL record `lsn` when it is a catalogue change set that decodes (one that
/// does not is reported and skipped). Branch records are skipped undecoded; undecodable ones
/// are reported by the branch replay.
fn change_set(lsn: u64, bytes: &[u8]) -> Option<Vec<CatalogChange>> {
    if !bytes.starts_with(&CATALOG_MARKER) {
        return None;
    }
    match WalRecord::decode(bytes).map(|record| match record {
        WalRecord::Catalog(body) => decode_changes(body),
        WalRecord::Branch(_) => Ok(Vec::new()),
    }) {
        Ok(Ok(changes)) => Some(changes),
        Ok(Err(err)) | Err(err) => {
            tracing::error!(lsn, error = %err, "a catalogue change set in the WAL does not decode; skipped");
            None
        }
    }
}

/// Rebuilds an empty tree, with no image to start from, when the live WAL starts past the
/// catalogue's first change set (segments were retired once images covered them): the change
/// sets before `first_live` are read from the WAL archive, which keeps them while history is
/// kept. Without them the catalogue cannot be rebuilt, and the start stops (`Lost`) rather
/// than bootstrap an empty catalogue over the data directory's grids.
fn replay_archived(
    store: &SledCatalogStore,
    durability: &Durability,
    first_live: u64,
) -> Result<(), JournalError> {
    let lost = |why: String| JournalError::Lost { first_lsn: first_live, why };
    let history = durability
        .history()
        .ok_or_else(|| lost("no WAL archive is kept: --retain-history is 0".to_owned()))?;
    let mut sets = Vec::new();
    let dirs = (history.archive(), durability.wal.dir());
    let span = (0, first_live - 1);
    read_retained(dirs, span, durability.wal.max_record_len(), |lsn, bytes| {
        sets.extend(change_set(lsn, bytes).map(|changes| (lsn, changes)));
        ControlFlow::Continue(())
    })
    .map_err(|e| lost(format!("the WAL archive cannot give them: {e}")))?;
    for (lsn, changes) in &sets {
        store.apply_at(changes, *lsn)?;
    }
    tracing::error!(
        change_sets = sets.len(),
        first_live,
        "sled's catalogue and its images are gone: the catalogue was rebuilt from the archived \
         WAL and the live one"
    );
    Ok(())
}

/// Applies the WAL's change sets after `base` to the tree; returns how many.
fn replay(
    store: &SledCatalogStore,
    records: &WalRecords,
    base: u64,
) -> Result<usize, JournalError> {
    let sets = change_sets_after(records, base)?;
    for (lsn, changes) in &sets {
        store.apply_at(changes, *lsn)?;
    }
    Ok(sets.len())
}

/// Warns when the WAL no longer starts right after the base (change sets may be missing).
fn check_coverage(records: &WalRecords, base: u64) {
    if let Some(first) = records.first_lsn() {
        if first > base + 1 {
            tracing::error!(
                base_lsn = base,
                wal_first_lsn = first,
                "the WAL starts after the catalogue's base: catalogue changes in between may be lost"
            );
        }
    }
}

/// Brings sled's catalogue tree up to date from the newest intact image and the WAL. Returns
/// the LSN of the last change set the tree holds.
pub fn recover(
    store: &SledCatalogStore,
    durability: &Durability,
    records: &WalRecords,
) -> Result<u64, JournalError> {
    let mut tree_lsn = store.applied_lsn()?;
    let wal_end = durability.wal.last_lsn();
    if tree_lsn > wal_end.saturating_add(MAX_LEAD) {
        // Padding the WAL up to it would take for ever: the position itself is damaged.
        tracing::error!(tree_lsn, wal_end, "sled's catalogue position is implausible; ignored");
        tree_lsn = 0;
        store.apply_at(&[], 0)?;
    }
    let image = match load_image(durability) {
        Ok(image) => image,
        Err(err) => {
            tracing::error!(error = %err, "no intact catalogue image; sled's catalogue is the base");
            None
        }
    };
    let base = match image {
        Some(image) if image.wal_lsn > tree_lsn => {
            tracing::error!(
                tree_lsn,
                image_lsn = image.wal_lsn,
                "sled's catalogue is older than its image (sled lost the end of its log); rebuilding it from the image"
            );
            store.replace_all(&image.entries, image.wal_lsn)?;
            image.wal_lsn
        }
        _ => tree_lsn,
    };
    // A tree without a position predates the journal: it is the whole catalogue.
    if base > 0 {
        check_coverage(records, base);
    } else if let Some(first_live) = records.first_lsn().filter(|&first| first > 1) {
        if !store.holds_entries()? {
            replay_archived(store, durability, first_live)?;
        }
    }
    let replayed = replay(store, records, base)?;
    if replayed > 0 {
        tracing::warn!(
            replayed,
            from_lsn = base,
            "catalogue changes missing from sled were replayed from the WAL"
        );
    }
    store.flush()?;
    Ok(store.applied_lsn()?)
}

/// Rebuilds the tree from the newest intact image and the WAL's change sets after it (sled's
/// tree held an entry that does not decode).
pub fn rebuild_from_image(
    store: &SledCatalogStore,
    durability: &Durability,
    records: &WalRecords,
) -> Result<u64, JournalError> {
    let image = load_image(durability)
        .map_err(JournalError::NoImage)?
        .ok_or_else(|| JournalError::NoImage("none was ever stored".to_owned()))?;
    tracing::error!(
        image_lsn = image.wal_lsn,
        "sled's catalogue holds an unreadable entry; rebuilding it from its image and the WAL"
    );
    store.replace_all(&image.entries, image.wal_lsn)?;
    check_coverage(records, image.wal_lsn);
    replay(store, records, image.wal_lsn)?;
    store.flush()?;
    Ok(store.applied_lsn()?)
}

/// Encodes the tree's entries as an image payload, with the LSN it covers. Runs on the
/// supervisor (the only writer of the tree), so the entries and the LSN agree.
pub fn image_payload(store: &dyn CatalogStore) -> Result<(Vec<u8>, u64), StoreError> {
    let (entries, lsn) = store.entries()?;
    let bytes = bincode::serialize(&entries).expect("byte pairs always serialize");
    Ok((bytes, lsn))
}

/// Stores an image payload as the catalogue's newest generation and lets the WAL go below the
/// older one. Blocking.
pub fn store_image(
    durability: &Durability,
    bytes: Vec<u8>,
    wal_lsn: u64,
) -> Result<(), DurabilityError> {
    durability.store_image(CATALOG_IMAGE_KEY, IMAGE_FORMAT, wal_lsn, bytes)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::catalog::store::{load_all, EntityKind};
    use crate::persist::durability::SnapshotPolicy;
    use crate::persist::snapshot::SledSnapshotStore;
    use crate::persist::wal::{Wal, WalOptions};

    struct Fixture {
        _dir: tempfile::TempDir,
        store: SledCatalogStore,
        durability: Durability,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let (wal, _) = Wal::open(dir.path().join("wal"), WalOptions::default()).expect("wal");
        let db = sled::open(dir.path().join("db")).expect("sled");
        let snapshots = Arc::new(SledSnapshotStore::open(&db).expect("snapshots"));
        let policy = SnapshotPolicy {
            every_records: 1000,
            every_bytes: u64::MAX,
            every: Duration::from_secs(3600),
        };
        let store = SledCatalogStore::open(db).expect("store");
        Fixture { _dir: dir, store, durability: Durability::new(wal, snapshots, policy) }
    }

    fn put(id: &str, name: &str) -> Vec<CatalogChange> {
        vec![CatalogChange::put(EntityKind::Project, id, &name.to_owned())]
    }

    fn record(changes: &[CatalogChange]) -> Vec<u8> {
        encode_changes(changes)
    }

    fn projects(store: &SledCatalogStore) -> Vec<String> {
        load_all(store, EntityKind::Project).expect("projects")
    }

    /// sled's copy lost its end (older than the image): the image replaces it and the change
    /// sets after the image are applied; a copy as new as the image is kept.
    #[test]
    fn the_tree_is_rebuilt_from_the_image_and_the_wal_only_when_behind() {
        let f = fixture();
        let listed = vec![
            (1, record(&put("p1", "one"))),
            (2, crate::persist::entry::WalEntry::now("b".into(), vec![]).encode()),
            (3, record(&put("p2", "two"))),
            (4, record(&[CatalogChange::delete(EntityKind::Project, "p1")])),
        ];
        for (lsn, bytes) in &listed[..3] {
            if let Ok(WalRecord::Catalog(body)) = WalRecord::decode(bytes) {
                let changes = decode_changes(body).expect("decodes");
                f.store.apply_at(&changes, *lsn).expect("applied");
            }
        }
        let records = WalRecords::from_vec(listed);
        let (bytes, lsn) = image_payload(&f.store).expect("payload");
        assert_eq!(lsn, 3);
        store_image(&f.durability, bytes, lsn).expect("image stored");
        // sled goes back to before p2 (as after losing the end of its log).
        f.store.replace_all(&image_entries(&put("p1", "one")), 1).expect("set back");
        assert_eq!(recover(&f.store, &f.durability, &records).expect("recovered"), 4);
        assert_eq!(projects(&f.store), vec!["two".to_owned()]);
        // A copy at least as new as the image is the base: nothing is replayed twice.
        f.store.apply_at(&put("p3", "three"), 5).expect("applied");
        assert_eq!(recover(&f.store, &f.durability, &records).expect("recovered"), 5);
        assert_eq!(projects(&f.store), vec!["two".to_owned(), "three".to_owned()]);
        // An unreadable entry: rebuilt from the image and every change set after it.
        assert_eq!(rebuild_from_image(&f.store, &f.durability, &records).expect("rebuilt"), 4);
        assert_eq!(projects(&f.store), vec!["two".to_owned()]);
    }

    fn image_entries(changes: &[CatalogChange]) -> Vec<RawEntry> {
        let scratch = SledCatalogStore::open(
            sled::Config::new().temporary(true).open().expect("temporary sled"),
        )
        .expect("store");
        scratch.apply_at(changes, 0).expect("applied");
        scratch.entries().expect("entries").0
    }

    /// With no image (a data directory from before the journal), sled's copy is the base and
    /// every change set in the WAL is applied on top of it.
    #[test]
    fn without_an_image_the_tree_is_the_base() {
        let f = fixture();
        let records = WalRecords::from_vec(vec![
            (1, record(&put("p1", "one"))),
            (2, record(&put("p2", "two"))),
        ]);
        assert_eq!(recover(&f.store, &f.durability, &records).expect("recovered"), 2);
        assert_eq!(projects(&f.store), vec!["one".to_owned(), "two".to_owned()]);
        assert!(rebuild_from_image(&f.store, &f.durability, &records).is_err());
    }

    #[test]
    fn a_change_set_round_trips_and_a_cut_one_does_not_decode() {
        let changes = vec![
            CatalogChange::put(EntityKind::Grid, "g1", &serde_json::json!({"name": "x"})),
            CatalogChange::delete(EntityKind::Key, "k1"),
        ];
        let bytes = encode_changes(&changes);
        let Ok(WalRecord::Catalog(body)) = WalRecord::decode(&bytes) else {
            panic!("not a catalogue record")
        };
        assert_eq!(decode_changes(body).ok(), Some(changes));
        assert!(decode_changes(&body[..body.len() - 1]).is_err());
        assert!(decode_changes(&[]).is_err());
    }
}
