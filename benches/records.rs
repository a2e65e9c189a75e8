//! Criterion bench of `ColumnStore` on a 1M-record, 12-column localization grid.
//!
//! The grid (English source, six target languages in four scripts, number, datetime, single
//! selection, boolean, multiple selections) is built once per process from small per-language
//! word lists with a seeded RNG, so every run sees the same data. Cases: insert 1000 records
//! (12 cells each), update 1000 records (3 cells each), read a page of 100 at offsets 0 and
//! 900000, clone the whole store (`clone_1m`, the snapshot stall; the clone is dropped untimed).
//! The store's heap bytes against the raw payload bytes are printed once, and so is the time of
//! the first update batch after a clone (the copy-on-write cost paid by the next writes).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};

mod common;
use common::{record, Record};
use gridd::grid::store::{CellRef, ColumnSlot, ColumnStore, RecordIdentity, RowId};
use gridd::grid::value::{CellValue, DependencyStatus, SourceStatus, StorageKind};
use loadtest::data::{sentence, LANGUAGES, USERS};
use rand::rngs::StdRng;
use rand::SeedableRng;

const RECORDS: usize = 1_000_000;
const BATCH: usize = 1000;

/// The grid's columns, in the order `record_values` fills them.
struct Columns {
    slots: Vec<ColumnSlot>,
}

impl Columns {
    fn add(store: &mut ColumnStore) -> Self {
        let mut slots: Vec<ColumnSlot> =
            LANGUAGES.iter().map(|_| store.add_column(StorageKind::Text, true)).collect();
        for kind in [
            StorageKind::Number,
            StorageKind::Datetime,
            StorageKind::Text,
            StorageKind::Boolean,
            StorageKind::List,
        ] {
            slots.push(store.add_column(kind, false));
        }
        Columns { slots }
    }
}

/// Inserts a record the way the grid actor would: check the key, append, write every cell.
fn insert(store: &mut ColumnStore, columns: &Columns, rec: &Record, time: i64) -> RowId {
    assert!(store.find(&rec.path, &rec.id).is_none(), "record ids are unique");
    let row = store.insert(&rec.id, &rec.path, time, USERS[time as usize % USERS.len()]);
    for (&slot, value) in columns.slots.iter().zip(&rec.values) {
        store.set_value(row, slot, value).expect("values match column kinds");
    }
    row
}

struct Grid {
    store: ColumnStore,
    columns: Columns,
    raw_bytes: usize,
}

fn build_grid() -> Grid {
    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(0x6772_6964);
    let mut store = ColumnStore::new(RecordIdentity::RecordId);
    let columns = Columns::add(&mut store);
    let mut raw_bytes = 0;
    for n in 0..RECORDS {
        let rec = record(&mut rng, n, "");
        raw_bytes += rec.id.len() + rec.path.len();
        raw_bytes += rec.values.iter().map(CellValue::payload_bytes).sum::<usize>();
        let row = insert(&mut store, &columns, &rec, n as i64);
        for &slot in &columns.slots[1..LANGUAGES.len()] {
            store.set_dependency_status(row, slot, DependencyStatus::UpToDate);
        }
        store.set_source_status(row, columns.slots[0], SourceStatus::ReadyForTranslation);
    }
    eprintln!("built {RECORDS} records x 12 columns in {:?}", started.elapsed());
    Grid { store, columns, raw_bytes }
}

fn report_memory(grid: &Grid) {
    let heap = grid.store.heap_bytes();
    let raw = grid.raw_bytes;
    eprintln!(
        "heap_bytes = {:.1} MiB, raw payload (cells + ids + paths) = {:.1} MiB, ratio = {:.2}",
        heap as f64 / 1048576.0,
        raw as f64 / 1048576.0,
        heap as f64 / raw as f64
    );
}

fn bench_insert(c: &mut Criterion, grid: &mut Grid) {
    let mut rng = StdRng::seed_from_u64(7);
    let mut previous: Vec<RowId> = Vec::new();
    let mut round = 0usize;
    c.bench_function("insert 1000 records x 12 cells into 1M", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                // Untimed: remove the previous batch so the grid stays at 1M live records.
                previous.drain(..).for_each(|row| grid.store.delete(row));
                grid.store.maybe_compact();
                round += 1;
                let prefix = format!("new{round}.");
                let batch: Vec<Record> = (0..BATCH).map(|n| record(&mut rng, n, &prefix)).collect();
                let started = Instant::now();
                for rec in &batch {
                    previous.push(insert(&mut grid.store, &grid.columns, rec, round as i64));
                }
                total += started.elapsed();
            }
            total
        })
    });
    previous.drain(..).for_each(|row| grid.store.delete(row));
    grid.store.compact();
}

fn bench_update(c: &mut Criterion, grid: &mut Grid) {
    let mut rng = StdRng::seed_from_u64(11);
    let targets: Vec<(String, String)> = (0..BATCH)
        .map(|k| {
            let row = grid.store.page(k * (RECORDS / BATCH) + 17, 1).next();
            let row = row.expect("offset is inside the grid");
            (grid.store.path(row).to_owned(), grid.store.id(row).to_owned())
        })
        .collect();
    let variants: Vec<Vec<[CellValue; 3]>> = (0..2)
        .map(|v| {
            (0..BATCH)
                .map(|_| {
                    [
                        CellValue::Text(sentence(&mut rng, &LANGUAGES[1])),
                        CellValue::Text(sentence(&mut rng, &LANGUAGES[3])),
                        CellValue::Number(f64::from(v)),
                    ]
                })
                .collect()
        })
        .collect();
    let slots = [grid.columns.slots[1], grid.columns.slots[3], grid.columns.slots[7]];
    let mut round = 0usize;
    c.bench_function("update 1000 records x 3 cells in 1M", |b| {
        b.iter(|| {
            round += 1;
            let values = &variants[round % 2];
            for ((path, id), cells) in targets.iter().zip(values) {
                let row = grid.store.find(path, id).expect("target records exist");
                for (&slot, value) in slots.iter().zip(cells) {
                    grid.store.set_value(row, slot, value).expect("kinds match");
                }
                grid.store.touch(row, round as i64, "bench");
            }
        })
    });
}

fn read_page(store: &ColumnStore, slots: &[ColumnSlot], offset: usize) -> usize {
    let mut touched = 0;
    for row in store.page(offset, 100) {
        let mut cells: Vec<CellRef<'_>> = Vec::with_capacity(slots.len());
        cells.extend(slots.iter().map(|&slot| store.value_ref(row, slot)));
        black_box((store.id(row), store.path(row), &cells));
        touched += cells.len();
    }
    touched
}

fn bench_pages(c: &mut Criterion, grid: &Grid) {
    for offset in [0, 900_000] {
        let store = &grid.store;
        assert_eq!(read_page(store, &grid.columns.slots, offset), 1200);
        c.bench_function(&format!("page of 100 x 12 cells at offset {offset}"), |b| {
            b.iter(|| read_page(store, &grid.columns.slots, black_box(offset)))
        });
    }
}

fn bench_clone(c: &mut Criterion, grid: &Grid) {
    let mut group = c.benchmark_group("clone_1m");
    group.sample_size(10);
    group.bench_function("clone of 1M records x 12 columns", |b| {
        b.iter_batched(|| (), |()| grid.store.clone(), BatchSize::PerIteration)
    });
    group.finish();
}

/// Prints how long one update batch takes while a clone is alive (chunks copied on write).
fn report_write_after_clone(grid: &mut Grid) {
    let writes: Vec<(RowId, [CellValue; 3])> = (0..BATCH)
        .filter_map(|k| grid.store.page(k * (RECORDS / BATCH) + 3, 1).next())
        .map(|row| {
            let text = CellValue::Text(format!("after clone {}", row.get()));
            (row, [text.clone(), text, CellValue::Number(-1.0)])
        })
        .collect();
    let slots = [grid.columns.slots[1], grid.columns.slots[3], grid.columns.slots[7]];
    let image = grid.store.clone();
    let started = Instant::now();
    for (row, cells) in &writes {
        for (&slot, value) in slots.iter().zip(cells) {
            grid.store.set_value(*row, slot, value).expect("kinds match");
        }
        grid.store.touch(*row, -1, "after-clone");
    }
    let first = started.elapsed();
    let started = Instant::now();
    for (row, _) in &writes {
        grid.store.touch(*row, -2, "after-clone");
    }
    eprintln!(
        "first update batch (1000 x 3 cells) after a clone: {first:?}; a second touch batch: {:?}",
        started.elapsed()
    );
    drop(image);
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let mut grid = build_grid();
    report_memory(&grid);
    bench_pages(&mut c, &grid);
    bench_clone(&mut c, &grid);
    report_write_after_clone(&mut grid);
    bench_insert(&mut c, &mut grid);
    bench_update(&mut c, &mut grid);
    report_memory(&grid);
    c.final_summary();
}
