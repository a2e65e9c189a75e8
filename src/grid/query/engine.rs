//! `QueryEngine`: runs bound filters and sort keys over one branch's store, keeping the indexes
//! of `index` in step with the store's change journal.
//!
//! Filters run cheapest first into row sets; once the candidates are few (under 1/8 to 1/256 of
//! the records, by how a row test compares with a sequential scan for the filter) the remaining
//! filters test those rows one by one instead of scanning. Number and datetime ranges read the
//! ordered index of their column when they select under a quarter of the records. The page of
//! the matches is `page`'s.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use roaring::RoaringBitmap;

use super::filter::{fold_case, Filter, Kind, Operand, Pred, SortKey, Target, Val};
use super::fold::{self, ContainsSearch};
use super::index::{text_rows, ArenaOrder, DictIndex, OrderedIndex};
use super::page::unsorted_page;
use crate::grid::store::{ColumnSlot, ColumnStore, RecordIdentity, RowId};

/// The state of a column's hash index.
#[derive(Clone)]
enum Dict {
    Built(DictIndex),
    /// The column had too many distinct values; equality scans instead.
    TooManyValues,
}

impl Dict {
    fn heap_bytes(&self) -> usize {
        match self {
            Dict::Built(index) => index.heap_bytes(),
            Dict::TooManyValues => 0,
        }
    }
}

/// Indexes of one branch and the code that uses them; owned by the grid actor.
///
/// A snapshot (`snapshot`) is a copy for a read view: it shares the indexes (their parts sit
/// behind `Arc`s, and the actor's next update copies only the parts it changes, only while a
/// reader still holds them), never builds or refreshes one, and when a query wants an index it lacks it stops and says so (`missed`):
/// the query is then asked of the actor, which builds the index for the views after.
#[derive(Default, Clone)]
pub struct QueryEngine {
    epoch: u64,
    ordered: HashMap<SortKey, Arc<OrderedIndex>>,
    dicts: HashMap<Target, Arc<Dict>>,
    /// Where each value lies in the store's arenas, per column (`contains`, `regexp`).
    orders: HashMap<ColumnSlot, Arc<ArenaOrder>>,
    /// A read view's copy (see above).
    frozen: bool,
    /// Set on a snapshot when a query wanted an index it lacks; its answer is then meaningless.
    missed: bool,
}

impl std::fmt::Debug for QueryEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryEngine")
            .field("ordered", &self.ordered.len())
            .field("dicts", &self.dicts.len())
            .field("orders", &self.orders.len())
            .finish()
    }
}

/// A page of matching rows and how many rows match in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryPage {
    pub rows: Vec<RowId>,
    pub total: usize,
}

impl QueryEngine {
    /// A copy for a read view of `store` as it is now: the indexes are brought up to date
    /// first, so the copy answers for exactly this state of the store.
    pub fn snapshot(&mut self, store: &mut ColumnStore) -> QueryEngine {
        self.sync(store);
        for order in self.orders.values_mut() {
            if order.is_fresh(store) == Some(false) {
                // `None`: not stored as text; the snapshot's `order` answers as this one does.
                let _ = Arc::make_mut(order).refresh(store);
            }
        }
        self.resume_tracking(store);
        QueryEngine { frozen: true, missed: false, ..self.clone() }
    }

    /// Whether this snapshot lacked an index the last query wanted (its answer is then
    /// meaningless).
    pub fn missed(&self) -> bool {
        self.missed
    }

    fn is_empty(&self) -> bool {
        self.ordered.is_empty() && self.dicts.is_empty() && self.orders.is_empty()
    }

    /// Drops every index (they are rebuilt on next use).
    pub fn clear(&mut self) {
        self.ordered.clear();
        self.dicts.clear();
        self.orders.clear();
    }

    /// Bytes held by the indexes (approximate).
    pub fn heap_bytes(&self) -> usize {
        self.ordered.values().map(|index| index.heap_bytes()).sum::<usize>()
            + self.dicts.values().map(|dict| dict.heap_bytes()).sum::<usize>()
            + self.orders.values().map(|order| order.heap_bytes()).sum::<usize>()
    }

    /// Brings every index up to date with the store's journal.
    pub fn sync(&mut self, store: &mut ColumnStore) {
        let changes = store.take_changes();
        if store.epoch() != self.epoch || changes.overflowed {
            self.clear();
            self.epoch = store.epoch();
        }
        if self.is_empty() {
            store.set_tracking(false);
            return;
        }
        self.ordered.retain(|key, _| target_exists(store, key.target));
        self.dicts.retain(|target, _| target_exists(store, *target));
        self.orders.retain(|slot, _| store.has_column(*slot));
        if changes.is_empty() {
            return;
        }
        let mut rows = changes.rows;
        rows.sort_unstable();
        rows.dedup();
        let mut by_slot: HashMap<u32, Vec<u32>> = HashMap::new();
        for (row, slot) in changes.cells {
            by_slot.entry(slot).or_default().push(row);
        }
        let touched = |slot: Option<ColumnSlot>| -> Vec<u32> {
            let mut all = rows.clone();
            if let Some(cells) = slot.and_then(|s| by_slot.get(&s.get())) {
                all.extend_from_slice(cells);
                all.sort_unstable();
                all.dedup();
            }
            all
        };
        let store = &*store;
        for (key, index) in &mut self.ordered {
            Arc::make_mut(index).update(store, &touched(slot_of(key.target)));
        }
        self.dicts.retain(|target, dict| match Arc::make_mut(dict) {
            Dict::Built(index) => index.update(store, &touched(slot_of(*target))),
            Dict::TooManyValues => true,
        });
        // An arena order covers every physical row, live or not, and catches up with appended
        // rows by itself: only changed cells make its chunks stale.
        let changed = |slot: &ColumnSlot| by_slot.get(&slot.get()).into_iter().flatten().copied();
        for (slot, order) in &mut self.orders {
            let mut rows = changed(slot).peekable();
            if rows.peek().is_some() {
                let order = Arc::make_mut(order);
                rows.for_each(|row| order.mark(row));
            }
        }
    }

    /// Runs a query: the rows at `offset..offset + limit` of the records matching every filter,
    /// in sort order (insertion order when there are no keys), and the number of matches.
    pub fn run(
        &mut self,
        store: &mut ColumnStore,
        filters: &[Filter],
        sort: &[SortKey],
        offset: usize,
        limit: usize,
    ) -> QueryPage {
        self.sync(store);
        let page = self.query(store, filters, sort, offset, limit);
        self.resume_tracking(store);
        page
    }

    /// `run` over a store the engine is already in step with: an actor's engine after `sync`,
    /// or a snapshot over its view's store (check `missed` after).
    pub fn query(
        &mut self,
        store: &ColumnStore,
        filters: &[Filter],
        sort: &[SortKey],
        offset: usize,
        limit: usize,
    ) -> QueryPage {
        let matches = if filters.is_empty() { None } else { Some(self.filter(store, filters)) };
        let total = matches.as_ref().map_or(store.len(), |m| m.len() as usize);
        let rows = if sort.is_empty() {
            unsorted_page(store, matches.as_ref(), offset, limit)
        } else {
            self.sorted_page(store, matches.as_ref(), total, sort, offset, limit)
        };
        QueryPage { rows, total }
    }

    /// Turns the store's change journal on once indexes exist to follow it.
    pub fn resume_tracking(&self, store: &mut ColumnStore) {
        if !self.is_empty() && !store.is_tracking() {
            store.set_tracking(true);
        }
    }

    /// The live rows passing every filter.
    pub(super) fn filter(&mut self, store: &ColumnStore, filters: &[Filter]) -> RoaringBitmap {
        let mut ordered: Vec<&Filter> = filters.iter().collect();
        // Positive filters first (they narrow by intersection), cheapest first; a negated one
        // then subtracts its positive rows instead of building their complement.
        ordered.sort_by_key(|f| (f.negate, f.cost()));
        // Testing one row (a random access, a cache miss or two) costs about as much as a
        // sequential scan of this many rows for the filter: cheap scans 64, text matching 16,
        // regexes 8; an index lookup costs next to nothing, so 256.
        let few = |filter: &Filter| {
            let share = match filter.cost() {
                0 | 2 => 64,
                1 => 256,
                3 => 16,
                _ => 8,
            };
            (store.len() / share).max(64) as u64
        };
        let mut matches: Option<RoaringBitmap> = None;
        for filter in ordered {
            if self.missed {
                return RoaringBitmap::new();
            }
            matches = Some(match matches {
                None => self.eval(store, filter),
                Some(current) if current.is_empty() => return current,
                Some(current) if current.len() <= few(filter) => RoaringBitmap::from_sorted_iter(
                    current.iter().filter(|&row| filter.test(store, RowId::from_raw(row))),
                )
                .expect("a bitmap iterates in order"),
                Some(current) if filter.negate => {
                    current - self.eval_positive(store, filter.target, &filter.pred)
                }
                Some(current) => current & self.eval(store, filter),
            });
        }
        matches.unwrap_or_else(|| store.live().clone())
    }

    /// The live rows passing one filter.
    fn eval(&mut self, store: &ColumnStore, filter: &Filter) -> RoaringBitmap {
        let positive = self.eval_positive(store, filter.target, &filter.pred);
        if filter.negate {
            store.live() - positive
        } else {
            positive
        }
    }

    fn eval_positive(&mut self, store: &ColumnStore, target: Target, pred: &Pred) -> RoaringBitmap {
        if let (Target::Cell(slot, _), Pred::Empty) = (target, pred) {
            return store.scan_empty(slot);
        }
        if let Some(rows) = self.range_from_index(store, target, pred) {
            return rows;
        }
        // A snapshot that lacks an index stops here rather than scan for an answer it drops.
        if self.missed {
            return RoaringBitmap::new();
        }
        match (target, time_bounds(pred), number_bounds(pred)) {
            (Target::Cell(slot, Kind::Time), Some((lo, hi)), _) => {
                return store.scan_datetimes(slot, |t| lo <= t && t <= hi)
            }
            (Target::ModifiedTime, Some((lo, hi)), _) => {
                return store.scan_times(|t| lo <= t && t <= hi)
            }
            (Target::Cell(slot, Kind::Number), _, Some(range)) => {
                return store.scan_numbers(slot, |x| range.contains(x))
            }
            (Target::Cell(slot, Kind::Bool), _, _) => {
                return store.scan_booleans(slot, |b| pred.matches(Val::Bool(b)))
            }
            _ => {}
        }
        if let Some(rows) = self.equality_fast_path(store, target, pred) {
            return rows & store.live();
        }
        if let Target::Cell(slot, Kind::Text) = target {
            if let Some(rows) = self.text_fast_path(store, slot, pred) {
                return rows & store.live();
            }
        }
        if self.missed {
            return RoaringBitmap::new();
        }
        match target {
            Target::Cell(slot, _) => store.scan(slot, |cell| pred.matches(Val::from_cell(cell))),
            Target::RecordId => store.scan_ids(|id| pred.matches(Val::Text(id))),
            Target::Path => store.scan_paths(|path| pred.matches(Val::Text(path))),
            Target::ModifiedBy => store.scan_editors(|user| pred.matches(Val::Text(user))),
            Target::ModifiedTime => store.scan_times(|time| pred.matches(Val::Time(time))),
            Target::DependencyStatus(slot) => {
                store.scan_statuses(slot, |dep, _| pred.matches(Val::Status(dep as u8)))
            }
            Target::SourceStatus(slot) => {
                store.scan_statuses(slot, |_, src| pred.matches(Val::Status(src as u8)))
            }
        }
    }

    /// A number or datetime range through the ordered index of the target (built on first
    /// use): two binary searches, then the rows between. `None` for other predicates and for
    /// ranges over a quarter of the records, which a scan of the column answers as fast.
    fn range_from_index(
        &mut self,
        store: &ColumnStore,
        target: Target,
        pred: &Pred,
    ) -> Option<RoaringBitmap> {
        if !matches!(pred, Pred::Range(..)) {
            return None;
        }
        let (times, numbers) = (time_bounds(pred), number_bounds(pred));
        let indexed = matches!(target, Target::Cell(_, Kind::Time | Kind::Number))
            || target == Target::ModifiedTime;
        if !indexed || (times.is_none() && numbers.is_none()) {
            return None;
        }
        let index = self.ordered(store, SortKey { target, descending: false })?;
        let (start, end) = match (times, numbers) {
            (Some((lo, hi)), _) => index.span(
                store,
                |v| matches!(v, Val::Time(t) if t < lo),
                |v| matches!(v, Val::Time(t) if t <= hi),
            ),
            (None, Some(range)) => index.span(
                store,
                |v| matches!(v, Val::Number(x) if range.below(x)),
                |v| matches!(v, Val::Number(x) if range.not_above(x)),
            ),
            (None, None) => return None,
        };
        if end - start > store.len() / 4 {
            return None;
        }
        Some(index.rows_between(start, end, store.rows()))
    }

    /// `=` and `in` on text through an index: the store's key index for record ids, else a
    /// hash index of the target's values when it has few distinct ones (physical rows).
    fn equality_fast_path(
        &mut self,
        store: &ColumnStore,
        target: Target,
        pred: &Pred,
    ) -> Option<RoaringBitmap> {
        let values: Vec<&str> = match pred {
            Pred::Eq(Operand::Text(value)) => vec![value.as_str()],
            Pred::In(values) => values
                .iter()
                .map(|v| match v {
                    Operand::Text(v) => Some(v.as_str()),
                    _ => None,
                })
                .collect::<Option<_>>()?,
            _ => return None,
        };
        let mut rows = RoaringBitmap::new();
        if values.iter().any(|v| v.is_empty()) {
            rows |= self.eval_positive(store, target, &Pred::Empty);
        }
        match target {
            Target::RecordId if store.identity() == RecordIdentity::RecordId => {
                rows.extend(values.iter().filter_map(|id| store.find("", id)).map(RowId::get));
            }
            Target::Cell(_, Kind::Text) | Target::Path | Target::ModifiedBy => {
                let dict = self.dict(store, target)?;
                for value in values {
                    if let Some(set) = dict.rows_of(value) {
                        rows |= set;
                    }
                }
            }
            _ => return None,
        }
        Some(rows)
    }

    /// Index-backed evaluation on a text column, when one applies (physical rows).
    fn text_fast_path(
        &mut self,
        store: &ColumnStore,
        slot: ColumnSlot,
        pred: &Pred,
    ) -> Option<RoaringBitmap> {
        match pred {
            Pred::Contains(needle) if needle.is_empty() => {
                let mut all = RoaringBitmap::new();
                all.insert_range(0..store.rows() as u32);
                Some(all)
            }
            Pred::Contains(needle) => match ContainsSearch::new(needle) {
                Some(search) => {
                    Some(self.order(store, slot)?.contains_rows(store, needle, &search))
                }
                None => {
                    Some(text_rows(store, slot, |text| fold_case(text).contains(needle.as_str())))
                }
            },
            Pred::StartsWith(needle) => {
                Some(text_rows(store, slot, |text| fold::starts_with(text, needle)))
            }
            Pred::EndsWith(needle) => {
                Some(text_rows(store, slot, |text| fold::ends_with(text, needle)))
            }
            Pred::Regex(pattern) => {
                let search = pattern.search.as_ref()?;
                Some(self.order(store, slot)?.regex_rows(store, &pattern.regex, search))
            }
            _ => None,
        }
    }

    /// The arena order of a text column, up to date (`None` when the column is not stored as
    /// text, or a snapshot lacks it).
    fn order(&mut self, store: &ColumnStore, slot: ColumnSlot) -> Option<&ArenaOrder> {
        if self.frozen {
            let fresh = self.orders.get(&slot).and_then(|order| order.is_fresh(store));
            // Not stored as text: the caller scans, as the actor's engine would.
            if fresh.is_none() && self.orders.contains_key(&slot) {
                return None;
            }
            if fresh != Some(true) {
                self.missed = true;
                return None;
            }
            return self.orders.get(&slot).map(|order| &**order);
        }
        let order = self.orders.entry(slot).or_insert_with(|| Arc::new(ArenaOrder::new(slot)));
        if order.is_fresh(store) != Some(true) {
            Arc::make_mut(order).refresh(store)?;
        }
        Some(order)
    }

    fn dict(&mut self, store: &ColumnStore, target: Target) -> Option<&DictIndex> {
        if self.frozen && !self.dicts.contains_key(&target) {
            self.missed = true;
            return None;
        }
        let dict = self.dicts.entry(target).or_insert_with(|| {
            Arc::new(match DictIndex::build(store, target) {
                Some(index) => Dict::Built(index),
                None => Dict::TooManyValues,
            })
        });
        match &**dict {
            Dict::Built(index) => Some(index),
            Dict::TooManyValues => None,
        }
    }

    /// The ordered index of `key`, built on first use (`None` only when a snapshot lacks it).
    pub(super) fn ordered(&mut self, store: &ColumnStore, key: SortKey) -> Option<&OrderedIndex> {
        if self.frozen && !self.ordered.contains_key(&key) {
            self.missed = true;
            return None;
        }
        Some(self.ordered.entry(key).or_insert_with(|| Arc::new(OrderedIndex::build(store, key))))
    }
}

/// Inclusive bounds of a datetime `=` or range.
fn time_bounds(pred: &Pred) -> Option<(i64, i64)> {
    let bound = |b: &Bound<Operand>, unbounded: i64, step: i64| match b {
        Bound::Unbounded => Some(unbounded),
        Bound::Included(Operand::Time(t)) => Some(*t),
        Bound::Excluded(Operand::Time(t)) => Some(t.saturating_add(step)),
        _ => None,
    };
    match pred {
        Pred::Eq(Operand::Time(t)) => Some((*t, *t)),
        Pred::Range(lo, hi) => Some((bound(lo, i64::MIN, 1)?, bound(hi, i64::MAX, -1)?)),
        _ => None,
    }
}

/// Bounds of a number `=` or range, each with whether it is included.
#[derive(Debug, Clone, Copy)]
struct NumberRange {
    lo: f64,
    lo_included: bool,
    hi: f64,
    hi_included: bool,
}

impl NumberRange {
    #[inline]
    fn contains(self, x: f64) -> bool {
        (x > self.lo || (self.lo_included && x == self.lo)) && self.not_above(x)
    }

    /// True below the range (false for NaN).
    #[inline]
    fn below(self, x: f64) -> bool {
        x < self.lo || (x == self.lo && !self.lo_included)
    }

    /// True up to the top of the range (false for NaN).
    #[inline]
    fn not_above(self, x: f64) -> bool {
        x < self.hi || (self.hi_included && x == self.hi)
    }
}

fn number_bounds(pred: &Pred) -> Option<NumberRange> {
    let bound = |b: &Bound<Operand>, unbounded: f64| match b {
        Bound::Unbounded => Some((unbounded, true)),
        Bound::Included(Operand::Number(n)) => Some((*n, true)),
        Bound::Excluded(Operand::Number(n)) => Some((*n, false)),
        _ => None,
    };
    let ((lo, lo_included), (hi, hi_included)) = match pred {
        Pred::Eq(Operand::Number(n)) => ((*n, true), (*n, true)),
        Pred::Range(lo, hi) => (bound(lo, f64::NEG_INFINITY)?, bound(hi, f64::INFINITY)?),
        _ => return None,
    };
    Some(NumberRange { lo, lo_included, hi, hi_included })
}

/// The column a target reads, if it reads one.
fn slot_of(target: Target) -> Option<ColumnSlot> {
    match target {
        Target::Cell(slot, _) | Target::DependencyStatus(slot) | Target::SourceStatus(slot) => {
            Some(slot)
        }
        Target::RecordId | Target::Path | Target::ModifiedTime | Target::ModifiedBy => None,
    }
}

/// Whether an index's key still names something in the store.
fn target_exists(store: &ColumnStore, target: Target) -> bool {
    match target {
        Target::Cell(slot, _) | Target::DependencyStatus(slot) | Target::SourceStatus(slot) => {
            store.has_column(slot)
        }
        Target::RecordId | Target::Path | Target::ModifiedTime | Target::ModifiedBy => true,
    }
}
