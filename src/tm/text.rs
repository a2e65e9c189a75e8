//! Text as the translation memory compares it: normalization, tokens, language codes and the
//! fuzzy score. Pure functions; nothing here knows of segments, storage or HTTP.
//!
//! - **Normalized text** (the identity of a segment's source): leading and trailing whitespace
//!   removed, every run of whitespace made one space. Case and punctuation are kept, so two
//!   sources that differ only in them are two segments.
//! - **Tokens**: the maximal runs of alphanumeric characters (`char::is_alphanumeric`),
//!   lowercased; a CJK character (Han, Hiragana, Katakana, Hangul syllables, and the CJK
//!   symbols blocks) is a token of its own, since those scripts do not separate words with
//!   spaces. Punctuation, symbols and whitespace separate tokens and are not tokens.
//! - **Language codes** compare without case and separators: `en-US`, `en_us` and `enUS` are
//!   the language `enus`.
//! - **Score** of a stored source for a looked-up text: 100 when the normalized texts are equal;
//!   otherwise `floor(100 × (1 − d / max(n, m)))`, at most 99, where `d` is the edit distance
//!   between the two token sequences (insertions, deletions and substitutions of whole tokens,
//!   each costing 1) and `n`, `m` their token counts; 0 when either has no token.

/// Most tokens a text is cut to for scoring and indexing (a longer text's tail is ignored).
pub const MAX_TOKENS: usize = 256;

/// The text with its ends trimmed and each run of whitespace made one space.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// A language code without case and separators (`en-US` -> `enus`).
pub fn language_key(code: &str) -> String {
    code.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// Whether a language code is one a memory takes: 2 to 35 characters of ASCII letters, digits,
/// `-` and `_`, starting with a letter.
pub fn valid_language(code: &str) -> bool {
    (2..=35).contains(&code.len())
        && code.starts_with(|c: char| c.is_ascii_alphabetic())
        && code.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Whether a character is written without spaces between words (each one a token).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x20000..=0x2FA1F) // CJK extensions B..
}

/// The text's tokens, in order, at most `MAX_TOKENS`.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if out.len() >= MAX_TOKENS {
            return out;
        }
        if is_cjk(c) {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            out.push(c.to_string());
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() && out.len() < MAX_TOKENS {
        out.push(word);
    }
    out
}

/// The edit distance between two token sequences (Levenshtein over whole tokens), stopping
/// early with `bound + 1` once it must exceed `bound`.
pub fn token_distance<T: PartialEq>(a: &[T], b: &[T], bound: usize) -> usize {
    if a.len().abs_diff(b.len()) > bound {
        return bound + 1;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, x) in a.iter().enumerate() {
        current[0] = i + 1;
        let mut row_min = current[0];
        for (j, y) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(x != y);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
            row_min = row_min.min(current[j + 1]);
        }
        if row_min > bound {
            return bound + 1;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// The fuzzy score (0..=99) of a token distance `distance` between sequences of `n` and `m`
/// tokens; an exact match (equal normalized texts) is scored 100 by the caller.
pub fn fuzzy_score(distance: usize, n: usize, m: usize) -> u8 {
    let longest = n.max(m);
    if longest == 0 || n == 0 || m == 0 {
        return 0;
    }
    let kept = longest.saturating_sub(distance);
    let score = (100 * kept) / longest;
    u8::try_from(score.min(99)).unwrap_or(99)
}

/// The largest token distance that still scores at least `min_score` for sequences of `n` and
/// `m` tokens.
pub fn distance_bound(min_score: u8, n: usize, m: usize) -> usize {
    let longest = n.max(m);
    // score >= s  <=>  100 (longest - d) >= s longest  <=>  d <= longest - ceil(s longest / 100)
    longest - (usize::from(min_score) * longest).div_ceil(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_trims_and_collapses_whitespace_only() {
        assert_eq!(normalize("  Save \t your\n\nchanges. "), "Save your changes.");
        assert_eq!(normalize("Save!"), "Save!");
        assert_eq!(normalize(" \n "), "");
    }

    #[test]
    fn tokens_are_lowercased_words_and_single_cjk_characters() {
        assert_eq!(tokens("Save your {0} files, NOW!"), ["save", "your", "0", "files", "now"]);
        assert_eq!(tokens("設定を保存"), ["設", "定", "を", "保", "存"]);
        assert_eq!(tokens("Öffnen Sie die Datei"), ["öffnen", "sie", "die", "datei"]);
        assert_eq!(tokens("abc設定def"), ["abc", "設", "定", "def"]);
        assert_eq!(tokens("l'écran d’accueil"), ["l", "écran", "d", "accueil"]);
        assert!(tokens("... !!").is_empty());
        assert_eq!(tokens(&"a ".repeat(1000)).len(), MAX_TOKENS);
    }

    #[test]
    fn language_codes_compare_without_case_and_separators() {
        assert_eq!(language_key("en-US"), "enus");
        assert_eq!(language_key("enUS"), language_key("en_us"));
        assert!(valid_language("zh-Hans-CN") && valid_language("frFR"));
        assert!(!valid_language("e") && !valid_language("1en") && !valid_language("en US"));
    }

    #[test]
    fn token_distance_is_levenshtein_over_tokens() {
        let a = ["the", "file", "was", "saved"];
        let b = ["the", "files", "were", "saved"];
        assert_eq!(token_distance(&a, &b, 10), 2);
        assert_eq!(token_distance(&a, &a, 10), 0);
        assert_eq!(token_distance(&a, &[], 10), 4);
        assert_eq!(token_distance(&["a", "b", "c"], &["b", "c"], 10), 1);
        assert_eq!(token_distance(&a, &b, 1), 2, "stops past the bound");
        assert_eq!(token_distance(&a, &["x"], 1), 2);
    }

    #[test]
    fn scores_follow_the_documented_formula() {
        assert_eq!(fuzzy_score(0, 4, 4), 99, "equal tokens but not an exact text");
        assert_eq!(fuzzy_score(1, 4, 4), 75);
        assert_eq!(fuzzy_score(2, 4, 5), 60);
        assert_eq!(fuzzy_score(3, 3, 3), 0);
        assert_eq!(fuzzy_score(0, 0, 3), 0);
        for (n, m) in [(4, 4), (7, 10), (1, 1), (10, 3)] {
            for s in [1u8, 50, 70, 99, 100] {
                let d = distance_bound(s, n, m);
                assert!(fuzzy_score(d, n, m) >= s.min(99) || d == 0, "{n} {m} {s}");
                assert!(fuzzy_score(d + 1, n, m) < s || s == 0, "{n} {m} {s}");
            }
        }
    }
}
