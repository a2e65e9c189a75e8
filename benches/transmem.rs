//! Translation memory lookups (`tm::index`): a memory of 100k and of 1M realistic segments
//! (English sources from `loadtest::data`'s localization word lists, translated into six
//! languages in several scripts; half of them into French), looked up with texts one word away
//! from a stored source (85% of queries), stored sources (10%) and unrelated sentences (5%),
//! minScore 70, limit 5. Prints p50/p99 per lookup over 2000 lookups, the memory the index
//! takes per segment, and the start time of a memory of that size (its sled tree read and its
//! index rebuilt, `SegmentStore::memory`), then criterion's mean.
//!
//! Sources end with a number token (as UI strings carry counts and placeholders): the word
//! lists have about 30 words a language, far fewer than real text, so without it nearly every
//! source would be a near match of every other. The resident bytes per segment are measured
//! as the RSS growth while the index is built: the first (100k) figure is the meaningful one,
//! the 1M one reuses memory the 100k run freed.
//!
//! `cargo bench --bench transmem`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use gridd::tm::index::MemoryIndex;
use gridd::tm::segment::{source_hash, Origin, Segment, Side};
use gridd::tm::store::SegmentStore;
use gridd::tm::text::{language_key, normalize};
use loadtest::data::{sentence, LANGUAGES};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// (target language, source, target) of segment `n`.
fn segment(rng: &mut StdRng, n: usize) -> (&'static str, String, String) {
    let english = &LANGUAGES[0];
    let target = if n.is_multiple_of(2) { &LANGUAGES[2] } else { &LANGUAGES[1 + n % 6] };
    // A record key's words make sources of one area and item share their vocabulary.
    let source = format!("{} {}", sentence(rng, english), n % 9973);
    (target.code, source, sentence(rng, target))
}

fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    kb * 1024
}

fn build(size: usize) -> (MemoryIndex, Vec<String>) {
    let mut rng = StdRng::seed_from_u64(22);
    let mut index = MemoryIndex::default();
    let mut french_sources = Vec::new();
    for n in 0..size {
        let (lang, source, target) = segment(&mut rng, n);
        let pair = ("enus".to_owned(), language_key(lang));
        index.upsert(pair, source_hash(&normalize(&source)), &source, &target);
        if lang == "frFR" && french_sources.len() < 5000 {
            french_sources.push(source);
        }
    }
    (index, french_sources)
}

/// The lookup texts: mostly a stored source with one word replaced.
fn queries(sources: &[String]) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(7);
    let words = LANGUAGES[0].words;
    (0..2000)
        .map(|i| match i % 20 {
            0 | 1 => sources[i % sources.len()].clone(),
            2 => sentence(&mut rng, &LANGUAGES[0]),
            _ => {
                let mut tokens: Vec<&str> = sources[i % sources.len()].split(' ').collect();
                let at = rng.gen_range(0..tokens.len());
                tokens[at] = words.choose(&mut rng).expect("words");
                tokens.join(" ")
            }
        })
        .collect()
}

fn lookup(index: &MemoryIndex, text: &str) -> usize {
    let pair = ("enus".to_owned(), "frfr".to_owned());
    index.lookup(&pair, &source_hash(&normalize(text)), text, 70, 5).len()
}

fn percentiles(index: &MemoryIndex, texts: &[String]) -> (Duration, Duration, f64) {
    let mut times: Vec<Duration> = Vec::with_capacity(texts.len());
    let mut found = 0;
    for text in texts {
        let started = Instant::now();
        found += usize::from(black_box(lookup(index, text)) > 0);
        times.push(started.elapsed());
    }
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    (at(0.5), at(0.99), found as f64 / texts.len() as f64)
}

/// Seconds to open a stored memory of `size` segments (its index rebuilt from sled).
fn start_time(size: usize) -> f64 {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SegmentStore::new(sled::open(dir.path()).expect("sled"));
    let memory = store.memory("bench").expect("opens");
    let mut rng = StdRng::seed_from_u64(22);
    let side = |lang: &str, text: String| Side { lang: lang.to_owned(), text, markup: None };
    for start in (0..size).step_by(50_000) {
        let batch = (start..(start + 50_000).min(size))
            .map(|n| {
                let (lang, source, target) = segment(&mut rng, n);
                Segment {
                    source: side("enUS", source),
                    target: side(lang, target),
                    created_ms: 1_700_000_000_000,
                    created_by: "bench".into(),
                    changed_ms: 1_700_000_000_000,
                    changed_by: "bench".into(),
                    origin: Origin::Import,
                    props: Vec::new(),
                    notes: Vec::new(),
                }
            })
            .collect();
        memory.write(batch, None).expect("written");
    }
    drop(memory);
    drop(store);
    let store = SegmentStore::new(sled::open(dir.path()).expect("sled"));
    let started = Instant::now();
    let memory = store.memory("bench").expect("opens");
    assert_eq!(memory.len(), size);
    started.elapsed().as_secs_f64()
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(30)
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    for size in [100_000, 1_000_000] {
        let before = resident_bytes();
        let (index, sources) = build(size);
        let per_segment = resident_bytes().saturating_sub(before) / size as u64;
        let texts = queries(&sources);
        let (p50, p99, hit) = percentiles(&index, &texts);
        let start = start_time(size);
        eprintln!(
            "transmem {size} segments: lookup p50 {:.3} ms, p99 {:.3} ms, {:.0}% of lookups matched; index {per_segment} B/segment resident; start (sled read + index) {start:.2} s",
            p50.as_secs_f64() * 1000.0,
            p99.as_secs_f64() * 1000.0,
            hit * 100.0
        );
        let mut next = 0;
        c.bench_function(&format!("transmem_lookup_{size}"), |b| {
            b.iter(|| {
                next = (next + 1) % texts.len();
                black_box(lookup(&index, &texts[next]))
            })
        });
    }
    c.final_summary();
}
