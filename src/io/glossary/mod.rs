//! Glossary files (issue 22): the concept entries a glossary file holds, as TBX (`tbx`, ISO
//! 30042 TBX-Basic, read in both its 2008 `martif` and 2019 `tbx` dialects, written as
//! `martif`) and as a table (`table`: CSV or XLSX, a column per language code plus
//! `definition`, `note` and `id`).
//!
//! A [`Concept`] is one entry: its terms by language (synonyms in file order), one definition
//! and one note. The checks every source shares are here: language codes ([`LangCode`], BCP
//! 47 shaped, canonical case), the lengths of a term, a definition and a note, the counts of
//! languages and synonyms ([`Concept::check`]). Knows nothing of the catalogue or of HTTP.

pub mod table;
pub mod tbx;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::error::{FileError, FileResult};

/// The longest term, in characters.
pub const MAX_TERM_CHARS: usize = 500;
/// The longest definition or note, in characters.
pub const MAX_TEXT_CHARS: usize = 4000;
/// The most languages one entry has.
pub const MAX_ENTRY_LANGS: usize = 100;
/// The most terms (synonyms) one entry has in one language.
pub const MAX_SYNONYMS: usize = 20;
/// The most entries one file may hold (a glossary's own bound).
pub const MAX_FILE_ENTRIES: usize = 200_000;
/// The longest language code.
const MAX_LANG_LEN: usize = 35;

/// A language code as glossaries keep it: BCP 47 shaped (`en`, `en-US`, `zh-Hans-CN`; `_`
/// read as `-`, and the hosted service's `enUS` as `en-US`), in canonical case (language lower, script title, region upper). The language
/// subtag is two or three letters (ISO 639), so a table's other headers are not taken for one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LangCode(String);

impl LangCode {
    /// Parses a code; the error says why in a sentence.
    pub fn parse(text: &str) -> Result<LangCode, String> {
        let shown = super::csv_import::clip(text, 40);
        let invalid = || format!("\"{shown}\" is not a language code (as en, en-US, zh-Hans).");
        let text = text.trim();
        if text.is_empty() || text.len() > MAX_LANG_LEN {
            return Err(invalid());
        }
        // The hosted service's own codes (its columns' `languageCode`: `enUS`, `kokIN`) are a
        // language and a region run together: read as `en-US`.
        let bytes = text.as_bytes();
        let run_together = (4..=5).contains(&bytes.len())
            && bytes[..bytes.len() - 2].iter().all(u8::is_ascii_lowercase)
            && bytes[bytes.len() - 2..].iter().all(u8::is_ascii_uppercase);
        let split;
        let text = if run_together {
            split = format!("{}-{}", &text[..text.len() - 2], &text[text.len() - 2..]);
            split.as_str()
        } else {
            text
        };
        let mut parts = Vec::new();
        for (i, part) in text.split(['-', '_']).enumerate() {
            let ok_len =
                if i == 0 { (2..=3).contains(&part.len()) } else { (1..=8).contains(&part.len()) };
            let ok_chars = if i == 0 {
                part.bytes().all(|b| b.is_ascii_alphabetic())
            } else {
                part.bytes().all(|b| b.is_ascii_alphanumeric())
            };
            if !ok_len || !ok_chars {
                return Err(invalid());
            }
            parts.push(match (i, part.len()) {
                (0, _) => part.to_ascii_lowercase(),
                (_, 2) => part.to_ascii_uppercase(),
                (_, 4) => {
                    let lower = part.to_ascii_lowercase();
                    lower[..1].to_ascii_uppercase() + &lower[1..]
                }
                _ => part.to_ascii_lowercase(),
            });
        }
        Ok(LangCode(parts.join("-")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The language subtag (`en` of `en-US`).
    pub fn primary(&self) -> &str {
        self.0.split('-').next().unwrap_or_default()
    }

    /// Whether a text in `self` may use terms of `other`: the same code, or one is the other's
    /// bare language (`en` and `en-US`; not `en-US` and `en-GB`).
    pub fn covers(&self, other: &LangCode) -> bool {
        self == other
            || (self.primary() == other.primary()
                && (!self.0.contains('-') || !other.0.contains('-')))
    }
}

impl std::fmt::Display for LangCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One concept entry of a glossary file or request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Concept {
    /// The entry's id in gridd, when the file carries one gridd wrote (`c<id>` in TBX, the
    /// `id` column of a table); foreign ids are not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// Terms by language, synonyms in order.
    pub terms: IndexMap<LangCode, Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The file's other data categories, kept for the round trip.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<Category>,
}

/// The most data categories one entry keeps.
pub const MAX_CATEGORIES: usize = 200;
/// The longest category type, in characters.
const MAX_CATEGORY_TYPE_CHARS: usize = 100;

/// The TBX element a data category was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum CategoryElement {
    /// `descrip` (subject field, context, ... but the definition, which is its own field).
    Descrip,
    /// `admin` (source, customer or project subset, ...).
    Admin,
    /// `termNote` (part of speech, term type, administrative status, grammatical gender, ...).
    TermNote,
}

impl CategoryElement {
    /// The element's TBX name.
    pub fn tag(self) -> &'static str {
        match self {
            CategoryElement::Descrip => "descrip",
            CategoryElement::Admin => "admin",
            CategoryElement::TermNote => "termNote",
        }
    }

    /// The element named `name` in a TBX file, if it is one of the three.
    pub fn from_tag(name: &[u8]) -> Option<CategoryElement> {
        match name {
            b"descrip" => Some(CategoryElement::Descrip),
            b"admin" => Some(CategoryElement::Admin),
            b"termNote" => Some(CategoryElement::TermNote),
            _ => None,
        }
    }
}

/// A data category of an entry besides its definition and note (TBX-Basic's `subjectField`,
/// `partOfSpeech`, `termType`, `administrativeStatus`, `context`, `source`, ...): of the entry
/// when `lang` is absent, of a language section when only `lang` is there, of one term when
/// `term` is there too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Category {
    pub element: CategoryElement,
    /// The TBX `type` attribute (`partOfSpeech`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub lang: Option<LangCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub term: Option<String>,
}

impl Category {
    /// Whether it is of the term `term` in `lang`.
    pub fn of_term(&self, lang: &LangCode, term: &str) -> bool {
        self.lang.as_ref() == Some(lang) && self.term.as_deref() == Some(term)
    }

    /// Where it sits and what it is: an update replaces a category with the same place.
    fn place(&self) -> (CategoryElement, &str, Option<&LangCode>, Option<&str>) {
        (self.element, &self.kind, self.lang.as_ref(), self.term.as_deref())
    }
}

impl Concept {
    /// Adds a term in `lang` (trimmed; an empty one or one already there is skipped).
    pub fn add_term(&mut self, lang: LangCode, term: &str) {
        let term = term.trim();
        if term.is_empty() {
            return;
        }
        let terms = self.terms.entry(lang).or_default();
        if !terms.iter().any(|t| t == term) {
            terms.push(term.to_owned());
        }
    }

    /// Whether it has at least one term.
    pub fn has_terms(&self) -> bool {
        self.terms.values().any(|t| !t.is_empty())
    }

    /// Checks the bounds every entry keeps; the error names what is over.
    pub fn check(&self) -> Result<(), String> {
        if !self.has_terms() {
            return Err("an entry needs at least one term.".into());
        }
        if self.terms.len() > MAX_ENTRY_LANGS {
            return Err(format!("an entry has at most {MAX_ENTRY_LANGS} languages."));
        }
        for (lang, terms) in &self.terms {
            if terms.len() > MAX_SYNONYMS {
                return Err(format!("an entry has at most {MAX_SYNONYMS} terms in {lang}."));
            }
            for term in terms {
                if term.trim().is_empty() {
                    return Err(format!("a term in {lang} is empty."));
                }
                if term.chars().count() > MAX_TERM_CHARS {
                    return Err(format!(
                        "a term in {lang} is longer than {MAX_TERM_CHARS} characters."
                    ));
                }
            }
        }
        for (name, text) in [("definition", &self.definition), ("note", &self.note)] {
            if text.as_ref().is_some_and(|t| t.chars().count() > MAX_TEXT_CHARS) {
                return Err(format!("the {name} is longer than {MAX_TEXT_CHARS} characters."));
            }
        }
        self.check_categories()
    }

    fn check_categories(&self) -> Result<(), String> {
        if self.categories.len() > MAX_CATEGORIES {
            return Err(format!("an entry has at most {MAX_CATEGORIES} data categories."));
        }
        for c in &self.categories {
            let kind = c.kind.trim();
            if kind.is_empty() || kind.chars().count() > MAX_CATEGORY_TYPE_CHARS {
                return Err(format!(
                    "a data category's type has 1 to {MAX_CATEGORY_TYPE_CHARS} characters."
                ));
            }
            if c.value.trim().is_empty() || c.value.chars().count() > MAX_TEXT_CHARS {
                return Err(format!(
                    "the {kind} category's value has 1 to {MAX_TEXT_CHARS} characters."
                ));
            }
            match (&c.lang, &c.term) {
                (None, Some(_)) => {
                    return Err(format!("the {kind} category names a term but no lang."))
                }
                (Some(lang), None) if !self.terms.contains_key(lang) => {
                    return Err(format!("the {kind} category's lang {lang} has no terms."))
                }
                (Some(lang), Some(term))
                    if !self.terms.get(lang).is_some_and(|t| t.contains(term)) =>
                {
                    return Err(format!("the {kind} category's term is not a term in {lang}."))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `self` updated by `from`: its languages replace (with their categories), its
    /// definition and note when given, its categories replace those in the same place.
    pub fn update(&mut self, from: Concept) {
        for (lang, terms) in from.terms {
            self.categories.retain(|c| c.lang.as_ref() != Some(&lang));
            self.terms.insert(lang, terms);
        }
        if from.definition.is_some() {
            self.definition = from.definition;
        }
        if from.note.is_some() {
            self.note = from.note;
        }
        for category in from.categories {
            self.categories.retain(|c| c.place() != category.place());
            self.categories.push(category);
        }
    }
}

/// What an export writes of each entry besides its terms (`fields`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    pub id: bool,
    pub definition: bool,
    pub note: bool,
    /// The other data categories (TBX only).
    pub categories: bool,
}

impl Default for Fields {
    fn default() -> Fields {
        Fields { id: true, definition: true, note: true, categories: true }
    }
}

impl Fields {
    /// The `fields` parameter's values (each `id`, `definition`, `note` or `categories`; `term` and `terms`
    /// are accepted and always written); none given is all of them.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> FileResult<Fields> {
        let mut fields = Fields { id: false, definition: false, note: false, categories: false };
        let mut any = false;
        for name in names.into_iter().flat_map(|n| n.split(',')).map(str::trim) {
            any = true;
            match name.to_ascii_lowercase().as_str() {
                "id" => fields.id = true,
                "definition" => fields.definition = true,
                "note" => fields.note = true,
                "categories" => fields.categories = true,
                "term" | "terms" => {}
                _ => {
                    let shown = super::csv_import::clip(name, 40);
                    return Err(FileError::Request(format!(
                        "fields: \"{shown}\" is not a field (id, definition, note, categories, term)."
                    )));
                }
            }
        }
        Ok(if any { fields } else { Fields::default() })
    }
}

/// A refused value of a file at an entry (1-based) or row.
pub(crate) fn at_entry(what: &str, n: usize, problem: impl std::fmt::Display) -> FileError {
    FileError::Content(format!("{what} {n}: {problem}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_codes_are_canonical_and_checked() {
        let code = |t| LangCode::parse(t).map(|c| c.0);
        assert_eq!(code("EN_us").as_deref(), Ok("en-US"));
        assert_eq!(code("zh-hans-cn").as_deref(), Ok("zh-Hans-CN"));
        assert_eq!(code(" ja ").as_deref(), Ok("ja"));
        assert_eq!(code("enUS").as_deref(), Ok("en-US"));
        assert_eq!(code("kokIN").as_deref(), Ok("kok-IN"));
        for bad in ["", "e", "english language", "en--US", "en-US-", "日本", "colour", "term"] {
            assert!(code(bad).is_err(), "{bad}");
        }
        for bad in ["ENUS", "enUs", "koknIN", "noteID"] {
            assert!(code(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bare_language_covers_its_regions() {
        let l = |t| LangCode::parse(t).expect("code");
        assert!(l("en").covers(&l("en-US")) && l("en-US").covers(&l("en")));
        assert!(!l("en-US").covers(&l("en-GB")) && !l("en").covers(&l("fr")));
    }

    #[test]
    fn entries_are_bounded() {
        let mut c = Concept::default();
        assert!(c.check().is_err());
        c.add_term(LangCode::parse("en").expect("en"), "save game");
        c.add_term(LangCode::parse("en").expect("en"), "save game");
        assert_eq!(c.terms.values().next().map(Vec::len), Some(1));
        assert!(c.check().is_ok());
        c.definition = Some("x".repeat(MAX_TEXT_CHARS + 1));
        assert!(c.check().is_err());
    }

    #[test]
    fn an_update_keeps_categories_of_what_it_does_not_replace() {
        let en = LangCode::parse("en").expect("en");
        let fr = LangCode::parse("fr").expect("fr");
        let category =
            |kind: &str, value: &str, lang: Option<&LangCode>, term: Option<&str>| Category {
                element: CategoryElement::TermNote,
                kind: kind.into(),
                value: value.into(),
                lang: lang.cloned(),
                term: term.map(str::to_owned),
            };
        let mut entry = Concept::default();
        entry.add_term(en.clone(), "quest");
        entry.add_term(fr.clone(), "quête");
        entry.categories = vec![
            category("partOfSpeech", "noun", Some(&en), Some("quest")),
            category("grammaticalGender", "feminine", Some(&fr), Some("quête")),
            category("subjectField", "games", None, None),
        ];
        assert!(entry.check().is_ok());
        let mut from = Concept::default();
        from.add_term(fr.clone(), "mission");
        from.categories = vec![category("subjectField", "RPG", None, None)];
        entry.update(from);
        assert!(entry.check().is_ok(), "{:?}", entry.check());
        let kept: Vec<_> = entry.categories.iter().map(|c| c.value.as_str()).collect();
        assert_eq!(kept, ["noun", "RPG"], "fr's were replaced with its terms; one subject field");
        entry.categories.push(category("partOfSpeech", "noun", Some(&fr), Some("quête")));
        assert!(entry.check().is_err(), "a category of a term the entry lacks");
    }

    #[test]
    fn fields_parse_lists_and_refuse_unknown_names() {
        assert_eq!(Fields::parse([]).expect("none"), Fields::default());
        let f = Fields::parse(["definition,term"]).expect("list");
        assert!(f.definition && !f.note && !f.id);
        assert!(Fields::parse(["colour"]).is_err());
    }
}
