//! gettext PO files of a view's localization columns (`type=po` of a view export), apart from
//! HTTP.
//!
//! A PO file holds one language pair, and a download is one file: so the export is a zip
//! archive of one `<lang>.po` per target language column among the exported columns, each
//! pairing the target with its source: the source column of the target's dependency, or,
//! for a target without one, the view's only source language column (`po_files`, which
//! refuses a view where that leaves a target without a source). `<lang>` names the target as a
//! CDN version's files name a language column (`cdn_publish::language_files`: its language
//! code, `<code>-<columnId>` for a second column with the same code).
//!
//! A file opens with its header entry (UTF-8; `Language` and `X-Source-Language` as `ll_CC`
//! when the column's code reads as a language code, `frFR` as `fr_FR`, else as it is), then
//! holds one entry per record whose source cell has text, in the export's order:
//!
//! ```text
//! #, fuzzy                  when the target cell is outOfDate and has text
//! msgctxt "<key>"           the record id; in a pathTagRecordId grid `<path>/<id>`, the id
//!                           with `%` and `/` escaped (`cdn_publish::record_key`), so entries
//!                           are distinct
//! msgid "<source text>"
//! msgstr "<target text>"    empty while untranslated
//! ```
//!
//! Strings are escaped as gettext reads them (`\\`, `\"`, `\n`, `\r`, `\t`); a text holding
//! line breaks is written as an empty string followed by one string per line. The archive is
//! written as it goes (`ZipWriter::new_stream`, entries deflated at level 2), reading
//! `ROWS_PER_READ` rows at a time once per file: memory stays bounded whatever the grid's size.
//!
//! Knows nothing of HTTP or the catalogue.

use std::io::Write;

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::cdn_publish::{language_files, record_key};
use super::error::{FileError, FileResult};
use super::glossary::LangCode;
use crate::grid::actor::reads::ExportSource;
use crate::grid::codec::export_text;
use crate::grid::schema::{ColumnDef, Schema, ViewDef};
use crate::grid::store::RecordIdentity;
use crate::grid::value::DependencyStatus;

/// Rows read from the branch copy at a time.
const ROWS_PER_READ: usize = 1000;

/// One PO file of the archive: a target language column and its source.
#[derive(Debug, Clone)]
pub struct PoFile {
    /// The file's name without `.po`.
    pub name: String,
    pub source: ColumnDef,
    pub target: ColumnDef,
}

/// The files of a PO export: one per target language column among `exported` (the export's
/// columns) of `view`, with its source. Refused (`FileError::Request`, a 400) when there is no
/// target among them, or a target's source is not found in the view.
pub fn po_files(
    schema: &Schema,
    view: &ViewDef,
    exported: &[ColumnDef],
) -> FileResult<Vec<PoFile>> {
    let shown: Vec<&ColumnDef> = schema.view_columns(view).into_iter().map(|(c, _)| c).collect();
    let sources: Vec<&ColumnDef> = shown.iter().copied().filter(|c| c.is_source()).collect();
    let names = language_files(schema);
    let mut files = Vec::new();
    for target in exported.iter().filter(|c| c.is_target()) {
        let dependency = schema.dependencies.iter().find(|d| d.target_column_id == target.id);
        let source = match (dependency, sources.as_slice()) {
            (Some(d), _) => {
                shown.iter().copied().find(|c| c.id == d.source_column_id).ok_or_else(|| {
                    FileError::Request(format!(
                        "type=po: \"{}\", the source of the target language column \"{}\", is \
                         not in the view.",
                        d.source_column_id, target.id
                    ))
                })?
            }
            (None, [only]) => *only,
            (None, _) => {
                return Err(FileError::Request(format!(
                    "type=po: the target language column \"{}\" has no dependency and the view \
                     has {} source language columns; add a dependency to name its source.",
                    target.id,
                    sources.len()
                )))
            }
        };
        let name = (names.iter().find(|(c, _)| c.id == target.id))
            .map_or_else(|| target.id.clone(), |(_, name)| name.clone());
        files.push(PoFile { name, source: source.clone(), target: target.clone() });
    }
    if files.is_empty() {
        return Err(FileError::Request(
            "type=po writes one file per target language column, and the exported columns (the \
             view's, or columnIds) hold none."
                .to_owned(),
        ));
    }
    Ok(files)
}

/// The zip archive of `files` (see the module doc) written into `sink` as it goes.
pub fn write_view_po(source: &ExportSource, files: &[PoFile], sink: impl Write) -> FileResult<()> {
    let failed = |e: zip::result::ZipError| FileError::Write(format!("PO archive: {e}"));
    let mut zip = ZipWriter::new_stream(sink);
    // Deflate at level 2: at the default (6) compressing was four fifths of the export's CPU.
    // 300k records: 2.2 s and 62 MB, against 6.9 s and 46 MB (level 1: 1.6 s, 86 MB).
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .compression_level(Some(2));
    let keyed_by_path = source.view.state.store.identity() == RecordIdentity::PathAndId;
    for file in files {
        zip.start_file(format!("{}.po", file.name), options).map_err(failed)?;
        write_po(source, file, keyed_by_path, &mut zip)
            .map_err(|e| FileError::Write(format!("{}.po: {e}", file.name)))?;
    }
    let mut sink = zip.finish().map_err(failed)?.into_inner();
    sink.flush().map_err(|e| FileError::Write(format!("PO archive: {e}")))
}

/// One PO file: its header entry, then an entry per record whose source cell has text.
fn write_po(
    source: &ExportSource,
    file: &PoFile,
    keyed_by_path: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let mut text = String::with_capacity(1024);
    header(&mut text, file);
    out.write_all(text.as_bytes())?;
    let state = &source.view.state;
    let columns = [&file.source, &file.target];
    for rows in source.rows.chunks(ROWS_PER_READ) {
        for record in state.read_rows(&columns, rows.iter().copied()) {
            let [msgid, msgstr] = &record.cells[..] else { continue };
            let (original, translated) = (export_text(&msgid.value), export_text(&msgstr.value));
            if original.is_empty() {
                continue;
            }
            text.clear();
            text.push('\n');
            let outdated = msgstr.statuses.is_some_and(|(d, _)| d == DependencyStatus::OutOfDate);
            if outdated && !translated.is_empty() {
                text.push_str("#, fuzzy\n");
            }
            entry_line(&mut text, "msgctxt", &record_key(&record.id, &record.path, keyed_by_path));
            entry_line(&mut text, "msgid", &original);
            entry_line(&mut text, "msgstr", &translated);
            out.write_all(text.as_bytes())?;
        }
    }
    Ok(())
}

/// The header entry: the empty msgid whose msgstr holds the file's metadata.
fn header(out: &mut String, file: &PoFile) {
    let described = |c: &ColumnDef| match &c.language_code {
        Some(code) => format!("{} ({code})", c.name),
        None => c.name.clone(),
    };
    let comment =
        format!("{} from {}, exported by gridd", described(&file.target), described(&file.source));
    out.push_str("# ");
    out.push_str(&comment.replace(['\n', '\r'], " "));
    out.push_str("\nmsgid \"\"\nmsgstr \"\"\n");
    let mut field = |name: &str, value: &str| {
        out.push('"');
        escape_po(out, &format!("{name}: {value}\n"));
        out.push_str("\"\n");
    };
    if let Some(language) = po_language(&file.target) {
        field("Language", &language);
    }
    if let Some(language) = po_language(&file.source) {
        field("X-Source-Language", &language);
    }
    field("MIME-Version", "1.0");
    field("Content-Type", "text/plain; charset=UTF-8");
    field("Content-Transfer-Encoding", "8bit");
}

/// A column's language code as PO headers write one (`fr_FR`); a code that does not read as
/// one is written as it is.
fn po_language(column: &ColumnDef) -> Option<String> {
    let code = column.language_code.as_deref()?;
    Some(LangCode::parse(code).map_or_else(|_| code.to_owned(), |c| c.as_str().replace('-', "_")))
}

/// `keyword "text"`, a text with line breaks as `keyword ""` and one string per line.
fn entry_line(out: &mut String, keyword: &str, text: &str) {
    out.push_str(keyword);
    if text.contains('\n') {
        out.push_str(" \"\"\n");
        for line in text.split_inclusive('\n') {
            out.push('"');
            escape_po(out, line);
            out.push_str("\"\n");
        }
    } else {
        out.push_str(" \"");
        escape_po(out, text);
        out.push_str("\"\n");
    }
}

/// `text` escaped for a PO string. A NUL is left out: gettext's strings end at one, so no
/// escape keeps it.
fn escape_po(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\0' => {}
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_escaped_and_split_at_line_breaks() {
        let mut out = String::new();
        entry_line(&mut out, "msgid", "Say \"hi\"\\\tnow");
        assert_eq!(out, "msgid \"Say \\\"hi\\\"\\\\\\tnow\"\n");
        out.clear();
        entry_line(&mut out, "msgstr", "one\ntwo\n");
        assert_eq!(out, "msgstr \"\"\n\"one\\n\"\n\"two\\n\"\n");
        out.clear();
        entry_line(&mut out, "msgstr", "");
        assert_eq!(out, "msgstr \"\"\n");
        out.clear();
        entry_line(&mut out, "msgid", "nul\0here");
        assert_eq!(out, "msgid \"nulhere\"\n", "a NUL, which gettext cannot hold, is left out");
    }
}
