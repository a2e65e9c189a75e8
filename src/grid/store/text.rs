//! `TextChunk`/`TextColumn`: per-row optional strings in chunked arenas, and the list encoding.
//!
//! Owns the byte layout of string cells (text and list columns, record ids, interned names): rows
//! are grouped in chunks of `CHUNK_ROWS`; each `TextChunk` keeps one `String` arena plus, per
//! row, where its value ends while the arena holds the values in row order (a chunk appended
//! to), or an `(offset, len)` span once one was replaced (`Rows`); each inline value is followed
//! by `\n` in the arena, so that a search over the arena sees where values end. An update
//! appends and leaves the old bytes as garbage, which the chunk collects itself once garbage
//! outweighs live bytes, so row positions never move here.
//! Once a chunk is full its arena is sealed: moved behind an `Arc` that the chunk's copies (a
//! branch's, a snapshot's or a read view's copy-on-write) share, and values written while a
//! copy holds it go to a second part, whose offsets continue past the sealed one. A copy of a
//! full chunk thus costs the rows' positions, never the text; writing to a chunk whose sealed
//! part is no longer shared moves the second part back onto its end. A chunk still filling
//! keeps its arena to itself, so appending to it checks no reference count.
//! Values longer than `INLINE_MAX` live in their own allocation (a spill slot) so that arena
//! offsets always fit in `u32`. `TextColumn` (record ids, interned names) is a `Chunked` of text
//! chunks, shared copy-on-write with its clones; text and list columns keep a `TextChunk` inside
//! their own column chunks. It knows nothing of records, ids or column kinds.

use std::sync::Arc;

use roaring::RoaringBitmap;

use super::chunked::{arc_bytes, reserve_row, Chunk, Chunked, CHUNK_ROWS};

/// Longest value kept inline in a chunk arena. With `CHUNK_ROWS` rows per chunk and garbage
/// collected at 50%, a chunk arena stays far below 4 GiB. Tests use a tiny limit to spill often.
#[cfg(not(test))]
pub(super) const INLINE_MAX: usize = 16 * 1024;
#[cfg(test)]
pub(super) const INLINE_MAX: usize = 24;

/// Garbage below this many bytes is never collected (avoids churning small chunks).
#[cfg(not(test))]
const GC_MIN_GARBAGE: usize = 64 * 1024;
#[cfg(test)]
const GC_MIN_GARBAGE: usize = 32;

/// Rows after which a filling chunk's arena is sized for the whole chunk (`TextChunk::reserve`).
const PREDICT_AFTER: usize = if CHUNK_ROWS > 4096 { 4096 } else { CHUNK_ROWS / 2 };

/// Follows every inline value in the arena, so that a search over the arena (`regexp`) sees
/// where values end, as in text joined by lines: `.` and `[^...]`-style runs stop there.
const SEPARATOR: char = '\n';

/// `Span::len` of an absent value.
const EMPTY_LEN: u32 = u32::MAX;
/// `Span::len` of a spilled value; `Span::off` is then the spill slot.
const SPILLED_LEN: u32 = u32::MAX - 1;
/// Garbage charged for a spill slot whose value was released (its header stays until collection).
const SPILL_SLOT_BYTES: usize = std::mem::size_of::<Box<str>>();

/// Where one row's value lives inside its chunk.
#[derive(Clone, Copy)]
struct Span {
    off: u32,
    len: u32,
}

impl Span {
    const EMPTY: Span = Span { off: 0, len: EMPTY_LEN };
}

/// Marks a row without a value in `Rows::Ends` (its end is the previous row's).
const ABSENT: u32 = 1 << 31;

// In `Rows::Ends` the arena holds each row's value once, in row order, inline values only:
// at most `CHUNK_ROWS * (INLINE_MAX + 1)` bytes, below `ABSENT`.
const _: () = assert!(CHUNK_ROWS * (INLINE_MAX + 1) < ABSENT as usize);

/// The rows of a chunk whose arena holds their values in row order and nothing else
/// (`TextChunk::row_ends`): row `k`'s value lies in the arena from `end(k - 1) + 1` (0 for the
/// first row) to `end(k)`. Ends never decrease: an absent row ends where the row before it does
/// (its value is empty and lies nowhere), an empty one a byte after it (past the separator).
#[derive(Clone, Copy)]
pub struct RowEnds<'a> {
    ends: &'a [u32],
}

impl RowEnds<'_> {
    /// Rows of the chunk.
    #[inline]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the chunk has no rows.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The arena offset where row `k`'s value ends (before its separator).
    #[inline]
    pub fn end(&self, k: usize) -> u32 {
        value_end(self.ends[k])
    }

    /// The first row at or after `k` whose value ends at or past `target` (`len` when none),
    /// reading the ends in order.
    #[inline]
    pub fn walk_to(&self, k: usize, target: u32) -> usize {
        k + self.ends[k..].iter().take_while(|&&end| value_end(end) < target).count()
    }

    /// The arena offsets of row `k`'s value (empty for an absent or empty value).
    #[inline]
    pub fn span(&self, k: usize) -> std::ops::Range<usize> {
        let start = if k == 0 { 0 } else { self.ends[k - 1] & !ABSENT };
        let end = self.ends[k];
        if end & ABSENT != 0 {
            return start as usize..start as usize;
        }
        start as usize..end as usize - 1
    }
}

/// Where a value ends given its entry in `Rows::Ends` (where it and its separator end, or
/// `ABSENT` with where the row before ends): `RowEnds::end`.
#[inline]
fn value_end(entry: u32) -> u32 {
    (entry & !ABSENT).saturating_sub(1)
}

/// Where each row's value lives in its chunk.
#[derive(Clone)]
enum Rows {
    /// The arena holds the rows' values in row order and nothing else (a chunk only appended
    /// to, or just collected): row `i`'s value and separator end at `ends[i]`, and start where
    /// row `i - 1`'s end; `ABSENT` marks a row without one. 4 bytes a row.
    Ends(Vec<u32>),
    /// One span per row, anywhere in the arena or in a spill slot: once a row was replaced or
    /// a value spilled. 8 bytes a row.
    Spans(Vec<Span>),
}

/// Up to `CHUNK_ROWS` rows of strings.
#[derive(Clone)]
pub(super) struct TextChunk {
    /// The arena's first part once the chunk was full (`seal`), shared with the chunk's copies:
    /// written to only while no copy holds it.
    sealed: Option<Arc<String>>,
    /// The rest of the arena: all of it while the chunk fills; once sealed, what was written
    /// while a copy held the sealed part. Its byte `i` is the arena's byte `sealed_len() + i`.
    buf: String,
    rows: Rows,
    spill: Vec<Box<str>>,
    garbage: usize,
    /// Whether a value stored here since the arena was last rewritten has a byte JSON escapes
    /// (`needs_json_escape`): checked once per value as it is stored, so that a JSON writer
    /// copies the values of a chunk without it as they are.
    escapes: bool,
}

impl Default for TextChunk {
    fn default() -> Self {
        TextChunk {
            sealed: None,
            buf: String::new(),
            rows: Rows::Ends(Vec::new()),
            spill: Vec::new(),
            garbage: 0,
            escapes: false,
        }
    }
}

impl TextChunk {
    /// `rows` absent values.
    pub(super) fn filled_empty(rows: usize) -> Self {
        TextChunk { rows: Rows::Ends(vec![ABSENT; rows]), ..TextChunk::default() }
    }

    /// No rows, with room for `rows` rows and `bytes` of arena (values and their separators):
    /// a chunk built whole (loading an image) then never grows or shrinks its arena.
    pub(super) fn with_capacity(rows: usize, bytes: usize) -> Self {
        TextChunk {
            buf: String::with_capacity(bytes),
            rows: Rows::Ends(Vec::with_capacity(rows)),
            ..TextChunk::default()
        }
    }

    /// A chunk to fill after `full` (the column's last chunk, full; `None` for its first):
    /// with room for as many rows and as many bytes as `full` holds live (plus 1/16), so that
    /// filling it in row order never copies its arena to grow it (a bulk load's arenas grew
    /// by doubling, then once more at half full, each copy landing on fresh pages the kernel
    /// must zero). Room never written costs no resident memory where the pages are fresh, and
    /// sealing shrinks a chunk that filled less, as it shrinks any.
    pub(super) fn following(full: Option<&TextChunk>) -> Self {
        match full {
            Some(full) => {
                let bytes = full.live_arena_bytes();
                TextChunk::with_capacity(CHUNK_ROWS, bytes + bytes / 16)
            }
            None => TextChunk::default(),
        }
    }

    /// Where row `at`'s value lives.
    #[inline]
    fn span(&self, at: usize) -> Span {
        match &self.rows {
            Rows::Spans(spans) => spans[at],
            Rows::Ends(ends) => {
                let end = ends[at];
                if end & ABSENT != 0 {
                    return Span::EMPTY;
                }
                let start = if at == 0 { 0 } else { ends[at - 1] & !ABSENT };
                Span { off: start, len: end - start - 1 }
            }
        }
    }

    /// True when the value at `at` is absent or `""` (no bytes are read).
    #[inline]
    pub(super) fn is_blank(&self, at: usize) -> bool {
        matches!(self.span(at).len, EMPTY_LEN | 0)
    }

    /// The value at `at`; `None` when absent.
    #[inline]
    pub(super) fn get(&self, at: usize) -> Option<&str> {
        let span = self.span(at);
        match span.len {
            EMPTY_LEN => None,
            SPILLED_LEN => Some(&self.spill[span.off as usize]),
            len => Some(self.inline(span.off as usize, len as usize)),
        }
    }

    /// The inline value of `len` bytes at arena offset `start`.
    #[inline]
    fn inline(&self, start: usize, len: usize) -> &str {
        let (part, start) = match &self.sealed {
            Some(sealed) if start < sealed.len() => (&**sealed, start),
            _ => (&self.buf, start - self.sealed_len()),
        };
        let text = part.get(start..start + len);
        text.expect("inline spans lie on char boundaries of one part of the arena")
    }

    /// Whether a value of this chunk may need JSON escaping (false: none does). See
    /// `TextChunk::escapes`.
    #[inline]
    pub(super) fn escapes(&self) -> bool {
        self.escapes
    }

    /// The arena's parts, each with the arena offset it starts at: every inline value
    /// followed by `\n`, in the order written, with garbage (values replaced since, each
    /// followed by `\n` too) between them. A value lies whole in one part; the second part is
    /// left out when empty.
    pub(super) fn arena_parts(&self) -> impl Iterator<Item = (usize, &str)> {
        let sealed = self.sealed.as_deref().map(|sealed| (0, sealed.as_str()));
        let rest = (self.sealed.is_none() || !self.buf.is_empty())
            .then_some((self.sealed_len(), self.buf.as_str()));
        sealed.into_iter().chain(rest)
    }

    /// Bytes in the sealed part of the arena.
    #[inline]
    fn sealed_len(&self) -> usize {
        self.sealed.as_ref().map_or(0, |sealed| sealed.len())
    }

    /// Bytes in the arena, both parts.
    fn arena_len(&self) -> usize {
        self.sealed_len() + self.buf.len()
    }

    /// Bytes of the arena that live values take (with their separators): its length less the
    /// garbage.
    fn live_arena_bytes(&self) -> usize {
        self.arena_len().saturating_sub(self.garbage)
    }

    /// At least the bytes of all its values together: the arena (separators and garbage
    /// included) and the values held on their own.
    pub(super) fn bytes_at_least_held(&self) -> usize {
        self.arena_len() + self.spill.iter().map(|value| value.len()).sum::<usize>()
    }

    /// Moves the arena of a full chunk behind the `Arc` its copies share (see the module doc).
    fn seal(&mut self) {
        if self.sealed.is_none() && self.len() == CHUNK_ROWS {
            self.buf.shrink_to_fit();
            self.sealed = Some(Arc::new(std::mem::take(&mut self.buf)));
        }
    }

    /// Where each row's value ends when the arena holds the rows' values in row order and
    /// nothing else (`RowEnds`); `None` once a row was replaced or a value spilled.
    #[inline]
    pub(super) fn row_ends(&self) -> Option<RowEnds<'_>> {
        match &self.rows {
            Rows::Ends(ends) => Some(RowEnds { ends }),
            Rows::Spans(_) => None,
        }
    }

    /// Where the value at `at` lies in the arena (`arena_parts`); `None` when it is absent,
    /// empty or held on its own (`get` still reads it).
    #[inline]
    pub(super) fn arena_span(&self, at: usize) -> Option<std::ops::Range<usize>> {
        let span = self.span(at);
        match span.len {
            EMPTY_LEN | SPILLED_LEN | 0 => None,
            len => Some(span.off as usize..span.off as usize + len as usize),
        }
    }

    /// Rows held.
    pub(super) fn len(&self) -> usize {
        match &self.rows {
            Rows::Ends(ends) => ends.len(),
            Rows::Spans(spans) => spans.len(),
        }
    }

    /// The rows as spans, converting them first when held as ends.
    fn spans_mut(&mut self) -> &mut Vec<Span> {
        if let Rows::Ends(ends) = &self.rows {
            let mut spans = Vec::with_capacity(ends.capacity().max(ends.len()));
            spans.extend((0..ends.len()).map(|at| self.span(at)));
            self.rows = Rows::Spans(spans);
        }
        match &mut self.rows {
            Rows::Spans(spans) => spans,
            Rows::Ends(_) => unreachable!("the rows were just turned into spans"),
        }
    }

    /// Stores `value` (appending) and returns its span.
    fn store(&mut self, value: Option<&str>) -> Span {
        let Some(value) = value else {
            return Span::EMPTY;
        };
        // Once one value escapes, the chunk is written escaping: the rest need no look.
        self.escapes = self.escapes || needs_json_escape(value);
        if value.len() > INLINE_MAX {
            let off = u32::try_from(self.spill.len()).expect("a chunk has fewer than 2^32 rows");
            self.spill.push(value.into());
            return Span { off, len: SPILLED_LEN };
        }
        let off = u32::try_from(self.arena_len())
            .expect("arena stays below 4 GiB: inline values are capped and garbage is collected");
        let rows = self.len();
        let part = match self.sealed.as_mut().map(Arc::get_mut) {
            None => {
                reserve(&mut self.buf, rows, value.len() + 1);
                &mut self.buf
            }
            Some(Some(arena)) => {
                // No copy holds the sealed part any more: the second goes back onto its end,
                // at the same offsets.
                if !self.buf.is_empty() {
                    arena.push_str(&std::mem::take(&mut self.buf));
                }
                reserve(arena, rows, value.len() + 1);
                arena
            }
            Some(None) => {
                self.buf.reserve(value.len() + 1);
                &mut self.buf
            }
        };
        part.push_str(value);
        part.push(SEPARATOR);
        let len = u32::try_from(value.len()).expect("inline values are at most INLINE_MAX bytes");
        Span { off, len }
    }

    /// Appends a row.
    pub(super) fn push(&mut self, value: Option<&str>) {
        self.push_unsealed(value);
        self.seal();
    }

    /// `push` leaving the chunk unsealed even when it is then full (`seal` follows).
    fn push_unsealed(&mut self, value: Option<&str>) {
        let inline = value.is_none_or(|v| v.len() <= INLINE_MAX);
        match (&self.sealed, &mut self.rows) {
            // Filling in row order, the usual case (a chunk is sealed only once full).
            (None, Rows::Ends(ends)) if inline => {
                append_in_order(&mut self.buf, ends, &mut self.escapes, value);
            }
            _ => {
                let span = self.store(value);
                let spans = self.spans_mut();
                reserve_row(spans);
                spans.push(span);
            }
        }
    }

    /// Appends rows as `push` would one by one (`values`: each row's value, `None` when
    /// absent), sealing the chunk once at the end (how a start builds its text chunks). Stops
    /// at the first error of `values` and returns it.
    pub(super) fn extend<'v, E>(
        &mut self,
        values: impl IntoIterator<Item = Result<Option<&'v str>, E>>,
    ) -> Result<(), E> {
        for value in values {
            self.push_unsealed(value?);
        }
        self.seal();
        Ok(())
    }

    /// Replaces the value at `at`; the old bytes become garbage, collected past a threshold.
    pub(super) fn set(&mut self, at: usize, value: Option<&str>) {
        // A full chunk filled through `set` (a column added to existing rows) is sealed too.
        self.seal();
        let old = self.spans_mut()[at];
        if old.len == SPILLED_LEN {
            if let Some(big) = value.filter(|v| v.len() > INLINE_MAX) {
                self.escapes |= needs_json_escape(big);
                self.spill[old.off as usize] = big.into();
                return;
            }
            self.spill[old.off as usize] = Box::default();
            self.garbage += SPILL_SLOT_BYTES;
        } else if old.len != EMPTY_LEN {
            self.garbage += old.len as usize + 1;
        }
        let span = self.store(value);
        self.spans_mut()[at] = span;
        let held = self.arena_len() + self.spill.len() * SPILL_SLOT_BYTES;
        if self.garbage > GC_MIN_GARBAGE && self.garbage * 2 > held {
            self.collect_garbage();
        }
    }

    /// Rewrites the arena and spill slots with live values only, in row order (back to ends
    /// when nothing is spilled); rows keep their positions.
    fn collect_garbage(&mut self) {
        let spans = std::mem::take(self.spans_mut());
        let live: usize = spans
            .iter()
            .filter(|s| s.len != EMPTY_LEN && s.len != SPILLED_LEN)
            .map(|s| s.len as usize + 1)
            .sum();
        let mut buf = String::with_capacity(live);
        let mut spill = Vec::new();
        let mut collected = Vec::with_capacity(spans.len());
        let mut escapes = false;
        for mut span in spans {
            match span.len {
                EMPTY_LEN => {}
                SPILLED_LEN => {
                    let value = std::mem::take(&mut self.spill[span.off as usize]);
                    escapes |= needs_json_escape(&value);
                    span.off = u32::try_from(spill.len()).expect("fewer than 2^32 spill slots");
                    spill.push(value);
                }
                len => {
                    let value = self.inline(span.off as usize, len as usize);
                    span.off = u32::try_from(buf.len()).expect("live bytes fit the arena");
                    escapes |= needs_json_escape(value);
                    buf.push_str(value);
                    buf.push(SEPARATOR);
                }
            }
            collected.push(span);
        }
        self.buf = buf;
        self.sealed = None;
        self.garbage = 0;
        self.escapes = escapes;
        self.rows = if spill.is_empty() {
            let mut end = 0;
            let ends = collected.iter().map(|span| match span.len {
                EMPTY_LEN => end | ABSENT,
                len => {
                    end = span.off + len + 1;
                    end
                }
            });
            Rows::Ends(ends.collect())
        } else {
            Rows::Spans(collected)
        };
        self.spill = spill;
        self.seal();
    }

    /// Room held for rows (tests).
    #[cfg(test)]
    fn rows_capacity(&self) -> usize {
        match &self.rows {
            Rows::Ends(ends) => ends.capacity(),
            Rows::Spans(spans) => spans.capacity(),
        }
    }
}

impl Chunk for TextChunk {
    fn heap_bytes(&self) -> usize {
        let spilled: usize = self.spill.iter().map(|s| s.len()).sum();
        let rows = match &self.rows {
            Rows::Ends(ends) => ends.capacity() * std::mem::size_of::<u32>(),
            Rows::Spans(spans) => spans.capacity() * std::mem::size_of::<Span>(),
        };
        let sealed = self.sealed.as_ref().map_or(0, |s| arc_bytes::<String>() + s.capacity());
        let arena = sealed + self.buf.capacity();
        arena + rows + self.spill.capacity() * SPILL_SLOT_BYTES + spilled
    }

    fn shrink(&mut self) {
        // A sealed part shared with a copy stays as it is (shrinking it would copy it).
        if let Some(arena) = self.sealed.as_mut().and_then(Arc::get_mut) {
            arena.shrink_to_fit();
        }
        self.buf.shrink_to_fit();
    }
}

/// Appends an inline or absent `value` to a chunk filling in row order, whose arena is `buf`
/// alone and whose rows end at `ends`; `escapes` turns true once a value needs escaping.
#[inline]
fn append_in_order(buf: &mut String, ends: &mut Vec<u32>, escapes: &mut bool, value: Option<&str>) {
    let end = match value {
        None => ends.last().map_or(0, |&end| end & !ABSENT) | ABSENT,
        Some(value) => {
            // Once one value escapes, the chunk is written escaping: the rest need no look.
            *escapes = *escapes || needs_json_escape(value);
            reserve(buf, ends.len(), value.len() + 1);
            buf.push_str(value);
            buf.push(SEPARATOR);
            u32::try_from(buf.len()).expect("an arena in row order holds below `ABSENT` bytes")
        }
    };
    reserve_row(ends);
    ends.push(end);
}

/// Grows a part of the arena of a chunk holding `rows` rows for `extra` more bytes while the
/// chunk fills: by doubling for its first `PREDICT_AFTER` rows, then once to the size the rows
/// so far predict for a full chunk (plus 1/8), so a large chunk is copied about once instead of
/// at every doubling (each copy of a big arena lands on fresh pages the kernel must zero); past
/// that, and for updates, by 1/8. A chunk started after a full one has room for as much from the
/// start (`TextChunk::following`) and rarely grows at all.
fn reserve(arena: &mut String, rows: usize, extra: usize) {
    if arena.capacity() - arena.len() >= extra {
        return;
    }
    let growth = if rows < PREDICT_AFTER {
        arena.len()
    } else if rows < CHUNK_ROWS && arena.capacity() < arena.len() / rows * CHUNK_ROWS {
        let predicted = arena.len() / rows * (CHUNK_ROWS - rows);
        predicted + predicted / 8
    } else {
        arena.len() / 8
    };
    arena.reserve_exact(extra.max(growth).max(64));
}

/// Optional strings, one per row, in shared copy-on-write chunked arenas.
#[derive(Clone, Default)]
pub(super) struct TextColumn {
    chunks: Chunked<TextChunk>,
}

impl TextColumn {
    /// An empty column.
    pub(super) fn new() -> Self {
        TextColumn::default()
    }

    /// Number of rows.
    pub(super) fn len(&self) -> usize {
        self.chunks.len()
    }

    /// Appends a row.
    pub(super) fn push(&mut self, value: Option<&str>) {
        self.chunks.push_with(TextChunk::following, |chunk| chunk.push(value));
    }

    /// Appends `count` rows, the `i`th holding `value_of(i)`, each chunk made writable once.
    pub(super) fn push_many<'v>(
        &mut self,
        count: usize,
        mut value_of: impl FnMut(usize) -> Option<&'v str>,
    ) {
        self.chunks.push_many_with(count, TextChunk::following, |chunk, i| chunk.push(value_of(i)));
    }

    /// The value of `row`; `None` when absent. Panics when `row >= len`.
    #[inline]
    pub(super) fn get(&self, row: usize) -> Option<&str> {
        let (chunk, at) = self.chunks.chunk(row);
        chunk.get(at)
    }

    /// The value of `row` and whether it may need JSON escaping (`TextChunk::escapes`).
    #[inline]
    pub(super) fn get_for_json(&self, row: usize) -> (Option<&str>, bool) {
        let (chunk, at) = self.chunks.chunk(row);
        (chunk.get(at), chunk.escapes())
    }

    /// Replaces the value of `row`, copying its chunk first when shared. The old bytes become
    /// garbage of the row's chunk.
    pub(super) fn set(&mut self, row: usize, value: Option<&str>) {
        let (chunk, at) = self.chunks.chunk_mut(row);
        chunk.set(at, value);
    }

    /// Keeps only the rows in `live`, in order, into fresh arenas (dropping all garbage).
    /// Old chunks are released as soon as they are passed, so the peak is about one column.
    /// A handle on the contents of chunk `index`.
    pub(super) fn handle(&self, index: usize) -> Option<super::ChunkHandle> {
        self.chunks.handle(index)
    }

    pub(super) fn retain_rows(&mut self, live: &RoaringBitmap) {
        let new_chunk = |_| TextChunk::default();
        self.chunks.retain_with(live, new_chunk, |target, source, at| target.push(source.get(at)));
    }

    /// Bytes held on the heap, counting chunks shared with a clone in full.
    pub(super) fn heap_bytes(&self) -> usize {
        self.chunks.heap_bytes()
    }
}

/// Whether JSON escapes a byte of `text` (as serde_json does: quote, backslash, control
/// characters); eight bytes at a time in a `u64`, without a branch per byte: a lane below
/// 0x20 borrows in `x - 0x20` lane by lane, and a quote or backslash lane is zero after an
/// XOR (the classic "has a zero byte" test). Exact as a test of any lane: a borrow can only
/// mark lanes above one that matched.
pub fn needs_json_escape(text: &str) -> bool {
    const LANES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |x: u64| x.wrapping_sub(LANES) & !x & HIGH;
    let mut words = text.as_bytes().chunks_exact(8);
    for word in &mut words {
        let mut lanes = [0u8; 8];
        lanes.copy_from_slice(word);
        let x = u64::from_le_bytes(lanes);
        let control = x.wrapping_sub(LANES * 0x20) & !x & HIGH;
        let quote = has_zero(x ^ (LANES * u64::from(b'"')));
        let backslash = has_zero(x ^ (LANES * u64::from(b'\\')));
        if control | quote | backslash != 0 {
            return true;
        }
    }
    words.remainder().iter().any(|&b| json_escaped(b))
}

/// Whether JSON escapes `byte`.
#[inline]
pub fn json_escaped(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// Encodes a list cell into `out` as consecutive netstring-like items `<len>:<item>`.
/// An empty list encodes as `""`, which stays distinct from an absent value.
pub(super) fn encode_list(items: &[impl AsRef<str>], out: &mut String) {
    out.clear();
    for item in items {
        let item = item.as_ref();
        // itoa, not `write!`: a bulk add encodes a list cell per record, and the formatting
        // machinery cost more than the rest of the encoding.
        out.push_str(itoa::Buffer::new().format(item.len()));
        out.push(':');
        out.push_str(item);
    }
}

/// A borrowed list cell: iterates its items without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListRef<'a> {
    rest: &'a str,
}

impl<'a> ListRef<'a> {
    /// Wraps an encoding produced by `encode_list`.
    pub(super) fn new(encoded: &'a str) -> Self {
        ListRef { rest: encoded }
    }

    /// `items` encoded into `buf` (cleared first), borrowed as a list cell is.
    pub fn encoded(items: &[String], buf: &'a mut String) -> Self {
        buf.clear();
        encode_list(items, buf);
        ListRef::new(buf)
    }

    /// True when no items remain.
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The remaining items as owned strings.
    pub fn to_vec(self) -> Vec<String> {
        self.map(str::to_owned).collect()
    }
}

impl<'a> Iterator for ListRef<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let colon = self.rest.find(':').expect("encoded list items start with `<len>:`");
        let len: usize = self.rest[..colon].parse().expect("encoded list item lengths are decimal");
        let end = colon + 1 + len;
        let item = self.rest.get(colon + 1..end);
        let item = item.expect("encoded list items end on a char boundary inside the cell");
        self.rest = &self.rest[end..];
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_sized_for_its_values_holds_them_without_growing() {
        let values = [Some("ab"), None, Some("cdé"), Some("")];
        // Each value and its separator: 3 + 5 + 1 bytes.
        let mut chunk = TextChunk::with_capacity(values.len(), 9);
        for value in values {
            chunk.push(value);
        }
        assert_eq!((chunk.buf.len(), chunk.buf.capacity()), (9, 9));
        assert_eq!(chunk.rows_capacity(), values.len());
        assert_eq!((0..4).map(|at| chunk.get(at)).collect::<Vec<_>>(), values);
    }

    /// The arena bytes in `range`, read from the part holding them (`None` across parts).
    fn arena_text(chunk: &TextChunk, range: std::ops::Range<usize>) -> Option<&str> {
        chunk.arena_parts().find_map(|(start, part)| {
            part.get(range.start.checked_sub(start)?..range.end.checked_sub(start)?)
        })
    }

    proptest::proptest! {
        /// The word-at-a-time test agrees with a test of each byte, at every length and
        /// offset: any text, and ASCII dense in the bytes at the edges of the test (0x1f,
        /// 0x20, quote, backslash, 0x7f).
        #[test]
        fn escaping_is_found_as_a_byte_by_byte_look_finds_it(
            text in "\\PC{0,40}|[\\x00-\\x7f]{0,40}|[ \\x1f\\x21\\x22\\x23\\x5b-\\x5d\\x7f\\u{80}-\\u{ff}a]{0,40}",
        ) {
            for start in 0..text.len().min(9) {
                let Some(part) = text.get(start..) else { continue };
                proptest::prop_assert_eq!(
                    needs_json_escape(part),
                    part.bytes().any(json_escaped),
                    "{:?}", part
                );
            }
        }

        /// Any pushes and replacements (absent, empty, short, spilled values, some with bytes
        /// JSON escapes) read back as a vector of the same would, whether the chunk holds ends
        /// or spans, the arena spans agree with the values, and a chunk holding a value that
        /// needs escaping says so; copies taken along the way (sharing the arena's first part)
        /// keep reading as the vector did when they were taken.
        #[test]
        fn a_chunk_reads_as_a_vector_of_its_values(
            ops in proptest::collection::vec((0usize..CHUNK_ROWS, 0u8..9), 1..60),
        ) {
            let value = |kind: u8, n: usize| match kind {
                0 => None,
                1 => Some(String::new()),
                2 => Some("x".repeat(n % 7 + 1)),
                3 => Some("ü".repeat(INLINE_MAX)),
                4 => Some(format!("say \"{n}\"")),
                5 => Some(format!("{}\t{n}", "ü".repeat(INLINE_MAX))),
                _ => Some(format!("row {n} é")),
            };
            let mut chunk = TextChunk::default();
            let mut model: Vec<Option<String>> = Vec::new();
            let mut copies: Vec<(TextChunk, Vec<Option<String>>)> = Vec::new();
            for (i, &(at, kind)) in ops.iter().enumerate() {
                if kind == 7 {
                    copies.push((chunk.clone(), model.clone()));
                } else if kind == 8 {
                    copies.truncate(copies.len().saturating_sub(1));
                } else if model.len() + 2 <= CHUNK_ROWS && i % 3 == 0 {
                    // Two rows at once, as a start appends them.
                    let (first, second) = (value(kind, i), value(at as u8 % 7, i + 1));
                    let both = [Ok::<_, ()>(first.as_deref()), Ok(second.as_deref())];
                    proptest::prop_assert!(chunk.extend(both).is_ok());
                    model.extend([first, second]);
                } else if model.len() < CHUNK_ROWS && (model.is_empty() || i % 2 == 0) {
                    chunk.push(value(kind, i).as_deref());
                    model.push(value(kind, i));
                } else {
                    let at = at % model.len();
                    chunk.set(at, value(kind, i).as_deref());
                    model[at] = value(kind, i);
                }
                let copies = copies.iter().map(|(copy, model)| (copy, model));
                for (chunk, model) in copies.chain([(&chunk, &model)]) {
                    proptest::prop_assert_eq!(chunk.len(), model.len());
                    for (row, expected) in model.iter().enumerate() {
                        proptest::prop_assert_eq!(chunk.get(row), expected.as_deref());
                        if let Some(range) = chunk.arena_span(row) {
                            let text = arena_text(chunk, range);
                            proptest::prop_assert_eq!(text, expected.as_deref());
                        }
                    }
                    let escaping = model.iter().flatten().any(|v| needs_json_escape(v));
                    proptest::prop_assert!(chunk.escapes() || !escaping);
                }
            }
        }
    }

    /// A chunk knows whether its values need JSON escaping: not while they are plain, from the
    /// first quote, spilled or inline, and not again once that value is replaced and the
    /// garbage holding it collected.
    #[test]
    fn a_chunk_knows_whether_its_values_need_json_escaping() {
        let mut chunk = TextChunk::default();
        chunk.push(Some("plain"));
        chunk.push(Some(&"ü".repeat(INLINE_MAX)));
        assert!(!chunk.escapes());
        chunk.set(1, Some(&format!("{}\\", "ü".repeat(INLINE_MAX))));
        assert!(chunk.escapes(), "a spilled value replaced in its slot");
        let mut chunk = TextChunk::default();
        chunk.push(Some("line\nbreak"));
        assert!(chunk.escapes());
        for round in 0..10 {
            chunk.set(0, Some(&format!("plain again, round {round}")));
        }
        assert!(!chunk.escapes(), "the escaped value went with the garbage collected since");
        assert_eq!(chunk.get(0), Some("plain again, round 9"));
        assert!(
            needs_json_escape("\u{1f}")
                && needs_json_escape("a\"b")
                && !needs_json_escape("ü\u{7f}")
        );
    }

    #[test]
    fn appended_rows_take_ends_until_a_replacement_and_again_once_collected() {
        let mut chunk = TextChunk::default();
        for value in [Some("a"), None, Some("bc")] {
            chunk.push(value);
        }
        assert!(matches!(chunk.rows, Rows::Ends(_)));
        chunk.set(0, Some("z"));
        assert!(matches!(chunk.rows, Rows::Spans(_)));
        let mut collected_to_ends = false;
        for i in 0..100 {
            chunk.set(2, Some(&format!("value {i}")));
            collected_to_ends |= matches!(chunk.rows, Rows::Ends(_));
        }
        assert!(collected_to_ends);
        assert_eq!((chunk.get(0), chunk.get(1), chunk.get(2)), (Some("z"), None, Some("value 99")));
    }

    fn column_of(values: &[Option<&str>]) -> TextColumn {
        let mut col = TextColumn::new();
        values.iter().for_each(|v| col.push(*v));
        col
    }

    #[test]
    fn empty_and_empty_string_differ() {
        let col = column_of(&[None, Some(""), Some("x")]);
        assert_eq!(col.get(0), None);
        assert_eq!(col.get(1), Some(""));
        assert_eq!(col.get(2), Some("x"));
    }

    #[test]
    fn row_ends_give_each_value_in_row_order_until_a_row_is_replaced() {
        let mut chunk = TextChunk::default();
        let values = [None, Some("ab"), Some(""), None, Some("cde")];
        for value in values {
            chunk.push(value);
        }
        let ends = chunk.row_ends().expect("a chunk only appended to is in row order");
        assert_eq!(ends.len(), values.len());
        for (k, value) in values.iter().enumerate() {
            let text = arena_text(&chunk, ends.span(k));
            assert_eq!(text, Some(value.unwrap_or_default()), "row {k}");
        }
        // "ab" holds 0..2, "" is at 3, "cde" 4..7; an absent row ends where the one before does.
        let found: Vec<u32> = (0..values.len()).map(|k| ends.end(k)).collect();
        assert_eq!(found, [0, 2, 3, 3, 7]);
        // The first row ending at or past each offset.
        assert_eq!(ends.walk_to(0, 1), 1);
        assert_eq!(ends.walk_to(0, 3), 2);
        assert_eq!(ends.walk_to(0, 4), 4);
        assert_eq!(ends.walk_to(0, 8), values.len());
        chunk.set(1, Some("x"));
        assert!(chunk.row_ends().is_none(), "a replaced row leaves row order");
    }

    #[test]
    fn updates_leave_garbage_that_the_chunk_collects() {
        let mut col = column_of(&[Some("a"), Some("b"), None]);
        for i in 0..200 {
            col.set(0, Some(&format!("value number {i}")));
            col.set(2, Some("ζ"));
        }
        assert_eq!(col.get(0), Some("value number 199"));
        assert_eq!(col.get(1), Some("b"));
        assert_eq!(col.get(2), Some("ζ"));
        let chunk = &col.chunks[0];
        assert!(chunk.garbage <= GC_MIN_GARBAGE.max(chunk.arena_len() / 2));
        assert!(chunk.arena_len() < 200, "arena was collected: {}", chunk.arena_len());
    }

    #[test]
    fn spilled_values_round_trip_and_reuse_slots() {
        let big = "長".repeat(INLINE_MAX);
        let mut col = column_of(&[Some(&big), Some("small")]);
        assert_eq!(col.get(0), Some(big.as_str()));
        let bigger = format!("{big}!");
        col.set(0, Some(&bigger));
        assert_eq!(col.chunks[0].spill.len(), 1);
        assert_eq!(col.get(0), Some(bigger.as_str()));
        col.set(0, Some("tiny"));
        col.set(1, Some(&big));
        assert_eq!(col.get(0), Some("tiny"));
        assert_eq!(col.get(1), Some(big.as_str()));
    }

    #[test]
    fn retain_rows_compacts_in_order() {
        let values: Vec<String> = (0..50).map(|i| format!("row-{i}")).collect();
        let mut col = TextColumn::new();
        values.iter().for_each(|v| col.push(Some(v)));
        col.set(7, None);
        let live: RoaringBitmap = (0..50u32).filter(|i| i % 4 != 1).collect();
        col.retain_rows(&live);
        assert_eq!(col.len(), live.len() as usize);
        for (k, row) in live.iter().enumerate() {
            let expected = (row != 7).then(|| values[row as usize].as_str());
            assert_eq!(col.get(k), expected);
        }
    }

    #[test]
    fn lists_encode_unambiguously() {
        let cases: Vec<Vec<String>> = vec![
            vec![],
            vec![String::new()],
            vec!["a:b".into(), "12:".into(), "".into(), "جديد".into()],
        ];
        let mut out = String::new();
        for items in cases {
            encode_list(&items, &mut out);
            assert_eq!(ListRef::new(&out).to_vec(), items);
        }
    }

    #[test]
    fn an_extend_stops_at_the_first_error() {
        let mut chunk = TextChunk::default();
        let values = [Ok(Some("a")), Ok(None), Err("damaged"), Ok(Some("b"))];
        assert_eq!(chunk.extend(values), Err("damaged"));
        assert_eq!((chunk.len(), chunk.get(0), chunk.get(1)), (2, Some("a"), None));
    }

    #[test]
    fn a_copy_shares_the_text_and_writes_beside_it() {
        let values: Vec<String> = (0..CHUNK_ROWS + 2).map(|i| format!("value {i}")).collect();
        let original = column_of(&values.iter().map(|v| Some(v.as_str())).collect::<Vec<_>>());
        assert!(original.chunks[0].sealed.is_some(), "a full chunk is sealed");
        assert!(original.chunks[1].sealed.is_none(), "a chunk still filling is not");
        let mut copy = original.clone();
        copy.set(1, Some("changed"));
        copy.set(2, Some("again"));
        let (before, after) = (&original.chunks[0], &copy.chunks[0]);
        let shared = before.sealed.as_ref().zip(after.sealed.as_ref());
        assert!(shared.is_some_and(|(a, b)| Arc::ptr_eq(a, b)), "the copy's text is not copied");
        assert_eq!(after.buf, "changed\nagain\n");
        assert_eq!((copy.get(1), copy.get(2)), (Some("changed"), Some("again")));
        assert_eq!((copy.get(3), original.get(1)), (Some("value 3"), Some("value 1")));
        drop(original);
        copy.set(3, Some("alone"));
        let chunk = &copy.chunks[0];
        assert!(chunk.buf.is_empty(), "the second part went back onto the sealed one");
        let sealed = chunk.sealed.as_deref().map(String::as_str).unwrap_or_default();
        assert!(sealed.ends_with("changed\nagain\nalone\n"), "{sealed:?}");
        assert_eq!((copy.get(1), copy.get(3)), (Some("changed"), Some("alone")));
        assert_eq!((copy.get(4), copy.get(CHUNK_ROWS)), (Some("value 4"), Some("value 8")));
    }

    #[test]
    fn clones_share_arenas_and_collect_garbage_apart() {
        let values: Vec<String> = (0..3 * CHUNK_ROWS).map(|i| format!("v{i}")).collect();
        let original = column_of(&values.iter().map(|v| Some(v.as_str())).collect::<Vec<_>>());
        let mut clone = original.clone();
        let row = CHUNK_ROWS + 2;
        for i in 0..200 {
            clone.set(row, Some(&format!("clone value number {i}")));
        }
        assert_eq!(original.chunks.shared_with(&clone.chunks), [true, false, true]);
        assert!(clone.chunks[1].arena_len() < 200, "the clone collected its own garbage");
        assert_eq!(original.chunks[1].garbage, 0);
        assert_eq!(clone.get(row), Some("clone value number 199"));
        for (i, value) in values.iter().enumerate() {
            assert_eq!(original.get(i), Some(value.as_str()));
        }
        let mut retained = clone.clone();
        retained.retain_rows(&(0..3 * CHUNK_ROWS as u32).filter(|i| i % 3 == 0).collect());
        assert_eq!(clone.len(), 3 * CHUNK_ROWS);
        assert_eq!(retained.get(0), Some("v0"));
        assert_eq!(clone.get(row), Some("clone value number 199"));
        clone.push(Some("tail"));
        assert_eq!((clone.len(), original.len()), (3 * CHUNK_ROWS + 1, 3 * CHUNK_ROWS));
        assert!((0..4).all(|chunk| clone.chunks[chunk].rows_capacity() <= CHUNK_ROWS));
    }
}
