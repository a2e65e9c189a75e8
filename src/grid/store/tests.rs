//! Unit tests of `ColumnStore` operations. The model-based property test lives in `model_tests`.
//! Tests build with tiny chunks, inline limits and GC thresholds (see `chunked` and `text`), so
//! chunk boundaries, spilled values and garbage collection are crossed even by small grids.

use super::*;
use crate::grid::value::{DependencyStatus, SourceStatus, StorageKind};

fn store_with_rows(identity: RecordIdentity, n: usize) -> ColumnStore {
    let mut store = ColumnStore::new(identity);
    for i in 0..n {
        store.insert(&format!("rec.{i:05}"), "folder", i as i64, "alice");
    }
    store
}

fn ids_in_order(store: &ColumnStore) -> Vec<String> {
    store.page(0, usize::MAX).map(|r| store.id(r).to_owned()).collect()
}

#[test]
fn insert_find_and_metadata() {
    let mut store = ColumnStore::new(RecordIdentity::RecordId);
    let a = store.insert("a", "p/q", 10, "alice");
    let b = store.insert("b", "", 20, "bob");
    assert_eq!(store.len(), 2);
    assert_eq!(store.find("ignored", "a"), Some(a));
    assert_eq!(store.find("", "b"), Some(b));
    assert_eq!(store.find("", "c"), None);
    assert_eq!((store.id(a), store.path(a)), ("a", "p/q"));
    assert_eq!((store.modified_time(b), store.modified_by(b)), (20, "bob"));
    store.touch(a, 30, "bob");
    assert_eq!((store.modified_time(a), store.modified_by(a)), (30, "bob"));
    assert_eq!(store.user_names.len(), 2);
}

#[test]
fn every_kind_round_trips_and_versions_stamp_the_clock_of_changes() {
    let mut store = store_with_rows(RecordIdentity::RecordId, 3);
    let row = RowId(1);
    let cases = [
        (StorageKind::Text, CellValue::Text("hello".into())),
        (StorageKind::Text, CellValue::Text(String::new())),
        (StorageKind::Number, CellValue::Number(-0.5)),
        (StorageKind::Number, CellValue::Number(f64::INFINITY)),
        (StorageKind::Boolean, CellValue::Boolean(false)),
        (StorageKind::Datetime, CellValue::Datetime(-1)),
        (StorageKind::List, CellValue::List(vec![])),
        (StorageKind::List, CellValue::List(vec!["a".into(), "".into()])),
    ];
    for (kind, value) in cases {
        let slot = store.add_column(kind, false);
        assert_eq!(store.value(row, slot), CellValue::Empty);
        assert_eq!(store.version(row, slot), 0);
        let first = store.tick();
        assert_eq!(store.set_value(row, slot, &value), Ok(true));
        assert_eq!(store.value(row, slot), value);
        store.tick();
        assert_eq!(store.set_value(row, slot, &value), Ok(false), "a no-op write");
        assert_eq!(store.version(row, slot), first, "a no-op write keeps the stamp");
        let third = store.tick();
        assert_eq!(store.set_value(row, slot, &CellValue::Empty), Ok(true));
        assert_eq!(store.value(row, slot), CellValue::Empty);
        assert_eq!(store.version(row, slot), third);
        assert_eq!(store.value(RowId(0), slot), CellValue::Empty);
    }
}

#[test]
fn edge_values_and_kind_mismatch() {
    let mut store = store_with_rows(RecordIdentity::RecordId, 1);
    let row = RowId(0);
    let number = store.add_column(StorageKind::Number, false);
    store.set_value(row, number, &CellValue::Number(f64::NAN)).ok();
    assert!(matches!(store.value_ref(row, number), CellRef::Number(n) if n.is_nan()));
    let when = store.add_column(StorageKind::Datetime, false);
    store.set_value(row, when, &CellValue::Datetime(i64::MIN)).ok();
    assert_eq!(store.value(row, when), CellValue::Empty);
    let err = store.set_value(row, number, &CellValue::Text("1".into()));
    let expected = KindMismatch { column: StorageKind::Number, value: StorageKind::Text };
    assert_eq!(err, Err(expected));
    assert!(expected.to_string().contains("Number"));
}

#[test]
fn statuses_pack_independently_and_stamp_versions() {
    let mut store = store_with_rows(RecordIdentity::RecordId, 2);
    let row = RowId(1);
    let lang = store.add_column(StorageKind::Text, true);
    store.tick();
    assert!(store.set_dependency_status(row, lang, DependencyStatus::UpToDate));
    assert!(store.set_source_status(row, lang, SourceStatus::Locked));
    let stamp = store.tick();
    assert!(store.set_mt(row, lang, true));
    store.tick();
    assert!(!store.set_mt(row, lang, true));
    assert_eq!(store.version(row, lang), stamp);
    assert_eq!(store.dependency_status(row, lang), DependencyStatus::UpToDate);
    assert_eq!(store.source_status(row, lang), SourceStatus::Locked);
    assert!(store.is_mt(row, lang));
    assert!(store.set_dependency_status(row, lang, DependencyStatus::OutOfDate));
    assert_eq!(store.source_status(row, lang), SourceStatus::Locked);
    assert_eq!(store.source_status(RowId(0), lang), SourceStatus::Unset);

    let plain = store.add_column(StorageKind::Text, false);
    assert!(!store.set_mt(row, plain, true));
    assert!(!store.is_mt(row, plain));
    store.set_localized(plain, true);
    assert!(store.is_localized(plain));
    assert!(store.set_mt(row, plain, true));
    store.set_localized(lang, false);
    assert_eq!(store.dependency_status(row, lang), DependencyStatus::Unset);
    assert!(!store.is_mt(row, lang));
}

#[test]
fn text_updates_leave_bounded_garbage_and_compaction_reclaims_it() {
    let mut store = store_with_rows(RecordIdentity::RecordId, 64);
    let text = store.add_column(StorageKind::Text, false);
    for round in 0..50 {
        store.tick();
        for row in 0..64 {
            let value = format!("round {round} row {row} ✓");
            store.set_value(RowId(row), text, &CellValue::Text(value)).ok();
        }
    }
    let live_bytes: usize = (0..64).map(|row| store.value(RowId(row), text).payload_bytes()).sum();
    let column = store.column(text);
    assert!(column.heap_bytes() < 4 * live_bytes + 64 * 16 + 4096);
    let before = store.heap_bytes();
    store.compact();
    assert!(store.heap_bytes() <= before);
    for row in 0..64 {
        let expected = format!("round 49 row {row} ✓");
        assert_eq!(store.value(RowId(row), text), CellValue::Text(expected));
        assert_eq!(store.version(RowId(row), text), 50);
    }
}

#[test]
fn delete_and_compaction_keep_order_and_lookups() {
    let mut store = store_with_rows(RecordIdentity::RecordId, 5000);
    let slot = store.add_column(StorageKind::Number, false);
    for row in 0..5000 {
        store.set_value(RowId(row), slot, &CellValue::Number(f64::from(row))).ok();
    }
    for row in (0..5000).filter(|r| r % 3 != 0) {
        store.delete(RowId(row));
    }
    store.delete(RowId(1));
    assert_eq!(store.len(), 1667);
    assert_eq!(store.find("", "rec.00001"), None);
    assert_eq!(store.find("", "rec.00003"), Some(RowId(3)));
    assert_eq!(store.position(RowId(3)), 1);
    assert_eq!(store.position(RowId(4)), 2, "a deleted row counts the live rows before it");
    assert!(store.maybe_compact());
    assert!(!store.maybe_compact());
    assert_eq!(store.tombstones(), 0);
    let ids = ids_in_order(&store);
    let expected: Vec<String> = (0..5000).step_by(3).map(|i| format!("rec.{i:05}")).collect();
    assert_eq!(ids, expected);
    for (k, id) in expected.iter().enumerate() {
        let row = store.find("", id).expect("live record is found");
        assert_eq!(row, RowId(k as u32));
        assert_eq!(store.value(row, slot), CellValue::Number(3.0 * k as f64));
        assert_eq!(store.modified_by(row), "alice");
    }
    let next = store.insert("new", "", 0, "carol");
    assert_eq!(next, RowId(1667));
    assert_eq!(store.modified_by(next), "carol");
}

#[test]
fn small_deletes_do_not_compact() {
    let mut store = store_with_rows(RecordIdentity::RecordId, 2000);
    (0..1000).for_each(|r| store.delete(RowId(r)));
    assert!(!store.maybe_compact(), "1000 tombstones is below the minimum");
    assert_eq!(store.tombstones(), 1000);
    let ids: Vec<String> = store.page(0, 2).map(|r| store.id(r).to_owned()).collect();
    assert_eq!(ids, ["rec.01000", "rec.01001"]);
}

#[test]
fn drop_column_frees_memory_and_never_reuses_slots() {
    let mut store = store_with_rows(RecordIdentity::RecordId, 500);
    let keep = store.add_column(StorageKind::Boolean, false);
    let drop = store.add_column(StorageKind::Text, true);
    for row in 0..500 {
        store.set_value(RowId(row), keep, &CellValue::Boolean(row % 2 == 0)).ok();
        let text = CellValue::Text("x".repeat(100));
        store.set_value(RowId(row), drop, &text).ok();
    }
    let before = store.heap_bytes();
    store.drop_column(drop);
    assert!(store.heap_bytes() + 50_000 < before);
    let added = store.add_column(StorageKind::Text, false);
    assert_ne!(added, drop);
    assert_eq!(store.value(RowId(4), keep), CellValue::Boolean(true));
    assert_eq!(store.value(RowId(4), added), CellValue::Empty);
    store.insert("late", "", 0, "bob");
    store.compact();
    assert_eq!(store.value(RowId(500), keep), CellValue::Empty);
}

#[test]
fn path_and_id_identity_keys_on_both() {
    let mut store = ColumnStore::new(RecordIdentity::PathAndId);
    let a = store.insert("same", "de", 1, "u");
    let b = store.insert("same", "fr", 2, "u");
    let c = store.insert("other", "", 3, "u");
    assert_eq!(store.find("de", "same"), Some(a));
    assert_eq!(store.find("fr", "same"), Some(b));
    assert_eq!(store.find("", "same"), None);
    assert_eq!(store.find("", "other"), Some(c));
    store.set_identity(a, "same", "es");
    assert_eq!(store.find("de", "same"), None);
    assert_eq!(store.find("es", "same"), Some(a));
    store.delete(b);
    assert_eq!(store.find("fr", "same"), None);
    assert_eq!(store.find("es", "same"), Some(a));
    store.compact();
    assert_eq!(store.find("es", "same"), Some(RowId(0)));
    assert_eq!(store.find("", "other"), Some(RowId(1)));
    assert_eq!(store.path_names.len(), 2, "unused paths are dropped by compaction");
}

#[test]
fn rename_updates_the_lookup() {
    let mut store = store_with_rows(RecordIdentity::RecordId, 20);
    let row = store.find("", "rec.00007").expect("inserted");
    store.set_identity(row, "renamed", "moved");
    assert_eq!(store.find("", "rec.00007"), None);
    assert_eq!(store.find("", "renamed"), Some(row));
    assert_eq!(store.path(row), "moved");
    store.delete(row);
    store.set_identity(row, "ghost", "");
    assert_eq!(store.find("", "ghost"), None, "a deleted row never returns to lookups");
}

#[test]
fn unicode_and_megabyte_values_round_trip_byte_for_byte() {
    let samples = [
        "設定を保存しました。変更は次回の起動時に反映されます。",
        "已保存设置。更改将在下次启动时生效。",
        "تم حفظ الإعدادات. ستُطبَّق التغييرات عند التشغيل التالي.",
        "👩‍👩‍👧‍👦 family 🇩🇪🏳️‍🌈 e\u{301} \u{200f}rtl\u{200e}",
        "Сохранено. Изменения вступят в силу после перезапуска.",
    ];
    let mut store = ColumnStore::new(RecordIdentity::PathAndId);
    let text = store.add_column(StorageKind::Text, true);
    let list = store.add_column(StorageKind::List, false);
    let huge = samples.concat().repeat((1 << 20) / samples.concat().len() + 1);
    assert!(huge.len() >= 1 << 20);
    let mut values = samples.map(str::to_owned).to_vec();
    values.push(huge.clone());
    for (i, value) in values.iter().enumerate() {
        let prefix: String = samples[i % 5].chars().take(3).collect();
        let row = store.insert(&format!("{i}:{prefix}"), samples[i % 5], 0, "ユーザー");
        store.set_value(row, text, &CellValue::Text(value.clone())).ok();
        let items = vec![value.clone(), samples[i % 5].to_owned()];
        store.set_value(row, list, &CellValue::List(items)).ok();
    }
    store.delete(RowId(0));
    store.compact();
    for (k, value) in values.iter().enumerate().skip(1) {
        let row = RowId(k as u32 - 1);
        let CellRef::Text(stored) = store.value_ref(row, text) else {
            panic!("text cell expected");
        };
        assert_eq!(stored.as_bytes(), value.as_bytes());
        let items: Vec<&str> = match store.value_ref(row, list) {
            CellRef::List(items) => items.collect(),
            other => panic!("list cell expected, got {other:?}"),
        };
        assert_eq!(items, [value.as_str(), samples[k % 5]]);
        assert_eq!(store.path(row), samples[k % 5]);
        assert_eq!(store.modified_by(row), "ユーザー");
        assert_eq!(store.find(samples[k % 5], store.id(row)), Some(row));
    }
}

#[test]
fn pages_skip_tombstones_at_any_offset() {
    let mut store = store_with_rows(RecordIdentity::RecordId, 100);
    (0..100).filter(|r| r % 2 == 1).for_each(|r| store.delete(RowId(r)));
    let page: Vec<RowId> = store.page(10, 3).collect();
    assert_eq!(page, [RowId(20), RowId(22), RowId(24)]);
    assert_eq!(store.page(49, 10).collect::<Vec<_>>(), [RowId(98)]);
    assert_eq!(store.page(50, 10).count(), 0);
    assert_eq!(store.page(usize::MAX, 10).count(), 0);
    assert_eq!(store.page(0, 0).count(), 0);
    assert_eq!(store.position(RowId(98)), 49);
    assert_eq!(store.live_rows().count(), 50);
    assert!(format!("{store:?}").contains("live: 50"));
}

#[test]
fn heap_bytes_tracks_growth() {
    let empty = ColumnStore::new(RecordIdentity::RecordId).heap_bytes();
    let store = store_with_rows(RecordIdentity::RecordId, 1000);
    assert!(store.heap_bytes() > empty + 1000 * 9);
    assert!(!store.is_empty());
    assert_eq!(store.identity(), RecordIdentity::RecordId);
}

// ----- clones (copy-on-write sharing) -----

/// Every live record with its metadata and every cell of `slots` (value, version, statuses).
fn dump(store: &ColumnStore, slots: &[ColumnSlot]) -> Vec<String> {
    let rows: Vec<RowId> = store.live_rows().collect();
    let records = rows.iter().map(|&row| {
        let cells: Vec<String> = slots
            .iter()
            .map(|&slot| {
                let value = store.value(row, slot);
                let version = store.version(row, slot);
                let statuses = (store.dependency_status(row, slot), store.source_status(row, slot));
                format!("{value:?} v{version} {statuses:?} mt={}", store.is_mt(row, slot))
            })
            .collect();
        let meta = (store.id(row), store.path(row), store.modified_time(row));
        format!("{row:?} {meta:?} {} {cells:?}", store.modified_by(row))
    });
    records.collect()
}

/// A store of `n` records with one column of every kind (text localized), every cell written.
fn full_store(n: usize) -> (ColumnStore, Vec<ColumnSlot>) {
    let mut store = store_with_rows(RecordIdentity::PathAndId, n);
    let slots = vec![
        store.add_column(StorageKind::Text, true),
        store.add_column(StorageKind::Number, false),
        store.add_column(StorageKind::Boolean, false),
        store.add_column(StorageKind::Datetime, false),
        store.add_column(StorageKind::List, false),
    ];
    for row in 0..n as u32 {
        write_row(&mut store, &slots, RowId(row), &format!("original {row}"));
    }
    (store, slots)
}

fn write_row(store: &mut ColumnStore, slots: &[ColumnSlot], row: RowId, text: &str) {
    let number = f64::from(row.get()) + text.len() as f64;
    let values = [
        CellValue::Text(text.to_owned()),
        CellValue::Number(number),
        CellValue::Boolean(text.len().is_multiple_of(2)),
        CellValue::Datetime(-(text.len() as i64)),
        CellValue::List(vec![text.to_owned(), String::new()]),
    ];
    for (&slot, value) in slots.iter().zip(&values) {
        store.set_value(row, slot, value).expect("kinds match");
    }
    store.set_source_status(row, slots[0], SourceStatus::from_u8(text.len() as u8 % 5));
    store.set_mt(row, slots[0], text.len().is_multiple_of(3));
}

#[test]
fn a_clone_shares_every_chunk_until_one_side_changes_it() {
    let (original, slots) = full_store(40);
    let mut clone = original.clone();
    let shared =
        |a: &ColumnStore, b: &ColumnStore, slot| a.column(slot).shared_with(b.column(slot));
    assert!(slots.iter().all(|&slot| shared(&original, &clone, slot) == [true; 5]));
    let same = CellValue::Text("original 9".into());
    assert_eq!(clone.set_value(RowId(9), slots[0], &same), Ok(false));
    assert!(!clone.set_dependency_status(RowId(9), slots[0], DependencyStatus::Unset));
    clone.restore_version(RowId(9), slots[0], original.version(RowId(9), slots[0]));
    assert_eq!(shared(&original, &clone, slots[0]), [true; 5], "no-op writes copy nothing");
    clone.set_value(RowId(9), slots[0], &CellValue::Text("changed".into())).ok();
    assert!(clone.set_mt(RowId(17), slots[0], true));
    assert_eq!(shared(&original, &clone, slots[0]), [true, false, false, true, true]);
    assert!(slots[1..].iter().all(|&slot| shared(&original, &clone, slot) == [true; 5]));
    assert_eq!(original.value(RowId(9), slots[0]), CellValue::Text("original 9".into()));
    assert!(!original.is_mt(RowId(17), slots[0]));
}

#[test]
fn writes_to_a_clone_leave_the_original_intact() {
    let (original, slots) = full_store(50);
    let before = dump(&original, &slots);
    let mut clone = original.clone();
    assert_eq!(dump(&clone, &slots), before);
    for row in [0, 7, 8, 15, 16, 31, 49] {
        write_row(&mut clone, &slots, RowId(row), &format!("clone {row} ✓"));
        clone.touch(RowId(row), -5, "zoe");
    }
    clone.set_identity(RowId(9), "renamed", "elsewhere");
    clone.delete(RowId(10));
    let added = clone.insert("new", "new/path", 1, "new user");
    clone.restore_version(added, slots[1], 77);
    clone.add_column(StorageKind::Number, true);
    clone.set_localized(slots[0], false);
    assert_eq!(dump(&original, &slots), before);
    assert_eq!(original.find("folder", "rec.00009"), Some(RowId(9)));
    assert_eq!(original.find("folder", "rec.00010"), Some(RowId(10)));
    assert_eq!(
        (original.find("elsewhere", "renamed"), original.find("new/path", "new")),
        (None, None)
    );
    assert_eq!((original.path_names.len(), original.user_names.len()), (1, 1));
    assert!(original.is_localized(slots[0]));
    assert_eq!(clone.find("elsewhere", "renamed"), Some(RowId(9)));
    assert_eq!(clone.find("folder", "rec.00010"), None);
    assert_eq!(clone.version(added, slots[1]), 77);
    assert_eq!(clone.modified_by(RowId(16)), "zoe");
    assert_eq!(clone.value(RowId(49), slots[0]), CellValue::Text("clone 49 ✓".into()));
}

#[test]
fn writes_and_compaction_of_the_original_leave_a_clone_intact() {
    let (mut original, slots) = full_store(60);
    let clone = original.clone();
    let before = dump(&clone, &slots);
    for row in (0..60).step_by(5) {
        write_row(&mut original, &slots, RowId(row), "changed after the clone");
    }
    (20..45).for_each(|row| original.delete(RowId(row)));
    original.drop_column(slots[2]);
    original.compact();
    original.insert("rec.00030", "folder", 9, "late");
    assert_eq!(original.len(), 36);
    assert_eq!(dump(&clone, &slots), before);
    for row in 0..60u32 {
        let id = format!("rec.{row:05}");
        assert_eq!(clone.find("folder", &id), Some(RowId(row)));
        let expected = CellValue::Boolean(format!("original {row}").len() % 2 == 0);
        assert_eq!(clone.value(RowId(row), slots[2]), expected);
    }
    assert_eq!(clone.modified_by(RowId(30)), "alice");
}

#[test]
fn text_garbage_collected_on_one_side_stays_out_of_the_other() {
    let (original, slots) = full_store(40);
    let before = dump(&original, &slots);
    let mut clone = original.clone();
    for round in 0..40 {
        clone.tick();
        for row in 6..18 {
            let text = CellValue::Text(format!("round {round} row {row} of the clone ✓"));
            clone.set_value(RowId(row), slots[0], &text).expect("text column");
        }
    }
    assert_eq!(dump(&original, &slots), before);
    let mut again = clone.clone();
    (0..12).for_each(|row| again.delete(RowId(row)));
    again.compact();
    for row in 6..18u32 {
        let expected = CellValue::Text(format!("round 39 row {row} of the clone ✓"));
        assert_eq!(clone.value(RowId(row), slots[0]), expected);
        assert_eq!(clone.version(RowId(row), slots[0]), clone.clock());
        assert_eq!(clone.clock(), original.clock() + 40);
        let moved = again.find("folder", &format!("rec.{row:05}"));
        let expected = (row >= 12).then(|| RowId(row - 12));
        assert_eq!(moved, expected);
    }
    assert_eq!(again.value(RowId(0), slots[0]), clone.value(RowId(12), slots[0]));
    assert_eq!(dump(&original, &slots), before);
}

// ----- columns built for a load -----

/// A column built a cell at a time from parts that do not line up with the chunks (each chunk's
/// arena sized from what its first part holds, grown past it) holds what one built from whole
/// chunks holds, in arenas as small; a builder given too few or too many cells refuses.
#[test]
fn a_column_built_from_parts_matches_one_built_from_whole_chunks() {
    let n = 20_000;
    let text = |i: usize| match i % 7 {
        0 => String::new(),
        1 => format!("a value long enough to be held apart {i}"),
        _ => format!("v{i} ü"),
    };
    let cell = |i: usize| {
        let value = text(i);
        let cell = if value.is_empty() { LoadCell::Empty } else { LoadCell::Text(value.leak()) };
        (cell, i as u32 % 5, (i % 3) as u8)
    };
    let mut whole = store_with_rows(RecordIdentity::RecordId, n);
    let slot = whole.add_column(StorageKind::Text, true);
    let built = ColumnStore::build_column(StorageKind::Text, true, n, |i| Ok(cell(i)));
    whole.install_column(slot, built.expect("built")).expect("installed");

    let mut parts = store_with_rows(RecordIdentity::RecordId, n);
    let slot = parts.add_column(StorageKind::Text, true);
    let mut builder = ColumnBuilder::new(StorageKind::Text, true, n);
    for start in (0..n).step_by(1000) {
        let part: Vec<_> = (start..start + 1000).map(cell).collect();
        for (k, (value, version, status)) in part.iter().enumerate() {
            let bytes = |rows: usize| {
                let lens = part[k..part.len().min(k + rows)].iter().map(|(v, ..)| match v {
                    LoadCell::Text(s) => s.len(),
                    _ => 0,
                });
                lens.map(arena_cost).sum()
            };
            builder.push(value, *version, *status, bytes).expect("pushed");
        }
    }
    parts.install_column(slot, builder.finish().expect("finished")).expect("installed");
    // Every store here numbers its rows and its one column alike.
    let same_as_whole = |built: &ColumnStore, how: &str| {
        for row in (0..n).map(|i| whole.find("", &format!("rec.{i:05}")).expect("present")) {
            assert_eq!(built.value(row, slot), whole.value(row, slot), "{how}");
            assert_eq!(built.version(row, slot), whole.version(row, slot), "{how}");
            let status = built.dependency_status(row, slot);
            assert_eq!(status, whole.dependency_status(row, slot), "{how}");
        }
        assert_eq!(built.heap_bytes(), whole.heap_bytes(), "arenas sized alike {how}");
    };
    same_as_whole(&parts, "cell by cell");

    // The same cells a run at a time (`push_texts`), in runs of 1337 that straddle chunks.
    let mut runs = store_with_rows(RecordIdentity::RecordId, n);
    let mut builder = ColumnBuilder::new(StorageKind::Text, true, n);
    for start in (0..n).step_by(1337) {
        let texts: Vec<String> = (start..n.min(start + 1337)).map(text).collect();
        let bytes = |i: usize, rows: usize| {
            texts[i..texts.len().min(i + rows)].iter().map(|t| arena_cost(t.len())).sum()
        };
        let cell = |i: usize| {
            let value = Some(texts[i].as_str()).filter(|t| !t.is_empty());
            let (_, version, status) = cell(start + i);
            Ok((value, version, status))
        };
        builder.push_texts(texts.len(), cell, bytes).expect("pushed");
    }
    assert_eq!(runs.add_column(StorageKind::Text, true), slot);
    runs.install_column(slot, builder.finish().expect("finished")).expect("installed");
    same_as_whole(&runs, "run by run");
    let mut over = ColumnBuilder::new(StorageKind::Text, false, 2);
    let three = over.push_texts(3, |_| Ok((Some("x"), 0, 0)), |_, rows| rows * 2);
    assert!(three.is_err(), "three text cells for two records");
    let mut numbers = ColumnBuilder::new(StorageKind::Number, false, 1);
    assert!(numbers.push_texts(1, |_| Ok((Some("x"), 0, 0)), |_, _| 2).is_err());

    let mut short = ColumnBuilder::new(StorageKind::Number, false, 2);
    short.push(&LoadCell::Number(1.0), 0, 0, |_| 0).expect("pushed");
    assert!(short.finish().is_err(), "one cell for two records");
    let mut long = ColumnBuilder::new(StorageKind::Number, false, 1);
    long.push(&LoadCell::Number(1.0), 0, 0, |_| 0).expect("pushed");
    assert!(long.push(&LoadCell::Number(2.0), 0, 0, |_| 0).is_err(), "two cells for one");
    let mut mismatched = ColumnBuilder::new(StorageKind::Number, false, 1);
    assert!(mismatched.push(&LoadCell::Text("x"), 0, 0, |_| 0).is_err());
}

#[test]
fn records_added_together_match_records_added_one_by_one() {
    adds_together_and_one_by_one_match(13);
}

#[test]
fn records_added_together_across_a_chunk_boundary_match_records_added_one_by_one() {
    // The 20 records start 7 rows before the end of the first chunk.
    adds_together_and_one_by_one_match(chunked::CHUNK_ROWS - 7);
}

/// Adds 20 records to a store of `existing` records with `insert_many_with` and one by one,
/// and compares the two stores.
fn adds_together_and_one_by_one_match(existing: usize) {
    let (mut original, slots) = full_store(existing);
    let dropped = original.add_column(StorageKind::Text, false);
    original.drop_column(dropped);
    let before = dump(&original, &slots);
    let (mut together, mut one_by_one) = (original.clone(), original.clone());
    let values: Vec<Vec<(ColumnSlot, CellValue)>> = (0..20)
        .map(|i| {
            let mut cells = vec![(slots[1], CellValue::Number(f64::from(i)))];
            if i % 3 != 0 {
                cells.push((slots[0], CellValue::Text(format!("added {i} ✓"))));
            }
            if i % 4 == 0 {
                // Another kind than the column's: left out, as `set_value` refuses it.
                cells.push((slots[2], CellValue::Text("not a boolean".into())));
            }
            if i % 5 == 0 {
                cells.push((slots[4], CellValue::List(vec![format!("tag{i}")])));
                cells.push((dropped, CellValue::Text("gone".into())));
            }
            cells
        })
        .collect();
    let ids: Vec<String> = (0..20).map(|i| format!("new.{i:02}")).collect();
    let borrowed: Vec<Vec<(ColumnSlot, &CellValue)>> = values
        .iter()
        .map(|cells| cells.iter().map(|(slot, value)| (*slot, value)).collect())
        .collect();
    let records: Vec<NewRecord<'_>> = ids
        .iter()
        .zip(&borrowed)
        .map(|(id, cells)| NewRecord { id, path: "added", values: cells })
        .collect();
    let first = together.insert_many_with(&records, 5, "bulk");
    let row = |i: usize| RowId((existing + i) as u32);
    assert_eq!(first, row(0));
    for (id, cells) in ids.iter().zip(&values) {
        let row = one_by_one.insert(id, "added", 5, "bulk");
        for (slot, value) in cells.iter().filter(|(slot, _)| *slot != dropped) {
            let _ = one_by_one.set_value(row, *slot, value);
        }
    }
    assert_eq!(dump(&together, &slots), dump(&one_by_one, &slots));
    let stamps = |store: &ColumnStore| -> Vec<(u32, u32, u64)> {
        let rows = store.live_rows();
        rows.map(|r| (store.created_at(r), store.moved_at(r), store.history_head(r))).collect()
    };
    assert_eq!(stamps(&together), stamps(&one_by_one));
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(together.find("added", id), Some(row(i)), "{id}");
    }
    assert_eq!(together.value(row(1), slots[0]), CellValue::Text("added 1 ✓".into()));
    assert_eq!(together.version(row(0), slots[0]), 0, "a cell not given stays unwritten");
    assert_eq!(dump(&original, &slots), before, "the shared chunks were copied, not written");
}

#[test]
fn what_a_snapshot_reads_of_a_chunk_at_once_is_what_it_reads_row_by_row() {
    let mut store = store_with_rows(RecordIdentity::RecordId, 3 * chunked::CHUNK_ROWS + 3);
    let text = store.add_column(StorageKind::Text, true);
    let list = store.add_column(StorageKind::List, false);
    let long = "x".repeat(text::INLINE_MAX + 5);
    for (i, row) in store.page(0, usize::MAX).collect::<Vec<_>>().into_iter().enumerate() {
        let value = match i % 4 {
            0 => CellValue::Text(long.clone()),
            1 => CellValue::Text(format!("value {i}")),
            _ => CellValue::Empty,
        };
        store.set_value(row, text, &value).expect("text");
        let items = (0..i % 3).map(|n| "ab".repeat(n)).collect();
        store.set_value(row, list, &CellValue::List(items)).expect("list");
        if i % 5 == 0 {
            store.set_source_status(row, text, SourceStatus::Locked);
        }
        if i % 7 == 0 {
            store.set_dependency_status(row, text, DependencyStatus::OutOfDate);
            store.set_mt(row, text, true);
        }
    }
    // Chunk 1 loses rows; chunks 0 and 2 keep them all; the last is partly filled.
    store.delete(RowId(chunked::CHUNK_ROWS as u32 + 1));
    store.delete(RowId(2 * chunked::CHUNK_ROWS as u32 - 1));
    for chunk in 0..store.chunk_count() {
        let live = store.live_in_chunk(chunk);
        let rows: Vec<RowId> = store.live_rows_of_chunk(chunk).collect();
        assert_eq!(store.live_rows_of_chunk_vec(chunk, live), rows, "chunk {chunk}");
        let statuses: Vec<u8> = rows
            .iter()
            .map(|&r| {
                let s = store.statuses(r, text);
                s.dependency() as u8 | (s.source() as u8) << 2 | u8::from(s.is_mt()) << 5
            })
            .collect();
        assert_eq!(store.status_bytes_ascending(&rows, text), statuses);
        assert!(store.status_bytes_ascending(&rows, list).iter().all(|&b| b == 0));
        for slot in [text, list] {
            let mut cells = Vec::new();
            store.for_each_cell_ascending(&rows, slot, |cell| cells.push(format!("{cell:?}")));
            let one_by_one: Vec<String> =
                rows.iter().map(|&r| format!("{:?}", store.value_ref(r, slot))).collect();
            assert_eq!(cells, one_by_one, "chunk {chunk}");
        }
        let text_bytes: usize = rows
            .iter()
            .map(|&r| match store.value_ref(r, text) {
                CellRef::Text(s) => s.len(),
                _ => 0,
            })
            .sum();
        assert!(store.text_bytes_bound(text, chunk) >= text_bytes, "chunk {chunk}");
        let list_bytes: usize = rows
            .iter()
            .map(|&r| match store.value_ref(r, list) {
                CellRef::List(items) => items.map(|item| item.len() + 8).sum(),
                _ => 0,
            })
            .sum();
        assert!(store.text_bytes_bound(list, chunk) >= list_bytes, "chunk {chunk}");
    }
    // Rows of several chunks at once (an old-format image's whole column).
    let rows: Vec<RowId> = store.page(0, usize::MAX).collect();
    let mut cells = Vec::new();
    store.for_each_cell_ascending(&rows, text, |cell| cells.push(format!("{cell:?}")));
    let one_by_one: Vec<String> =
        rows.iter().map(|&r| format!("{:?}", store.value_ref(r, text))).collect();
    assert_eq!(cells, one_by_one);
    let number = store.add_column(StorageKind::Number, false);
    assert_eq!(store.text_bytes_bound(number, 0), 0);
}
