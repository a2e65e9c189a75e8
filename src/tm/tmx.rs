//! TMX 1.4b, read and written: `tmx` > `header` + `body` > `tu` (`tuid`, `srclang`,
//! `creationdate`, `creationid`, `changedate`, `changeid`; `prop type` and `note` children) >
//! `tuv` (`xml:lang`, or TMX 1.1's `lang`) > `seg`.
//!
//! A `seg`'s content is kept twice: its plain text (the text outside the native-code elements
//! `bpt`, `ept`, `ph`, `it` and `ut`; `hi`'s text counts) is what lookups compare and answer;
//! when it has inline elements, the content itself (re-serialized: same elements, attributes
//! and text) is kept as markup and written back on export, so inline tags survive the round
//! trip. `prop`s and `note`s of a `tu` are kept; those of a `header` or `tuv` are not.
//!
//! Hostile input: a document type declaration (so any DTD, entity declaration, external entity
//! or entity expansion) is refused, as is any entity reference other than XML's five and
//! character references; nesting is bounded (`MAX_DEPTH`), as are a segment's size
//! (`MAX_SEG_BYTES`), a unit's variants, props and notes. Only UTF-8 (and ASCII) files are read.
//! Plain functions over `BufRead`/`Write`; no storage.

use std::io::Write;

use crate::error::{Coded, ErrorCode};

/// Deepest element nesting read.
pub const MAX_DEPTH: usize = 32;
/// Largest segment (plain text or markup), in bytes.
pub const MAX_SEG_BYTES: usize = 64 * 1024;
/// Most `tuv`s of one `tu`.
pub const MAX_VARIANTS: usize = 64;
/// Most `prop`s and `note`s of one `tu`, each.
pub const MAX_PROPS: usize = 32;

/// Why a TMX file was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TmxError {
    #[error("The file is not well-formed XML (at byte {at}): {reason}")]
    Xml { at: u64, reason: String },
    #[error("The file has a document type declaration; DTDs and entities are not accepted.")]
    Doctype,
    #[error("The file is not TMX: its root element is <{0}>, not <tmx>.")]
    NotTmx(String),
    #[error("The file nests elements deeper than {MAX_DEPTH}.")]
    TooDeep,
    #[error("A <seg> of unit {unit} is larger than {MAX_SEG_BYTES} bytes.")]
    SegTooLarge { unit: usize },
    #[error("Unit {unit} has more than {limit} {what}.")]
    TooMany { unit: usize, what: &'static str, limit: usize },
    #[error("A <tuv> of unit {unit} has no valid xml:lang.")]
    NoLanguage { unit: usize },
    #[error("The file has no <tu>.")]
    Empty,
}

impl Coded for TmxError {
    fn code(&self) -> ErrorCode {
        match self {
            TmxError::Xml { .. }
            | TmxError::Doctype
            | TmxError::NotTmx(_)
            | TmxError::TooDeep
            | TmxError::SegTooLarge { .. }
            | TmxError::TooMany { .. }
            | TmxError::NoLanguage { .. }
            | TmxError::Empty => ErrorCode::BadRequest,
        }
    }
}

/// One `tuv`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variant {
    pub lang: String,
    pub text: String,
    pub markup: Option<String>,
}

/// One `tu`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unit {
    pub tuid: Option<String>,
    pub srclang: Option<String>,
    pub creation_ms: Option<i64>,
    pub creation_id: Option<String>,
    pub change_ms: Option<i64>,
    pub change_id: Option<String>,
    pub props: Vec<(String, String)>,
    pub notes: Vec<String>,
    pub variants: Vec<Variant>,
}

/// What the header says that segments use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    pub srclang: Option<String>,
}

/// A TMX date (`YYYYMMDDThhmmssZ`) as milliseconds since the epoch.
pub fn parse_date(text: &str) -> Option<i64> {
    chrono::NaiveDateTime::parse_from_str(text.trim(), "%Y%m%dT%H%M%SZ")
        .ok()
        .map(|t| t.and_utc().timestamp_millis())
}

/// Milliseconds since the epoch as a TMX date.
pub fn format_date(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y%m%dT%H%M%SZ")
        .to_string()
}

pub use crate::io::xml::escape;

mod read;
pub use read::read_tmx;

/// Writes a TMX document: the header (`srclang` `*all*` unless one is given) and one `tu` per
/// unit.
pub fn write_tmx<W: Write>(
    out: &mut W,
    srclang: Option<&str>,
    units: impl Iterator<Item = Unit>,
) -> std::io::Result<()> {
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(out, r#"<tmx version="1.4">"#)?;
    writeln!(
        out,
        r#"  <header creationtool="gridd" creationtoolversion="{}" datatype="plaintext" segtype="sentence" adminlang="en-US" srclang="{}" o-tmf="gridd"/>"#,
        env!("CARGO_PKG_VERSION"),
        escape(srclang.unwrap_or("*all*"))
    )?;
    writeln!(out, "  <body>")?;
    for unit in units {
        write_unit(out, &unit)?;
    }
    writeln!(out, "  </body>")?;
    writeln!(out, "</tmx>")
}

fn write_unit<W: Write>(out: &mut W, unit: &Unit) -> std::io::Result<()> {
    write!(out, "    <tu")?;
    let attributes = [
        ("tuid", unit.tuid.clone()),
        ("srclang", unit.srclang.clone()),
        ("creationdate", unit.creation_ms.map(format_date)),
        ("creationid", unit.creation_id.clone()),
        ("changedate", unit.change_ms.map(format_date)),
        ("changeid", unit.change_id.clone()),
    ];
    for (name, value) in attributes {
        if let Some(value) = value {
            write!(out, r#" {name}="{}""#, escape(&value))?;
        }
    }
    writeln!(out, ">")?;
    for (kind, value) in &unit.props {
        writeln!(out, r#"      <prop type="{}">{}</prop>"#, escape(kind), escape(value))?;
    }
    for note in &unit.notes {
        writeln!(out, "      <note>{}</note>", escape(note))?;
    }
    for variant in &unit.variants {
        let seg = variant.markup.clone().unwrap_or_else(|| escape(&variant.text));
        writeln!(out, r#"      <tuv xml:lang="{}"><seg>{seg}</seg></tuv>"#, escape(&variant.lang))?;
    }
    writeln!(out, "    </tu>")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRADOS: &str = include_str!("../../tests/api/tmx/trados-ui.tmx");
    const OMEGAT: &str = include_str!("../../tests/api/tmx/omegat-game.tmx");

    fn read(text: &str) -> Result<(Header, Vec<Unit>), TmxError> {
        let mut units = Vec::new();
        let header = read_tmx(text.as_bytes(), |_, unit| {
            units.push(unit);
            Ok(())
        })?;
        Ok((header, units))
    }

    #[test]
    fn units_keep_languages_texts_inline_tags_props_and_dates() {
        let (header, units) = read(TRADOS).expect("reads");
        assert_eq!(header.srclang.as_deref(), Some("en-US"));
        assert_eq!(units.len(), 3);
        let first = &units[0];
        assert_eq!(first.variants.len(), 3);
        assert_eq!(first.variants[1].lang, "fr-FR");
        assert_eq!(first.variants[1].text, "Vos modifications ont été enregistrées.");
        assert_eq!(first.variants[1].markup, None);
        assert_eq!(first.props[1], ("x-Context".into(), "settings.dialog.save".into()));
        assert_eq!(first.notes, ["Button label, keep under 20 characters."]);
        assert_eq!(first.creation_ms, parse_date("20240312T091512Z"));
        assert_eq!(first.change_id.as_deref(), Some("STUDIO\\mlefevre"));
        let tagged = &units[1].variants[0];
        assert_eq!(tagged.text, "Click Save to keep & apply your settings.");
        assert_eq!(
            tagged.markup.as_deref(),
            Some(
                r#"Click <bpt i="1" type="bold" x="1">&lt;b&gt;</bpt>Save<ept i="1">&lt;/b&gt;</ept> to keep &amp; apply your settings."#
            )
        );
    }

    #[test]
    fn tmx_1_1_lang_hi_it_and_cdata_are_read() {
        let (header, units) = read(OMEGAT).expect("reads");
        assert_eq!(header.srclang.as_deref(), Some("EN"));
        assert_eq!(units[0].variants[1].lang, "JA");
        assert_eq!(units[1].variants[1].text, "スタートを押して続行します。");
        assert!(units[1].variants[2]
            .markup
            .as_deref()
            .is_some_and(|m| m.contains("<hi type=\"emphasis\">继续</hi>")));
        assert_eq!(units[2].variants[0].text, "Score: <b>100</b>");
        assert_eq!(units[2].variants[0].markup, None);
    }

    #[test]
    fn written_files_read_back_the_same_units() {
        for sample in [TRADOS, OMEGAT] {
            let (_, units) = read(sample).expect("reads");
            let mut out = Vec::new();
            write_tmx(&mut out, Some("en-US"), units.clone().into_iter()).expect("written");
            let (_, again) = read(std::str::from_utf8(&out).expect("utf-8")).expect("reads back");
            assert_eq!(again, units);
        }
    }

    fn refused(text: &str) -> TmxError {
        match read(text) {
            Ok(read) => panic!("the file is read: {read:?}"),
            Err(err) => err,
        }
    }

    #[test]
    fn hostile_and_broken_files_are_refused() {
        let dtd = include_str!("../../tests/api/tmx/billion-laughs.tmx");
        assert_eq!(refused(dtd), TmxError::Doctype);
        let xxe = include_str!("../../tests/api/tmx/xxe.tmx");
        assert!(matches!(refused(xxe), TmxError::Xml { .. }));
        assert!(matches!(refused("<html><body/></html>"), TmxError::NotTmx(_)));
        assert_eq!(refused("<tmx><body></body></tmx>"), TmxError::Empty);
        assert!(matches!(refused("<tmx><body><tu>"), TmxError::Xml { .. } | TmxError::Empty));
        assert!(matches!(refused("<tmx><body></tu></body></tmx>"), TmxError::Xml { .. }));
        let deep = format!("<tmx>{}", "<x>".repeat(100));
        assert_eq!(refused(&deep), TmxError::TooDeep);
        let big = format!(
            r#"<tmx><body><tu><tuv xml:lang="en"><seg>{}</seg></tuv></tu></body></tmx>"#,
            "a".repeat(MAX_SEG_BYTES + 1)
        );
        assert!(matches!(refused(&big), TmxError::SegTooLarge { .. }));
        let nolang = r#"<tmx><body><tu><tuv><seg>a</seg></tuv></tu></body></tmx>"#;
        assert!(matches!(refused(nolang), TmxError::NoLanguage { .. }));
        assert!(matches!(
            refused("not xml at all <<<"),
            TmxError::Xml { .. } | TmxError::NotTmx(_) | TmxError::Empty
        ));
    }

    #[test]
    fn dates_round_trip() {
        let ms = parse_date("20240312T091512Z").expect("a date");
        assert_eq!(format_date(ms), "20240312T091512Z");
        assert_eq!(parse_date("yesterday"), None);
    }
}
