//! Three-way merge of one branch into another (decisions.md section 8).
//!
//! Every change to a branch is stamped with the branch's logical clock (`ColumnStore::tick`):
//! each cell carries the clock of its last change, each record the clock of its insertion and
//! of its last move. A branch starts as a copy of its source, clock included, so the two agree
//! on every stamp up to the fork. The common point of a merge is therefore one clock per side
//! (`MergeBase`): the fork's clock, or the clocks recorded by the last merge between the two.
//! Since then, on either side:
//! - a cell changed when its version is above that side's clock;
//! - a record was added when it was inserted above that side's clock;
//! - a record missing on one side was deleted there when the other side's copy was inserted at
//!   or below its clock (it existed at the common point); the source's deletions since then are
//!   read from its journal of gone keys (`ColumnStore::gone_since`).
//!
//! The options decide what crosses over: `update` writes cells changed only in the source
//! (changed on both sides: the destination's stays unless `override`), `add` adds records added
//! in the source, `delete` deletes in the destination records deleted in the source. Merged
//! cells bring their dependency and source statuses; the destination's dependency rules then
//! apply as to any write (a merged source-language cell makes an unmerged target out of date).
//!
//! `plan_merge` only reads the two states and returns ordinary ops (plus `MergeMark`), which the
//! destination's actor commits as one WAL entry: the merge is atomic, logged and in history.

use roaring::RoaringBitmap;

use super::error::{GridError, GridResult};
use super::merge_resolve::{CellChoice, Choice, Choices, SideQuery};
use super::ops::{CellWrite, GridOp, GridState, MergeBase, RecordWrite};
use super::query::RawFilter;
use super::store::{ColumnSlot, ColumnStore, RecordIdentity, RowId};
use super::value::{CellValue, DependencyStatus};

/// What a merge brings over (`mergeRecordOptions`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeOptions {
    pub add: bool,
    pub update: bool,
    pub delete: bool,
    pub override_: bool,
}

impl MergeOptions {
    /// Reads option values, each a name or a comma-separated list of names; at least one is
    /// required (400 `requestParameterMissing` otherwise, `badRequest` for an unknown name).
    pub fn parse<S: AsRef<str>>(values: &[S]) -> GridResult<MergeOptions> {
        let mut options = MergeOptions::default();
        let mut any = false;
        for value in values {
            for name in value.as_ref().split(',').map(str::trim).filter(|n| !n.is_empty()) {
                any = true;
                match name.to_ascii_lowercase().as_str() {
                    "add" => options.add = true,
                    "update" => options.update = true,
                    "delete" => options.delete = true,
                    "override" => options.override_ = true,
                    _ => return Err(GridError::InvalidMergeOption(name.to_owned())),
                }
            }
        }
        if !any {
            return Err(GridError::NoMergeOptions);
        }
        Ok(options)
    }
}

/// What to merge: the options, for a view merge the only columns merged, the query that
/// picks the records merged (empty: all), and the per-cell choices (`grid::merge_resolve`).
#[derive(Debug, Clone, Default)]
pub struct MergeScope {
    pub options: MergeOptions,
    pub columns: Option<Vec<String>>,
    /// Only source records matching it are added or updated, and only destination records
    /// matching it are deleted (a deleted record has no source copy to test).
    pub query: Vec<RawFilter>,
    pub choices: Vec<CellChoice>,
}

/// How the cells of a record on both sides are merged.
struct CellRules<'a> {
    base: MergeBase,
    options: MergeOptions,
    choices: &'a Choices,
}

/// How many records a merge changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeCounts {
    pub added: usize,
    pub updated: usize,
    pub deleted: usize,
}

/// The common point to merge `source` into `destination` from: the latest of the last merge in
/// either direction, else `fork` (the clock where their lineages parted).
pub fn merge_base(
    source_id: &str,
    source: &GridState,
    destination_id: &str,
    destination: &GridState,
    fork: u32,
) -> MergeBase {
    let forward = destination.merge_bases.get(source_id).copied();
    // A merge the other way recorded (destination clock read, source clock after): swapped.
    let backward = source
        .merge_bases
        .get(destination_id)
        .map(|b| MergeBase { source: b.destination, destination: b.source });
    [forward, backward]
        .into_iter()
        .flatten()
        .max_by_key(|b| b.source)
        .unwrap_or(MergeBase { source: fork, destination: fork })
}

/// A column both branches have with the same storage (formula columns aside): its slot on each
/// side.
struct SharedColumn<'a> {
    id: &'a str,
    source: ColumnSlot,
    destination: ColumnSlot,
    /// Both sides keep statuses for it.
    localized: bool,
}

fn shared_columns<'a>(
    source: &'a GridState,
    destination: &'a GridState,
    only: Option<&[String]>,
) -> Vec<SharedColumn<'a>> {
    destination
        .schema
        .columns
        .iter()
        .filter(|c| only.is_none_or(|ids| ids.contains(&c.id)))
        // Formula and lookup cells are not merged or restored: the destination computes its own.
        .filter(|c| c.is_writable())
        .filter_map(|c| {
            let d = *destination.slots.get(&c.id)?;
            let s = *source.slots.get(&c.id)?;
            (source.store.kind(s) == destination.store.kind(d)).then(|| SharedColumn {
                id: &c.id,
                source: s,
                destination: d,
                localized: source.store.is_localized(s) && destination.store.is_localized(d),
            })
        })
        .collect()
}

/// The ops that merge `source` into `destination` from `base`, limited to the columns `only`
/// (a view merge) when `scope` names them, ending with the `MergeMark` that records the new common point.
pub fn plan_merge(
    source_id: &str,
    source: &GridState,
    destination: &GridState,
    base: MergeBase,
    scope: &MergeScope,
    (user, time_ms): (&str, i64),
) -> (Vec<GridOp>, MergeCounts) {
    let options = scope.options;
    let columns = shared_columns(source, destination, scope.columns.as_deref());
    let by_id = destination.store.identity() == RecordIdentity::RecordId;
    let (s, d) = (&source.store, &destination.store);
    let (mut adds, mut updates, mut deletes) = (Vec::new(), Vec::new(), Vec::new());
    let touched = touched_since(s, base, options, &columns);
    let choices = Choices::new(&scope.choices);
    let rules = CellRules { base, options, choices: &choices };
    let source_query = SideQuery::new(source, &scope.query);
    let rows = touched.iter().map(RowId::from_raw);
    for row in rows.filter(|row| source_query.matches(source, *row)) {
        let (path, id) = (s.path(row), s.id(row));
        match d.find(path, id) {
            None => {
                if options.add && s.created_at(row) > base.source {
                    adds.push(RecordWrite {
                        id: id.to_owned(),
                        path: path.to_owned(),
                        new_id: None,
                        new_path: None,
                        cells: added_cells(source, row, &columns),
                        mark_mt: false,
                    });
                }
            }
            Some(target) if options.update => {
                let sides = (source, row, destination, target);
                if let Some(update) = planned_update(sides, &columns, &rules, by_id) {
                    updates.push(update);
                }
            }
            Some(_) => {}
        }
    }
    if options.delete {
        let query = SideQuery::new(destination, &scope.query);
        deletes = deleted_in_source(s, d, base);
        deletes.retain(|(path, id)| {
            d.find(path, id).is_some_and(|row| query.matches(destination, row))
        });
    }
    let counts = MergeCounts { added: adds.len(), updated: updates.len(), deleted: deletes.len() };
    let mark = GridOp::MergeMark {
        source_branch_id: source_id.to_owned(),
        source_clock: source.store.clock(),
    };
    (merge_ops((updates, adds, deletes), mark, (user, time_ms)), counts)
}

/// The ops of a planned merge in the order they apply: the updates, the adds, the deletes
/// (each only when there is one), then `mark`.
fn merge_ops(
    (updates, adds, deletes): (Vec<RecordWrite>, Vec<RecordWrite>, Vec<(String, String)>),
    mark: GridOp,
    (user, time_ms): (&str, i64),
) -> Vec<GridOp> {
    let mut ops = Vec::with_capacity(4);
    if !updates.is_empty() {
        ops.push(GridOp::UpdateRecords { time_ms, user: user.to_owned(), records: updates });
    }
    if !adds.is_empty() {
        ops.push(GridOp::AddRecords { time_ms, user: user.to_owned(), records: adds });
    }
    if !deletes.is_empty() {
        ops.push(GridOp::DeleteRecords { keys: deletes });
    }
    ops.push(mark);
    ops
}

/// The update of destination row `target` from source row `row`: the cells the rules bring
/// over and, in a grid identified by id, a move to the source's path (unless the destination
/// moved it too and no override is asked); `None` when it brings nothing.
fn planned_update(
    (source, row, destination, target): (&GridState, RowId, &GridState, RowId),
    columns: &[SharedColumn],
    rules: &CellRules<'_>,
    by_id: bool,
) -> Option<RecordWrite> {
    let (s, d) = (&source.store, &destination.store);
    let cells = updated_cells(source, row, destination, target, columns, rules);
    let moved = by_id
        && s.moved_at(row) > rules.base.source
        && s.path(row) != d.path(target)
        && (d.moved_at(target) <= rules.base.destination || rules.options.override_);
    (!cells.is_empty() || moved).then(|| RecordWrite {
        id: s.id(row).to_owned(),
        path: d.path(target).to_owned(),
        new_id: None,
        new_path: moved.then(|| s.path(row).to_owned()),
        cells,
        mark_mt: false,
    })
}

/// The source's rows that can bring anything: those it added, moved or changed a merged cell
/// of since the common point, found from the stamps column by column, without a lookup per
/// record.
fn touched_since(
    s: &ColumnStore,
    base: MergeBase,
    options: MergeOptions,
    columns: &[SharedColumn],
) -> RoaringBitmap {
    let mut touched = s.scan_moved_since(base.source);
    if options.update {
        for column in columns {
            touched |= s.scan_changed_since(column.source, base.source);
        }
    }
    touched
}

/// The keys of the destination's records that existed at the common point (inserted at or
/// below its clock) and that the source deleted (or moved away) since: read from the source's
/// journal of gone keys, so the cost follows the deletions, not the records.
fn deleted_in_source(s: &ColumnStore, d: &ColumnStore, base: MergeBase) -> Vec<(String, String)> {
    let mut seen = std::collections::HashSet::new();
    let mut keys = Vec::new();
    for gone in s.gone_since(base.source) {
        if s.find(&gone.path, &gone.id).is_some() {
            continue;
        }
        let Some(row) = d.find(&gone.path, &gone.id) else { continue };
        if d.created_at(row) <= base.destination && seen.insert(row) {
            keys.push((d.path(row).to_owned(), d.id(row).to_owned()));
        }
    }
    keys
}

/// Whether a cell holds the same value and statuses on both sides.
fn same_cell(
    source: &GridState,
    row: RowId,
    destination: &GridState,
    target: RowId,
    column: &SharedColumn<'_>,
) -> bool {
    let (s, d, c) = (&source.store, &destination.store, column);
    s.value_ref(row, c.source) == d.value_ref(target, c.destination)
        && (!c.localized
            || (s.dependency_status(row, c.source) == d.dependency_status(target, c.destination)
                && s.source_status(row, c.source) == d.source_status(target, c.destination)))
}

/// A source cell as a write: its value and, for language columns, its statuses.
fn cell_write(state: &GridState, row: RowId, column: &SharedColumn<'_>) -> CellWrite {
    let store = &state.store;
    CellWrite {
        column_id: column.id.into(),
        value: Some(store.value(row, column.source)),
        dependency_status: column.localized.then(|| store.dependency_status(row, column.source)),
        source_status: column.localized.then(|| store.source_status(row, column.source)),
    }
}

/// The non-empty cells (or set statuses) of a record added in the source.
fn added_cells(source: &GridState, row: RowId, columns: &[SharedColumn<'_>]) -> Vec<CellWrite> {
    columns
        .iter()
        .filter(|c| source.store.version(row, c.source) != 0)
        .map(|c| cell_write(source, row, c))
        .filter(|w| w.value != Some(CellValue::Empty) || w.dependency_status.is_some())
        .collect()
}

/// The cells of a record on both sides that the merge writes into the destination: those the
/// source changed since the common point, unless the destination changed them too (then only
/// with `override`) or a choice for the cell decides otherwise; an unchanged cell is skipped.
fn updated_cells(
    source: &GridState,
    row: RowId,
    destination: &GridState,
    target: RowId,
    columns: &[SharedColumn<'_>],
    rules: &CellRules<'_>,
) -> Vec<CellWrite> {
    let (s, d) = (&source.store, &destination.store);
    let (id, path) = (s.id(row), d.path(target));
    columns
        .iter()
        .filter(|c| s.version(row, c.source) > rules.base.source)
        .filter_map(|c| {
            let choice =
                if rules.choices.is_empty() { None } else { rules.choices.get(id, path, c.id) };
            let status = match choice {
                Some(Choice::Destination) => return None,
                Some(Choice::Source) => None,
                Some(Choice::SourceUpToDate) => Some(DependencyStatus::UpToDate),
                Some(Choice::SourceOutOfDate) => Some(DependencyStatus::OutOfDate),
                None if rules.options.override_
                    || d.version(target, c.destination) <= rules.base.destination =>
                {
                    None
                }
                None => return None,
            };
            let mut write = cell_write(source, row, c);
            if let (Some(status), true) = (status, c.localized) {
                write.dependency_status = Some(status);
            }
            let same = d.value_ref(target, c.destination) == s.value_ref(row, c.source)
                && (!c.localized
                    || (write.dependency_status
                        == Some(d.dependency_status(target, c.destination))
                        && s.source_status(row, c.source)
                            == d.source_status(target, c.destination)));
            (!same).then_some(write)
        })
        .collect()
}

/// The ops that put `current`'s records back as they are in `backup` (a restore): records
/// only in the backup are added, records not in it deleted, and every cell that differs (value
/// or statuses) written back, for the columns both have.
pub fn plan_restore(
    backup: &GridState,
    current: &GridState,
    (user, time_ms): (&str, i64),
) -> Vec<GridOp> {
    let columns = shared_columns(backup, current, None);
    let (b, c) = (&backup.store, &current.store);
    let (mut adds, mut updates) = (Vec::new(), Vec::new());
    for row in b.live_rows() {
        let (path, id) = (b.path(row), b.id(row));
        let write = |cells, new_path: Option<String>, path: &str| RecordWrite {
            id: id.to_owned(),
            path: path.to_owned(),
            new_id: None,
            new_path,
            cells,
            mark_mt: false,
        };
        match c.find(path, id) {
            None => adds.push(write(added_cells(backup, row, &columns), None, path)),
            Some(target) => {
                let cells: Vec<CellWrite> = columns
                    .iter()
                    .filter(|col| !same_cell(backup, row, current, target, col))
                    .map(|col| cell_write(backup, row, col))
                    .collect();
                let moved = (c.path(target) != path).then(|| path.to_owned());
                if !cells.is_empty() || moved.is_some() {
                    updates.push(write(cells, moved, c.path(target)));
                }
            }
        }
    }
    let deletes: Vec<(String, String)> = c
        .live_rows()
        .filter(|r| b.find(c.path(*r), c.id(*r)).is_none())
        .map(|r| (c.path(r).to_owned(), c.id(r).to_owned()))
        .collect();
    let mut ops = Vec::with_capacity(3);
    if !deletes.is_empty() {
        ops.push(GridOp::DeleteRecords { keys: deletes });
    }
    if !updates.is_empty() {
        ops.push(GridOp::UpdateRecords { time_ms, user: user.to_owned(), records: updates });
    }
    if !adds.is_empty() {
        ops.push(GridOp::AddRecords { time_ms, user: user.to_owned(), records: adds });
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Coded, ErrorCode};

    #[test]
    fn options_are_read_from_repeated_and_comma_separated_values() {
        let all = MergeOptions { add: true, update: true, delete: true, override_: true };
        assert_eq!(
            MergeOptions::parse(&["add,update", "Delete", " override "]).expect("valid"),
            all
        );
        let update = MergeOptions { update: true, ..MergeOptions::default() };
        assert_eq!(MergeOptions::parse(&["update,"]).expect("valid"), update);
        let missing = [MergeOptions::parse::<&str>(&[]), MergeOptions::parse(&[" , "])];
        for result in missing {
            assert_eq!(result.expect_err("no option").code(), ErrorCode::RequestParameterMissing);
        }
        let unknown = MergeOptions::parse(&["add,merge"]).expect_err("unknown");
        assert_eq!(unknown.code(), ErrorCode::BadRequest);
        assert!(unknown.to_string().contains("\"merge\""));
    }

    #[test]
    fn the_latest_merge_in_either_direction_is_the_common_point() {
        let mut source = GridState::empty(RecordIdentity::RecordId);
        let mut destination = GridState::empty(RecordIdentity::RecordId);
        assert_eq!(
            merge_base("s", &source, "d", &destination, 7),
            MergeBase { source: 7, destination: 7 }
        );
        destination.merge_bases.insert("s".into(), MergeBase { source: 20, destination: 30 });
        assert_eq!(
            merge_base("s", &source, "d", &destination, 7),
            MergeBase { source: 20, destination: 30 }
        );
        // A later merge the other way (d into s, read at d's clock 40, s's clock 25 after).
        source.merge_bases.insert("d".into(), MergeBase { source: 40, destination: 25 });
        assert_eq!(
            merge_base("s", &source, "d", &destination, 7),
            MergeBase { source: 25, destination: 40 }
        );
    }
}
