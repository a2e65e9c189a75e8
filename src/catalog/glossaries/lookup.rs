//! Term lookup: which of a glossary's terms occur in a text.
//!
//! A [`Matcher`] is an Aho-Corasick automaton over the lower-cased terms of every entry in the
//! languages a text's language covers (`LangCode::covers`: `en` finds `en-US` terms and the
//! reverse), each term with its cheap inflections: a term ending in a Latin letter also
//! matches with `s` or `es` added, and one ending in `y` with `ies` for it (English plurals;
//! no stemmer). The text is lower-cased (Unicode) the same way, keeping where each lowered
//! byte came from, so positions are the original text's.
//!
//! A candidate counts only at word boundaries: the characters before and after it are not
//! letters or digits, unless either side is of a script written without spaces (CJK, kana,
//! Thai, ...), where any position is a boundary. Of overlapping candidates the leftmost, then
//! longest wins. Building is linear in the terms' length; a lookup is linear in the text's
//! (plus its candidates), and never goes through the supervisor.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use super::index::Entries;
use crate::io::glossary::LangCode;

/// The most matches reported for one text.
pub const MAX_MATCHES: usize = 1000;

/// One term a pattern stands for.
#[derive(Debug, Clone)]
pub struct Owner {
    pub entry: u64,
    pub lang: LangCode,
    pub term: String,
}

/// The automaton of a glossary's terms in the languages one language covers.
#[derive(Debug)]
pub struct Matcher {
    automaton: Option<AhoCorasick>,
    /// By pattern id: the terms it stands for.
    owners: Vec<Vec<Owner>>,
}

/// A term found in a text: character positions in the original text (`end` exclusive), and
/// the pattern's owners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    pub pattern: usize,
}

/// The forms of a lower-cased term that count as it.
fn inflections(term: &str) -> Vec<String> {
    let mut forms = vec![term.to_owned()];
    let last = term.chars().next_back();
    if last.is_some_and(|c| c.is_ascii_alphabetic()) {
        forms.push(format!("{term}s"));
        forms.push(format!("{term}es"));
        if let Some(stem) = term.strip_suffix('y') {
            forms.push(format!("{stem}ies"));
        }
    }
    forms
}

impl Matcher {
    /// The matcher of the terms of `entries` in the languages `lang` covers.
    pub fn build(entries: &Entries, lang: &LangCode) -> Matcher {
        let mut ids: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        let mut owners: Vec<Vec<Owner>> = Vec::new();
        let mut patterns: Vec<String> = Vec::new();
        for (id, entry) in entries {
            for (term_lang, terms) in entry.terms.iter().filter(|(l, _)| lang.covers(l)) {
                for term in terms {
                    let owner = Owner { entry: *id, lang: term_lang.clone(), term: term.clone() };
                    for form in inflections(&term.to_lowercase()) {
                        let next = patterns.len();
                        let at = *ids.entry(form.clone()).or_insert(next);
                        if at == next {
                            patterns.push(form);
                            owners.push(Vec::new());
                        }
                        if !owners[at].iter().any(|o| o.entry == *id) {
                            owners[at].push(owner.clone());
                        }
                    }
                }
            }
        }
        let automaton = (!patterns.is_empty())
            .then(|| {
                AhoCorasickBuilder::new().match_kind(MatchKind::Standard).build(&patterns).ok()
            })
            .flatten();
        Matcher { automaton, owners }
    }

    /// The terms pattern `pattern` stands for.
    pub fn owners(&self, pattern: usize) -> &[Owner] {
        self.owners.get(pattern).map_or(&[], Vec::as_slice)
    }

    /// The terms found in `text` (at most `MAX_MATCHES`), in text order, none overlapping.
    pub fn find(&self, text: &str) -> Vec<Found> {
        let Some(automaton) = &self.automaton else { return Vec::new() };
        let lowered = Lowered::new(text);
        let mut candidates: Vec<Found> = Vec::new();
        for m in automaton.find_overlapping_iter(&lowered.text) {
            if !lowered.bounded(m.start(), m.end()) {
                continue;
            }
            let (start, end) = (lowered.origin[m.start()], lowered.origin[m.end() - 1] + 1);
            candidates.push(Found { start, end, pattern: m.pattern().as_usize() });
            if candidates.len() >= MAX_MATCHES * 8 {
                break;
            }
        }
        candidates.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        let mut found: Vec<Found> = Vec::new();
        for candidate in candidates {
            if found.last().is_some_and(|last| candidate.start < last.end) {
                continue;
            }
            found.push(candidate);
            if found.len() >= MAX_MATCHES {
                break;
            }
        }
        found
    }
}

/// A text lower-cased, with the original character index of every lowered byte.
struct Lowered {
    text: String,
    origin: Vec<usize>,
}

impl Lowered {
    fn new(text: &str) -> Lowered {
        let mut lowered = String::with_capacity(text.len());
        let mut origin = Vec::with_capacity(text.len());
        for (at, c) in text.chars().enumerate() {
            let before = lowered.len();
            if c.is_ascii() {
                lowered.push(c.to_ascii_lowercase());
            } else {
                lowered.extend(c.to_lowercase());
            }
            origin.extend(std::iter::repeat_n(at, lowered.len() - before));
        }
        Lowered { text: lowered, origin }
    }

    /// Whether bytes `start..end` sit at word boundaries.
    fn bounded(&self, start: usize, end: usize) -> bool {
        let first = self.text[start..end].chars().next();
        let last = self.text[start..end].chars().next_back();
        let before = self.text[..start].chars().next_back();
        let after = self.text[end..].chars().next();
        boundary(before, first) && boundary(after, last)
    }
}

/// Whether the edge between `outside` (the neighbouring character, if any) and `inside` (the
/// match's character at that edge) is a word boundary.
fn boundary(outside: Option<char>, inside: Option<char>) -> bool {
    let Some(outside) = outside else { return true };
    !outside.is_alphanumeric() || unspaced(outside) || inside.is_some_and(unspaced)
}

/// Whether `c` is of a script written without spaces between words.
fn unspaced(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF          // Thai, Lao
        | 0x1000..=0x109F        // Myanmar
        | 0x1780..=0x17FF        // Khmer
        | 0x3040..=0x30FF        // Hiragana, Katakana
        | 0x3400..=0x4DBF        // CJK extension A
        | 0x4E00..=0x9FFF        // CJK unified ideographs
        | 0xF900..=0xFAFF        // CJK compatibility ideographs
        | 0xFF66..=0xFF9F        // half-width Katakana
        | 0x20000..=0x3FFFF) // CJK extensions B and later
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::glossary::Concept;

    fn entries(terms: &[(&str, &str)]) -> Entries {
        let mut map = Entries::new();
        for (i, (lang, term)) in terms.iter().enumerate() {
            let mut c = Concept::default();
            c.add_term(LangCode::parse(lang).expect("lang"), term);
            map.insert(i as u64 + 1, c);
        }
        map
    }

    fn texts(matcher: &Matcher, text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        matcher.find(text).iter().map(|f| chars[f.start..f.end].iter().collect()).collect()
    }

    #[test]
    fn terms_are_found_case_and_plural_tolerant_at_word_boundaries() {
        let e = entries(&[("en", "Save Game"), ("en", "quest"), ("en", "ally"), ("en", "game")]);
        let m = Matcher::build(&e, &LangCode::parse("en-US").expect("lang"));
        assert_eq!(
            texts(&m, "Two SAVE GAMES, side quests and allies; no questions."),
            vec!["SAVE GAMES", "quests", "allies"]
        );
        assert_eq!(texts(&m, "endgame gamer"), Vec::<String>::new());
        assert_eq!(texts(&m, "a game."), vec!["game"]);
    }

    #[test]
    fn positions_are_characters_of_the_original_text() {
        let e = entries(&[("de", "straße"), ("ja", "セーブデータ")]);
        let de = Matcher::build(&e, &LangCode::parse("de").expect("de"));
        let found = de.find("İİ STRASSE Straße");
        assert_eq!((found.len(), found[0].start, found[0].end), (1, 11, 17));
        let ja = Matcher::build(&e, &LangCode::parse("ja").expect("ja"));
        assert_eq!(texts(&ja, "このセーブデータを削除"), vec!["セーブデータ"]);
        assert!(Matcher::build(&e, &LangCode::parse("fr").expect("fr")).find("straße").is_empty());
    }

    #[test]
    fn the_longest_of_overlapping_terms_wins() {
        let e = entries(&[("en", "save"), ("en", "save game"), ("en", "game over")]);
        let m = Matcher::build(&e, &LangCode::parse("en").expect("en"));
        assert_eq!(texts(&m, "save game over"), vec!["save game"]);
        assert_eq!(texts(&m, "save gamer"), vec!["save"]);
    }
}
