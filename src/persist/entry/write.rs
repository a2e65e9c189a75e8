//! The compact layout written without serde for the ops a bulk write is made of.
//!
//! `WalEntry::encode` wrote the whole entry through bincode, once to size it and once to write
//! it: 11% of the actor's instructions for a 1000-record add. The records of an add or update
//! are written here instead, byte for byte as bincode's varint layout (`compact()`) writes
//! them, so that `WalEntry::decode` (still bincode) reads them; every other op, and each
//! record op's head (its tag, time and user), still goes through bincode. The same code sizes
//! the entry (into a `usize`) and writes it (into the buffer it sized), so the two agree.
//!
//! bincode's varint layout: an unsigned integer below 251 is one byte, else a tag byte (251,
//! 252, 253) and the integer as a little-endian u16, u32 or u64; a signed one is zigzag-encoded
//! first; an enum's tag is its variant's index as an unsigned integer; a string or sequence is
//! its length, then its bytes or items; an `Option` a byte 0, or 1 and the value; a bool one
//! byte; an f64 its 8 little-endian bytes. Unit tests compare every shape with bincode's output.

use bincode::Options;

use super::{compact, WalEntry, COMPACT_MARKER};
use crate::grid::ops::{CellWrite, GridOp, RecordWrite};
use crate::grid::value::CellValue;

/// Where the layout goes: counted (`usize`) or written (`Vec<u8>`).
trait Sink {
    fn byte(&mut self, byte: u8);
    fn bytes(&mut self, bytes: &[u8]);
    /// An op bincode writes whole.
    fn op(&mut self, op: &GridOp);
}

impl Sink for usize {
    fn byte(&mut self, _: u8) {
        *self += 1;
    }

    fn bytes(&mut self, bytes: &[u8]) {
        *self += bytes.len();
    }

    fn op(&mut self, op: &GridOp) {
        *self += compact().serialized_size(op).expect("ops always serialize") as usize;
    }
}

impl Sink for Vec<u8> {
    fn byte(&mut self, byte: u8) {
        self.push(byte);
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn op(&mut self, op: &GridOp) {
        compact().serialize_into(&mut *self, op).expect("ops always serialize");
    }
}

/// The entry in the compact layout (marker included), into a buffer sized first.
pub(super) fn encode(entry: &WalEntry) -> Vec<u8> {
    let size = encoded_len(entry);
    let mut bytes = Vec::with_capacity(size);
    write_entry(&mut bytes, entry);
    debug_assert_eq!(bytes.len(), size, "the sizing pass and the writing pass agree");
    bytes
}

/// The length of the entry in the compact layout (the sizing pass alone).
pub(super) fn encoded_len(entry: &WalEntry) -> usize {
    let mut size = 0usize;
    write_entry(&mut size, entry);
    size
}

/// Appends the entry in the compact layout to `out` (the writing pass alone).
pub(super) fn encode_into(entry: &WalEntry, out: &mut Vec<u8>) {
    write_entry(out, entry);
}

fn write_entry(sink: &mut impl Sink, entry: &WalEntry) {
    sink.bytes(&COMPACT_MARKER);
    string(sink, &entry.branch_id);
    length(sink, entry.ops.len());
    for op in &entry.ops {
        match op {
            GridOp::AddRecords { time_ms, user, records }
            | GridOp::UpdateRecords { time_ms, user, records } => {
                head(sink, op, *time_ms, user);
                length(sink, records.len());
                for record in records {
                    record_write(sink, record);
                }
            }
            _ => sink.op(op),
        }
    }
    signed(sink, entry.time_ms);
}

/// A record op's tag, time and user, as bincode writes them: the op with no records, less the
/// records' length (0, one byte) it ends with.
fn head(sink: &mut impl Sink, op: &GridOp, time_ms: i64, user: &str) {
    let empty = match op {
        GridOp::UpdateRecords { .. } => {
            GridOp::UpdateRecords { time_ms, user: user.to_owned(), records: Vec::new() }
        }
        _ => GridOp::AddRecords { time_ms, user: user.to_owned(), records: Vec::new() },
    };
    let head = compact().serialize(&empty).expect("ops always serialize");
    debug_assert_eq!(head.last(), Some(&0), "an empty sequence's length is one 0 byte");
    sink.bytes(&head[..head.len() - 1]);
}

fn record_write(sink: &mut impl Sink, record: &RecordWrite) {
    string(sink, &record.id);
    string(sink, &record.path);
    optional(sink, record.new_id.as_deref(), string);
    optional(sink, record.new_path.as_deref(), string);
    length(sink, record.cells.len());
    for cell in &record.cells {
        cell_write(sink, cell);
    }
    sink.byte(u8::from(record.mark_mt));
}

fn cell_write(sink: &mut impl Sink, cell: &CellWrite) {
    string(sink, &cell.column_id);
    optional(sink, cell.value.as_ref(), cell_value);
    optional(sink, cell.dependency_status, |sink, status| unsigned(sink, status as u64));
    optional(sink, cell.source_status, |sink, status| unsigned(sink, status as u64));
}

/// A value as serde's derive writes `CellValue`: its variant's index, then its field.
fn cell_value(sink: &mut impl Sink, value: &CellValue) {
    match value {
        CellValue::Empty => unsigned(sink, 0),
        CellValue::Text(text) => {
            unsigned(sink, 1);
            string(sink, text);
        }
        CellValue::Number(n) => {
            unsigned(sink, 2);
            sink.bytes(&n.to_le_bytes());
        }
        CellValue::Boolean(b) => {
            unsigned(sink, 3);
            sink.byte(u8::from(*b));
        }
        CellValue::Datetime(ms) => {
            unsigned(sink, 4);
            signed(sink, *ms);
        }
        CellValue::List(items) => {
            unsigned(sink, 5);
            length(sink, items.len());
            for item in items {
                string(sink, item);
            }
        }
    }
}

fn unsigned(sink: &mut impl Sink, n: u64) {
    if n <= 250 {
        sink.byte(n as u8);
    } else if let Ok(n) = u16::try_from(n) {
        sink.byte(251);
        sink.bytes(&n.to_le_bytes());
    } else if let Ok(n) = u32::try_from(n) {
        sink.byte(252);
        sink.bytes(&n.to_le_bytes());
    } else {
        sink.byte(253);
        sink.bytes(&n.to_le_bytes());
    }
}

/// Zigzag: 0, -1, 1, -2, ... as 0, 1, 2, 3, ...
fn signed(sink: &mut impl Sink, n: i64) {
    unsigned(sink, ((n << 1) ^ (n >> 63)) as u64);
}

fn length(sink: &mut impl Sink, len: usize) {
    unsigned(sink, len as u64);
}

fn string(sink: &mut impl Sink, text: &str) {
    length(sink, text.len());
    sink.bytes(text.as_bytes());
}

/// An `Option`: a byte 0, or 1 and the value as `write` writes it.
fn optional<S: Sink, T>(sink: &mut S, value: Option<T>, write: impl FnOnce(&mut S, T)) {
    match value {
        None => sink.byte(0),
        Some(value) => {
            sink.byte(1);
            write(sink, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::value::{DependencyStatus, SourceStatus};
    use proptest::prelude::*;

    /// What bincode writes for the entry: the layout `WalEntry::decode` reads.
    fn by_bincode(entry: &WalEntry) -> Vec<u8> {
        let mut bytes = COMPACT_MARKER.to_vec();
        compact().serialize_into(&mut bytes, entry).expect("serializes");
        bytes
    }

    fn text() -> impl Strategy<Value = String> {
        // Lengths on both sides of each varint threshold (250/251, 65535/65536) now and then.
        prop_oneof![
            8 => "[a-zé日\"\\\n]{0,12}",
            1 => (245usize..260).prop_map(|n| "x".repeat(n)),
            1 => (65530usize..65540).prop_map(|n| "y".repeat(n)),
        ]
    }

    fn value() -> impl Strategy<Value = CellValue> {
        prop_oneof![
            Just(CellValue::Empty),
            text().prop_map(CellValue::Text),
            any::<f64>().prop_map(CellValue::Number),
            any::<bool>().prop_map(CellValue::Boolean),
            any::<i64>().prop_map(CellValue::Datetime),
            prop::collection::vec(text(), 0..4).prop_map(CellValue::List),
        ]
    }

    fn cell() -> impl Strategy<Value = CellWrite> {
        let dependency = prop_oneof![
            Just(DependencyStatus::Unset),
            Just(DependencyStatus::OutOfDate),
            Just(DependencyStatus::UpToDate)
        ];
        let source = (0u8..6).prop_map(SourceStatus::from_u8);
        (
            "[a-z0-9_]{0,30}",
            prop::option::of(value()),
            prop::option::of(dependency),
            prop::option::of(source),
        )
            .prop_map(|(column_id, value, dependency_status, source_status)| CellWrite {
                column_id: column_id.into(),
                value,
                dependency_status,
                source_status,
            })
    }

    fn record() -> impl Strategy<Value = RecordWrite> {
        (
            text(),
            text(),
            prop::option::of(text()),
            prop::option::of(text()),
            prop::collection::vec(cell(), 0..5),
            any::<bool>(),
        )
            .prop_map(|(id, path, new_id, new_path, cells, mark_mt)| RecordWrite {
                id,
                path,
                new_id,
                new_path,
                cells,
                mark_mt,
            })
    }

    fn op() -> impl Strategy<Value = GridOp> {
        let records = || prop::collection::vec(record(), 0..4);
        prop_oneof![
            (any::<i64>(), text(), records())
                .prop_map(|(time_ms, user, records)| GridOp::AddRecords { time_ms, user, records }),
            (any::<i64>(), text(), records()).prop_map(|(time_ms, user, records)| {
                GridOp::UpdateRecords { time_ms, user, records }
            }),
            prop::collection::vec((text(), text()), 0..3)
                .prop_map(|keys| GridOp::DeleteRecords { keys }),
            (text(), any::<u32>()).prop_map(|(source_branch_id, source_clock)| {
                GridOp::MergeMark { source_branch_id, source_clock }
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever the ops, the bytes are bincode's, and they decode back to the entry.
        #[test]
        fn the_entry_is_written_as_bincode_writes_it(
            branch_id in text(),
            ops in prop::collection::vec(op(), 0..4),
            time_ms in any::<i64>(),
        ) {
            let entry = WalEntry { branch_id, ops, time_ms };
            let bytes = encode(&entry);
            prop_assert_eq!(&bytes, &by_bincode(&entry));
            let decoded = WalEntry::decode(&bytes).expect("decodes");
            // NaN is not equal to itself: compare the bytes of the decoded entry instead.
            prop_assert_eq!(encode(&decoded), bytes);
        }
    }

    #[test]
    fn integers_at_each_varint_threshold_are_written_as_bincode_writes_them() {
        for n in [0, 1, 250, 251, 252, 65535, 65536, u32::MAX as u64, u32::MAX as u64 + 1, u64::MAX]
        {
            let mut ours = Vec::new();
            unsigned(&mut ours, n);
            assert_eq!(ours, compact().serialize(&n).expect("serializes"), "{n}");
        }
        for n in [0, -1, 1, -126, 125, 126, -32768, 32767, i64::MIN, i64::MAX] {
            let mut ours = Vec::new();
            signed(&mut ours, n);
            assert_eq!(ours, compact().serialize(&n).expect("serializes"), "{n}");
        }
    }
}
