//! `Versions`: the per-row versions of one column chunk, held in runs while they come in runs.
//!
//! A version is the store's clock at a cell's last change (0: never written); only merges read
//! them. Rows added by one request share one version, so a bulk-loaded chunk of `CHUNK_ROWS`
//! rows holds a few runs (6 bytes each) instead of 4 bytes a row. An empty cell a request
//! leaves keeps version 0 inside its neighbours' run, as a bit of its own (`zeros`), so sparse
//! columns stay in runs too. Writes split runs; once a chunk has more than `MAX_RUNS` of them
//! it is kept as a plain vector (what it would cost as runs is then close to that). The run
//! arithmetic is `runs`'; this owns the versions' encoding: what a version means belongs to
//! `column`.

use super::chunked::reserve_row;
use super::runs::{run_of, set_in_runs, MAX_RUNS};

/// The versions of up to `CHUNK_ROWS` rows.
#[derive(Clone, Debug)]
pub(super) enum Versions {
    /// Run `i` covers rows `starts[i] .. starts[i + 1]` (the last one up to `len`), all at
    /// version `values[i]` but the rows whose bit is set in `zeros` (a bitset, empty until a
    /// row needs it), which are at version 0; neighbouring runs have different versions.
    Runs { len: usize, starts: Vec<u16>, values: Vec<u32>, zeros: Vec<u64> },
    /// One version per row.
    Plain(Vec<u32>),
}

impl Default for Versions {
    fn default() -> Self {
        Versions::Runs { len: 0, starts: Vec::new(), values: Vec::new(), zeros: Vec::new() }
    }
}

impl Versions {
    /// `rows` rows at version 0.
    pub(super) fn zeros(rows: usize) -> Self {
        let mut versions = Versions::default();
        versions.push_run(rows, 0);
        versions
    }

    /// Rows held.
    #[inline]
    pub(super) fn len(&self) -> usize {
        match self {
            Versions::Runs { len, .. } => *len,
            Versions::Plain(rows) => rows.len(),
        }
    }

    /// The version of row `at`.
    #[inline]
    pub(super) fn get(&self, at: usize) -> u32 {
        match self {
            Versions::Runs { len, starts, values, zeros } => {
                assert!(at < *len, "row {at} of a chunk of {len}");
                if bit(zeros, at) {
                    return 0;
                }
                values[run_of(starts, at)]
            }
            Versions::Plain(rows) => rows[at],
        }
    }

    /// Appends a row at `version`.
    pub(super) fn push(&mut self, version: u32) {
        self.push_run(1, version);
    }

    /// Appends `rows` rows at `version`.
    fn push_run(&mut self, rows: usize, version: u32) {
        if rows == 0 {
            return;
        }
        match self {
            Versions::Runs { len, starts, values, zeros } => {
                if version == 0 && values.last().is_some_and(|&last| last != 0) {
                    // A never-written cell among written ones: a bit, not two more runs.
                    for at in *len..*len + rows {
                        set_bit(zeros, at, true);
                    }
                    *len += rows;
                    return;
                }
                if values.last() != Some(&version) {
                    starts.push(u16::try_from(*len).expect("a chunk has at most 2^16 rows"));
                    values.push(version);
                }
                *len += rows;
                if values.len() > MAX_RUNS {
                    self.make_plain();
                }
            }
            Versions::Plain(plain) => {
                for _ in 0..rows {
                    reserve_row(plain);
                    plain.push(version);
                }
            }
        }
    }

    /// Sets row `at` to `version`.
    pub(super) fn set(&mut self, at: usize, version: u32) {
        let runs = match self {
            Versions::Plain(rows) => {
                rows[at] = version;
                return;
            }
            Versions::Runs { len, starts, values, zeros } => {
                assert!(at < *len, "row {at} of a chunk of {len}");
                if version == 0 {
                    // Version 0 is a bit over the row's run (already 0 when the run is).
                    if values[run_of(starts, at)] != 0 {
                        set_bit(zeros, at, true);
                    }
                    return;
                }
                set_bit(zeros, at, false);
                set_in_runs(*len, starts, values, at, version)
            }
        };
        if runs > MAX_RUNS {
            self.make_plain();
        }
    }

    /// Every row's version, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let (runs, plain) = match self {
            Versions::Runs { len, starts, values, zeros } => {
                (Some((len, starts, values, zeros)), None)
            }
            Versions::Plain(rows) => (None, Some(rows)),
        };
        let runs = runs.into_iter().flat_map(|(len, starts, values, zeros)| {
            let expanded = (0..values.len()).flat_map(move |i| {
                let end = starts.get(i + 1).map_or(*len, |&s| usize::from(s));
                std::iter::repeat_n(values[i], end - usize::from(starts[i]))
            });
            expanded.enumerate().map(|(at, version)| if bit(zeros, at) { 0 } else { version })
        });
        runs.chain(plain.into_iter().flatten().copied())
    }

    /// Bytes held on the heap.
    pub(super) fn heap_bytes(&self) -> usize {
        match self {
            Versions::Runs { starts, values, zeros, .. } => {
                starts.capacity() * std::mem::size_of::<u16>()
                    + values.capacity() * std::mem::size_of::<u32>()
                    + zeros.capacity() * std::mem::size_of::<u64>()
            }
            Versions::Plain(rows) => rows.capacity() * std::mem::size_of::<u32>(),
        }
    }

    /// Drops spare capacity (a chunk that is full).
    pub(super) fn shrink(&mut self) {
        match self {
            Versions::Runs { starts, values, zeros, .. } => {
                starts.shrink_to_fit();
                values.shrink_to_fit();
                zeros.shrink_to_fit();
            }
            Versions::Plain(rows) => rows.shrink_to_fit(),
        }
    }

    fn make_plain(&mut self) {
        let plain: Vec<u32> = self.iter().collect();
        *self = Versions::Plain(plain);
    }

    /// True when held as runs (tests).
    #[cfg(test)]
    pub(super) fn is_runs(&self) -> bool {
        matches!(self, Versions::Runs { .. })
    }
}

/// True when bit `at` of the bitset is set (bits past its end are clear).
fn bit(bits: &[u64], at: usize) -> bool {
    bits.get(at / 64).is_some_and(|word| word >> (at % 64) & 1 == 1)
}

/// Sets or clears bit `at`, growing the bitset only to set one.
fn set_bit(bits: &mut Vec<u64>, at: usize, on: bool) {
    if on {
        if bits.len() <= at / 64 {
            bits.resize(at / 64 + 1, 0);
        }
        bits[at / 64] |= 1 << (at % 64);
    } else if let Some(word) = bits.get_mut(at / 64) {
        *word &= !(1 << (at % 64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rows_written_together_take_one_run_and_edits_split_and_merge_runs() {
        let mut versions = Versions::zeros(3);
        for _ in 0..4 {
            versions.push(7);
        }
        assert_eq!(versions.iter().collect::<Vec<_>>(), [0, 0, 0, 7, 7, 7, 7]);
        versions.set(4, 9);
        assert_eq!(versions.iter().collect::<Vec<_>>(), [0, 0, 0, 7, 9, 7, 7]);
        versions.set(4, 7);
        let Versions::Runs { starts, values, .. } = &versions else { panic!("runs") };
        assert_eq!((starts.as_slice(), values.as_slice()), (&[0, 3][..], &[0, 7][..]));
        versions.set(2, 7);
        versions.set(0, 5);
        assert_eq!(versions.iter().collect::<Vec<_>>(), [5, 0, 7, 7, 7, 7, 7]);
        assert_eq!((versions.get(0), versions.get(1), versions.get(6)), (5, 0, 7));
    }

    #[test]
    fn never_written_rows_among_written_ones_stay_in_their_run() {
        let mut versions = Versions::default();
        for version in [7, 7, 0, 7, 0, 0, 7] {
            versions.push(version);
        }
        let Versions::Runs { values, .. } = &versions else { panic!("runs") };
        assert_eq!(values.as_slice(), &[7][..], "one run, the zeros as bits");
        assert_eq!(versions.iter().collect::<Vec<_>>(), [7, 7, 0, 7, 0, 0, 7]);
        versions.set(2, 9);
        versions.set(0, 0);
        versions.set(4, 7);
        assert_eq!(versions.iter().collect::<Vec<_>>(), [0, 7, 9, 7, 7, 0, 7]);
        assert_eq!((versions.get(0), versions.get(2), versions.get(5)), (0, 9, 0));
    }

    #[test]
    fn too_many_runs_turn_the_versions_plain() {
        let mut versions = Versions::default();
        for row in 0..=MAX_RUNS as u32 {
            versions.push(row);
        }
        assert!(!versions.is_runs());
        assert_eq!(versions.iter().collect::<Vec<_>>(), (0..=MAX_RUNS as u32).collect::<Vec<_>>());
    }

    proptest! {
        /// Any pushes and writes read back as a plain vector would.
        #[test]
        fn versions_read_back_as_a_plain_vector(
            pushes in proptest::collection::vec((1usize..50, 0u32..4), 1..20),
            writes in proptest::collection::vec((0usize..1000, 0u32..4), 0..200),
        ) {
            let mut versions = Versions::default();
            let mut model = Vec::new();
            for (rows, version) in pushes {
                for _ in 0..rows {
                    versions.push(version);
                    model.push(version);
                }
            }
            for (at, version) in writes {
                let at = at % model.len();
                versions.set(at, version);
                model[at] = version;
                prop_assert_eq!(versions.get(at), version);
            }
            prop_assert_eq!(versions.len(), model.len());
            prop_assert_eq!(versions.iter().collect::<Vec<_>>(), model.clone());
            for (at, version) in model.iter().enumerate() {
                prop_assert_eq!(versions.get(at), *version);
            }
        }
    }
}
