use proptest::prelude::*;

use super::{slice_at, ImageIndex, PartLimits, SectionSource};
use crate::grid::columns::{build_column, ColumnRequest};
use crate::grid::damage::Damaged;
use crate::grid::ops::{CellWrite, GridOp, GridState, RecordWrite};
use crate::grid::store::RecordIdentity;
use crate::grid::value::{CellValue, SourceStatus};

/// Parts of at most 3 records or 20 bytes of text: every list is cut many times.
const SMALL: PartLimits = PartLimits { rows: 3, bytes: 20 };

fn state(count: usize) -> GridState {
    let mut state = GridState::new("view1", Vec::new(), RecordIdentity::RecordId);
    for body in [
        serde_json::json!({"id":"enUS","name":"English","type":"language","languageCode":"enUS"}),
        serde_json::json!({"id":"n","name":"Count","type":"number"}),
        serde_json::json!({"id":"done","name":"Done","type":"boolean"}),
        serde_json::json!({"id":"due","name":"Due","type":"datetime"}),
        serde_json::json!({"id":"tags","name":"Tags","type":"multipleSelections","selection":{"options":[{"value":"ui"},{"value":"legal"}]}}),
    ] {
        let req: ColumnRequest = serde_json::from_value(body).expect("valid column");
        let column = build_column(&state.schema, &req).expect("valid column");
        state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
    }
    let cell = |c: &str, v: CellValue| CellWrite {
        column_id: c.into(),
        value: Some(v),
        dependency_status: None,
        source_status: (c == "enUS").then_some(SourceStatus::Locked),
    };
    let records = (0..count)
        .map(|i| RecordWrite {
            id: format!("rec{i}"),
            path: if i % 2 == 0 { String::new() } else { format!("ui/menu{i}") },
            new_id: None,
            new_path: None,
            cells: if i % 5 == 4 {
                Vec::new()
            } else {
                vec![
                    cell("enUS", CellValue::Text(format!("Start {i} ゲーム 🌍").repeat(i % 4 + 1))),
                    cell("n", CellValue::Number(i as f64 / 3.0)),
                    cell("done", CellValue::Boolean(i % 3 == 0)),
                    cell("due", CellValue::Datetime(1_769_854_530_000 + i as i64)),
                    cell("tags", CellValue::List(vec!["ui".into(), "legal".into()])),
                ]
            },
            mark_mt: i % 7 == 0,
        })
        .collect();
    state.apply(&GridOp::AddRecords { time_ms: 1_769_854_530_000, user: "u".into(), records });
    state.apply(&GridOp::MergeMark { source_branch_id: "branch1".into(), source_clock: 7 });
    if count > 0 {
        state.apply(&GridOp::DeleteRecords { keys: vec![(String::new(), "rec0".into())] });
    }
    state
}

/// The same branch, compared through format 4's image (every record, cell, status, version,
/// stamp and history chunk; compared encoded, as an empty number cell is a NaN).
fn same(a: &GridState, b: &GridState) {
    let encode = |s: &GridState| {
        rkyv::to_bytes::<rkyv::rancor::Error>(&s.to_image().expect("reads history")).expect("ok")
    };
    assert_eq!(encode(a).as_slice(), encode(b).as_slice());
    assert_eq!(a.schema, b.schema);
}

#[test]
fn a_branch_cut_into_many_parts_round_trips() {
    let original = state(40);
    let bytes = original.encode_image(SMALL).expect("encodes");
    let mut aligned = rkyv::util::AlignedVec::<16>::new();
    aligned.extend_from_slice(&bytes);
    let loaded = GridState::decode_image(&aligned, &[]).expect("decodes");
    same(&loaded, &original);
    let row = loaded.store.find("", "rec2").expect("present");
    assert_eq!(loaded.store.source_status(row, loaded.slots["enUS"]), SourceStatus::Locked);
    // Cut or not, the content is the same.
    let whole = original.encode_image(PartLimits::DEFAULT).expect("encodes");
    assert!(whole.len() < bytes.len(), "fewer sections, fewer tables");
    let mut aligned = rkyv::util::AlignedVec::<16>::new();
    aligned.extend_from_slice(&whole);
    same(&GridState::decode_image(&aligned, &[]).expect("decodes"), &original);
}

#[test]
fn an_empty_branch_round_trips() {
    for records in [0, 1] {
        let original = state(records);
        let bytes = original.encode_image(SMALL).expect("encodes");
        let mut aligned = rkyv::util::AlignedVec::<16>::new();
        aligned.extend_from_slice(&bytes);
        same(&GridState::decode_image(&aligned, &[]).expect("decodes"), &original);
    }
}

#[test]
fn a_cut_or_foreign_payload_is_an_error() {
    let bytes = state(10).encode_image(SMALL).expect("encodes");
    for len in [0, 8, 16, bytes.len() - 1, bytes.len() - 16, bytes.len() / 2] {
        let mut aligned = rkyv::util::AlignedVec::<16>::new();
        aligned.extend_from_slice(&bytes[..len]);
        assert!(GridState::decode_image(&aligned, &[]).is_err(), "{len} bytes decode");
    }
    let mut aligned = rkyv::util::AlignedVec::<16>::new();
    aligned.extend_from_slice(&[0u8; 64]);
    assert!(GridState::decode_image(&aligned, &[]).is_err());
}

#[test]
fn a_large_text_cell_ends_its_part() {
    let rows: Vec<_> = state(3).store.live_rows().collect();
    let cut = super::write::cut(&rows, PartLimits { rows: 10, bytes: 5 }, |_| 100);
    assert_eq!(cut, 1, "one record past the byte limit is a part of its own");
}

fn aligned(bytes: &[u8]) -> rkyv::util::AlignedVec<16> {
    let mut aligned = rkyv::util::AlignedVec::<16>::new();
    aligned.extend_from_slice(bytes);
    aligned
}

/// A whole image of `state` and its index, stored as generation 1.
fn whole(state: &GridState) -> (rkyv::util::AlignedVec<16>, ImageIndex) {
    let mut out = Vec::new();
    let written = state.write_image(SMALL, None, &mut out).expect("encodes");
    assert!(!written.on_base && written.borrowed == 0);
    (aligned(&out), written.index.stored_as(1))
}

/// An image of `state` borrowing from `base`, how much it wrote and borrowed.
fn on(state: &GridState, base: &ImageIndex) -> (rkyv::util::AlignedVec<16>, u64, u64) {
    let (bytes, written, borrowed, _) = on_chain(state, base, SMALL);
    (bytes, written, borrowed)
}

/// An image of `state` borrowing from `base`'s chain, how much it wrote and borrowed, and its
/// index (not yet stored).
fn on_chain(
    state: &GridState,
    base: &ImageIndex,
    limits: PartLimits,
) -> (rkyv::util::AlignedVec<16>, u64, u64, ImageIndex) {
    let mut out = Vec::new();
    let written = state.write_image(limits, Some(base), &mut out).expect("encodes");
    assert!(written.on_base, "an image on a base borrows from its chain");
    (aligned(&out), written.written, written.borrowed, written.index)
}

fn edit(state: &mut GridState, id: &str, text: &str) {
    state.apply(&GridOp::UpdateRecords {
        time_ms: 1_769_854_600_000,
        user: "editor".into(),
        records: vec![RecordWrite {
            id: id.into(),
            path: String::new(),
            new_id: None,
            new_path: None,
            cells: vec![CellWrite {
                column_id: "enUS".into(),
                value: Some(CellValue::Text(text.into())),
                dependency_status: None,
                source_status: None,
            }],
            mark_mt: false,
        }],
    });
}

/// An image on a base writes the chunks written since (and the head and open history chunk),
/// borrows the rest, and loads to the branch as it is now; the base alone still loads to the
/// branch as it was.
#[test]
fn an_image_on_a_base_borrows_what_did_not_change() {
    let mut state = state(200);
    let before = state.clone();
    let (base_bytes, index) = whole(&state);
    let (unchanged, written, borrowed) = on(&state, &index);
    assert!(borrowed > 0 && written < base_bytes.len() as u64 / 4, "{written} of {borrowed}");
    same(&GridState::decode_image(&unchanged, &[&base_bytes]).expect("decodes"), &state);

    edit(&mut state, "rec2", "changed");
    state.apply(&GridOp::DeleteRecords { keys: vec![(String::new(), "rec9".into())] });
    let (delta, written_after, _) = on(&state, &index);
    assert!(written_after > written, "the edited chunks are written");
    let loaded = GridState::decode_image(&delta, &[&base_bytes]).expect("decodes");
    same(&loaded, &state);
    let row = loaded.store.find("", "rec2").expect("present");
    assert_eq!(loaded.store.value(row, loaded.slots["enUS"]), CellValue::Text("changed".into()));
    assert!(loaded.store.find("", "rec9").is_none());
    same(&GridState::decode_image(&base_bytes, &[]).expect("decodes"), &before);
    assert!(GridState::decode_image(&delta, &[]).is_err(), "a delta needs its base");
}

/// Each image on a chain writes only what changed since the image before it (not since the
/// whole one), borrowing the rest from whichever image of the chain holds it, and loads only
/// with its whole chain; an index whose image was never stored lends nothing.
#[test]
fn an_image_on_a_chain_writes_only_what_changed_since_the_last() {
    // Three of the store's 8,192-row chunks; parts of at most 1,000 records.
    let limits = PartLimits { rows: 1_000, bytes: 1 << 20 };
    let mut state = state(20_000);
    let mut out = Vec::new();
    let first = state.write_image(limits, None, &mut out).expect("encodes");
    let whole = aligned(&out);
    let index = first.index.stored_as(1);

    edit(&mut state, "rec2", "first chunk");
    let (d1, written1, _, index) = on_chain(&state, &index, limits);
    let index = index.stored_as(2);
    same(&GridState::decode_image(&d1, &[&whole]).expect("decodes"), &state);

    edit(&mut state, "rec19000", "third chunk");
    let (d2, written2, borrowed2, index2) = on_chain(&state, &index, limits);
    assert!(written2 < written1 * 3 / 2, "the first chunk is not written again: {written2}");
    assert!(borrowed2 > written2);
    let loaded = GridState::decode_image(&d2, &[&d1, &whole]).expect("decodes");
    same(&loaded, &state);
    let row = loaded.store.find("", "rec2").expect("present");
    assert_eq!(
        loaded.store.value(row, loaded.slots["enUS"]),
        CellValue::Text("first chunk".into())
    );
    assert!(GridState::decode_image(&d2, &[&d1]).is_err(), "a link missing");
    assert!(GridState::decode_image(&d2, &[&whole, &d1]).is_err(), "links swapped");
    assert_eq!(index2.stored_as(3).chain(), &[3, 2, 1]);

    // An index of an image that was not stored lends what it borrowed, not what it wrote.
    let (_, written, borrowed, unstored) = on_chain(&state, &index, limits);
    let (_, written_again, borrowed_again, _) = on_chain(&state, &unstored, limits);
    assert_eq!((written_again, borrowed_again), (written, borrowed));
}

/// A change of statuses alone (here a source status; a source edit marks its dependent
/// columns the same way) writes the chunk's statuses and borrows its cells.
#[test]
fn a_status_change_borrows_the_cells() {
    let mut base = state(2_000);
    let long = "ゲームを開始する ".repeat(1_000);
    edit(&mut base, "rec1000", &long);
    let mut out = Vec::new();
    let first = base.write_image(SMALL, None, &mut out).expect("encodes");
    let whole = aligned(&out);
    let index = first.index.stored_as(1);

    let mut text = base.clone();
    edit(&mut text, "rec1000", &long.replace('ゲ', "ケ"));
    let (_, text_written, _, _) = on_chain(&text, &index, SMALL);

    let mut status = base.clone();
    status.apply(&GridOp::UpdateRecords {
        time_ms: 1_769_854_600_000,
        user: "editor".into(),
        records: vec![RecordWrite {
            id: "rec1000".into(),
            path: String::new(),
            new_id: None,
            new_path: None,
            cells: vec![CellWrite {
                column_id: "enUS".into(),
                value: None,
                dependency_status: None,
                source_status: Some(SourceStatus::ReadyForTranslation),
            }],
            mark_mt: false,
        }],
    });
    let (delta, status_written, _, _) = on_chain(&status, &index, SMALL);
    assert!(text_written > long.len() as u64, "the text is written: {text_written}");
    assert!(
        status_written + (long.len() as u64) < text_written,
        "statuses alone: {status_written} bytes written; with the text: {text_written}"
    );
    let loaded = GridState::decode_image(&delta, &[&whole]).expect("decodes");
    same(&loaded, &status);
    let row = loaded.store.find("", "rec1000").expect("present");
    let slot = loaded.slots["enUS"];
    assert_eq!(loaded.store.source_status(row, slot), SourceStatus::ReadyForTranslation);
    assert_eq!(loaded.store.value(row, slot), CellValue::Text(long));
    same(&GridState::decode_image(&whole, &[]).expect("decodes"), &base);
}

/// A payload served the way a snapshot file serves it: every read a fresh aligned copy, and a
/// read that fails once the payload is "cut" at `fail_past`.
struct FileLike {
    bytes: Vec<u8>,
    fail_past: u64,
}

impl SectionSource for FileLike {
    fn payload_len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn in_memory(&self) -> Option<&[u8]> {
        None
    }

    fn read_exact_at(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        if offset + out.len() as u64 > self.fail_past {
            return Err(std::io::Error::other("an I/O error"));
        }
        out.copy_from_slice(&slice_at(&self.bytes, offset, out.len())?);
        Ok(())
    }
}

/// Read a section at a time (whole images and one on a base), a branch loads as from memory;
/// a read that fails anywhere fails the load.
#[test]
fn an_image_read_a_section_at_a_time_loads_the_same() {
    let mut state = state(200);
    let (base_bytes, index) = whole(&state);
    let file = |bytes: &[u8]| FileLike { bytes: bytes.to_vec(), fail_past: u64::MAX };
    let base = file(&base_bytes);
    same(&GridState::decode_sections(&base, &[]).expect("decodes"), &state);
    edit(&mut state, "rec3", "changed");
    let (delta, _, borrowed) = on(&state, &index);
    assert!(borrowed > 0);
    let loaded = GridState::decode_sections(&file(&delta), &[&base]).expect("decodes");
    same(&loaded, &state);
    for cut in [0, 100, base_bytes.len() as u64 / 2, base_bytes.len() as u64 - 17] {
        let failing = FileLike { bytes: base_bytes.to_vec(), fail_past: cut };
        assert!(GridState::decode_sections(&failing, &[]).is_err(), "reads fail past {cut}");
    }
}

/// A compaction renumbers rows: nothing is borrowed across it.
#[test]
fn nothing_is_borrowed_across_a_compaction() {
    let mut state = state(200);
    let (_, index) = whole(&state);
    assert!(index.fits(&state));
    state.apply(&GridOp::DeleteRecords { keys: vec![(String::new(), "rec1".into())] });
    assert!(index.fits(&state), "a delete leaves a tombstone");
    state.store.compact();
    assert!(!index.fits(&state), "a compaction renumbers the rows");
}

/// Every byte of an image set to each of a few values a damaged count or length would take
/// (the highest bits set, all bits set, all clear) gives the branch back or an error, never a
/// panic or an allocation the bytes do not hold: random flips can miss the one byte of a count.
#[test]
fn every_byte_set_to_an_extreme_never_panics() {
    let bytes = state(12).encode_image(SMALL).expect("encodes");
    let mut aligned = rkyv::util::AlignedVec::<16>::new();
    aligned.extend_from_slice(&bytes);
    for i in 0..aligned.len() {
        let kept = aligned[i];
        for value in [0x80, 0xff, 0x00] {
            aligned[i] = value;
            let _ = GridState::decode_image(&aligned, &[]);
        }
        aligned[i] = kept;
    }
}

/// The same for the table of the newest image of a chain, where the links are.
#[test]
fn every_byte_of_a_chained_table_set_to_an_extreme_never_panics() {
    let (mut images, _) = chain_of_three();
    let len = images[0].len();
    for i in len.saturating_sub(256)..len {
        let kept = images[0][i];
        for value in [0x80, 0xff, 0x00] {
            images[0][i] = value;
            let _ = GridState::decode_image(&images[0], &[&images[1], &images[2]]);
        }
        images[0][i] = kept;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any flipped byte gives the same branch back or an error, never a panic.
    #[test]
    fn flipped_bytes_never_panic(at in any::<prop::sample::Index>(), bits in 1u8..=255) {
        let bytes = state(12).encode_image(SMALL).expect("encodes");
        let mut aligned = rkyv::util::AlignedVec::<16>::new();
        aligned.extend_from_slice(&bytes);
        let i = at.index(aligned.len());
        aligned[i] ^= bits;
        let _ = GridState::decode_image(&aligned, &[]);
    }

    /// An image on a chain of two with any byte of its table (link bytes included) or of a
    /// link's payload flipped gives the branch back or an error, never a panic.
    #[test]
    fn flipped_bytes_of_a_chained_image_never_panic(
        at in any::<prop::sample::Index>(),
        bits in 1u8..=255,
        target in 0usize..3,
    ) {
        let (images, _) = chain_of_three();
        let mut images = images;
        let image = &mut images[target];
        // The newest image's flips land in its table, where the links are.
        let from = if target == 0 { image.len().saturating_sub(256) } else { 0 };
        let i = from + at.index(image.len() - from);
        image[i] ^= bits;
        let _ = GridState::decode_image(&images[0], &[&images[1], &images[2]]);
    }
}

/// Three images of a branch of 40 records, each on the one before (newest first), and the
/// branch as the newest holds it.
fn chain_of_three() -> (Vec<rkyv::util::AlignedVec<16>>, GridState) {
    let mut state = state(40);
    let mut out = Vec::new();
    let first = state.write_image(SMALL, None, &mut out).expect("encodes");
    let mut images = vec![aligned(&out)];
    let mut index = first.index.stored_as(1);
    for (generation, id) in [(2, "rec3"), (3, "rec30")] {
        edit(&mut state, id, "changed");
        let (bytes, _, _, next) = on_chain(&state, &index, SMALL);
        images.insert(0, bytes);
        index = next.stored_as(generation);
    }
    (images, state)
}

#[test]
fn a_chain_of_three_loads_as_the_branch() {
    let (images, state) = chain_of_three();
    same(&GridState::decode_image(&images[0], &[&images[1], &images[2]]).expect("loads"), &state);
    assert!(GridState::decode_image(&images[0], &[&images[1]]).is_err(), "it reaches link 1");
}

/// A record whose history chain starts past the log's chunks is refused on load.
#[test]
fn a_chain_head_outside_the_history_is_refused() {
    let mut original = state(20);
    let row = original.store.find("", "rec3").expect("present");
    original.store.set_history_head(row, 99 << 32);
    let bytes = aligned(&original.encode_image(SMALL).expect("encodes"));
    let error = GridState::decode_image(&bytes, &[]).err().expect("refused");
    assert!(matches!(&error, Damaged::Inconsistent(m) if m.contains("outside the log")), "{error}");
}

/// A branch loaded from an image is indexed as that image: the next image after an edit writes
/// only the edited chunk and borrows the rest from the loaded image and its chain, and loads as
/// the branch; where deletes had left chunks short, nothing misaligned is borrowed.
#[test]
fn a_loaded_branch_is_indexed_as_the_image_it_came_from() {
    let limits = PartLimits { rows: 1_000, bytes: 1 << 20 };
    let encode = |state: &GridState, base: Option<&ImageIndex>| {
        let mut out = Vec::new();
        let written = state.write_image(limits, base, &mut out).expect("encodes");
        (aligned(&out), written)
    };
    // `state` deletes its first record: compacted, its chunks are full; else they are short.
    for compacted in [true, false] {
        let mut original = state(20_000);
        if compacted {
            original.store.compact();
        }
        let (whole, first) = encode(&original, None);
        let chain = [first.written];

        // Loaded as generation 1, edited in its third chunk, imaged on the rebuilt index.
        let (mut loaded, index) =
            GridState::decode_indexed(&&whole[..], &[], Some(&[1])).expect("decodes");
        let index = index.expect("an index");
        same(&loaded, &original);
        edit(&mut loaded, "rec19000", "after the load");
        let (delta, written) = encode(&loaded, Some(&index));
        assert!(written.on_base);
        if compacted {
            assert!(written.written < chain[0] / 3, "{} of {}", written.written, chain[0]);
        }
        same(&GridState::decode_image(&delta, &[&whole]).expect("decodes"), &loaded);

        // That delta loaded as generation 2 on 1, edited again, imaged on its index.
        let stored = written.index.stored_as(2);
        assert_eq!(stored.chain(), &[2, 1]);
        let (mut again, index) =
            GridState::decode_indexed(&&delta[..], &[&&whole[..]], Some(&[2, 1])).expect("decodes");
        same(&again, &loaded);
        edit(&mut again, "rec10", "after the second load");
        let (newest, _) = encode(&again, index.as_ref());
        let back = GridState::decode_image(&newest, &[&delta, &whole]).expect("decodes");
        same(&back, &again);
    }
}

proptest! {
    /// A record part written from borrowed strings is, byte for byte, the part of the same
    /// records in owned strings (what a load reads as `ArchivedRecordsPart`): inline and
    /// out-of-line strings, empty ones, any text.
    #[test]
    fn a_borrowed_record_part_archives_as_the_owned_one(
        records in proptest::collection::vec(
            (".{0,20}", "(/[a-z]{0,12}){0,2}", any::<i64>(), ".{0,10}", any::<u32>(), any::<u32>(), any::<u64>()),
            0..12,
        ),
    ) {
        use super::super::sections::{RecordsPart, RecordsPartRef, StrRef};
        let owned = RecordsPart {
            ids: records.iter().map(|r| r.0.clone()).collect(),
            paths: records.iter().map(|r| r.1.clone()).collect(),
            times: records.iter().map(|r| r.2).collect(),
            users: records.iter().map(|r| r.3.clone()).collect(),
            created: records.iter().map(|r| r.4).collect(),
            moved: records.iter().map(|r| r.5).collect(),
            heads: records.iter().map(|r| r.6).collect(),
        };
        let borrowed = RecordsPartRef {
            ids: records.iter().map(|r| StrRef(&r.0)).collect(),
            paths: records.iter().map(|r| StrRef(&r.1)).collect(),
            times: owned.times.clone(),
            users: records.iter().map(|r| StrRef(&r.3)).collect(),
            created: owned.created.clone(),
            moved: owned.moved.clone(),
            heads: owned.heads.clone(),
        };
        let owned_bytes = rkyv::to_bytes::<rkyv::rancor::Error>(&owned).expect("encodes");
        let borrowed_bytes = rkyv::to_bytes::<rkyv::rancor::Error>(&borrowed).expect("encodes");
        prop_assert_eq!(owned_bytes.as_slice(), borrowed_bytes.as_slice());
    }
}
