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
//! The DFA may give up on a search (a cache cleared too often for too little progress, or a
//! Unicode word boundary meeting a non-ASCII byte); the caller then tests the rest of the
//! chunk's values one by one with the pattern itself.

use regex::{Regex, RegexBuilder};
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson;
use regex_automata::util::prefilter::Prefilter;
use regex_automata::util::start;
use regex_automata::{Anchored, Input, MatchKind};
use regex_syntax::hir::Hir;

/// See the module doc.
#[derive(Debug, Clone)]
pub enum ArenaRegex {
    /// A pattern without assertions, searched by `regex`.
    Plain(Regex),
    /// A pattern with assertions, searched by the lazy DFA with its start states built first.
    Anchored(Box<DFA>),
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
        let config = DFA::config()
            .prefilter(Prefilter::from_hir_prefix(MatchKind::LeftmostFirst, hir))
            .specialize_start_states(true)
            .unicode_word_boundary(true)
            .cache_capacity(limit)
            .skip_cache_capacity_check(true)
            // As `regex` itself does: give up rather than rebuild states for every few bytes.
            .minimum_cache_clear_count(Some(3))
            .minimum_bytes_per_state(Some(10));
        let dfa = DFA::builder().configure(config).build_from_nfa(nfa).ok()?;
        Some(ArenaRegex::Anchored(Box::new(dfa)))
    }

    /// A searcher for one thread (its start states built).
    pub fn searcher(&self) -> ArenaSearcher<'_> {
        match self {
            ArenaRegex::Plain(regex) => ArenaSearcher::Plain(regex),
            ArenaRegex::Anchored(dfa) => {
                let mut lazy = Lazy { dfa, cache: dfa.create_cache(), clears: 0 };
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
        let found = self.dfa.try_search_fwd(&mut self.cache, &input).map_err(|_| GaveUp)?;
        if self.cache.clear_count() != self.clears {
            self.build_starts();
        }
        Ok(found.map(|m| m.offset()))
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
        let (ArenaRegex::Anchored(dfa), ArenaSearcher::Anchored(mut lazy)) =
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
            let sid = dfa.start_state(&mut lazy.cache, &config).expect("a start");
            assert!(sid.is_start(), "start after {look_behind:?} is tagged");
        }
    }
}
