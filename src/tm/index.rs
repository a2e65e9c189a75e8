//! The in-memory lookup index of one translation memory: per source language, every distinct
//! source's tokens, an inverted index over token bigrams and the sources by hash (exact
//! matches); per language pair, the target of each source that has one there. A source
//! translated into several languages (a grid's source column feeding one segment per target
//! column) is indexed once: its text, tokens and postings are shared by the pairs, each of which
//! holds only its targets (and its own spelling of the source, where it differs in whitespace).
//! Rebuilt from the store at start; knows nothing of storage or HTTP.
//!
//! A lookup of text `q` (n tokens) with minimum score `s` (`text` has the score) in a pair:
//! 1. exact: the source whose normalized text hashes as `q`'s, when the pair has its target,
//!    scored 100;
//! 2. candidates: the bigrams of `q`'s tokens padded with a start and an end mark (n + 1
//!    bigrams). A segment within token distance `k` of `q` shares at least `G − 2k` of `q`'s
//!    `G` distinct bigrams (one token edit breaks at most two), where `k` is the largest
//!    distance that still scores `s` against the longest segment that may (`n × 100 / s`
//!    tokens). So it shares at least one of `q`'s `G − max(1, G − 2k) + 1` rarest bigrams
//!    (prefix filtering): only their postings are read, at most `MAX_SCANNED` entries
//!    (rarest first), and of the sources the pair has a target for, the `MAX_VERIFIED` with
//!    most hits among them are verified;
//! 3. verification: a candidate of `m` tokens outside `[ceil(s n / 100), n × 100 / s]` cannot
//!    score `s`; the others get their token edit distance (bounded, stopping early) and score.
//!
//! Results: the exact match first, then by score, then the source indexed first; at most
//! `limit`. Past the bounds (a text whose rarest bigrams are in more than `MAX_SCANNED`
//! segments) a lookup may miss matches: it is bounded rather than exhaustive.

use std::collections::HashMap;

use super::segment::HASH_LEN;
use super::text::{distance_bound, fuzzy_score, token_distance, tokens};

/// Most posting entries one lookup reads.
pub const MAX_SCANNED: usize = 200_000;
/// Most candidates one lookup scores.
pub const MAX_VERIFIED: usize = 4_000;

const START: u32 = u32::MAX;
const END: u32 = u32::MAX - 1;
/// Ids of query tokens no segment has count down from here.
const UNKNOWN: u32 = u32::MAX - 2;

/// One match of a lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub source: String,
    pub target: String,
    pub score: u8,
}

/// One distinct source of a source language.
#[derive(Debug)]
struct Source {
    /// The text as first indexed.
    text: Box<str>,
    tokens: Box<[u32]>,
}

/// The distinct sources of one source language.
#[derive(Debug, Default)]
struct SourceIndex {
    sources: Vec<Source>,
    by_hash: HashMap<[u8; HASH_LEN], u32, foldhash::fast::RandomState>,
    postings: HashMap<u64, Vec<u32>, foldhash::fast::RandomState>,
}

/// A pair's translation of one source: the target, and the pair's own spelling of the source
/// where it differs from the shared one (same normalized text, other whitespace).
#[derive(Debug)]
struct Translation {
    target: Box<str>,
    source: Option<Box<str>>,
}

/// The translations of one (source language, target language) pair, by source slot.
#[derive(Debug, Default)]
struct PairTargets {
    by_source: Vec<Option<Translation>>,
}

impl PairTargets {
    fn get(&self, slot: u32) -> Option<&Translation> {
        self.by_source.get(slot as usize).and_then(Option::as_ref)
    }
}

/// A memory's index: every source language's sources and every pair's targets, with one token
/// vocabulary.
#[derive(Debug, Default)]
pub struct MemoryIndex {
    vocabulary: HashMap<Box<str>, u32, foldhash::fast::RandomState>,
    sources: HashMap<String, SourceIndex>,
    pairs: HashMap<(String, String), PairTargets>,
    len: usize,
}

/// The distinct padded bigrams of a token sequence.
fn bigrams(tokens: &[u32]) -> Vec<u64> {
    let mut grams: Vec<u64> = std::iter::once(START)
        .chain(tokens.iter().copied())
        .zip(tokens.iter().copied().chain(std::iter::once(END)))
        .map(|(a, b)| (u64::from(a) << 32) | u64::from(b))
        .collect();
    grams.sort_unstable();
    grams.dedup();
    grams
}

impl MemoryIndex {
    /// Segments indexed (a source translated into two languages is two).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The language pairs held, as language keys.
    pub fn pairs(&self) -> impl Iterator<Item = &(String, String)> {
        self.pairs.keys()
    }

    fn token_ids(&mut self, text: &str) -> Box<[u32]> {
        let mut ids = Vec::new();
        for token in tokens(text) {
            let next = u32::try_from(self.vocabulary.len()).unwrap_or(UNKNOWN);
            ids.push(*self.vocabulary.entry(token.into_boxed_str()).or_insert(next));
        }
        ids.into_boxed_slice()
    }

    /// Adds a segment, or replaces the texts of the one with the same source (`hash`) in the
    /// pair. Answers whether it is new.
    pub fn upsert(
        &mut self,
        pair: (String, String),
        hash: [u8; HASH_LEN],
        source: &str,
        target: &str,
    ) -> bool {
        let known = self.sources.get(&pair.0).and_then(|index| index.by_hash.get(&hash).copied());
        let slot = match known {
            Some(slot) => slot,
            None => {
                let tokens = self.token_ids(source);
                let index = self.sources.entry(pair.0.clone()).or_default();
                let slot =
                    u32::try_from(index.sources.len()).expect("a memory holds under 4G sources");
                for gram in bigrams(&tokens) {
                    index.postings.entry(gram).or_default().push(slot);
                }
                index.by_hash.insert(hash, slot);
                index.sources.push(Source { text: source.into(), tokens });
                slot
            }
        };
        let shared = &self.sources[&pair.0].sources[slot as usize].text;
        let translation = Translation {
            target: target.into(),
            source: (**shared != *source).then(|| source.into()),
        };
        let targets = &mut self.pairs.entry(pair).or_default().by_source;
        if targets.len() <= slot as usize {
            targets.resize_with(slot as usize + 1, || None);
        }
        let new = targets[slot as usize].replace(translation).is_none();
        if new {
            self.len += 1;
        }
        new
    }

    /// The best matches of `text` in the pair (see the module doc), at most `limit`.
    pub fn lookup(
        &self,
        pair: &(String, String),
        hash: &[u8; HASH_LEN],
        text: &str,
        min_score: u8,
        limit: usize,
    ) -> Vec<Match> {
        let (Some(index), Some(targets)) = (self.sources.get(&pair.0), self.pairs.get(pair)) else {
            return Vec::new();
        };
        let exact = index.by_hash.get(hash).copied().filter(|&slot| targets.get(slot).is_some());
        let mut found: Vec<(u8, u32)> = exact.map(|slot| (100, slot)).into_iter().collect();
        let mut unknown = UNKNOWN;
        let query: Vec<u32> = tokens(text)
            .iter()
            .map(|t| {
                self.vocabulary.get(t.as_str()).copied().unwrap_or_else(|| {
                    unknown -= 1;
                    unknown
                })
            })
            .collect();
        if min_score < 100 && !query.is_empty() {
            let fuzzy = index
                .fuzzy(&query, min_score, targets)
                .into_iter()
                .filter(|(_, s)| Some(*s) != exact);
            found.extend(fuzzy);
        }
        found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        found.truncate(limit);
        found
            .into_iter()
            .filter_map(|(score, slot)| {
                let translation = targets.get(slot)?;
                let shared = &index.sources[slot as usize].text;
                Some(Match {
                    source: translation.source.as_deref().unwrap_or(shared).to_owned(),
                    target: translation.target.to_string(),
                    score,
                })
            })
            .collect()
    }
}

impl SourceIndex {
    /// The sources `targets` translates that score at least `min_score` against the query's
    /// tokens: (score, slot).
    fn fuzzy(&self, query: &[u32], min_score: u8, targets: &PairTargets) -> Vec<(u8, u32)> {
        let n = query.len();
        let s = usize::from(min_score.max(1));
        let (shortest, longest) = ((s * n).div_ceil(100), n * 100 / s);
        let mut grams: Vec<(usize, u64)> = bigrams(query)
            .into_iter()
            .map(|g| (self.postings.get(&g).map_or(0, Vec::len), g))
            .collect();
        grams.sort_unstable();
        let k = distance_bound(min_score, n, longest);
        let needed = grams.len().saturating_sub(2 * k).max(1);
        let prefix = grams.len() - needed + 1;
        let mut hits: HashMap<u32, u16, foldhash::fast::RandomState> = HashMap::default();
        let mut budget = MAX_SCANNED;
        for (_, gram) in &grams[..prefix] {
            let Some(posting) = self.postings.get(gram) else { continue };
            for &slot in posting.iter().take(budget) {
                if targets.get(slot).is_some() {
                    *hits.entry(slot).or_insert(0) += 1;
                }
            }
            budget = budget.saturating_sub(posting.len());
            if budget == 0 {
                break;
            }
        }
        let mut candidates: Vec<(u16, u32)> = hits.into_iter().map(|(slot, h)| (h, slot)).collect();
        if candidates.len() > MAX_VERIFIED {
            candidates
                .select_nth_unstable_by(MAX_VERIFIED, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            candidates.truncate(MAX_VERIFIED);
        }
        candidates
            .into_iter()
            .filter_map(|(_, slot)| {
                let tokens = &self.sources[slot as usize].tokens;
                let m = tokens.len();
                if m < shortest || m > longest {
                    return None;
                }
                let bound = distance_bound(min_score, n, m);
                let distance = token_distance(query, tokens, bound);
                (distance <= bound).then(|| (fuzzy_score(distance, n, m), slot))
            })
            .filter(|(score, _)| *score >= min_score)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tm::segment::source_hash;
    use crate::tm::text::normalize;

    fn pair() -> (String, String) {
        ("enus".into(), "frfr".into())
    }

    fn add(index: &mut MemoryIndex, source: &str, target: &str) -> bool {
        index.upsert(pair(), source_hash(&normalize(source)), source, target)
    }

    fn find(index: &MemoryIndex, text: &str, min: u8) -> Vec<(String, u8)> {
        let hash = source_hash(&normalize(text));
        let found = index.lookup(&pair(), &hash, text, min, 5);
        found.into_iter().map(|m| (m.source, m.score)).collect()
    }

    #[test]
    fn exact_matches_score_100_and_fuzzy_ones_by_token_distance() {
        let mut index = MemoryIndex::default();
        assert!(add(
            &mut index,
            "The file could not be saved.",
            "Le fichier n'a pas pu être enregistré."
        ));
        assert!(add(&mut index, "The file was saved.", "Le fichier a été enregistré."));
        assert!(add(&mut index, "Please enter a valid email address.", "Adresse invalide."));
        assert!(!add(&mut index, "The file was  saved.", "Fichier enregistré."), "same source");
        assert_eq!(index.len(), 3);
        let found = find(&index, "The file was saved.", 50);
        assert_eq!(found[0], ("The file was  saved.".into(), 100));
        // "the file could not be saved" vs "the file was saved": distance 3 of 6 tokens.
        assert_eq!(found[1], ("The file could not be saved.".into(), 50));
        assert_eq!(found.len(), 2);
        assert_eq!(find(&index, "the file was saved", 70), [("The file was  saved.".into(), 99)]);
        assert!(find(&index, "Something else entirely", 10).is_empty());
        assert!(find(&index, "The file was saved.", 100).len() == 1);
    }

    #[test]
    fn one_token_texts_and_cjk_are_found() {
        let mut index = MemoryIndex::default();
        add(&mut index, "Save", "Enregistrer");
        add(&mut index, "設定を保存しました", "x");
        assert_eq!(find(&index, "save!", 70), [("Save".into(), 99)]);
        assert_eq!(find(&index, "設定を保存しました。", 70)[0].1, 100 - 1);
        assert_eq!(find(&index, "設定を保存しまた", 70)[0].1, 88);
    }

    #[test]
    fn pairs_share_a_source_and_keep_their_own_targets_and_spellings() {
        let mut index = MemoryIndex::default();
        let de = ("enus".to_owned(), "dede".to_owned());
        let hash = source_hash(&normalize("Save the game"));
        assert!(add(&mut index, "Save the game", "Sauvegarder la partie"));
        assert!(index.upsert(de.clone(), hash, "Save  the game", "Spiel speichern"));
        assert!(!index.upsert(de.clone(), hash, "Save  the game", "Spiel sichern"), "replaced");
        add(&mut index, "Quit the game", "Quitter la partie");
        assert_eq!(index.len(), 3, "a segment per pair");
        assert_eq!(index.sources["enus"].sources.len(), 2, "one source indexed once");
        let found = index.lookup(&de, &hash, "Save the game", 50, 5);
        assert_eq!(
            found,
            [Match { source: "Save  the game".into(), target: "Spiel sichern".into(), score: 100 }],
            "the pair's own spelling and target; the source without a German target is not found"
        );
        let fr = find(&index, "Save the game", 50);
        assert_eq!(fr, [("Save the game".into(), 100), ("Quit the game".into(), 66)]);
    }

    #[test]
    fn other_pairs_are_not_searched() {
        let mut index = MemoryIndex::default();
        add(&mut index, "Save", "Enregistrer");
        let other = ("enus".to_owned(), "dede".to_owned());
        assert!(index.lookup(&other, &source_hash("Save"), "Save", 50, 5).is_empty());
    }
}
