//! Recovery of grid branches at start: each branch known to the catalogue starts from its
//! newest intact snapshot (or, when none loads and the live WAL no longer holds its older
//! records, from its history: `Durability::load_from_history`; else empty), and the WAL's
//! records after that position are replayed onto it in order.
//!
//! A branch copied from another that has no snapshot of its own yet starts as a copy of its
//! source's state once the replay has passed the copy's WAL position (its source was pinned
//! so that its snapshots cannot pass that position), with the copy's view ids; then its own
//! records are replayed.
//!
//! Catalogue records are skipped (the catalogue was recovered first, `catalog::journal`).
//! Records of branches the catalogue no longer knows (deleted grids) are skipped; a record that
//! does not decode is reported and skipped (the WAL's own checks already dropped torn tails).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::durability::Durability;
use crate::grid::ops::{GridOp, GridState};
use crate::grid::schema::ViewDef;
use crate::grid::store::RecordIdentity;
use crate::persist::entry::{branch_id_of, WalEntry, WalRecord, CATALOG_MARKER};
use crate::persist::wal::{WalError, WalGap, WalRecords};

/// The copy a branch started as: its source's state at a WAL position. Recovery rebuilds the
/// branch from it until the branch has a snapshot of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkPoint {
    /// The source's WAL position at the copy: the copy holds its records up to it.
    pub wal_lsn: u64,
    /// The source's clock at the copy (where the two branches' stamps part).
    pub clock: u32,
    /// The source's view ids and the copies' new ids.
    pub views: Vec<(String, String)>,
}

/// What recovery needs to know of a branch from the catalogue.
#[derive(Debug, Clone)]
pub struct BranchSeed {
    pub branch_id: String,
    pub identity: RecordIdentity,
    pub default_view_id: String,
    /// For a branch copied from another: the source's id and where the copy was taken.
    pub fork: Option<(String, ForkPoint)>,
}

/// The recovered branches, and those rebuilt from their source's state (no snapshot yet).
pub struct Recovered {
    pub states: HashMap<String, GridState>,
    pub forked: HashSet<String>,
}

/// A branch waiting for the replay to reach the position it was copied at.
struct PendingFork<'a> {
    branch_id: &'a str,
    source: &'a str,
    point: &'a ForkPoint,
}

/// Rebuilds every branch from its snapshot and the WAL records (in LSN order).
pub fn recover(
    seeds: &[BranchSeed],
    durability: &Durability,
    records: &WalRecords,
    gaps: &[WalGap],
) -> Result<Recovered, WalError> {
    let started = std::time::Instant::now();
    let mut replay = Replay::from_snapshots(seeds, durability);
    let snapshots_done = started.elapsed();
    for gap in gaps.iter().filter(|gap| !gap.lsns.is_empty()) {
        replay.report_gap(gap);
    }
    let (replayed, skipped) = replay.apply_records(records)?;
    let Replay { mut states, mut pending, mut forked } = replay;
    while let Some(fork) = pending.pop() {
        copy_fork(&fork, &mut states, &mut forked);
    }
    let out = with_default_views(seeds, states);
    tracing::info!(
        branches = out.len(),
        from_copies = forked.len(),
        wal_records = records.len(),
        replayed,
        skipped,
        snapshot_load_ms = snapshots_done.as_millis() as u64,
        total_ms = started.elapsed().as_millis() as u64,
        "branches recovered"
    );
    Ok(Recovered { states: out, forked })
}

/// Branches as the replay rebuilds them: each with the WAL position its state covers, the
/// copies still to start (latest fork first) and those started.
struct Replay<'a> {
    states: HashMap<String, (GridState, u64)>,
    pending: Vec<PendingFork<'a>>,
    forked: HashSet<String>,
}

impl<'a> Replay<'a> {
    /// Each branch from its newest intact snapshot; without one, a copy waiting for its fork's
    /// position (a branch with no snapshot of its own yet), or empty.
    fn from_snapshots(seeds: &'a [BranchSeed], durability: &Durability) -> Self {
        let mut states = HashMap::new();
        let mut pending = Vec::new();
        for seed in seeds {
            durability.track(&seed.branch_id);
            let loaded = durability
                .load(&seed.branch_id)
                .or_else(|| durability.load_from_history(&seed.branch_id));
            match (loaded, &seed.fork) {
                (Some(loaded), _) => {
                    states.insert(seed.branch_id.clone(), (loaded.state, loaded.wal_lsn));
                }
                (None, Some((source, point))) => {
                    pending.push(PendingFork { branch_id: &seed.branch_id, source, point })
                }
                (None, None) => {
                    states.insert(seed.branch_id.clone(), (GridState::empty(seed.identity), 0));
                }
            }
        }
        // Latest first, so the next due is popped from the end.
        pending.sort_by_key(|p| std::cmp::Reverse(p.point.wal_lsn));
        Replay { states, pending, forked: HashSet::new() }
    }

    /// Says which branches may have lost changes to a gap of the log: those whose snapshot
    /// does not cover it (a lost record names its branch only in its unreadable bytes).
    fn report_gap(&self, gap: &WalGap) {
        let mut exposed: Vec<&str> = self
            .states
            .iter()
            .filter(|(_, (_, floor))| *floor < gap.lsns.end - 1)
            .map(|(id, _)| id.as_str())
            .chain(self.pending.iter().map(|p| p.branch_id))
            .collect();
        let (first_lsn, last_lsn) = (gap.lsns.start, gap.lsns.end - 1);
        if exposed.is_empty() {
            tracing::warn!(
                first_lsn,
                last_lsn,
                "the WAL records that could not be read are all inside every branch's snapshot: \
                 no branch lost a change to them"
            );
            return;
        }
        exposed.sort_unstable();
        let count = exposed.len();
        exposed.truncate(20);
        tracing::error!(
            first_lsn,
            last_lsn,
            branches = count,
            named = ?exposed,
            "the WAL records that could not be read are newer than these branches' snapshots: \
             the changes they held are lost"
        );
    }

    /// Applies every branch record after its branch's position, starting each copy when the
    /// replay passes its fork; returns how many records were applied and how many did not
    /// decode (reported, skipped).
    fn apply_records(&mut self, records: &WalRecords) -> Result<(usize, usize), WalError> {
        // The records each branch still needs: those after its snapshot's position (a branch
        // rebuilt as a copy needs all of its own, which all follow the fork).
        let floors: HashMap<String, u64> = self
            .states
            .iter()
            .map(|(id, (_, floor))| (id.clone(), *floor))
            .chain(self.pending.iter().map(|p| (p.branch_id.to_owned(), 0)))
            .collect();
        let mut replayed = 0usize;
        // One thread reads and decodes records while this one applies them (the two took about
        // the same time at 1M records); the channel bounds what is decoded ahead.
        let (skipped, read) = std::thread::scope(|scope| {
            let (send, receive) = std::sync::mpsc::sync_channel::<(u64, WalEntry)>(32);
            let decoder = scope.spawn(move || decode_needed(records, &floors, send));
            for (lsn, entry) in receive {
                if self.apply(lsn, &entry) {
                    replayed += 1;
                }
            }
            decoder
                .join()
                .unwrap_or_else(|_| (0, Err(WalError::ReadAgain("the decoder panicked".into()))))
        });
        read?;
        Ok((replayed, skipped))
    }

    /// Applies one branch record (after starting the copies whose fork it passed); false when
    /// its branch is unknown or its state covers it already.
    fn apply(&mut self, lsn: u64, entry: &WalEntry) -> bool {
        while self.pending.last().is_some_and(|p| p.point.wal_lsn < lsn) {
            let fork = self.pending.pop().expect("checked above");
            copy_fork(&fork, &mut self.states, &mut self.forked);
        }
        let Some((state, floor)) = self.states.get_mut(&entry.branch_id) else { return false };
        if lsn <= *floor {
            return false;
        }
        for op in &entry.ops {
            state.apply(op);
        }
        true
    }
}

/// Reads the WAL from the lowest floor on and sends the branch records some branch still
/// needs (after its floor), decoded; returns how many did not decode and the read's outcome.
fn decode_needed(
    records: &WalRecords,
    floors: &HashMap<String, u64>,
    send: std::sync::mpsc::SyncSender<(u64, WalEntry)>,
) -> (usize, Result<(), WalError>) {
    // Segments wholly below every branch's floor are not read.
    let lowest = floors.values().copied().min().unwrap_or(u64::MAX);
    let mut skipped = 0usize;
    let read = records.for_each_after(lowest, |lsn, bytes| {
        let needed = match branch_id_of(bytes) {
            Some(id) => floors.get(id).is_some_and(|floor| lsn > *floor),
            // Catalogue change sets were applied by `catalog::journal::recover`.
            None => !bytes.starts_with(&CATALOG_MARKER),
        };
        if !needed {
            return;
        }
        match WalRecord::decode(bytes) {
            Ok(WalRecord::Branch(entry)) => {
                // The receiver lives until every record was sent.
                let _ = send.send((lsn, entry));
            }
            Ok(WalRecord::Catalog(_)) => {}
            Err(err) => {
                skipped += 1;
                tracing::error!(lsn, error = %err, "WAL record does not decode; skipped");
            }
        }
    });
    (skipped, read)
}

/// The recovered states by branch, each with its default view: a branch whose creation was
/// never acknowledged as durable starts empty.
fn with_default_views(
    seeds: &[BranchSeed],
    mut states: HashMap<String, (GridState, u64)>,
) -> HashMap<String, GridState> {
    let mut out = HashMap::with_capacity(states.len());
    for seed in seeds {
        let Some((mut state, _)) = states.remove(&seed.branch_id) else { continue };
        ensure_default_view(&mut state, &seed.default_view_id);
        out.insert(seed.branch_id.clone(), state);
    }
    out
}

/// Gives a rebuilt branch its default view when its replay never created it (the branch's
/// creation was never acknowledged as durable: it starts empty).
pub fn ensure_default_view(state: &mut GridState, view_id: &str) {
    if state.schema.view(view_id).is_none() {
        state.apply(&GridOp::CreateView(ViewDef {
            id: view_id.to_owned(),
            name: "Default view".to_owned(),
            is_default: true,
            columns: Vec::new(),
        }));
    }
}

/// Starts a branch as a copy of its source's state as replayed so far (the replay has just
/// passed the copy's position).
fn copy_fork(
    fork: &PendingFork<'_>,
    states: &mut HashMap<String, (GridState, u64)>,
    forked: &mut HashSet<String>,
) {
    let Some((source, floor)) = states.get(fork.source) else {
        tracing::error!(
            branch = fork.branch_id,
            source = fork.source,
            "the source of a branch without a snapshot is gone; the branch starts empty"
        );
        return;
    };
    if *floor > fork.point.wal_lsn {
        tracing::error!(
            branch = fork.branch_id,
            source = fork.source,
            copy_lsn = fork.point.wal_lsn,
            source_snapshot_lsn = *floor,
            "the source's snapshot is past the copy of a branch without a snapshot; the branch starts empty"
        );
        return;
    }
    let mut state = source.clone();
    state.rename_views(&fork.point.views);
    states.insert(fork.branch_id.to_owned(), (state, fork.point.wal_lsn));
    forked.insert(fork.branch_id.to_owned());
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::grid::columns::{build_column, ColumnRequest};
    use crate::grid::ops::{CellWrite, RecordWrite};
    use crate::grid::value::CellValue;
    use crate::persist::durability::SnapshotPolicy;
    use crate::persist::entry::WalEntry;
    use crate::persist::snapshot::SledSnapshotStore;
    use crate::persist::wal::{Wal, WalOptions};

    fn text(id: &str, value: &str) -> RecordWrite {
        RecordWrite {
            id: id.into(),
            path: String::new(),
            new_id: None,
            new_path: None,
            cells: vec![CellWrite {
                column_id: "en".into(),
                value: Some(CellValue::Text(value.into())),
                dependency_status: None,
                source_status: None,
            }],
            mark_mt: false,
        }
    }

    fn update(id: &str, value: &str) -> GridOp {
        GridOp::UpdateRecords { time_ms: 1, user: "u".into(), records: vec![text(id, value)] }
    }

    fn value(state: &GridState, id: &str) -> CellValue {
        let row = state.store.find("", id).expect("record present");
        state.store.value(row, state.slots["en"])
    }

    /// A branch whose first snapshot was never stored comes back as its source's state at the
    /// fork's WAL position (not after), with the copy's view ids, plus its own records; the
    /// source's snapshot below the fork is where the source's replay starts.
    #[test]
    fn a_branch_without_a_snapshot_is_rebuilt_from_its_source_at_the_fork() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (wal, _) = Wal::open(dir.path().join("wal"), WalOptions::default()).expect("wal");
        let db = sled::Config::new().temporary(true).open().expect("sled");
        let snapshots = Arc::new(SledSnapshotStore::open(&db).expect("store"));
        let policy = SnapshotPolicy {
            every_records: 1000,
            every_bytes: u64::MAX,
            every: Duration::from_secs(3600),
        };
        let durability = Durability::new(wal, snapshots, policy);
        durability.track("m");
        let request = serde_json::json!({"id": "en", "name": "English", "type": "singleLine"});
        let request: ColumnRequest = serde_json::from_value(request).expect("column request");
        let column = build_column(&Default::default(), &request).expect("column");
        let entries = [
            ("m", vec![GridOp::CreateColumn { column, view_id: None, editable: true }]),
            (
                "m",
                vec![GridOp::AddRecords {
                    time_ms: 1,
                    user: "u".into(),
                    records: vec![text("a", "a1"), text("b", "b1")],
                }],
            ),
            ("m", vec![update("a", "a3")]),
            ("m", vec![update("b", "b4")]),
            ("b", vec![update("a", "a5 in the branch")]),
        ];
        let records: Vec<(u64, Vec<u8>)> = entries
            .iter()
            .enumerate()
            .map(|(i, (branch, ops))| {
                let entry = WalEntry::now((*branch).to_owned(), ops.clone());
                (i as u64 + 1, entry.encode())
            })
            .collect();
        // The master's snapshot covers LSN 2; the copy was taken at LSN 3.
        let mut master = GridState::new("v1", Vec::new(), RecordIdentity::RecordId);
        for (_, ops) in &entries[..2] {
            ops.iter().for_each(|op| master.apply(op));
        }
        durability.write_snapshot("m", 2, &master).expect("snapshot");
        entries[2].1.iter().for_each(|op| master.apply(op));
        let point = ForkPoint {
            wal_lsn: 3,
            clock: master.store.clock(),
            views: vec![("v1".into(), "v2".into())],
        };
        let seeds = [
            BranchSeed {
                branch_id: "m".into(),
                identity: RecordIdentity::RecordId,
                default_view_id: "v1".into(),
                fork: None,
            },
            BranchSeed {
                branch_id: "b".into(),
                identity: RecordIdentity::RecordId,
                default_view_id: "v2".into(),
                fork: Some(("m".into(), point.clone())),
            },
        ];
        let records = WalRecords::from_vec(records);
        let recovered = recover(&seeds, &durability, &records, &[]).expect("the records read");
        assert_eq!(recovered.forked, HashSet::from(["b".to_owned()]));
        let (m, b) = (&recovered.states["m"], &recovered.states["b"]);
        assert_eq!(value(m, "a"), CellValue::Text("a3".into()));
        assert_eq!(value(m, "b"), CellValue::Text("b4".into()));
        assert_eq!(value(b, "a"), CellValue::Text("a5 in the branch".into()));
        assert_eq!(
            value(b, "b"),
            CellValue::Text("b1".into()),
            "the source's later write stays out"
        );
        assert!(b.schema.view("v2").is_some_and(|v| v.is_default));
        assert!(b.schema.view("v1").is_none());
        assert_eq!(b.store.clock(), point.clock + 1, "the branch's clock goes on from the copy");
        let row = b.store.find("", "b").expect("present");
        assert!(b.store.version(row, b.slots["en"]) <= point.clock);
    }
}
