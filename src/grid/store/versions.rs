//! `Versions`: the per-row versions of one column chunk, held in runs while they come in runs.
//!
//! A version is the store's clock at a cell's last change (0: never written); only merges read
//! them. Rows added by one request share one version, so a bulk-loaded chunk of `CHUNK_ROWS`
//! rows holds a few runs (6 bytes each) instead of 4 bytes a row. An empty cell a request
//! leaves keeps version 0 inside its neighbours' run, as a bit of its own (`zeros`), so sparse
//! columns stay in runs too. Writes split runs; once a chunk has more than `MAX_RUNS` of them
//! it is kept as a plain vector (what it would cost as runs is then close to that): the runs
//! are a `runs::Runs`, the bitset is this module's, and what a version means belongs to
//! `column`.

use super::chunked::Chunk;
use roaring::RoaringBitmap;

use super::runs::Runs;

/// The versions of up to `CHUNK_ROWS` rows.
#[derive(Clone, Debug, Default)]
pub(super) struct Versions {
    /// Every row's version, but for the rows in `zeros`.
    runs: Runs<u32>,
    /// While `runs` holds runs, the rows at version 0 inside a run of another version (a
    /// bitset, empty until a row needs it); empty once `runs` is plain.
    zeros: Vec<u64>,
}

impl Versions {
    /// `rows` rows at version 0.
    pub(super) fn zeros(rows: usize) -> Self {
        let mut versions = Versions::default();
        for _ in 0..rows {
            versions.runs.push(0);
        }
        versions
    }

    /// Rows held.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.runs.len()
    }

    /// The version of row `at`.
    #[inline]
    pub(super) fn get(&self, at: usize) -> u32 {
        if bit(&self.zeros, at) {
            return 0;
        }
        self.runs.get(at)
    }

    /// The versions of rows `ats`, read along the runs when the rows ascend (`Runs::get_ascending`).
    pub(super) fn get_ascending<'a>(
        &'a self,
        ats: impl Iterator<Item = usize> + Clone + 'a,
    ) -> impl Iterator<Item = u32> + 'a {
        let runs = self.runs.get_ascending(ats.clone());
        ats.zip(runs).map(|(at, version)| if bit(&self.zeros, at) { 0 } else { version })
    }

    /// Appends a row at `version`.
    pub(super) fn push(&mut self, version: u32) {
        if let Some(last) = self.runs.last_run().filter(|&last| version == 0 && last != 0) {
            // A never-written cell among written ones: a bit, not two more runs.
            set_bit(&mut self.zeros, self.runs.len(), true);
            self.runs.push(last);
            return;
        }
        self.runs.push(version);
        self.fold_zeros_when_plain();
    }

    /// Sets row `at` to `version`.
    pub(super) fn set(&mut self, at: usize, version: u32) {
        if version == 0 && self.runs.is_runs() {
            // Version 0 is a bit over the row's run (already 0 when the run is).
            if self.runs.get(at) != 0 {
                set_bit(&mut self.zeros, at, true);
            }
            return;
        }
        set_bit(&mut self.zeros, at, false);
        self.runs.set(at, version);
        self.fold_zeros_when_plain();
    }

    /// Once the runs turned plain, writes the rows of `zeros` as version 0 there.
    fn fold_zeros_when_plain(&mut self) {
        if self.runs.is_runs() || self.zeros.is_empty() {
            return;
        }
        for at in 0..self.runs.len() {
            if bit(&self.zeros, at) {
                self.runs.set(at, 0);
            }
        }
        self.zeros = Vec::new();
    }

    /// Every row's version, in order.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let zeros = &self.zeros;
        self.runs.iter().enumerate().map(|(at, version)| if bit(zeros, at) { 0 } else { version })
    }

    /// Adds `base + row` to `out` for every row at a version above `since`: a run at a time
    /// while held as runs (less its never-written rows).
    pub(super) fn insert_after(&self, since: u32, base: u32, out: &mut RoaringBitmap) {
        let mut runs = RoaringBitmap::new();
        self.runs.insert_where(base, &mut runs, |version| version > since);
        for (word_at, &word) in self.zeros.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                let at = word_at * 64 + word.trailing_zeros() as usize;
                runs.remove(base + at as u32);
                word &= word - 1;
            }
        }
        *out |= runs;
    }

    /// Bytes held on the heap.
    pub(super) fn heap_bytes(&self) -> usize {
        self.runs.heap_bytes() + self.zeros.capacity() * std::mem::size_of::<u64>()
    }

    /// Drops spare capacity (a chunk that is full).
    pub(super) fn shrink(&mut self) {
        self.runs.shrink();
        self.zeros.shrink_to_fit();
    }

    /// True when held as runs (tests).
    #[cfg(test)]
    pub(super) fn is_runs(&self) -> bool {
        self.runs.is_runs()
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
    use super::super::runs::MAX_RUNS;
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
        let Runs::Runs { starts, values, .. } = &versions.runs else { panic!("runs") };
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
        let Runs::Runs { values, .. } = &versions.runs else { panic!("runs") };
        assert_eq!(values.as_slice(), &[7][..], "one run, the zeros as bits");
        assert_eq!(versions.iter().collect::<Vec<_>>(), [7, 7, 0, 7, 0, 0, 7]);
        versions.set(2, 9);
        versions.set(0, 0);
        versions.set(4, 7);
        assert_eq!(versions.iter().collect::<Vec<_>>(), [0, 7, 9, 7, 7, 0, 7]);
        assert_eq!((versions.get(0), versions.get(2), versions.get(5)), (0, 9, 0));
        // Read along the runs, the zeros' bits still count.
        assert_eq!(versions.get_ascending(0..7).collect::<Vec<_>>(), [0, 7, 9, 7, 7, 0, 7]);
        assert_eq!(versions.get_ascending([5, 2, 6].into_iter()).collect::<Vec<_>>(), [0, 9, 7]);
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
            // The run-wise scan finds exactly the rows above each version.
            for since in 0..4 {
                let mut found = roaring::RoaringBitmap::new();
                versions.insert_after(since, 7, &mut found);
                let expected: Vec<u32> = (0..model.len() as u32)
                    .filter(|&at| model[at as usize] > since)
                    .map(|at| at + 7)
                    .collect();
                prop_assert_eq!(found.iter().collect::<Vec<_>>(), expected);
            }
        }
    }
}
