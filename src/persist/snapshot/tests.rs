//! Tests of the sled snapshot store: round trips, generation rotation, and fallback on damage.

use proptest::prelude::*;

use super::sled_store::{chunk_key, generation_prefix, header_key, key_prefix};
use super::*;

const KEY: &str = "grid-1";

struct Fixture {
    _dir: tempfile::TempDir,
    db: sled::Db,
    store: SledSnapshotStore,
}

fn fixture(chunk_size: usize) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = sled::open(dir.path().join("db")).expect("open sled");
    let store = SledSnapshotStore::open(&db).expect("open store").with_chunk_size(chunk_size);
    Fixture { _dir: dir, db, store }
}

fn image(wal_lsn: u64, len: usize) -> SnapshotImage {
    let bytes = (0..len)
        .map(|i| (i as u64).wrapping_mul(2_654_435_761).wrapping_add(wal_lsn) as u8)
        .collect();
    SnapshotImage { format_version: 1, wal_lsn, bytes }
}

fn tree(db: &sled::Db) -> sled::Tree {
    db.open_tree("snapshot_chunks").expect("tree")
}

fn entry_key(key: &str, generation: u64, chunk: Option<u64>) -> Vec<u8> {
    let gen_prefix = generation_prefix(&key_prefix(key).expect("key"), generation);
    match chunk {
        Some(index) => chunk_key(&gen_prefix, index),
        None => header_key(&gen_prefix),
    }
}

/// Applies `edit` to the stored value of one entry (`chunk: None` is the header).
fn edit_entry(db: &sled::Db, generation: u64, chunk: Option<u64>, edit: impl FnOnce(&mut Vec<u8>)) {
    let tree = tree(db);
    let entry = entry_key(KEY, generation, chunk);
    let mut value = tree.get(&entry).expect("get").expect("entry exists").to_vec();
    edit(&mut value);
    tree.insert(entry, value).expect("insert");
}

fn assert_loaded(loaded: &LoadedSnapshot, expected: &SnapshotImage, generation: u64) {
    assert_eq!(loaded.generation, Generation(generation));
    assert_eq!(loaded.format_version, expected.format_version);
    assert_eq!(loaded.wal_lsn, expected.wal_lsn);
    let bytes = loaded.bytes.whole().expect("reads");
    assert_eq!(&bytes[..], &expected.bytes[..]);
    assert_eq!(bytes.as_ptr() as usize % 16, 0, "payload must be 16-byte aligned");
}

fn load(store: &SledSnapshotStore) -> LoadedSnapshot {
    store.load_latest(KEY).expect("load").expect("a snapshot exists")
}

/// A store holding generations 1 and 2 of `KEY` (chunks of 16 bytes, 100-byte images).
fn two_generations() -> (Fixture, SnapshotImage, SnapshotImage) {
    let f = fixture(16);
    let (older, newer) = (image(10, 100), image(20, 100));
    assert_eq!(f.store.put(KEY, &older).expect("put"), Generation(1));
    assert_eq!(f.store.put(KEY, &newer).expect("put"), Generation(2));
    (f, older, newer)
}

#[test]
fn put_then_load_round_trip() {
    let f = fixture(SledSnapshotStore::DEFAULT_CHUNK_SIZE);
    let stored = image(42, 1000);
    assert_eq!(f.store.put(KEY, &stored).expect("put"), Generation(1));
    let loaded = load(&f.store);
    assert_loaded(&loaded, &stored, 1);
    assert!(loaded.damaged_newer.is_empty());
    let listed = f.store.generations(KEY).expect("generations");
    assert_eq!(listed.len(), 1);
    let header = listed[0].header.expect("valid header");
    assert_eq!((header.wal_lsn, header.payload_len), (42, 1000));
}

#[test]
fn empty_image_round_trips() {
    let f = fixture(16);
    let empty = image(7, 0);
    f.store.put(KEY, &empty).expect("put");
    assert_loaded(&load(&f.store), &empty, 1);
}

#[test]
fn images_survive_reopening_the_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stored = image(5, 3000);
    {
        let db = sled::open(dir.path()).expect("open");
        let store = SledSnapshotStore::open(&db).expect("store").with_chunk_size(1000);
        store.put(KEY, &stored).expect("put");
    }
    let db = sled::open(dir.path()).expect("reopen");
    let store = SledSnapshotStore::open(&db).expect("store");
    assert_loaded(&load(&store), &stored, 1);
}

#[test]
fn third_put_evicts_the_oldest() {
    let (f, _, _) = two_generations();
    let newest = image(30, 100);
    assert_eq!(f.store.put(KEY, &newest).expect("put"), Generation(3));
    let listed: Vec<_> = f.store.generations(KEY).expect("generations");
    let numbers: Vec<_> = listed.iter().map(|g| g.generation).collect();
    assert_eq!(numbers, vec![Generation(2), Generation(3)]);
    assert_eq!(listed[0].header.expect("header").wal_lsn, 20);
    let leftovers = tree(&f.db).scan_prefix(generation_prefix(&key_prefix(KEY).expect("key"), 1));
    assert_eq!(leftovers.count(), 0, "every entry of generation 1 is gone");
    assert_loaded(&load(&f.store), &newest, 3);
}

#[test]
fn corrupt_chunk_of_the_newest_falls_back_to_the_older() {
    let (f, older, _) = two_generations();
    edit_entry(&f.db, 2, Some(3), |chunk| chunk[5] ^= 0x10);
    let loaded = load(&f.store);
    assert_loaded(&loaded, &older, 1);
    assert_eq!(loaded.damaged_newer, vec![Generation(2)]);
}

/// After a fallback to generation 1 (generation 2 damaged), the next put replaces the damaged
/// generation and keeps the intact one, so a damaged new image could still fall back.
#[test]
fn a_put_after_a_fallback_retires_the_damaged_generation_not_the_intact_one() {
    for chunk in [Some(3), None] {
        let (f, older, _) = two_generations();
        edit_entry(&f.db, 2, chunk, |bytes| bytes[5] ^= 0x10);
        assert_loaded(&load(&f.store), &older, 1);
        let newest = image(30, 100);
        assert_eq!(f.store.put(KEY, &newest).expect("put"), Generation(3));
        let listed = f.store.generations(KEY).expect("generations");
        let numbers: Vec<_> = listed.iter().map(|g| g.generation).collect();
        assert_eq!(numbers, vec![Generation(1), Generation(3)], "damaged {chunk:?}");
        let leftovers =
            tree(&f.db).scan_prefix(generation_prefix(&key_prefix(KEY).expect("key"), 2));
        assert_eq!(leftovers.count(), 0, "every entry of the damaged generation is gone");
        edit_entry(&f.db, 3, Some(0), |bytes| bytes[0] ^= 0x01);
        assert_loaded(&load(&f.store), &older, 1);
    }
}

#[test]
fn corrupt_header_of_the_newest_falls_back_to_the_older() {
    let (f, older, _) = two_generations();
    edit_entry(&f.db, 2, None, |header| header[14] ^= 0x01);
    assert_loaded(&load(&f.store), &older, 1);
    let listed = f.store.generations(KEY).expect("generations");
    assert!(listed[0].header.is_some());
    assert_eq!(listed[1].header, None, "damaged header is listed without fields");
}

#[test]
fn both_generations_damaged_is_an_error_naming_each() {
    let (f, _, _) = two_generations();
    edit_entry(&f.db, 2, Some(5), |chunk| chunk.truncate(10));
    tree(&f.db).remove(entry_key(KEY, 1, Some(2))).expect("remove");
    match f.store.load_latest(KEY) {
        Err(SnapshotError::NoIntactGeneration { key, damaged }) => {
            assert_eq!(key, KEY);
            assert_eq!(
                damaged,
                vec![
                    (Generation(2), ImageDamage::LengthMismatch { expected: 100, found: 94 }),
                    (Generation(1), ImageDamage::MissingChunk { index: 2 }),
                ]
            );
        }
        other => panic!("expected NoIntactGeneration, got {other:?}"),
    }
}

#[test]
fn truncated_or_extra_chunks_and_bad_magic_are_damage() {
    let (f, older, _) = two_generations();
    edit_entry(&f.db, 2, Some(0), |chunk| chunk.truncate(15));
    assert_loaded(&load(&f.store), &older, 1);

    let (f, older, _) = two_generations();
    edit_entry(&f.db, 2, Some(6), |chunk| chunk.push(0));
    assert_loaded(&load(&f.store), &older, 1);

    let (f, older, _) = two_generations();
    edit_entry(&f.db, 2, None, |header| header[0] = b'X');
    assert_loaded(&load(&f.store), &older, 1);
}

#[test]
fn large_image_spans_chunks_and_comes_back_aligned() {
    let f = fixture(SledSnapshotStore::DEFAULT_CHUNK_SIZE);
    let large = image(99, 10 * 1024 * 1024 + 123);
    f.store.put(KEY, &large).expect("put");
    let gen_prefix = generation_prefix(&key_prefix(KEY).expect("key"), 1);
    let entries = tree(&f.db).scan_prefix(gen_prefix).count();
    assert_eq!(entries, 11 + 1, "eleven 1 MiB chunks plus the header");
    assert_loaded(&load(&f.store), &large, 1);
}

#[test]
fn loaded_bytes_feed_rkyv_access() {
    let f = fixture(7);
    let rows: Vec<u64> = (0..1000).map(|i| i * 3).collect();
    let archived = rkyv::to_bytes::<rkyv::rancor::Error>(&rows).expect("archive");
    let stored = SnapshotImage { format_version: 1, wal_lsn: 1, bytes: archived.to_vec() };
    f.store.put(KEY, &stored).expect("put");
    let loaded = load(&f.store);
    let bytes = loaded.bytes.whole().expect("reads");
    let view = rkyv::access::<rkyv::Archived<Vec<u64>>, rkyv::rancor::Error>(&bytes)
        .expect("validated access");
    assert_eq!(view.len(), 1000);
    assert_eq!(view[999].to_native(), 2997);
}

#[test]
fn keys_that_share_prefixes_do_not_collide() {
    let f = fixture(8);
    let keys = ["a", "a/00000000000000000001", "a%2F", "a/b", "a%"];
    for (i, key) in keys.iter().enumerate() {
        f.store.put(key, &image(i as u64, 40)).expect("put");
        f.store.put(key, &image(i as u64 + 100, 40)).expect("put");
    }
    for (i, key) in keys.iter().enumerate() {
        let loaded = f.store.load_latest(key).expect("load").expect("exists");
        assert_loaded(&loaded, &image(i as u64 + 100, 40), 2);
        assert_eq!(f.store.generations(key).expect("list").len(), 2, "{key}");
    }
    f.store.delete("a").expect("delete");
    assert!(f.store.load_latest("a").expect("load").is_none());
    assert!(f.store.load_latest("a/b").expect("load").is_some());
}

#[test]
fn unknown_empty_and_deleted_keys() {
    let (f, _, _) = two_generations();
    assert!(f.store.load_latest("other").expect("load").is_none());
    assert!(matches!(f.store.load_latest(""), Err(SnapshotError::EmptyKey)));
    assert!(matches!(f.store.put("", &image(1, 1)), Err(SnapshotError::EmptyKey)));
    f.store.delete(KEY).expect("delete");
    f.store.flush().expect("flush");
    assert!(f.store.load_latest(KEY).expect("load").is_none());
    assert!(f.store.generations(KEY).expect("list").is_empty());
}

#[test]
fn an_interrupted_put_is_ignored_then_cleaned_up() {
    let (f, _, newer) = two_generations();
    // A crash after writing chunks of generation 3 but before its header.
    tree(&f.db).insert(entry_key(KEY, 3, Some(0)), &b"partial"[..]).expect("insert");
    let loaded = load(&f.store);
    assert_loaded(&loaded, &newer, 2);
    assert!(loaded.damaged_newer.is_empty());
    let next = image(40, 50);
    assert_eq!(f.store.put(KEY, &next).expect("put"), Generation(4));
    let numbers: Vec<_> =
        f.store.generations(KEY).expect("list").iter().map(|g| g.generation).collect();
    assert_eq!(numbers, vec![Generation(2), Generation(4)]);
    assert!(tree(&f.db).get(entry_key(KEY, 3, Some(0))).expect("get").is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_damaged_byte_of_the_newest_falls_back(
        chunk in proptest::option::of(0u64..7),
        position in any::<prop::sample::Index>(),
        mask in 1..=255u8,
    ) {
        let (f, older, _) = two_generations();
        edit_entry(&f.db, 2, chunk, |value| {
            let at = position.index(value.len());
            value[at] ^= mask;
        });
        let loaded = load(&f.store);
        assert_loaded(&loaded, &older, 1);
        prop_assert_eq!(loaded.damaged_newer, vec![Generation(2)]);
    }
}

#[test]
fn the_store_is_usable_as_a_shared_trait_object() {
    let f = fixture(16);
    let shared: std::sync::Arc<dyn SnapshotStore> = std::sync::Arc::new(f.store.clone());
    std::thread::spawn(move || shared.put(KEY, &image(1, 10)).map(|_| ()))
        .join()
        .expect("thread")
        .expect("put");
    assert_loaded(&load(&f.store), &image(1, 10), 1);
}
