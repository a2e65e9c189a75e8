//! Model-based property test: random operation sequences applied to `ColumnStore` and to a naive
//! model (a `Vec` of records with `HashMap` cells) must agree after every step on order, ids,
//! metadata, values, statuses, versions, lookups and pages. A second property test interleaves
//! operations on a store and its clones against two models: copy-on-write sharing must never let
//! a write on one side show on the other.

use std::collections::HashMap;

use proptest::prelude::*;

use super::*;
use crate::grid::value::{DependencyStatus, SourceStatus, StorageKind};

#[derive(Debug, Clone)]
struct ValueSeed {
    empty: bool,
    text: String,
    number: f64,
    boolean: bool,
    datetime: i64,
    list: Vec<String>,
}

impl ValueSeed {
    fn for_kind(&self, kind: StorageKind) -> CellValue {
        if self.empty {
            return CellValue::Empty;
        }
        match kind {
            StorageKind::Text => CellValue::Text(self.text.clone()),
            StorageKind::Number => CellValue::Number(self.number),
            StorageKind::Boolean => CellValue::Boolean(self.boolean),
            StorageKind::Datetime if self.datetime == i64::MIN => CellValue::Empty,
            StorageKind::Datetime => CellValue::Datetime(self.datetime),
            StorageKind::List => CellValue::List(self.list.clone()),
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert { id: u8, path: u8, time: i64, user: u8 },
    InsertMany { count: u8 },
    Set { rec: usize, col: usize, value: ValueSeed },
    Status { rec: usize, col: usize, dep: u8, src: u8, mt: bool },
    Delete { rec: usize },
    Rename { rec: usize, id: u8, path: u8 },
    Touch { rec: usize, time: i64, user: u8 },
    Compact,
    MaybeCompact,
    AddColumn { kind: u8, localized: bool },
    DropColumn { col: usize },
    SetLocalized { col: usize, localized: bool },
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z:0-9]{0,6}", "\\PC{0,12}", Just("مرحبا بالعالم 👋🏽 世界".to_owned()),]
}

fn value_seed() -> impl Strategy<Value = ValueSeed> {
    let number = prop_oneof![any::<f64>(), Just(-0.0), Just(f64::NAN), -10.0..10.0];
    let datetime = prop_oneof![any::<i64>(), Just(i64::MIN), Just(0i64)];
    let list = prop::collection::vec(text(), 0..4);
    (prop::bool::weighted(0.15), text(), number, any::<bool>(), datetime, list).prop_map(
        |(empty, text, number, boolean, datetime, list)| ValueSeed {
            empty,
            text,
            number,
            boolean,
            datetime,
            list,
        },
    )
}

fn op() -> impl Strategy<Value = Op> {
    let rec = 0..1000usize;
    let col = 0..16usize;
    prop_oneof![
        6 => (0..24u8, 0..3u8, any::<i64>(), 0..4u8)
            .prop_map(|(id, path, time, user)| Op::Insert { id, path, time, user }),
        1 => (1..40u8).prop_map(|count| Op::InsertMany { count }),
        10 => (rec.clone(), col.clone(), value_seed())
            .prop_map(|(rec, col, value)| Op::Set { rec, col, value }),
        3 => (rec.clone(), col.clone(), 0..3u8, 0..5u8, any::<bool>())
            .prop_map(|(rec, col, dep, src, mt)| Op::Status { rec, col, dep, src, mt }),
        4 => rec.clone().prop_map(|rec| Op::Delete { rec }),
        2 => (rec.clone(), 0..24u8, 0..3u8).prop_map(|(rec, id, path)| Op::Rename { rec, id, path }),
        1 => (rec, any::<i64>(), 0..4u8).prop_map(|(rec, time, user)| Op::Touch { rec, time, user }),
        1 => Just(Op::Compact),
        1 => Just(Op::MaybeCompact),
        2 => (0..5u8, any::<bool>()).prop_map(|(kind, localized)| Op::AddColumn { kind, localized }),
        1 => col.clone().prop_map(|col| Op::DropColumn { col }),
        1 => (col, any::<bool>()).prop_map(|(col, localized)| Op::SetLocalized { col, localized }),
    ]
}

#[derive(Debug, Clone, Default)]
struct ModelCell {
    value: Option<CellValue>,
    dep: u8,
    src: u8,
    mt: bool,
    version: u32,
}

#[derive(Debug, Clone)]
struct ModelRecord {
    id: String,
    path: String,
    time: i64,
    user: String,
    cells: HashMap<ColumnSlot, ModelCell>,
}

struct Model {
    identity: RecordIdentity,
    records: Vec<ModelRecord>,
    columns: Vec<(ColumnSlot, StorageKind, bool)>,
    gone: Vec<(String, String)>,
    bulk: usize,
}

const KINDS: [StorageKind; 5] = [
    StorageKind::Text,
    StorageKind::Number,
    StorageKind::Boolean,
    StorageKind::Datetime,
    StorageKind::List,
];

/// Debug text identifies values exactly (it tells -0.0 from 0.0; stored NaNs are canonical).
fn same(a: &CellValue, b: &CellValue) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

impl Model {
    fn key_taken(&self, path: &str, id: &str, except: Option<usize>) -> bool {
        self.records.iter().enumerate().any(|(i, r)| {
            Some(i) != except
                && r.id == id
                && (self.identity == RecordIdentity::RecordId || r.path == path)
        })
    }

    fn insert(
        &mut self,
        store: &mut ColumnStore,
        id: String,
        path: String,
        time: i64,
        user: String,
    ) {
        if self.key_taken(&path, &id, None) {
            return;
        }
        store.insert(&id, &path, time, &user);
        let cells = HashMap::new();
        self.records.push(ModelRecord { id, path, time, user, cells });
    }

    fn target(&self, store: &ColumnStore, rec: usize, col: usize) -> Option<(usize, RowId, usize)> {
        if self.records.is_empty() {
            return None;
        }
        let rec = rec % self.records.len();
        let row = store.page(rec, 1).next().expect("model and store have equal lengths");
        Some((rec, row, col % self.columns.len().max(1)))
    }

    fn apply(&mut self, store: &mut ColumnStore, op: Op) {
        store.tick();
        match op {
            Op::Insert { id, path, time, user } => {
                let (id, path, user) = (format!("id{id}"), format!("p{path}"), format!("u{user}"));
                self.insert(store, id, path, time, user);
            }
            Op::InsertMany { count } => {
                for _ in 0..count {
                    self.bulk += 1;
                    let id = format!("bulk{}", self.bulk);
                    self.insert(store, id, String::new(), 0, "bulk".into());
                }
            }
            Op::Set { rec, col, value } => self.set(store, rec, col, &value),
            Op::Status { rec, col, dep, src, mt } => self.set_status(store, rec, col, dep, src, mt),
            Op::Delete { rec } => {
                if let Some((rec, row, _)) = self.target(store, rec, 0) {
                    store.delete(row);
                    let gone = self.records.remove(rec);
                    self.gone.push((gone.path, gone.id));
                }
            }
            Op::Rename { rec, id, path } => self.rename(store, rec, id, path),
            Op::Touch { rec, time, user } => {
                if let Some((rec, row, _)) = self.target(store, rec, 0) {
                    store.touch(row, time, &format!("u{user}"));
                    self.records[rec].time = time;
                    self.records[rec].user = format!("u{user}");
                }
            }
            Op::Compact => store.compact(),
            Op::MaybeCompact => {
                store.maybe_compact();
            }
            Op::AddColumn { kind, localized } => {
                let kind = KINDS[kind as usize];
                self.columns.push((store.add_column(kind, localized), kind, localized));
            }
            Op::DropColumn { col } => self.drop_column(store, col),
            Op::SetLocalized { col, localized } => self.set_localized(store, col, localized),
        }
    }

    fn rename(&mut self, store: &mut ColumnStore, rec: usize, id: u8, path: u8) {
        let Some((rec, row, _)) = self.target(store, rec, 0) else {
            return;
        };
        let (id, path) = (format!("id{id}"), format!("p{path}"));
        if !self.key_taken(&path, &id, Some(rec)) {
            store.set_identity(row, &id, &path);
            let record = &mut self.records[rec];
            let old =
                (std::mem::replace(&mut record.path, path), std::mem::replace(&mut record.id, id));
            self.gone.push(old);
        }
    }

    fn set(&mut self, store: &mut ColumnStore, rec: usize, col: usize, seed: &ValueSeed) {
        let Some((rec, row, col)) = self.target(store, rec, col) else {
            return;
        };
        let Some(&(slot, kind, _)) = self.columns.get(col) else {
            return;
        };
        let value = seed.for_kind(kind);
        let cell = self.records[rec].cells.entry(slot).or_default();
        let old = cell.value.clone().unwrap_or(CellValue::Empty);
        let changed = !same(&old, &value);
        assert_eq!(store.set_value(row, slot, &value), Ok(changed));
        if changed {
            cell.value = Some(value);
            cell.version = store.clock();
        }
        let wrong = if kind == StorageKind::Text {
            CellValue::Boolean(true)
        } else {
            CellValue::Text("x".into())
        };
        assert!(store.set_value(row, slot, &wrong).is_err());
    }

    fn set_status(
        &mut self,
        store: &mut ColumnStore,
        rec: usize,
        col: usize,
        dep: u8,
        src: u8,
        mt: bool,
    ) {
        let Some((rec, row, col)) = self.target(store, rec, col) else {
            return;
        };
        let Some(&(slot, _, localized)) = self.columns.get(col) else {
            return;
        };
        let a = store.set_dependency_status(row, slot, DependencyStatus::from_u8(dep));
        let b = store.set_source_status(row, slot, SourceStatus::from_u8(src));
        let c = store.set_mt(row, slot, mt);
        let cell = self.records[rec].cells.entry(slot).or_default();
        if !localized {
            assert!(!(a || b || c), "a plain column ignores statuses");
            return;
        }
        assert_eq!((a, b, c), (cell.dep != dep, cell.src != src, cell.mt != mt));
        if a || b || c {
            cell.version = store.clock();
        }
        (cell.dep, cell.src, cell.mt) = (dep, src, mt);
    }

    fn drop_column(&mut self, store: &mut ColumnStore, col: usize) {
        if self.columns.is_empty() {
            return;
        }
        let (slot, _, _) = self.columns.remove(col % self.columns.len());
        store.drop_column(slot);
        self.records.iter_mut().for_each(|r| {
            r.cells.remove(&slot);
        });
    }

    fn set_localized(&mut self, store: &mut ColumnStore, col: usize, localized: bool) {
        if self.columns.is_empty() {
            return;
        }
        let col = col % self.columns.len();
        let slot = self.columns[col].0;
        store.set_localized(slot, localized);
        self.columns[col].2 = localized;
        if !localized {
            for cell in self.records.iter_mut().filter_map(|r| r.cells.get_mut(&slot)) {
                (cell.dep, cell.src, cell.mt) = (0, 0, false);
            }
        }
    }

    fn check(&self, store: &ColumnStore) {
        assert_eq!(store.len(), self.records.len());
        let rows: Vec<RowId> = store.page(0, usize::MAX).collect();
        assert_eq!(rows.len(), self.records.len());
        assert!(store.live_rows().eq(rows.iter().copied()));
        for (i, (&row, record)) in rows.iter().zip(&self.records).enumerate() {
            assert_eq!(store.id(row), record.id);
            assert_eq!(store.path(row), record.path);
            assert_eq!(store.modified_time(row), record.time);
            assert_eq!(store.modified_by(row), record.user);
            assert_eq!(store.position(row), i);
            assert_eq!(store.find(&record.path, &record.id), Some(row));
            if self.identity == RecordIdentity::RecordId {
                assert_eq!(store.find("elsewhere", &record.id), Some(row));
            }
            self.check_cells(store, row, record);
        }
        for (path, id) in &self.gone {
            if !self.key_taken(path, id, None) {
                assert_eq!(store.find(path, id), None);
            }
        }
        let n = rows.len();
        for offset in [0, 1, n / 2, n.saturating_sub(1), n, n + 3] {
            let page: Vec<RowId> = store.page(offset, 3).collect();
            assert_eq!(page, rows[offset.min(n)..(offset + 3).min(n)]);
        }
    }

    fn check_cells(&self, store: &ColumnStore, row: RowId, record: &ModelRecord) {
        for &(slot, kind, localized) in &self.columns {
            assert_eq!(store.kind(slot), kind);
            assert_eq!(store.is_localized(slot), localized);
            let cell = record.cells.get(&slot).cloned().unwrap_or_default();
            let expected = cell.value.unwrap_or(CellValue::Empty);
            assert!(
                same(&store.value(row, slot), &expected),
                "{:?} != {expected:?}",
                store.value(row, slot)
            );
            assert_eq!(store.version(row, slot), cell.version);
            assert_eq!(store.dependency_status(row, slot) as u8, cell.dep);
            assert_eq!(store.source_status(row, slot) as u8, cell.src);
            assert_eq!(store.is_mt(row, slot), cell.mt);
        }
    }
}

fn identity() -> impl Strategy<Value = RecordIdentity> {
    prop_oneof![Just(RecordIdentity::RecordId), Just(RecordIdentity::PathAndId)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn store_matches_naive_model(identity in identity(), ops in prop::collection::vec(op(), 1..80)) {
        let mut store = ColumnStore::new(identity);
        let mut model = Model { identity, records: Vec::new(), columns: Vec::new(), gone: Vec::new(), bulk: 0 };
        for op in ops {
            model.apply(&mut store, op);
            model.check(&store);
        }
        store.compact();
        model.check(&store);
    }
}

/// One step of the clone property test.
#[derive(Debug, Clone)]
enum Step {
    /// An operation on the original store.
    Original(Op),
    /// An operation on the clone.
    Clone(Op),
    /// Replaces the clone with a fresh clone of the original (the old clone is dropped).
    CloneOriginal,
    /// Replaces the original with a clone of the clone.
    CloneBack,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => op().prop_map(Step::Original),
        10 => op().prop_map(Step::Clone),
        1 => Just(Step::CloneOriginal),
        1 => Just(Step::CloneBack),
    ]
}

impl Model {
    fn fork(&self) -> Model {
        Model {
            identity: self.identity,
            records: self.records.clone(),
            columns: self.columns.clone(),
            gone: self.gone.clone(),
            bulk: self.bulk,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn clones_diverge_like_two_models(
        identity in identity(),
        setup in prop::collection::vec(op(), 0..40),
        steps in prop::collection::vec(step(), 1..80),
    ) {
        let mut store = ColumnStore::new(identity);
        let mut model = Model { identity, records: Vec::new(), columns: Vec::new(), gone: Vec::new(), bulk: 0 };
        setup.into_iter().for_each(|op| model.apply(&mut store, op));
        let (mut clone, mut clone_model) = (store.clone(), model.fork());
        for step in steps {
            match step {
                Step::Original(op) => model.apply(&mut store, op),
                Step::Clone(op) => clone_model.apply(&mut clone, op),
                Step::CloneOriginal => (clone, clone_model) = (store.clone(), model.fork()),
                Step::CloneBack => (store, model) = (clone.clone(), clone_model.fork()),
            }
            model.check(&store);
            clone_model.check(&clone);
        }
        store.compact();
        model.check(&store);
        clone_model.check(&clone);
    }
}
