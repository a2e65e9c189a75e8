//! `Runs<T>`: the values of one chunk's rows held as runs of one value while they come in runs,
//! and `ChunkedRuns<T>`, a column of them in copy-on-write chunks.
//!
//! A bulk add's records share their modification time, editor and clock stamps, so a chunk of
//! `CHUNK_ROWS` bulk-loaded records holds a few runs of each (2 bytes and one value a run)
//! instead of a value a row. Writes split runs; past `MAX_RUNS` runs a chunk is kept as a plain
//! vector (as runs it would cost about as much). The cell versions (`versions`) are runs too,
//! with a bitset of never-written rows over them.

use roaring::RoaringBitmap;

use super::chunked::{reserve_row, Chunk, Chunked, CHUNK_ROWS};

/// Runs past which a chunk is a plain vector: at `CHUNK_ROWS / 16` the runs take well under a
/// tenth of the plain vector's bytes (tests' tiny chunks allow 4).
#[cfg(not(test))]
pub(super) const MAX_RUNS: usize = CHUNK_ROWS / 16;
#[cfg(test)]
pub(super) const MAX_RUNS: usize = 4;

// Run starts are `u16` row offsets within a chunk.
const _: () = assert!(CHUNK_ROWS <= 1 << 16);

/// The values of up to `CHUNK_ROWS` rows.
#[derive(Clone, Debug)]
pub(super) enum Runs<T> {
    /// Run `i` covers rows `starts[i] .. starts[i + 1]` (the last one up to `len`), all at
    /// `values[i]`; neighbouring runs hold different values.
    Runs { len: usize, starts: Vec<u16>, values: Vec<T> },
    /// One value per row.
    Plain(Vec<T>),
}

impl<T> Default for Runs<T> {
    fn default() -> Self {
        Runs::Runs { len: 0, starts: Vec::new(), values: Vec::new() }
    }
}

impl<T: Copy + PartialEq> Runs<T> {
    /// Rows held.
    #[inline]
    pub(super) fn len(&self) -> usize {
        match self {
            Runs::Runs { len, .. } => *len,
            Runs::Plain(rows) => rows.len(),
        }
    }

    /// The value of row `at`.
    #[inline]
    pub(super) fn get(&self, at: usize) -> T {
        match self {
            Runs::Runs { len, starts, values } => {
                assert!(at < *len, "row {at} of a chunk of {len}");
                values[run_of(starts, at)]
            }
            Runs::Plain(rows) => rows[at],
        }
    }

    /// Appends a row holding `value`.
    #[inline]
    pub(super) fn push(&mut self, value: T) {
        match self {
            Runs::Runs { len, starts, values } => {
                if values.last() != Some(&value) {
                    starts.push(row_offset(*len));
                    values.push(value);
                }
                *len += 1;
                if values.len() > MAX_RUNS {
                    self.make_plain();
                }
            }
            Runs::Plain(rows) => {
                reserve_row(rows);
                rows.push(value);
            }
        }
    }

    /// Sets row `at` to `value`.
    pub(super) fn set(&mut self, at: usize, value: T) {
        let runs = match self {
            Runs::Plain(rows) => {
                rows[at] = value;
                return;
            }
            Runs::Runs { len, starts, values } => {
                assert!(at < *len, "row {at} of a chunk of {len}");
                set_in_runs(*len, starts, values, at, value)
            }
        };
        if runs > MAX_RUNS {
            self.make_plain();
        }
    }

    /// The values of rows `ats`: a step along the runs for each when the rows ascend (a
    /// snapshot reads a chunk's rows in order), a search only when one goes back.
    pub(super) fn get_ascending<'a>(
        &'a self,
        ats: impl Iterator<Item = usize> + 'a,
    ) -> impl Iterator<Item = T> + 'a {
        let mut run = 0usize;
        ats.map(move |at| match self {
            Runs::Runs { len, starts, values } => {
                assert!(at < *len, "row {at} of a chunk of {len}");
                if usize::from(starts[run]) > at {
                    run = run_of(starts, at);
                }
                while starts.get(run + 1).is_some_and(|&next| usize::from(next) <= at) {
                    run += 1;
                }
                values[run]
            }
            Runs::Plain(rows) => rows[at],
        })
    }

    /// Every row's value, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = T> + '_ {
        let (runs, plain) = match self {
            Runs::Runs { len, starts, values } => (Some((*len, starts, values)), None),
            Runs::Plain(rows) => (None, Some(rows)),
        };
        let runs = runs.into_iter().flat_map(|(len, starts, values)| {
            (0..values.len()).flat_map(move |i| {
                let end = starts.get(i + 1).map_or(len, |&s| usize::from(s));
                std::iter::repeat_n(values[i], end - usize::from(starts[i]))
            })
        });
        runs.chain(plain.into_iter().flatten().copied())
    }

    /// Adds `base + row` to `out` for every row whose value satisfies `keep`: a whole run at a
    /// time while held as runs.
    pub(super) fn insert_where(
        &self,
        base: u32,
        out: &mut RoaringBitmap,
        keep: impl Fn(T) -> bool,
    ) {
        match self {
            Runs::Runs { len, starts, values } => {
                for (i, &value) in values.iter().enumerate() {
                    if keep(value) {
                        let end = starts.get(i + 1).map_or(*len, |&s| usize::from(s));
                        out.insert_range(base + u32::from(starts[i])..base + end as u32);
                    }
                }
            }
            Runs::Plain(rows) => {
                for (at, &value) in rows.iter().enumerate() {
                    if keep(value) {
                        out.insert(base + at as u32);
                    }
                }
            }
        }
    }

    /// Rewrites every value through `map`, joining runs that come out equal.
    fn update_each(&mut self, mut map: impl FnMut(T) -> T) {
        match self {
            Runs::Runs { starts, values, .. } => {
                values.iter_mut().for_each(|v| *v = map(*v));
                join_equal_neighbours(starts, values);
            }
            Runs::Plain(rows) => rows.iter_mut().for_each(|v| *v = map(*v)),
        }
    }

    fn make_plain(&mut self) {
        let plain: Vec<T> = self.iter().collect();
        *self = Runs::Plain(plain);
    }

    /// True when held as runs.
    pub(super) fn is_runs(&self) -> bool {
        matches!(self, Runs::Runs { .. })
    }

    /// The value of the last run while held as runs.
    pub(super) fn last_run(&self) -> Option<T> {
        match self {
            Runs::Runs { values, .. } => values.last().copied(),
            Runs::Plain(_) => None,
        }
    }
}

impl<T: Copy + PartialEq> Chunk for Runs<T> {
    fn heap_bytes(&self) -> usize {
        match self {
            Runs::Runs { starts, values, .. } => {
                starts.capacity() * std::mem::size_of::<u16>()
                    + values.capacity() * std::mem::size_of::<T>()
            }
            Runs::Plain(rows) => rows.capacity() * std::mem::size_of::<T>(),
        }
    }

    fn shrink(&mut self) {
        match self {
            Runs::Runs { starts, values, .. } => {
                starts.shrink_to_fit();
                values.shrink_to_fit();
            }
            Runs::Plain(rows) => rows.shrink_to_fit(),
        }
    }
}

/// Per-row values in shared copy-on-write chunks, each held as runs while it can be.
pub(super) type ChunkedRuns<T> = Chunked<Runs<T>>;

impl<T: Copy + PartialEq> Chunked<Runs<T>> {
    /// Appends `count` values, the `i`th `value_of(i)`, each chunk made writable once.
    pub(super) fn push_many(&mut self, count: usize, mut value_of: impl FnMut(usize) -> T) {
        self.push_many_with(count, |_| Runs::default(), |chunk, i| chunk.push(value_of(i)));
    }

    /// The value at `row`. Panics when `row >= len` (a stale `RowId`).
    #[inline]
    pub(super) fn get(&self, row: usize) -> T {
        let (chunk, at) = self.chunk(row);
        chunk.get(at)
    }

    /// Overwrites the value at `row`, copying its chunk first when shared. Panics when
    /// `row >= len`.
    #[inline]
    pub(super) fn set(&mut self, row: usize, value: T) {
        let (chunk, at) = self.chunk_mut(row);
        chunk.set(at, value);
    }

    /// Every row's value, in row order.
    pub(super) fn values(&self) -> impl Iterator<Item = T> + '_ {
        self.iter_chunks().flat_map(Runs::iter)
    }

    /// The rows whose value satisfies `keep`, a run at a time where chunks hold runs.
    pub(super) fn rows_where(&self, keep: impl Fn(T) -> bool) -> RoaringBitmap {
        let mut out = RoaringBitmap::new();
        let mut base = 0u32;
        for chunk in self.iter_chunks() {
            chunk.insert_where(base, &mut out, &keep);
            base += chunk.len() as u32;
        }
        out
    }

    /// Rewrites every value through `map` (one copy-on-write check per chunk).
    pub(super) fn update_each(&mut self, mut map: impl FnMut(T) -> T) {
        for chunk in self.chunks_mut() {
            chunk.update_each(&mut map);
        }
    }

    /// Keeps only the rows in `live`, in order.
    pub(super) fn retain_rows(&mut self, live: &RoaringBitmap) {
        self.retain_with(
            live,
            |_| Runs::default(),
            |target, source, at| target.push(source.get(at)),
        );
    }
}

/// A row of a chunk as a run start.
fn row_offset(row: usize) -> u16 {
    u16::try_from(row).expect("a chunk has at most 2^16 rows")
}

/// The run holding row `at` (a row of the chunk, so some run starts at or before it).
#[inline]
fn run_of(starts: &[u16], at: usize) -> usize {
    starts.partition_point(|&start| usize::from(start) <= at) - 1
}

/// Sets row `at` of the runs to `value` (splitting its run, then joining neighbours of one
/// value); returns how many runs there are now.
fn set_in_runs<T: Copy + PartialEq>(
    len: usize,
    starts: &mut Vec<u16>,
    values: &mut Vec<T>,
    at: usize,
    value: T,
) -> usize {
    let run = run_of(starts, at);
    let old = values[run];
    if old == value {
        return values.len();
    }
    let start = usize::from(starts[run]);
    let end = starts.get(run + 1).map_or(len, |&s| usize::from(s));
    let mut split: Vec<(usize, T)> = Vec::with_capacity(3);
    if start < at {
        split.push((start, old));
    }
    split.push((at, value));
    if at + 1 < end {
        split.push((at + 1, old));
    }
    starts.splice(run..=run, split.iter().map(|&(r, _)| row_offset(r)));
    values.splice(run..=run, split.iter().map(|&(_, v)| v));
    // The new run may continue the one before it, or be continued by the one after.
    join_equal_neighbours(starts, values)
}

/// Joins neighbouring runs of one value; returns how many runs are left.
fn join_equal_neighbours<T: Copy + PartialEq>(starts: &mut Vec<u16>, values: &mut Vec<T>) -> usize {
    let mut keep = 0;
    for i in 0..values.len() {
        if keep > 0 && values[keep - 1] == values[i] {
            continue;
        }
        starts[keep] = starts[i];
        values[keep] = values[i];
        keep += 1;
    }
    starts.truncate(keep);
    values.truncate(keep);
    keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rows_written_together_take_one_run_until_too_many_runs_turn_them_plain() {
        let mut runs = Runs::default();
        for _ in 0..5 {
            runs.push(7i64);
        }
        assert!(runs.is_runs());
        assert!(matches!(&runs, Runs::Runs { values, .. } if values.len() == 1));
        runs.set(2, 9);
        assert_eq!(runs.iter().collect::<Vec<_>>(), [7, 7, 9, 7, 7]);
        runs.set(2, 7);
        assert!(matches!(&runs, Runs::Runs { values, .. } if values.len() == 1));
        for (at, value) in [(0, 1), (2, 2), (4, 3)] {
            runs.set(at, value);
        }
        assert!(!runs.is_runs(), "5 runs is past the tests' 4");
        assert_eq!(runs.iter().collect::<Vec<_>>(), [1, 7, 2, 7, 3]);
        runs.push(3);
        assert_eq!(runs.get(5), 3);
    }

    #[test]
    fn chunked_runs_cross_chunks_update_and_retain() {
        let mut column = ChunkedRuns::new();
        // In two appends, the second starting inside the second chunk.
        let split = CHUNK_ROWS + 3;
        column.push_many(split, |row| (row / 5) as u32);
        column.push_many(2 * CHUNK_ROWS - 1, |i| ((split + i) / 5) as u32);
        assert_eq!(column.get(CHUNK_ROWS + 1), ((CHUNK_ROWS + 1) / 5) as u32);
        column.set(CHUNK_ROWS, 99);
        assert_eq!(column.get(CHUNK_ROWS), 99);
        column.update_each(|v| v / 2);
        let expected: Vec<u32> = (0..(3 * CHUNK_ROWS + 2))
            .map(|row| if row == CHUNK_ROWS { 49 } else { (row / 5) as u32 / 2 })
            .collect();
        assert_eq!(column.values().collect::<Vec<_>>(), expected);
        // Across chunks and runs, the rows a predicate keeps are the rows of the values.
        let above: Vec<u32> =
            (0..expected.len() as u32).filter(|&r| expected[r as usize] > 3).collect();
        assert_eq!(column.rows_where(|v| v > 3).iter().collect::<Vec<_>>(), above);
        let live: RoaringBitmap = (0..column.len() as u32).filter(|r| r % 3 == 0).collect();
        column.retain_rows(&live);
        let kept: Vec<u32> = live.iter().map(|r| expected[r as usize]).collect();
        assert_eq!(column.values().collect::<Vec<_>>(), kept);
    }

    proptest! {
        /// Any pushes and sets read back as a plain vector given the same would.
        #[test]
        fn runs_read_as_a_plain_vector(
            pushes in proptest::collection::vec(0u8..3, 1..CHUNK_ROWS),
            sets in proptest::collection::vec((0usize..CHUNK_ROWS, 0u8..3), 0..20),
            picks in proptest::collection::vec(0usize..CHUNK_ROWS, 0..40),
        ) {
            let mut runs = Runs::default();
            let mut plain = Vec::new();
            for &value in &pushes {
                runs.push(value);
                plain.push(value);
            }
            for &(at, value) in &sets {
                let at = at % plain.len();
                runs.set(at, value);
                plain[at] = value;
                prop_assert_eq!(runs.get(at), value);
            }
            prop_assert_eq!(runs.len(), plain.len());
            let mut kept = RoaringBitmap::new();
            runs.insert_where(3, &mut kept, |v| v == 1);
            let expected: Vec<u32> =
                (0..plain.len() as u32).filter(|&at| plain[at as usize] == 1).map(|at| at + 3).collect();
            prop_assert_eq!(kept.iter().collect::<Vec<_>>(), expected);
            prop_assert_eq!(runs.iter().collect::<Vec<_>>(), plain.clone());
            // Rows read along the runs, in order or not, read what the vector holds.
            let mut picks: Vec<usize> = picks.iter().map(|at| at % plain.len()).collect();
            let expected: Vec<u8> = picks.iter().map(|&at| plain[at]).collect();
            prop_assert_eq!(runs.get_ascending(picks.iter().copied()).collect::<Vec<_>>(), expected);
            picks.sort_unstable();
            let expected: Vec<u8> = picks.iter().map(|&at| plain[at]).collect();
            prop_assert_eq!(runs.get_ascending(picks.iter().copied()).collect::<Vec<_>>(), expected);
        }
    }
}
