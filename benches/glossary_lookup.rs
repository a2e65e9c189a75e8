//! Criterion bench of the glossary term lookup (issue 22): a 10k-entry glossary (English terms
//! of one to three pseudo-words, each entry with a Japanese translation), and a page of 100
//! cells of about 120 characters, each with three glossary terms (some plural, some
//! capitalized) among other words.
//! - `build_10k`: building the English matcher (done once per glossary change and language);
//! - `page100`: finding the terms in the 100 cells (what a client asks for a page);
//! - `cell`: one cell.
//!
//! Before them it prints, once, what a 100k-entry import costs apart from HTTP: reading the
//! CSV, merging it into an empty glossary (on the supervisor) and serializing its chunks (the
//! change set's bytes).

use criterion::{black_box, Criterion};
use gridd::catalog::glossaries::index::Entries;
use gridd::catalog::glossaries::lookup::Matcher;
use gridd::io::glossary::{Concept, LangCode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TERMS: usize = 10_000;
const CELLS: usize = 100;
const SYLLABLES: [&str; 24] = [
    "ka", "ro", "mi", "ten", "sha", "vor", "el", "quin", "dra", "lo", "zu", "per", "an", "tis",
    "gar", "ne", "ul", "bri", "os", "fen", "ya", "cor", "ith", "mo",
];

fn word(rng: &mut StdRng) -> String {
    (0..rng.gen_range(2..=3)).map(|_| SYLLABLES[rng.gen_range(0..SYLLABLES.len())]).collect()
}

fn glossary(rng: &mut StdRng) -> (Entries, Vec<String>) {
    let (en, ja) = (LangCode::parse("en").expect("en"), LangCode::parse("ja").expect("ja"));
    let mut entries = Entries::new();
    let mut terms = Vec::with_capacity(TERMS);
    for id in 1..=TERMS as u64 {
        let term: Vec<String> = (0..rng.gen_range(1..=3)).map(|_| word(rng)).collect();
        let term = term.join(" ");
        let mut entry = Concept { id: Some(id), ..Concept::default() };
        entry.add_term(en.clone(), &term);
        entry.add_term(ja.clone(), &format!("用語{id}"));
        terms.push(term);
        entries.insert(id, entry);
    }
    (entries, terms)
}

fn cells(rng: &mut StdRng, terms: &[String]) -> Vec<String> {
    (0..CELLS)
        .map(|_| {
            let mut words: Vec<String> = (0..12).map(|_| word(rng)).collect();
            for at in [2, 6, 10] {
                let term = &terms[rng.gen_range(0..terms.len())];
                words[at] = match rng.gen_range(0..3) {
                    0 => format!("{term}s"),
                    1 => term.to_uppercase(),
                    _ => term.clone(),
                };
            }
            words.join(" ") + "."
        })
        .collect()
}

/// Times, once, the parts of importing a 100k-entry CSV.
fn import_100k(rng: &mut StdRng) {
    let mut csv = String::from("en,ja,definition\n");
    for n in 0..100_000 {
        let term: Vec<String> = (0..rng.gen_range(1..=3)).map(|_| word(rng)).collect();
        csv.push_str(&format!("{} {n},用語{n},A definition of entry {n}.\n", term.join(" ")));
    }
    let started = std::time::Instant::now();
    let read = gridd::io::glossary::table::read_csv(csv.as_bytes()).expect("csv");
    let read_time = started.elapsed();
    let started = std::time::Instant::now();
    let merged = gridd::catalog::glossaries::merge::merge(
        &Entries::new(),
        0,
        read,
        gridd::catalog::glossaries::ImportOption::Update,
    )
    .expect("merge");
    let merge_time = started.elapsed();
    let started = std::time::Instant::now();
    let chunks = merged.entries.len().div_ceil(256) as u64;
    let bytes: usize = (0..chunks)
        .map(|c| {
            let chunk = gridd::catalog::glossaries::index::chunk_entries(&merged.entries, c);
            serde_json::to_vec(&chunk).expect("json").len()
        })
        .sum();
    eprintln!(
        "import of 100k entries ({} MB CSV): read {:?}, merge {:?}, {chunks} chunks of {} MB \
         serialized in {:?}",
        csv.len() / 1_000_000,
        read_time,
        merge_time,
        bytes / 1_000_000,
        started.elapsed()
    );
}

fn main() {
    let mut rng = StdRng::seed_from_u64(22);
    import_100k(&mut rng);
    let (entries, terms) = glossary(&mut rng);
    let page = cells(&mut rng, &terms);
    let en = LangCode::parse("en").expect("en");
    let matcher = Matcher::build(&entries, &en);
    let found: usize = page.iter().map(|c| matcher.find(c).len()).sum();
    eprintln!(
        "{found} terms found in {CELLS} cells of {} chars on average",
        page.iter().map(|c| c.chars().count()).sum::<usize>() / CELLS
    );
    let mut c = Criterion::default().configure_from_args();
    c.bench_function("build_10k", |b| b.iter(|| Matcher::build(black_box(&entries), &en)));
    c.bench_function("page100", |b| {
        b.iter(|| page.iter().map(|cell| matcher.find(black_box(cell)).len()).sum::<usize>())
    });
    c.bench_function("cell", |b| b.iter(|| matcher.find(black_box(&page[0])).len()));
    c.final_summary();
}
