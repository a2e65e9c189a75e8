//! TBX (ISO 30042, the TBX-Basic dialect) read and written.
//!
//! Read: a `martif` (2008) or `tbx` (2019) root; each `termEntry` / `conceptEntry` is a
//! [`Concept`]; inside it each `langSet` / `langSec` (`xml:lang`) holds terms in `tig`,
//! `ntig/termGrp` or `termSec`, each `term`'s text (inline markup such as `hi` kept as its
//! text). `descrip type="definition"` at the entry's level is its definition, else the first
//! one inside a language; the first `note` anywhere in the entry is its note. Every other
//! `descrip`, `admin` and `termNote` is kept as a [`Category`] of the entry, of its language
//! section, or of the term whose `tig` / `ntig` / `termSec` holds it (part of speech, term
//! type, status, subject field, context, source...), and written back in the same place.
//! Other elements (`transac`, headers) are read past. An entry id of the form `c<n>`
//! (as gridd writes) is kept as the entry's id. Entries without any term are skipped.
//!
//! The reader is for hostile files: a DOCTYPE (so any DTD or entity declaration) is refused,
//! so no entity is ever expanded beyond XML's five and character references (no XXE, no
//! billion laughs); elements nest at most [`MAX_DEPTH`] deep; a term, definition or note is
//! cut off with an error past its length; at most `MAX_FILE_ENTRIES` entries; only UTF-8.
//!
//! Written: TBX-Basic 2008 (`martif type="TBX-Basic"`), the form most tools import, with the
//! entry id `c<id>`, the definition, note and entry categories at the entry's level, a `tig`
//! per term with its categories.

use crate::io::xml::escape_into;
use std::io::BufRead;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::{
    at_entry, Category, CategoryElement, Concept, Fields, LangCode, MAX_FILE_ENTRIES,
    MAX_TEXT_CHARS,
};
use crate::io::error::{FileError, FileResult};

/// The deepest element nesting read.
pub const MAX_DEPTH: usize = 64;

/// What is being read into text at the moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Capture {
    Term,
    Definition {
        entry_level: bool,
    },
    Note,
    /// Another data category (its type is `State::category_kind`).
    Category(CategoryElement),
}

/// The reader's state between events.
#[derive(Debug, Default)]
struct State {
    depth: usize,
    root_seen: bool,
    entries: Vec<Concept>,
    entry: Option<Concept>,
    entry_definition: bool,
    lang: Option<LangCode>,
    capture: Option<(Capture, usize)>,
    text: String,
    category_kind: String,
    /// Inside a `tig` / `ntig` / `termSec`: its depth, its term, its categories so far.
    term_section: Option<TermSection>,
}

/// A term's section being read: its categories are the term's once the section ends.
#[derive(Debug)]
struct TermSection {
    depth: usize,
    term: Option<String>,
    categories: Vec<Category>,
}

fn bad(problem: impl std::fmt::Display) -> FileError {
    FileError::Content(format!("The file is not a readable TBX file: {problem}."))
}

/// Reads every entry of a TBX file.
pub fn read(input: impl BufRead) -> FileResult<Vec<Concept>> {
    let mut reader = Reader::from_reader(input);
    reader.config_mut().expand_empty_elements = true;
    reader.config_mut().check_end_names = true;
    let mut state = State::default();
    let mut buf = Vec::new();
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| bad(format!("at byte {}: {e}", reader.buffer_position())))?;
        match event {
            Event::Start(start) => state.start(&start)?,
            Event::End(end) => state.end(end.local_name().as_ref())?,
            Event::Text(text) => {
                if state.capture.is_some() {
                    let text = text.unescape().map_err(bad)?;
                    state.push_text(&text)?;
                }
            }
            Event::CData(data) => {
                if state.capture.is_some() {
                    let text = std::str::from_utf8(&data).map_err(bad)?.to_owned();
                    state.push_text(&text)?;
                }
            }
            Event::DocType(_) => {
                return Err(bad("a DOCTYPE (DTD or entity declarations) is not accepted"))
            }
            Event::Decl(decl) => check_encoding(&decl)?,
            Event::Eof => break,
            Event::Empty(_) | Event::Comment(_) | Event::PI(_) => {}
        }
        buf.clear();
    }
    if !state.root_seen {
        return Err(bad("it has no martif or tbx element"));
    }
    if state.depth != 0 {
        return Err(bad("it ends inside an element"));
    }
    Ok(state.entries)
}

fn check_encoding(decl: &quick_xml::events::BytesDecl<'_>) -> FileResult<()> {
    match decl.encoding() {
        None => Ok(()),
        Some(Ok(name)) if name.eq_ignore_ascii_case(b"utf-8") => Ok(()),
        Some(Ok(name)) => {
            Err(bad(format!("its encoding {} is not UTF-8", String::from_utf8_lossy(&name))))
        }
        Some(Err(e)) => Err(bad(e)),
    }
}

/// The value of the attribute named `name` (its local name, or `xml:lang` whole).
fn attribute(start: &BytesStart<'_>, name: &[u8]) -> FileResult<Option<String>> {
    for attr in start.attributes() {
        let attr = attr.map_err(bad)?;
        if attr.key.as_ref() == name || attr.key.local_name().as_ref() == name {
            let value = std::str::from_utf8(&attr.value).map_err(bad)?;
            return Ok(Some(quick_xml::escape::unescape(value).map_err(bad)?.into_owned()));
        }
    }
    Ok(None)
}

impl State {
    fn entry_number(&self) -> usize {
        self.entries.len() + 1
    }

    fn start(&mut self, start: &BytesStart<'_>) -> FileResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(bad(format!("elements nest more than {MAX_DEPTH} deep")));
        }
        let name = start.local_name();
        let name = name.as_ref();
        if self.depth == 1 {
            if name != b"martif" && name != b"tbx" {
                return Err(bad("its root element is not martif or tbx"));
            }
            self.root_seen = true;
            return Ok(());
        }
        if self.capture.is_some() {
            return Ok(());
        }
        match name {
            b"termEntry" | b"conceptEntry" => self.open_entry(start),
            b"langSet" | b"langSec" if self.entry.is_some() => {
                let code = attribute(start, b"xml:lang")?.or(attribute(start, b"lang")?);
                let code = code.ok_or_else(|| {
                    at_entry("entry", self.entry_number(), "a language section has no xml:lang")
                })?;
                let lang = LangCode::parse(&code)
                    .map_err(|e| at_entry("entry", self.entry_number(), e))?;
                self.lang = Some(lang);
                Ok(())
            }
            b"tig" | b"ntig" | b"termSec" if self.lang.is_some() => {
                self.term_section =
                    Some(TermSection { depth: self.depth, term: None, categories: Vec::new() });
                Ok(())
            }
            b"term" if self.lang.is_some() => self.begin(Capture::Term),
            b"note" if self.entry.is_some() => self.begin(Capture::Note),
            _ if self.entry.is_some() => self.begin_category(start, name),
            _ => Ok(()),
        }
    }

    fn open_entry(&mut self, start: &BytesStart<'_>) -> FileResult<()> {
        if self.entry.is_some() {
            return Err(at_entry("entry", self.entry_number(), "an entry inside an entry"));
        }
        if self.entries.len() >= MAX_FILE_ENTRIES {
            return Err(FileError::TooLarge(format!(
                "The file has more than {MAX_FILE_ENTRIES} entries."
            )));
        }
        let id = attribute(start, b"id")?;
        let id = id.as_deref().and_then(|i| i.strip_prefix('c')).and_then(|n| n.parse().ok());
        self.entry = Some(Concept { id, ..Concept::default() });
        self.entry_definition = false;
        Ok(())
    }

    /// A `descrip` (its definition or another category), `admin` or `termNote`.
    fn begin_category(&mut self, start: &BytesStart<'_>, name: &[u8]) -> FileResult<()> {
        let Some(element) = CategoryElement::from_tag(name) else { return Ok(()) };
        let kind = attribute(start, b"type")?.unwrap_or_default();
        if element == CategoryElement::Descrip && kind == "definition" {
            return self.begin(Capture::Definition { entry_level: self.lang.is_none() });
        }
        self.category_kind = kind;
        self.begin(Capture::Category(element))
    }

    fn begin(&mut self, capture: Capture) -> FileResult<()> {
        self.capture = Some((capture, self.depth));
        self.text.clear();
        Ok(())
    }

    fn push_text(&mut self, text: &str) -> FileResult<()> {
        if self.text.len() + text.len() > MAX_TEXT_CHARS * 4 {
            return Err(at_entry("entry", self.entry_number(), "a text is too long"));
        }
        self.text.push_str(text);
        Ok(())
    }

    fn end(&mut self, name: &[u8]) -> FileResult<()> {
        if let Some((capture, depth)) = self.capture {
            if depth == self.depth {
                self.capture = None;
                self.finish(capture)?;
            }
        } else if self.term_section.as_ref().is_some_and(|t| t.depth == self.depth) {
            self.close_term_section();
        } else if matches!(name, b"langSet" | b"langSec") {
            self.lang = None;
        } else if matches!(name, b"termEntry" | b"conceptEntry") {
            self.close_entry()?;
        }
        self.depth = self.depth.saturating_sub(1);
        Ok(())
    }

    fn finish(&mut self, capture: Capture) -> FileResult<()> {
        let text = std::mem::take(&mut self.text);
        let text = text.trim();
        let Some(entry) = self.entry.as_mut() else { return Ok(()) };
        match capture {
            Capture::Term => {
                if let Some(lang) = self.lang.clone() {
                    entry.add_term(lang, text);
                }
                if let Some(section) = self.term_section.as_mut().filter(|_| !text.is_empty()) {
                    section.term = Some(text.to_owned());
                }
            }
            Capture::Category(element) if !text.is_empty() => {
                let category = Category {
                    element,
                    kind: std::mem::take(&mut self.category_kind),
                    value: text.to_owned(),
                    lang: self.lang.clone(),
                    term: None,
                };
                match self.term_section.as_mut() {
                    Some(section) => section.categories.push(category),
                    None => entry.categories.push(category),
                }
            }
            Capture::Definition { entry_level } if !text.is_empty() => {
                if entry_level || (!self.entry_definition && entry.definition.is_none()) {
                    entry.definition = Some(text.to_owned());
                    self.entry_definition |= entry_level;
                }
            }
            Capture::Note if !text.is_empty() && entry.note.is_none() => {
                entry.note = Some(text.to_owned());
            }
            Capture::Definition { .. } | Capture::Note | Capture::Category(_) => {}
        }
        Ok(())
    }

    /// A term's section ended: its categories become the term's (or the language's when the
    /// section had no term).
    fn close_term_section(&mut self) {
        let Some(section) = self.term_section.take() else { return };
        let Some(entry) = self.entry.as_mut() else { return };
        for mut category in section.categories {
            category.term.clone_from(&section.term);
            entry.categories.push(category);
        }
    }

    fn close_entry(&mut self) -> FileResult<()> {
        let number = self.entry_number();
        let Some(entry) = self.entry.take() else { return Ok(()) };
        self.lang = None;
        self.term_section = None;
        if !entry.has_terms() {
            return Ok(());
        }
        entry.check().map_err(|e| at_entry("entry", number, e))?;
        self.entries.push(entry);
        Ok(())
    }
}

/// One entry as a `termEntry`, with the languages `langs` (all when `None`).
fn write_entry(entry: &Concept, fields: Fields, langs: Option<&[LangCode]>, out: &mut String) {
    let wanted = |lang: &LangCode| langs.is_none_or(|l| l.contains(lang));
    if !entry.terms.iter().any(|(lang, terms)| wanted(lang) && !terms.is_empty()) {
        return;
    }
    out.push_str("      <termEntry");
    if let (true, Some(id)) = (fields.id, entry.id) {
        out.push_str(&format!(" id=\"c{id}\""));
    }
    out.push_str(">\n");
    let texts = [
        (fields.definition, &entry.definition, "<descrip type=\"definition\">", "</descrip>"),
        (fields.note, &entry.note, "<note>", "</note>"),
    ];
    for (wanted, text, open, close) in texts {
        if let (true, Some(text)) = (wanted, text) {
            out.push_str("        ");
            out.push_str(open);
            escape_into(text, out);
            out.push_str(close);
            out.push('\n');
        }
    }
    let all = if fields.categories { entry.categories.as_slice() } else { &[] };
    for category in placed(all, None, None) {
        write_category(category, "        ", out);
    }
    for (lang, terms) in entry.terms.iter().filter(|(l, t)| wanted(l) && !t.is_empty()) {
        out.push_str(&format!("        <langSet xml:lang=\"{lang}\">\n"));
        for category in placed(all, Some(lang), None) {
            write_category(category, "          ", out);
        }
        for term in terms {
            out.push_str("          <tig><term>");
            escape_into(term, out);
            out.push_str("</term>");
            for category in placed(all, Some(lang), Some(term)) {
                write_category(category, "", out);
            }
            out.push_str("</tig>\n");
        }
        out.push_str("        </langSet>\n");
    }
    out.push_str("      </termEntry>\n");
}

/// The categories of `all` in one place (the entry, a language, a term).
fn placed<'a>(
    all: &'a [Category],
    lang: Option<&'a LangCode>,
    term: Option<&'a str>,
) -> impl Iterator<Item = &'a Category> + 'a {
    all.iter().filter(move |c| c.lang.as_ref() == lang && c.term.as_deref() == term)
}

/// `<descrip type="...">value</descrip>` (or `admin`, `termNote`), on its own line when
/// `indent` is not empty.
fn write_category(category: &Category, indent: &str, out: &mut String) {
    let tag = category.element.tag();
    out.push_str(indent);
    out.push_str(&format!("<{tag} type=\""));
    escape_into(&category.kind, out);
    out.push_str("\">");
    escape_into(&category.value, out);
    out.push_str(&format!("</{tag}>"));
    if !indent.is_empty() {
        out.push('\n');
    }
}

/// A glossary as a TBX-Basic file: `title` in its header, the entries with their terms in
/// `langs` (all when `None`; an entry without any is left out) and the `fields` asked for.
pub fn write(
    title: &str,
    source_lang: Option<&LangCode>,
    entries: &[Concept],
    fields: Fields,
    langs: Option<&[LangCode]>,
) -> Vec<u8> {
    let mut out = String::with_capacity(256 + entries.len() * 200);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<martif type=\"TBX-Basic\"");
    if let Some(lang) = source_lang {
        out.push_str(&format!(" xml:lang=\"{lang}\""));
    }
    out.push_str(">\n  <martifHeader>\n    <fileDesc>\n      <titleStmt><title>");
    escape_into(title, &mut out);
    out.push_str("</title></titleStmt>\n      <sourceDesc><p>Exported by gridd</p></sourceDesc>\n");
    out.push_str("    </fileDesc>\n    <encodingDesc><p type=\"XCSURI\">TBXBasicXCSV02.xcs</p>");
    out.push_str("</encodingDesc>\n  </martifHeader>\n  <text>\n    <body>\n");
    for entry in entries {
        write_entry(entry, fields, langs, &mut out);
    }
    out.push_str("    </body>\n  </text>\n</martif>\n");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASIC: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<martif type="TBX-Basic" xml:lang="en-US">
 <martifHeader><fileDesc><sourceDesc><p>from a tool</p></sourceDesc></fileDesc></martifHeader>
 <text><body>
  <termEntry id="c7">
   <descrip type="subjectField">games</descrip>
   <langSet xml:lang="en-US">
    <descrip type="definition">A saved state of play.</descrip>
    <tig><term>save <hi>game</hi></term><termNote type="partOfSpeech">noun</termNote></tig>
    <tig><term>savegame</term></tig>
   </langSet>
   <langSet xml:lang="ja"><ntig><termGrp><term>セーブデータ</term></termGrp></ntig></langSet>
   <note>Keep &amp; reuse</note>
  </termEntry>
  <termEntry id="foreign-1"><langSet xml:lang="de"><tig><term/></tig></langSet></termEntry>
 </body></text>
</martif>"#;

    #[test]
    fn tbx_basic_2008_is_read() {
        let entries = read(BASIC.as_bytes()).expect("read");
        assert_eq!(entries.len(), 1);
        let e = &entries[0];
        assert_eq!(e.id, Some(7));
        let en = LangCode::parse("en-US").expect("code");
        assert_eq!(e.terms[&en], vec!["save game".to_owned(), "savegame".to_owned()]);
        assert_eq!(e.definition.as_deref(), Some("A saved state of play."));
        assert_eq!(e.note.as_deref(), Some("Keep & reuse"));
        let kept: Vec<_> = e
            .categories
            .iter()
            .map(|c| (c.element, c.kind.as_str(), c.value.as_str(), c.term.as_deref()))
            .collect();
        assert_eq!(
            kept,
            [
                (CategoryElement::Descrip, "subjectField", "games", None),
                (CategoryElement::TermNote, "partOfSpeech", "noun", Some("save game")),
            ]
        );
        assert_eq!(e.categories[1].lang, Some(en));
    }

    #[test]
    fn tbx_2019_concept_entries_are_read() {
        let doc = r#"<tbx type="TBX-Basic" style="dca" xml:lang="en" xmlns="urn:iso:std:iso:30042:ed-2">
<text><body><conceptEntry id="x1"><descrip type="definition">Health points.</descrip>
<langSec xml:lang="en"><termSec><term>HP</term></termSec></langSec>
<langSec xml:lang="ru"><termSec><term>ОЗ</term></termSec></langSec></conceptEntry></body></text></tbx>"#;
        let entries = read(doc.as_bytes()).expect("read");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].id, None);
        assert_eq!(entries[0].terms.len(), 2);
        assert_eq!(entries[0].definition.as_deref(), Some("Health points."));
    }

    #[test]
    fn hostile_documents_are_refused() {
        let laughs = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><martif>&lol2;</martif>"#;
        assert!(read(laughs.as_bytes()).is_err());
        let xxe = r#"<!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]><martif><text><body><termEntry><langSet xml:lang="en"><tig><term>&x;</term></tig></langSet></termEntry></body></text></martif>"#;
        assert!(read(xxe.as_bytes()).is_err());
        let unknown = r#"<martif><text><body><termEntry><langSet xml:lang="en"><tig><term>&x;</term></tig></langSet></termEntry></body></text></martif>"#;
        assert!(read(unknown.as_bytes()).is_err());
        let deep = format!("<martif>{}{}</martif>", "<a>".repeat(100), "</a>".repeat(100));
        assert!(read(deep.as_bytes()).is_err());
        assert!(read(&b"<html><body/></html>"[..]).is_err());
        assert!(read(&b"<martif><text>"[..]).is_err());
        assert!(read(&b""[..]).is_err());
        let latin1 = r#"<?xml version="1.0" encoding="ISO-8859-1"?><martif/>"#;
        assert!(read(latin1.as_bytes()).is_err());
        let long = format!(
            "<martif><text><body><termEntry><langSet xml:lang=\"en\"><tig><term>{}</term></tig></langSet></termEntry></body></text></martif>",
            "x".repeat(MAX_TEXT_CHARS * 5)
        );
        assert!(read(long.as_bytes()).is_err());
    }

    #[test]
    fn what_is_written_reads_back_the_same() {
        let entries = read(BASIC.as_bytes()).expect("read");
        let written = write("G & co", None, &entries, Fields::default(), None);
        let text = String::from_utf8(written.clone()).expect("utf-8");
        assert!(text.contains("<title>G &amp; co</title>") && text.contains("id=\"c7\""));
        assert_eq!(read(&written[..]).expect("read back"), entries);
        let ja = [LangCode::parse("ja").expect("ja")];
        let fields = Fields { id: false, definition: false, note: true, categories: false };
        let only_ja = read(&write("g", None, &entries, fields, Some(&ja))[..]).expect("read");
        assert_eq!(only_ja[0].terms.len(), 1);
        assert_eq!((only_ja[0].id, only_ja[0].definition.as_ref()), (None, None));
        assert!(only_ja[0].note.is_some());
    }
}
