//! Case-insensitive matching over text as stored, with no lowercased copy of it.
//!
//! The meaning is `filter::fold_case`'s: a value contains a needle when its text lowercased
//! char by char (`ς` read as `σ`) contains the needle lowercased. A char lowercases to one char,
//! except `İ` (U+0130), which becomes `i` and a combining dot (U+0307). So:
//!
//! - every folded char `c` has a small set of stored chars that lowercase to exactly `c` (`k`:
//!   `k`, `K` and the Kelvin sign; `σ`: `σ`, `Σ`, `ς`), read from an inverse table built once
//!   from Rust's own case tables;
//! - a run of the needle without `i`, U+0307 (the chars a longer lowercasing produces) and
//!   `\n` (the arenas' separator) is found in stored text exactly where the stored chars, one
//!   by one, belong to those sets. `plan` turns each char of the run into tests of the stored
//!   bytes (`Step`): a byte compared under a mask where the spellings differ only in the
//!   `0x20` bit (ASCII letters, the second byte of most Cyrillic and Greek letters), a whole
//!   char compared with its few spellings, or a decoded char when its spellings differ in
//!   length (`k` and the Kelvin sign);
//! - `ContainsSearch` finds where the run may start by two of those byte tests at fixed
//!   distances (the rarest and the one farthest from it), 32 starts at a time with SIMD
//!   (`Pair`; `packed` Teddy or `memmem` over the first chars' spellings when no byte test
//!   lies at a fixed distance), then runs the steps there, the first eight byte tests as one
//!   masked word compare;
//! - when that run is the whole needle, a match proves the value contains it; otherwise a match
//!   makes the value a candidate, which `fold_case` confirms. A needle with no such run is
//!   tested value by value.
//!
//! `starts_with` and `ends_with` compare a value's folded chars from either end as they are
//! produced, stopping at the needle's length.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::{packed, AhoCorasick, Input, MatchKind, Span};
use memchr::memmem;
use wide::{u8x32, CmpEq};

/// Most spellings of a needle's first chars searched at once (a `packed` searcher's limit).
const MAX_SPELLINGS: usize = 64;

/// Stored chars per folded char; see the module doc.
struct Inverse {
    /// Folded char -> the other chars that lowercase to exactly it.
    to: HashMap<char, Vec<char>>,
    /// Chars that a char lowercasing to several chars produces (`i`, U+0307).
    partial: Vec<char>,
}

fn inverse() -> &'static Inverse {
    static INVERSE: OnceLock<Inverse> = OnceLock::new();
    INVERSE.get_or_init(|| {
        let mut to: HashMap<char, Vec<char>> = HashMap::new();
        let mut partial = Vec::new();
        for stored in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            let mut folded = stored.to_lowercase().map(final_sigma);
            match (folded.next(), folded.next()) {
                (Some(one), None) if one != stored => to.entry(one).or_default().push(stored),
                (Some(first), Some(second)) => {
                    partial.extend([first, second]);
                    partial.extend(folded);
                }
                _ => {}
            }
        }
        partial.sort_unstable();
        partial.dedup();
        Inverse { to, partial }
    })
}

/// The word-final sigma read as sigma (`filter::fold_case`'s rule).
#[inline]
pub(super) fn final_sigma(c: char) -> char {
    if c == 'ς' {
        'σ'
    } else {
        c
    }
}

/// `c` lowercased when that is one char.
#[inline]
fn fold_one(c: char) -> Option<char> {
    if c.is_ascii() {
        return Some(c.to_ascii_lowercase());
    }
    let mut folded = c.to_lowercase();
    match (folded.next(), folded.next()) {
        (Some(one), None) => Some(final_sigma(one)),
        _ => None,
    }
}

/// The stored chars that lowercase to exactly `c`.
fn spellings(c: char) -> Vec<char> {
    let mut all = Vec::with_capacity(4);
    if fold_one(c) == Some(c) {
        all.push(c);
    }
    all.extend(inverse().to.get(&c).into_iter().flatten());
    all
}

/// Whether `text` folded starts with `needle` (folded).
pub fn starts_with(text: &str, needle: &str) -> bool {
    let mut want = needle.chars();
    for c in text.chars() {
        for folded in c.to_lowercase().map(final_sigma) {
            match want.next() {
                None => return true,
                Some(w) if w != folded => return false,
                Some(_) => {}
            }
        }
    }
    want.next().is_none()
}

/// Whether `text` folded ends with `needle` (folded).
pub fn ends_with(text: &str, needle: &str) -> bool {
    let mut want = needle.chars().rev();
    for c in text.chars().rev() {
        for folded in c.to_lowercase().map(final_sigma).rev() {
            match want.next() {
                None => return true,
                Some(w) if w != folded => return false,
                Some(_) => {}
            }
        }
    }
    want.next().is_none()
}

/// One test of the stored text, checking a run char by char.
#[derive(Clone, Copy)]
enum Step {
    /// A byte compared after setting the bits of `mask` (`0x20` where an ASCII letter's cases,
    /// or a Cyrillic or Greek letter's second bytes, differ).
    Byte { mask: u8, want: u8 },
    /// A char of `len` bytes spelled one of these ways (UTF-8, little-endian, the first
    /// repeated as filler).
    Fixed { len: u8, choices: [u32; 4] },
    /// A char that is one of these (the first repeated as filler), spelled in different lengths.
    Char { choices: [char; 4] },
}

/// The steps that test stored text for `run`'s chars: a char whose spellings are exactly the
/// combinations of its bytes' testable values becomes byte steps, any other a `Fixed` step
/// (its spellings of one length) or a `Char` step. `None` when a char has no spelling or more
/// than four.
fn plan(run: impl Iterator<Item = char>) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    for c in run {
        let choices = spellings(c);
        let first = *choices.first()?;
        let len = first.len_utf8();
        let fixed = choices.iter().all(|s| s.len_utf8() == len);
        let mut bytes: Vec<Step> = Vec::new();
        let mut combinations = 1;
        if fixed {
            let encoded: Vec<[u8; 4]> = choices
                .iter()
                .map(|s| {
                    let mut buf = [0u8; 4];
                    s.encode_utf8(&mut buf);
                    buf
                })
                .collect();
            for k in 0..len {
                let mut values: Vec<u8> = encoded.iter().map(|b| b[k]).collect();
                values.sort_unstable();
                values.dedup();
                combinations *= values.len();
                match values[..] {
                    [one] => bytes.push(Step::Byte { mask: 0, want: one }),
                    [low, high] if low | 0x20 == high && low & 0x20 == 0 => {
                        bytes.push(Step::Byte { mask: 0x20, want: high });
                    }
                    _ => break,
                }
            }
        }
        if fixed && bytes.len() == len && combinations == choices.len() {
            steps.extend(bytes);
        } else if choices.len() <= 4 && fixed {
            let word = |c: char| {
                let mut buf = [0u8; 4];
                c.encode_utf8(&mut buf);
                u32::from_le_bytes(buf)
            };
            let mut slots = [word(first); 4];
            for (slot, &c) in slots.iter_mut().zip(&choices) {
                *slot = word(c);
            }
            steps.push(Step::Fixed { len: len as u8, choices: slots });
        } else if choices.len() <= 4 {
            let mut slots = [first; 4];
            slots[..choices.len()].copy_from_slice(&choices);
            steps.push(Step::Char { choices: slots });
        } else {
            return None;
        }
    }
    Some(steps)
}

/// Steps to check, the leading byte steps (up to eight) also as one masked word compare.
struct Steps {
    steps: Vec<Step>,
    /// How many leading steps the word compare covers, and its masks: a word `w` read at the
    /// start passes when `(w | or) & and == want`.
    head: usize,
    or: u64,
    and: u64,
    want: u64,
}

impl Steps {
    fn new(steps: Vec<Step>) -> Self {
        let (mut or, mut and, mut want) = (0u64, 0u64, 0u64);
        let mut head = 0;
        for step in steps.iter().take(8) {
            let Step::Byte { mask, want: byte } = *step else { break };
            or |= u64::from(mask) << (8 * head);
            and |= 0xFF << (8 * head);
            want |= u64::from(byte) << (8 * head);
            head += 1;
        }
        Steps { steps, head, or, and, want }
    }

    /// Where the steps end when they hold from `at` in `text`.
    #[inline]
    fn run(&self, text: &str, at: usize) -> Option<usize> {
        let bytes = text.as_bytes();
        let mut skip = 0;
        if self.head > 1 {
            if let Some(word) = bytes.get(at..at + 8) {
                let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
                if (word | self.or) & self.and != self.want {
                    return None;
                }
                skip = self.head;
            }
        }
        let mut pos = at + skip;
        for step in &self.steps[skip..] {
            match *step {
                Step::Byte { mask, want } => {
                    if *bytes.get(pos)? | mask != want {
                        return None;
                    }
                    pos += 1;
                }
                Step::Fixed { len, choices } => {
                    let len = usize::from(len);
                    let word = match bytes.get(pos..pos + 4) {
                        Some(four) => {
                            let four = u32::from_le_bytes(four.try_into().expect("4 bytes"));
                            four & (u32::MAX >> (32 - 8 * len))
                        }
                        None => {
                            let mut buf = [0u8; 4];
                            buf[..len].copy_from_slice(bytes.get(pos..pos + len)?);
                            u32::from_le_bytes(buf)
                        }
                    };
                    if !choices.contains(&word) {
                        return None;
                    }
                    pos += len;
                }
                Step::Char { choices } => {
                    let c = text.get(pos..)?.chars().next()?;
                    if !choices.contains(&c) {
                        return None;
                    }
                    pos += c.len_utf8();
                }
            }
        }
        // The steps cover whole chars, each spelled in full, so the end is a char boundary
        // when `at` is.
        text.is_char_boundary(at).then_some(pos)
    }
}

/// Where a run may start: two of its bytes at fixed distances from its start, tested as byte
/// steps are. Thirty-two starts are tested at a time (`wide`: SSE2, or AVX2 where the build
/// enables it), as `memchr`'s packed pair does for exact bytes.
struct Pair {
    at: [usize; 2],
    mask: [u8; 2],
    want: [u8; 2],
}

impl Pair {
    /// The rarest byte step among those at fixed distances from the run's start, and the one
    /// farthest from it (bytes close together are often common together, as `w` and `r` in
    /// "wor").
    fn new(steps: &[Step]) -> Option<Self> {
        let mut bytes: Vec<(u8, usize, u8, u8)> = Vec::new(); // (rank, at, mask, want)
        let mut at = 0;
        for step in steps {
            match *step {
                Step::Byte { mask, want } => {
                    bytes.push((rank(want), at, mask, want));
                    at += 1;
                }
                Step::Fixed { len, .. } => at += usize::from(len),
                Step::Char { .. } => break,
            }
        }
        bytes.sort_unstable();
        let first = *bytes.first()?;
        let second = bytes.iter().max_by_key(|b| b.1.abs_diff(first.1)).copied().unwrap_or(first);
        let (a, b) = if first.1 <= second.1 { (first, second) } else { (second, first) };
        Some(Pair { at: [a.1, b.1], mask: [a.2, b.2], want: [a.3, b.3] })
    }

    #[inline]
    fn test(&self, text: &[u8], start: usize) -> bool {
        (0..2).all(|k| text[start + self.at[k]] | self.mask[k] == self.want[k])
    }

    /// Calls `found` with each start at or after `from` whose two bytes pass, in order, until
    /// it answers `Some`.
    #[inline]
    fn each<T>(
        &self,
        text: &[u8],
        from: usize,
        mut found: impl FnMut(usize) -> Option<T>,
    ) -> Option<T> {
        let reach = self.at[1] + 1;
        if text.len() < reach {
            return None;
        }
        let last = text.len() - reach;
        let lane = |at: usize| {
            let block: [u8; 32] = text[at..at + 32].try_into().expect("32 bytes");
            u8x32::new(block)
        };
        let (m0, m1) = (u8x32::splat(self.mask[0]), u8x32::splat(self.mask[1]));
        let (w0, w1) = (u8x32::splat(self.want[0]), u8x32::splat(self.want[1]));
        let mut start = from;
        while start + 32 <= last + 1 {
            let hit0 = (lane(start + self.at[0]) | m0).cmp_eq(w0);
            let hit1 = (lane(start + self.at[1]) | m1).cmp_eq(w1);
            let mut bits = (hit0 & hit1).move_mask() as u32;
            while bits != 0 {
                if let Some(done) = found(start + bits.trailing_zeros() as usize) {
                    return Some(done);
                }
                bits &= bits - 1;
            }
            start += 32;
        }
        (start..=last).filter(|&at| self.test(text, at)).find_map(found)
    }
}

/// Rough frequency of a byte in text (higher is more common), to choose rare ones to test.
fn rank(byte: u8) -> u8 {
    const LETTERS: &[u8] = b"zqjxkvbpygfwmucldrhsnioate";
    match byte {
        b' ' => 255,
        0xC0..=0xFF => 240,
        b'a'..=b'z' => 100 + 5 * LETTERS.iter().position(|&l| l == byte).unwrap_or(0) as u8,
        b'0'..=b'9' => 120,
        0x80..=0xBF => 110,
        _ => 60,
    }
}

/// Finds where a run may start.
enum Finder {
    Pair(Pair),
    /// The spellings of the run's first chars, and how many chars they cover.
    Spellings(Box<Spellings>, usize),
}

/// Finds any of the spellings of a run's first chars.
enum Spellings {
    One(memmem::Finder<'static>),
    Packed(packed::Searcher),
    Automaton(AhoCorasick),
}

impl Finder {
    /// A pair finder, or one for the spellings of the run's first chars.
    fn new(run: &str, steps: &[Step]) -> Option<Self> {
        if let Some(pair) = Pair::new(steps) {
            return Some(Finder::Pair(pair));
        }
        let mut found = vec![String::new()];
        let mut covered = 0;
        for c in run.chars() {
            let choices = spellings(c);
            if choices.is_empty() || found.len() * choices.len() > MAX_SPELLINGS {
                break;
            }
            found = found
                .iter()
                .flat_map(|prefix| choices.iter().map(move |&s| format!("{prefix}{s}")))
                .collect();
            covered += 1;
        }
        if covered == 0 {
            return None;
        }
        if let [one] = &found[..] {
            let finder = memmem::Finder::new(one.as_bytes()).into_owned();
            return Some(Finder::Spellings(Box::new(Spellings::One(finder)), covered));
        }
        let packed = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(&found)
            .build();
        if let Some(searcher) = packed {
            return Some(Finder::Spellings(Box::new(Spellings::Packed(searcher)), covered));
        }
        let automaton =
            AhoCorasick::builder().match_kind(MatchKind::LeftmostFirst).build(&found).ok()?;
        Some(Finder::Spellings(Box::new(Spellings::Automaton(automaton)), covered))
    }
}

impl Spellings {
    /// The next place at or after `from` where a spelling is found.
    #[inline]
    fn find(&self, text: &[u8], from: usize) -> Option<Range<usize>> {
        match self {
            Spellings::One(finder) => {
                let at = from + finder.find(&text[from..])?;
                Some(at..at + finder.needle().len())
            }
            Spellings::Packed(searcher) => {
                searcher.find_in(text, Span { start: from, end: text.len() }).map(|m| m.range())
            }
            Spellings::Automaton(automaton) => {
                automaton.find(Input::new(text).range(from..)).map(|m| m.range())
            }
        }
    }
}

/// A folded needle prepared for searching stored text; see the module doc.
pub struct ContainsSearch {
    finder: Finder,
    /// Tests of the run's chars after those the finder covers.
    rest: Steps,
    /// Whether the run is the whole needle (a match proves it).
    whole: bool,
}

impl ContainsSearch {
    /// `None` when `needle` (folded, not empty) has no run to search for.
    pub fn new(needle: &str) -> Option<Self> {
        let inverse = inverse();
        let breaks = |c: char| c == '\n' || inverse.partial.binary_search(&c).is_ok();
        let run = needle.split(breaks).max_by_key(|run| run.len()).filter(|run| !run.is_empty())?;
        let steps = plan(run.chars())?;
        let finder = Finder::new(run, &steps)?;
        let rest = match finder {
            Finder::Pair(_) => steps,
            Finder::Spellings(_, covered) => plan(run.chars().skip(covered))?,
        };
        Some(ContainsSearch { finder, rest: Steps::new(rest), whole: run.len() == needle.len() })
    }

    /// Whether a match proves the value holding it contains the needle.
    pub fn proves(&self) -> bool {
        self.whole
    }

    /// The first match of the run in `text` at or after `from`.
    pub fn find(&self, text: &str, mut from: usize) -> Option<Range<usize>> {
        let bytes = text.as_bytes();
        let spellings = match &self.finder {
            Finder::Pair(pair) => {
                return pair.each(bytes, from, |at| self.rest.run(text, at).map(|end| at..end));
            }
            Finder::Spellings(spellings, _) => spellings,
        };
        while from < bytes.len() {
            let found = spellings.find(bytes, from)?;
            if let Some(end) = self.rest.run(text, found.end) {
                return Some(found.start..end);
            }
            // The next match may start inside this one: go on one byte later.
            from = found.start + 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::query::filter::fold_case;
    use proptest::prelude::*;

    /// The reference: `fold_case` and a substring search.
    fn contains(text: &str, needle: &str) -> bool {
        fold_case(text).contains(needle)
    }

    /// Whether `ContainsSearch` finds `needle` in `text` as a one-value arena: a match proves
    /// it, or the value is confirmed; no match means no.
    fn searched(text: &str, needle: &str) -> bool {
        match ContainsSearch::new(needle) {
            None => contains(text, needle),
            Some(search) => match search.find(text, 0) {
                Some(_) if search.proves() => true,
                Some(_) => contains(text, needle),
                None => false,
            },
        }
    }

    #[test]
    fn inverse_table_knows_the_odd_chars() {
        assert_eq!(spellings('k'), vec!['k', 'K', '\u{212A}']);
        let mut sigma = spellings('σ');
        sigma.sort_unstable();
        assert_eq!(sigma, vec!['Σ', 'ς', 'σ']);
        assert_eq!(spellings('н'), vec!['н', 'Н']);
        assert_eq!(inverse().partial, vec!['i', '\u{307}']);
    }

    #[test]
    fn matches_as_fold_case_does() {
        let cases = [
            ("Network settings", "network", true),
            ("NETWORK", "netw", true),
            ("Kelvin \u{212A}", "kelvin k", true),
            ("ΟΔΟΣ", "οσ", true),
            ("οδος", "οσ", true),
            ("НАСТРОЙКИ сети", "настройки", true),
            ("İstanbul", "istanbul", false),
            ("İstanbul", "i\u{307}stanbul", true),
            ("İ", "i", true),
            ("aaab", "aab", true),
            ("line one\nline two", "one\nline", true),
            ("one\ntwo", "e\nz", false),
            ("Straße", "STRASSE", false),
            ("", "a", false),
        ];
        for (text, needle, want) in cases {
            let needle = fold_case(needle).into_owned();
            assert_eq!(searched(text, &needle), want, "{text:?} contains {needle:?}");
            assert_eq!(contains(text, &needle), want, "reference for {text:?} / {needle:?}");
        }
    }

    #[test]
    fn starts_and_ends_as_fold_case_does() {
        for (text, needle) in [
            ("Network", "net"),
            ("Network", "work"),
            ("İstanbul", "i"),
            ("İstanbul", "i\u{307}s"),
            ("ΟΔΟΣ", "ος"),
            ("ΟΔΟΣ", "οσ"),
            ("ab", "abc"),
            ("", ""),
            ("x", ""),
        ] {
            let needle = fold_case(needle).into_owned();
            assert_eq!(starts_with(text, &needle), fold_case(text).starts_with(needle.as_str()));
            assert_eq!(ends_with(text, &needle), fold_case(text).ends_with(needle.as_str()));
        }
    }

    /// Text drawn from chars whose case folding is odd, plus plain letters.
    fn odd_text() -> impl Strategy<Value = String> {
        let chars = prop::sample::select(vec![
            'a', 'A', 'b', 'k', 'K', '\u{212A}', 'i', 'I', 'İ', '\u{307}', 'ı', 'σ', 'Σ', 'ς', 'н',
            'Н', 'ß', 'ẞ', ' ', '\n', 'Å', '\u{212B}', 'å', 'ǅ', 'ǆ', 'Ǆ',
        ]);
        prop::collection::vec(chars, 0..24).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #[test]
        fn search_agrees_with_fold_case(text in odd_text(), needle in odd_text()) {
            let needle = fold_case(&needle).into_owned();
            prop_assume!(!needle.is_empty());
            prop_assert_eq!(searched(&text, &needle), contains(&text, &needle));
            prop_assert_eq!(starts_with(&text, &needle), fold_case(&text).starts_with(needle.as_str()));
            prop_assert_eq!(ends_with(&text, &needle), fold_case(&text).ends_with(needle.as_str()));
        }

        #[test]
        fn every_match_lies_where_the_run_is(text in odd_text(), needle in odd_text()) {
            let needle = fold_case(&needle).into_owned();
            prop_assume!(!needle.is_empty());
            if let Some(search) = ContainsSearch::new(&needle) {
                let mut from = 0;
                while let Some(found) = search.find(&text, from) {
                    prop_assert!(text.is_char_boundary(found.start) && text.is_char_boundary(found.end));
                    prop_assert!(!text[found.clone()].contains('\n'));
                    from = found.end.max(found.start + 1);
                    while !text.is_char_boundary(from) { from += 1; }
                }
            }
        }
    }
}
