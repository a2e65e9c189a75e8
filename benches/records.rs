//! Criterion bench of `ColumnStore` on a 1M-record, 12-column localization grid.
//!
//! The grid (English source, six target languages in four scripts, number, datetime, single
//! selection, boolean, multiple selections) is built once per process from small per-language
//! word lists with a seeded RNG, so every run sees the same data. Cases: insert 1000 records
//! (12 cells each), update 1000 records (3 cells each), read a page of 100 at offsets 0 and
//! 900000. The store's heap bytes against the raw payload bytes are printed once.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use gridd::grid::store::{CellRef, ColumnSlot, ColumnStore, RecordIdentity, RowId};
use gridd::grid::value::{CellValue, DependencyStatus, SourceStatus, StorageKind};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const RECORDS: usize = 1_000_000;
const BATCH: usize = 1000;

const EN: &[&str] = &[
    "the",
    "settings",
    "were",
    "saved",
    "your",
    "changes",
    "will",
    "apply",
    "after",
    "restart",
    "please",
    "enter",
    "a",
    "valid",
    "email",
    "address",
    "file",
    "could",
    "not",
    "be",
    "opened",
    "network",
    "connection",
    "lost",
    "try",
    "again",
    "later",
    "account",
    "password",
    "updated",
];
const DE: &[&str] = &[
    "die",
    "Einstellungen",
    "wurden",
    "gespeichert",
    "Ihre",
    "Änderungen",
    "werden",
    "nach",
    "dem",
    "Neustart",
    "übernommen",
    "bitte",
    "gültige",
    "E-Mail-Adresse",
    "eingeben",
    "Datei",
    "konnte",
    "nicht",
    "geöffnet",
    "Netzwerkverbindung",
    "verloren",
    "später",
    "erneut",
];
const FR: &[&str] = &[
    "les",
    "paramètres",
    "ont",
    "été",
    "enregistrés",
    "vos",
    "modifications",
    "seront",
    "appliquées",
    "après",
    "redémarrage",
    "veuillez",
    "saisir",
    "une",
    "adresse",
    "e-mail",
    "valide",
    "fichier",
    "n'a",
    "pas",
    "pu",
    "être",
    "ouvert",
    "réessayez",
    "plus",
    "tard",
];
const JA: &[&str] = &[
    "設定",
    "を",
    "保存",
    "しました",
    "変更",
    "は",
    "再起動",
    "後",
    "に",
    "反映",
    "されます",
    "有効な",
    "メール",
    "アドレス",
    "入力",
    "してください",
    "ファイル",
    "開けません",
    "でした",
    "ネットワーク",
    "接続",
    "が",
    "切断",
    "後で",
    "もう一度",
];
const ZH: &[&str] = &[
    "设置",
    "已",
    "保存",
    "您的",
    "更改",
    "将",
    "在",
    "重启",
    "后",
    "生效",
    "请",
    "输入",
    "有效的",
    "电子邮件",
    "地址",
    "无法",
    "打开",
    "文件",
    "网络",
    "连接",
    "已断开",
    "稍后",
    "重试",
];
const AR: &[&str] = &[
    "تم",
    "حفظ",
    "الإعدادات",
    "ستطبق",
    "التغييرات",
    "بعد",
    "إعادة",
    "التشغيل",
    "يرجى",
    "إدخال",
    "عنوان",
    "بريد",
    "إلكتروني",
    "صالح",
    "تعذر",
    "فتح",
    "الملف",
    "فقد",
    "الاتصال",
    "بالشبكة",
    "حاول",
    "مرة",
    "أخرى",
    "لاحقا",
];
const RU: &[&str] = &[
    "настройки",
    "сохранены",
    "ваши",
    "изменения",
    "вступят",
    "в",
    "силу",
    "после",
    "перезапуска",
    "пожалуйста",
    "введите",
    "действительный",
    "адрес",
    "электронной",
    "почты",
    "не",
    "удалось",
    "открыть",
    "файл",
    "соединение",
    "потеряно",
    "повторите",
    "попытку",
];
const AREAS: &[&str] = &["ui", "web", "mobile", "email", "legal"];
const SECTIONS: &[&str] = &["menu", "dialog", "toast", "settings", "onboarding", "errors"];
const ITEMS: &[&str] = &["settings", "save", "title", "body", "button", "hint", "label"];
const STATES: &[&str] = &["draft", "in review", "approved", "final"];
const TAGS: &[&str] = &["ui", "marketing", "legal", "urgent", "plural", "placeholder", "tooltip"];
const USERS: &[&str] = &["alice", "bob", "carol", "dmitri", "yuki", "fatima"];

/// One language: its word list, the length to reach, and the word separator.
struct Language {
    words: &'static [&'static str],
    chars: usize,
    separator: &'static str,
}

const LANGUAGES: [Language; 7] = [
    Language { words: EN, chars: 40, separator: " " },
    Language { words: DE, chars: 46, separator: " " },
    Language { words: FR, chars: 46, separator: " " },
    Language { words: JA, chars: 18, separator: "" },
    Language { words: ZH, chars: 14, separator: "" },
    Language { words: AR, chars: 40, separator: " " },
    Language { words: RU, chars: 44, separator: " " },
];

fn sentence(rng: &mut StdRng, language: &Language) -> String {
    let mut out = String::new();
    while out.chars().count() < language.chars {
        if !out.is_empty() {
            out.push_str(language.separator);
        }
        out.push_str(language.words.choose(rng).expect("word lists are not empty"));
    }
    out
}

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

/// A record's key and its 12 cell values.
struct Record {
    id: String,
    path: String,
    values: Vec<CellValue>,
}

fn record(rng: &mut StdRng, n: usize, prefix: &str) -> Record {
    let area = AREAS[n % AREAS.len()];
    let section = SECTIONS[(n / 7) % SECTIONS.len()];
    let item = ITEMS[(n / 3) % ITEMS.len()];
    let mut values: Vec<CellValue> =
        LANGUAGES.iter().map(|language| CellValue::Text(sentence(rng, language))).collect();
    values.push(CellValue::Number(f64::from(rng.gen_range(0..500u32))));
    values.push(CellValue::Datetime(1_700_000_000_000 + rng.gen_range(0..40_000_000_000i64)));
    values.push(CellValue::Text(STATES[rng.gen_range(0..STATES.len())].to_owned()));
    values.push(CellValue::Boolean(rng.gen_bool(0.3)));
    let tag_count = rng.gen_range(0..4);
    let tags = TAGS.choose_multiple(rng, tag_count);
    values.push(CellValue::List(tags.map(|t| (*t).to_owned()).collect()));
    Record {
        id: format!("{prefix}{area}.{section}.{item}.{n:06}"),
        path: format!("{area}/{section}"),
        values,
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

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let mut grid = build_grid();
    report_memory(&grid);
    bench_pages(&mut c, &grid);
    bench_insert(&mut c, &mut grid);
    bench_update(&mut c, &mut grid);
    report_memory(&grid);
    c.final_summary();
}
