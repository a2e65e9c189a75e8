//! `ArenaRegex`: a `regexp` pattern's search over a store arena (values each followed by `\n`),
//! each scan thread searching with an `ArenaSearcher` of its own.
//!
//! A pattern without assertions searches with `regex` itself (a literal is then a plain
//! substring search). A pattern with line anchors or word boundaries (`(?m)^please .* again$`
//! is how `^please .* again$` searches an arena) runs on a lazy DFA (`regex_automata::hybrid`)
//! driven directly, because `regex::Regex::shortest_match_at` hides a trap for it. The DFA looks
//! for the next candidate with the prefilter of the pattern's prefix literals only from a state
//! tagged as a start state, and a start state is tagged only when it is built as one. Such a
//! pattern has several start states (after `\n`, after another byte); when the search first
//! reaches the state of one of them by an ordinary transition, that state is cached untagged,
//! and every later start with the same look-behind returns the untagged copy: from then on the
//! DFA steps through every byte instead of jumping between candidates. Which comes first
//! depends on the text, so on a 1M-record English column a scan thread whose share began in
//! one chunk ran `^please .* again$` 4x slower than one whose share began in another (530
//! against 125 µs a chunk). An `ArenaSearcher` builds every start state before its first
//! search, and again after its cache is cleared, so they are all tagged. (A pattern without
//! assertions has one start state, built first, so `regex` is safe there.)
//!
//! A pattern that starts at a line start (`^please .* again$`) looks for its candidates with the
//! prefix literals behind a `\n` (`\nplease `): `please` alone is found in the middle of many
//! values, and each such candidate set the DFA stepping byte by byte until it found its way back
//! to a start state (on a 1M-record English column, 45% of the scan in the literal search and
//! 26% in the DFA). A match starting where the search starts (the arena's first value, or right
//! after a `\n`) has no `\n` in the text searched, so such a search also tries a match anchored
//! there (`Lazy::shortest_end`).
//!
//! The DFA may give up on a search (a cache cleared too often for too little progress, or a
//! Unicode word boundary meeting a non-ASCII byte); the caller then tests the rest of the
//! chunk's values one by one with the pattern itself.

use regex::{Regex, RegexBuilder};
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson;
use regex_automata::util::prefilter::Prefilter;
use regex_automata::util::start;
use regex_automata::{Anchored, HalfMatch, Input, MatchKind};
use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{Hir, HirKind, Look};

/// See the module doc.
#[derive(Debug, Clone)]
pub enum ArenaRegex {
    /// A pattern without assertions, searched by `regex`.
    Plain(Regex),
    /// A pattern with assertions, searched by the lazy DFA with its start states built first.
    Anchored(Box<LineDfa>),
}

/// The lazy DFA of a pattern with assertions.
#[derive(Debug, Clone)]
pub struct LineDfa {
    dfa: DFA,
    /// Whether its prefilter looks for the `\n` before a line start (`\nplease`), so that a
    /// match starting right where a search starts is not among its candidates.
    after_newline: bool,
}

/// The search gave up; the caller tests values one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GaveUp;

/// The look-behinds that pick each kind of unanchored start state: none (the arena's start),
/// `\n`, `\r`, a word byte and any other byte.
const LOOK_BEHINDS: [Option<u8>; 5] = [None, Some(b'\n'), Some(b'\r'), Some(b'a'), Some(b' ')];

impl ArenaRegex {
    /// The search for `hir` (the pattern as it runs over an arena), its automata and each
    /// thread's cache within `limit` bytes. `None` when it cannot be built (too large).
    pub fn new(hir: &Hir, limit: usize) -> Option<Self> {
        Self::build(hir, limit, true)
    }

    /// `new`, with the line-start prefilter only when `line_prefilter` (tests compare a search
    /// without it).
    fn build(hir: &Hir, limit: usize, line_prefilter: bool) -> Option<Self> {
        if hir.properties().look_set().is_empty() {
            let regex = RegexBuilder::new(&hir.to_string())
                .size_limit(limit)
                .dfa_size_limit(limit)
                .build()
                .ok()?;
            return Some(ArenaRegex::Plain(regex));
        }
        let nfa = thompson::Compiler::new()
            .configure(thompson::Config::new().nfa_size_limit(Some(limit)))
            .build_from_hir(hir)
            .ok()?;
        let after_line_start = line_prefilter.then(|| line_start_prefilter(hir)).flatten();
        let after_newline = after_line_start.is_some();
        let prefilter =
            after_line_start.or_else(|| Prefilter::from_hir_prefix(MatchKind::LeftmostFirst, hir));
        let config = DFA::config()
            .prefilter(prefilter)
            .specialize_start_states(true)
            .unicode_word_boundary(true)
            .cache_capacity(limit)
            .skip_cache_capacity_check(true)
            // As `regex` itself does: give up rather than rebuild states for every few bytes.
            .minimum_cache_clear_count(Some(3))
            .minimum_bytes_per_state(Some(10));
        let dfa = DFA::builder().configure(config).build_from_nfa(nfa).ok()?;
        Some(ArenaRegex::Anchored(Box::new(LineDfa { dfa, after_newline })))
    }

    /// A searcher for one thread (its start states built).
    pub fn searcher(&self) -> ArenaSearcher<'_> {
        match self {
            ArenaRegex::Plain(regex) => ArenaSearcher::Plain(regex),
            ArenaRegex::Anchored(anchored) => {
                let LineDfa { dfa, after_newline } = &**anchored;
                let mut lazy = Lazy {
                    dfa,
                    cache: dfa.create_cache(),
                    clears: 0,
                    after_newline: *after_newline,
                };
                lazy.build_starts();
                ArenaSearcher::Anchored(Box::new(lazy))
            }
        }
    }
}

/// One thread's search with an `ArenaRegex`.
pub enum ArenaSearcher<'a> {
    Plain(&'a Regex),
    Anchored(Box<Lazy<'a>>),
}

/// The lazy DFA of an `ArenaRegex::Anchored` with one thread's cache; see the module doc.
pub struct Lazy<'a> {
    dfa: &'a DFA,
    cache: Cache,
    /// The cache's clear count when the start states were last built.
    clears: usize,
    /// `LineDfa::after_newline`.
    after_newline: bool,
}

impl ArenaSearcher<'_> {
    /// Where the earliest match in `text[from..]` ends (`None`: no match).
    pub fn shortest_end(&mut self, text: &str, from: usize) -> Result<Option<usize>, GaveUp> {
        match self {
            ArenaSearcher::Plain(regex) => Ok(regex.shortest_match_at(text, from)),
            ArenaSearcher::Anchored(lazy) => lazy.shortest_end(text.as_bytes(), from),
        }
    }
}

impl Lazy<'_> {
    fn shortest_end(&mut self, text: &[u8], from: usize) -> Result<Option<usize>, GaveUp> {
        let input = Input::new(text).range(from..).earliest(true);
        let found = self.search(&input)?.map(|m| m.offset());
        let line_start = from == 0 || text.get(from - 1) == Some(&b'\n');
        if !self.after_newline || !line_start {
            return Ok(found);
        }
        // A match starting at `from` has no `\n` at or after `from` for the prefilter to find.
        let at_start = self.search(&input.anchored(Anchored::Yes))?.map(|m| m.offset());
        Ok(found.into_iter().chain(at_start).min())
    }

    fn search(&mut self, input: &Input<'_>) -> Result<Option<HalfMatch>, GaveUp> {
        let found = self.dfa.try_search_fwd(&mut self.cache, input).map_err(|_| GaveUp)?;
        if self.cache.clear_count() != self.clears {
            self.build_starts();
        }
        Ok(found)
    }

    /// Builds every unanchored start state before any transition can build it untagged.
    fn build_starts(&mut self) {
        for look_behind in LOOK_BEHINDS {
            let config = start::Config::new().anchored(Anchored::No).look_behind(look_behind);
            // A start state that cannot be built fails the search that needs it, which then
            // gives up: nothing to do here.
            let _ = self.dfa.start_state(&mut self.cache, &config);
        }
        self.clears = self.cache.clear_count();
    }
}

/// The prefilter of a pattern that begins at a line start (`(?m)^` then something with prefix
/// literals): those literals each behind a `\n`. `None` for any other pattern, or when the
/// literals are unknown or include the empty one (every position would be a candidate).
fn line_start_prefilter(hir: &Hir) -> Option<Prefilter> {
    let HirKind::Concat(parts) = hir.kind() else { return None };
    let (first, rest) = parts.split_first()?;
    if !matches!(first.kind(), HirKind::Look(Look::StartLF)) {
        return None;
    }
    let mut prefixes =
        Extractor::new().kind(ExtractKind::Prefix).extract(&Hir::concat(rest.to_vec()));
    prefixes.optimize_for_prefix_by_preference();
    let literals = prefixes.literals()?;
    if literals.is_empty() || literals.iter().any(|l| l.is_empty()) {
        return None;
    }
    let needles: Vec<Vec<u8>> =
        literals.iter().map(|l| [b"\n".as_slice(), l.as_bytes()].concat()).collect();
    Prefilter::new(MatchKind::LeftmostFirst, &needles)
}

#[cfg(test)]
mod tests {
    use super::{ArenaRegex, ArenaSearcher};

    fn search(pattern: &str) -> ArenaRegex {
        let hir = regex_syntax::ParserBuilder::new().multi_line(true).build().parse(pattern);
        ArenaRegex::new(&hir.expect("parses"), 1 << 20).expect("builds")
    }

    /// Every end the searcher reports, searching on from each.
    fn ends(regex: &ArenaRegex, text: &str) -> Vec<usize> {
        let mut searcher = regex.searcher();
        let (mut from, mut ends) = (0, Vec::new());
        while let Some(end) = searcher.shortest_end(text, from).expect("searches") {
            ends.push(end);
            from = end.max(from + 1);
        }
        ends
    }

    #[test]
    fn a_search_finds_the_earliest_end_of_each_match_over_values() {
        let text = "were please valid\nplease try again\nplease again\nno\n";
        assert_eq!(ends(&search(r"^please .* again$"), text), [34]);
        assert_eq!(ends(&search(r"please"), text), [11, 24, 41]);
        assert_eq!(ends(&search(r"(?i)PLEASE"), text), [11, 24, 41]);
        assert!(ends(&search(r"^nothing$"), text).is_empty());
    }

    /// A line-start pattern looks for its literals behind a `\n`, and still finds a match at
    /// the start of the text (no `\n` before it) and after a `\n` inside a value.
    #[test]
    fn a_line_start_pattern_finds_matches_at_the_start_and_after_each_newline() {
        let regex = search(r"^please .* again$");
        let ArenaRegex::Anchored(anchored) = &regex else { panic!("runs on the lazy DFA") };
        assert!(anchored.after_newline);
        let text = "please do it again\nno\nwere please try again\nfirst line\nplease go again\n";
        assert_eq!(ends(&regex, text), [18, 70]);
        assert_eq!(ends(&search(r"^(?i)PLEASE"), "Please\nno please\npLeAsE\n"), [6, 23]);
        assert_eq!(ends(&search(r"^please"), "xplease\n"), [] as [usize; 0]);
        // Patterns whose line-start literals are unknown keep the pattern's own prefilter.
        for pattern in [r"^.*again$", r"(?:^please|again)", r"\bplease", r"^(?:please)?$"] {
            let ArenaRegex::Anchored(anchored) = search(pattern) else { panic!("{pattern}") };
            assert!(!anchored.after_newline, "{pattern}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// From any position, the line-start prefilter's search ends where the pattern's own
        /// prefilter's does.
        #[test]
        fn a_line_start_search_agrees_with_the_patterns_own_prefilter(
            values in proptest::collection::vec("(please|try|again| |x|P|\n){0,6}", 0..8),
            pattern in proptest::sample::select(vec![
                r"^please", r"^please .* again$", r"^(?i)PLEASE", r"^(?:please|try)",
                r"^try again", r"^p", r"^(?:x|please)+ again",
            ]),
        ) {
            let text: String = values.iter().map(|v| format!("{v}\n")).collect();
            let hir = regex_syntax::ParserBuilder::new().multi_line(true).build().parse(pattern);
            let hir = hir.expect("parses");
            let fast = ArenaRegex::build(&hir, 1 << 20, true).expect("builds");
            let plain = ArenaRegex::build(&hir, 1 << 20, false).expect("builds");
            let ArenaRegex::Anchored(anchored) = &fast else { panic!("runs on the lazy DFA") };
            proptest::prop_assert!(anchored.after_newline);
            let (mut fast, mut plain) = (fast.searcher(), plain.searcher());
            for from in 0..=text.len() {
                proptest::prop_assert_eq!(
                    fast.shortest_end(&text, from),
                    plain.shortest_end(&text, from),
                    "from {}", from
                );
            }
        }
    }

    /// A Unicode word boundary stops the DFA at the first non-ASCII byte: the caller is told.
    #[test]
    fn a_search_that_cannot_go_on_gives_up() {
        let regex = search(r"\bДатей\b");
        let mut searcher = regex.searcher();
        assert_eq!(searcher.shortest_end("ascii only\n", 0), Ok(None));
        assert!(searcher.shortest_end("файл Датей\n", 0).is_err());
    }

    /// The trap of the module doc: the start states after a space and after a letter, reached
    /// first by a transition here, are tagged because they were built up front.
    #[test]
    fn start_states_are_built_before_the_first_search() {
        let regex = search(r"^please .* again$");
        let (ArenaRegex::Anchored(anchored), ArenaSearcher::Anchored(mut lazy)) =
            (&regex, regex.searcher())
        else {
            panic!("a pattern with line anchors runs on the lazy DFA");
        };
        // The first candidate starts a value; the DFA then steps past `\n` into `w`, the state
        // a start after a space or a letter has.
        let text = "lost\nplease could try\nwere please valid\nplease do it again\n";
        assert_eq!(lazy.shortest_end(text.as_bytes(), 0), Ok(Some(58)));
        for look_behind in super::LOOK_BEHINDS {
            let config = regex_automata::util::start::Config::new()
                .anchored(regex_automata::Anchored::No)
                .look_behind(look_behind);
            let sid = anchored.dfa.start_state(&mut lazy.cache, &config).expect("a start");
            assert!(sid.is_start(), "start after {look_behind:?} is tagged");
        }
    }
}
