//! The files of one published CDN version (issue 22), written from one instant of a grid's
//! master branch (a `GridState` read from its published read view) and never changed after.
//!
//! Layout under `<data dir>/cdn/<cdnId>/` (`catalog::cdns::cdn_dir`):
//! - `<version>/manifest.json`: `Manifest` (version, publish time, record count, one entry per
//!   language, and each file's size, content type and entity tag);
//! - `<version>/<lang>.json`: `{"<key>": "<text>", ...}`, one entry per record whose cell in
//!   the language column is not empty, in the grid's record order. The key is the record id; in
//!   a grid whose records are identified by (path, id) (`pathTagRecordId`), a record with a
//!   path is keyed `<path>/<id>`, with `%` and `/` in the id escaped (`record_key`);
//! - `<version>/<lang>.csv`: RFC 4180, UTF-8, header `recordId,path,text`, the same records.
//!
//! `<lang>` is the column's language code; a second column with the same code (or a code named
//! `manifest`) is `<code>-<columnId>`. Language codes and column ids are letters, digits and
//! `_`, so a file name never holds a path separator.
//!
//! A version is written into `.tmp-<version>-<random>`, each file and the directory fsynced,
//! then renamed to `<version>` (a directory of that name left by a publish the catalogue never
//! recorded is replaced) and the parent fsynced. Versions older than the last `KEEP_VERSIONS`
//! are removed after the rename, and leftover temporary directories before the write (one
//! publish of a CDN runs at a time). Rows are read `ROWS_PER_READ` at a time, one language per
//! pass, through buffered writers: memory stays bounded whatever the grid's size.
//!
//! Knows nothing of HTTP or the catalogue.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Coded, ErrorCode};
use crate::grid::codec::export_text;
use crate::grid::ops::GridState;
use crate::grid::schema::{ColumnDef, Schema};

/// Versions kept on disk (the latest and the ones before it).
pub const KEEP_VERSIONS: u64 = 3;
/// The manifest's file name.
pub const MANIFEST: &str = "manifest.json";
/// Rows read from the grid at a time.
const ROWS_PER_READ: usize = 1000;
/// Prefix of the directories a version is written into before it is renamed.
const TEMP_PREFIX: &str = ".tmp-";

/// A version's index: what `manifest.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub cdn_id: String,
    pub grid_id: String,
    pub version: u64,
    pub published_time: String,
    /// Records of the grid at the instant read.
    pub record_count: u64,
    pub languages: Vec<LanguageEntry>,
    /// Every file of the version but the manifest, by name.
    pub files: IndexMap<String, FileEntry>,
}

/// One language column's files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LanguageEntry {
    /// The `<lang>` of its file names.
    pub name: String,
    pub language_code: Option<String>,
    pub column_id: String,
    pub column_name: String,
    /// `sourceLanguage` or `targetLanguage`.
    pub localization_type: Option<String>,
    /// Records with text in this language.
    pub strings: u64,
    pub json: String,
    pub csv: String,
}

/// One file of a version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    pub content_type: String,
    pub bytes: u64,
    /// The strong entity tag: the first 16 bytes of the file's SHA-256, in hex.
    pub etag: String,
}

/// What to write.
#[derive(Debug, Clone)]
pub struct PublishSpec<'a> {
    pub cdn_id: &'a str,
    pub grid_id: &'a str,
    pub version: u64,
    pub published_time: &'a str,
    /// Records with a path are keyed `<path>/<id>` (`pathTagRecordId` grids; see `record_key`).
    pub keyed_by_path: bool,
}

/// A version that could not be written (the disk, most likely): the publish may succeed later.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PublishError {
    #[error("Writing the CDN's files failed: {0}")]
    Write(String),
}

impl Coded for PublishError {
    fn code(&self) -> ErrorCode {
        match self {
            PublishError::Write(_) => ErrorCode::ServiceUnavailable,
        }
    }
}

type PublishResult<T> = Result<T, PublishError>;

fn failed(what: &Path) -> impl Fn(std::io::Error) -> PublishError + '_ {
    move |e| PublishError::Write(format!("{}: {e}", what.display()))
}

/// Writes version `spec.version` of a CDN from `state` into `dir` (the CDN's directory) and
/// removes the versions no longer kept; answers its manifest.
pub fn write_version(
    state: &GridState,
    spec: &PublishSpec<'_>,
    dir: &Path,
) -> PublishResult<Manifest> {
    std::fs::create_dir_all(dir).map_err(failed(dir))?;
    remove_leftovers(dir, |name| name.starts_with(TEMP_PREFIX));
    let temp = dir.join(format!("{TEMP_PREFIX}{}-{}", spec.version, crate::ids::generate()));
    let written = write_into(state, spec, &temp).and_then(|manifest| {
        install(&temp, &dir.join(spec.version.to_string()), dir)?;
        Ok(manifest)
    });
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    let manifest = written?;
    let oldest_kept = spec.version.saturating_sub(KEEP_VERSIONS - 1);
    remove_leftovers(dir, |name| name.parse::<u64>().is_ok_and(|v| v < oldest_kept));
    Ok(manifest)
}

fn write_into(state: &GridState, spec: &PublishSpec<'_>, temp: &Path) -> PublishResult<Manifest> {
    std::fs::create_dir(temp).map_err(failed(temp))?;
    let mut manifest = Manifest {
        cdn_id: spec.cdn_id.to_owned(),
        grid_id: spec.grid_id.to_owned(),
        version: spec.version,
        published_time: spec.published_time.to_owned(),
        record_count: state.store.live().len(),
        languages: Vec::new(),
        files: IndexMap::new(),
    };
    for (column, name) in language_files(&state.schema) {
        let (entry, files) = write_language(state, column, &name, spec.keyed_by_path, temp)?;
        manifest.languages.push(entry);
        manifest.files.extend(files);
    }
    let path = temp.join(MANIFEST);
    let bytes = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| PublishError::Write(format!("manifest: {e}")))?;
    let mut file = TaggedFile::create(&path)?;
    file.write_all(&bytes).map_err(failed(&path))?;
    file.finish(&path, "application/json")?;
    sync_dir(temp)?;
    Ok(manifest)
}

/// Each language column of the schema, in order, with the `<lang>` of its files.
pub fn language_files(schema: &Schema) -> Vec<(&ColumnDef, String)> {
    let mut named: Vec<(&ColumnDef, String)> = Vec::new();
    for column in schema.columns.iter().filter(|c| c.is_language()) {
        let code = column.language_code.clone().unwrap_or_else(|| column.id.clone());
        let taken = code == "manifest" || named.iter().any(|(_, n)| *n == code);
        let name = if taken { format!("{code}-{}", column.id) } else { code };
        named.push((column, name));
    }
    named
}

/// The key of a record in a language's JSON file (and a PO entry's `msgctxt`): its id, or in
/// a grid whose records a path and an id name together, `<path>/<id>` (the id alone at the
/// root). There the id is written with `%` as `%25` and `/` as `%2F`, so that a key names one
/// record: the id is what follows the key's last `/` (path `a` with id `b` is `a/b`, the id
/// `a/b` at the root is `a%2Fb`). Ids without either character read as they are.
pub fn record_key(id: &str, path: &str, keyed_by_path: bool) -> String {
    if !keyed_by_path {
        return id.to_owned();
    }
    let mut key = String::with_capacity(path.len() + 1 + id.len());
    if !path.is_empty() {
        key.push_str(path);
        key.push('/');
    }
    for c in id.chars() {
        match c {
            '%' => key.push_str("%25"),
            '/' => key.push_str("%2F"),
            c => key.push(c),
        }
    }
    key
}

fn write_language(
    state: &GridState,
    column: &ColumnDef,
    name: &str,
    keyed_by_path: bool,
    temp: &Path,
) -> PublishResult<(LanguageEntry, [(String, FileEntry); 2])> {
    let (json_name, csv_name) = (format!("{name}.json"), format!("{name}.csv"));
    let (json_path, csv_path) = (temp.join(&json_name), temp.join(&csv_name));
    let mut json = TaggedFile::create(&json_path)?;
    let mut csv = csv::Writer::from_writer(TaggedFile::create(&csv_path)?);
    let csv_failed = |e: csv::Error| PublishError::Write(format!("{}: {e}", csv_path.display()));
    csv.write_record(["recordId", "path", "text"]).map_err(csv_failed)?;
    json.write_all(b"{").map_err(failed(&json_path))?;
    let strings = write_rows(state, column, keyed_by_path, &mut json, &mut csv)
        .map_err(|e| PublishError::Write(format!("{}: {e}", temp.display())))?;
    json.write_all(b"}").map_err(failed(&json_path))?;
    let csv = csv.into_inner().map_err(|e| PublishError::Write(format!("CSV: {e}")))?;
    let files = [
        (json_name.clone(), json.finish(&json_path, "application/json")?),
        (csv_name.clone(), csv.finish(&csv_path, "text/csv; charset=utf-8")?),
    ];
    let entry = LanguageEntry {
        name: name.to_owned(),
        language_code: column.language_code.clone(),
        column_id: column.id.clone(),
        column_name: column.name.clone(),
        localization_type: column.localization_type.map(|t| t.as_str().to_owned()),
        strings,
        json: json_name,
        csv: csv_name,
    };
    Ok((entry, files))
}

/// Writes the records with text in `column` to both files, `ROWS_PER_READ` rows at a time;
/// answers how many there were.
fn write_rows(
    state: &GridState,
    column: &ColumnDef,
    keyed_by_path: bool,
    json: &mut TaggedFile,
    csv: &mut csv::Writer<TaggedFile>,
) -> Result<u64, csv::Error> {
    let mut rows = state.store.live_rows().peekable();
    let mut chunk = Vec::with_capacity(ROWS_PER_READ);
    let mut strings = 0u64;
    while rows.peek().is_some() {
        chunk.clear();
        chunk.extend(rows.by_ref().take(ROWS_PER_READ));
        for record in state.read_rows(&[column], chunk.iter().copied()) {
            let text = record.cells.first().map(|c| export_text(&c.value)).unwrap_or_default();
            if text.is_empty() {
                continue;
            }
            let key = record_key(&record.id, &record.path, keyed_by_path);
            write_entry(json, strings == 0, &key, &text)?;
            csv.write_record([record.id.as_str(), record.path.as_str(), &text])?;
            strings += 1;
        }
    }
    Ok(strings)
}

/// `"key":"text"`, after a comma unless it is the first entry.
fn write_entry(out: &mut impl Write, first: bool, key: &str, text: &str) -> std::io::Result<()> {
    if !first {
        out.write_all(b",")?;
    }
    serde_json::to_writer(&mut *out, key)?;
    out.write_all(b":")?;
    serde_json::to_writer(&mut *out, text)?;
    Ok(())
}

/// Renames the written `temp` directory to `target` in `dir`, replacing a directory the
/// catalogue never recorded.
fn install(temp: &Path, target: &Path, dir: &Path) -> PublishResult<()> {
    if target.exists() {
        std::fs::remove_dir_all(target).map_err(failed(target))?;
    }
    std::fs::rename(temp, target).map_err(failed(target))?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> PublishResult<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(failed(dir))
}

/// Removes the entries of `dir` whose names `doomed` picks (best effort).
fn remove_leftovers(dir: &Path, doomed: impl Fn(&str) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_str().is_some_and(&doomed) {
            if let Err(err) = std::fs::remove_dir_all(entry.path()) {
                tracing::warn!(error = %err, path = %entry.path().display(), "CDN cleanup failed");
            }
        }
    }
}

/// A file being written, with the SHA-256 and size of what went in.
struct TaggedFile {
    out: BufWriter<File>,
    hasher: Sha256,
    bytes: u64,
}

impl TaggedFile {
    fn create(path: &Path) -> PublishResult<TaggedFile> {
        let file = File::create(path).map_err(failed(path))?;
        Ok(TaggedFile {
            out: BufWriter::with_capacity(64 * 1024, file),
            hasher: Sha256::new(),
            bytes: 0,
        })
    }

    /// Flushes and fsyncs the file; answers its entry.
    fn finish(self, path: &Path, content_type: &str) -> PublishResult<FileEntry> {
        let file = self.out.into_inner().map_err(|e| failed(path)(e.into_error()))?;
        file.sync_all().map_err(failed(path))?;
        Ok(FileEntry {
            content_type: content_type.to_owned(),
            bytes: self.bytes,
            etag: entity_tag(&self.hasher.finalize()),
        })
    }
}

/// The entity tag of content with this SHA-256: its first 16 bytes in hex.
pub fn entity_tag(digest: &[u8]) -> String {
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

impl Write for TaggedFile {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let written = self.out.write(data)?;
        self.hasher.update(&data[..written]);
        self.bytes += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::schema::{ColumnType, LocalizationType};

    fn language(id: &str, code: &str) -> ColumnDef {
        ColumnDef {
            id: id.into(),
            name: id.into(),
            description: None,
            column_type: ColumnType::Language,
            language_code: Some(code.to_owned()),
            localization_type: Some(LocalizationType::TargetLanguage),
            number_format: None,
            selection: None,
            reference: None,
            formula: None,
            date_time_format: None,
        }
    }

    #[test]
    fn file_names_are_language_codes_made_unique() {
        let mut schema = Schema::default();
        schema.columns =
            vec![language("en", "enUS"), language("en2", "enUS"), language("m", "manifest")];
        let names: Vec<String> = language_files(&schema).into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["enUS", "enUS-en2", "manifest-m"]);
    }

    #[test]
    fn keys_carry_the_path_only_in_path_tagged_grids() {
        assert_eq!(record_key("r1", "ui/menu", false), "r1");
        assert_eq!(record_key("r1", "ui/menu", true), "ui/menu/r1");
        assert_eq!(record_key("r1", "", true), "r1");
    }

    #[test]
    fn keys_in_path_tagged_grids_name_one_record() {
        let named = [("a", "b"), ("", "a/b"), ("a/b", "c"), ("a", "b/c"), ("", "a%2Fb"), ("a", "")];
        let keys: Vec<String> = named.iter().map(|(path, id)| record_key(id, path, true)).collect();
        assert_eq!(keys, ["a/b", "a%2Fb", "a/b/c", "a/b%2Fc", "a%252Fb", "a/"]);
        let mut distinct = keys.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), keys.len(), "{keys:?}");
        assert_eq!(record_key("a/b", "", false), "a/b", "other grids' keys are the ids");
    }

    #[test]
    fn entries_are_json_escaped_and_comma_separated() {
        let mut out = Vec::new();
        write_entry(&mut out, true, "a\"b", "x\ny").expect("write");
        write_entry(&mut out, false, "c", "é").expect("write");
        assert_eq!(String::from_utf8(out).expect("utf-8"), "\"a\\\"b\":\"x\\ny\",\"c\":\"é\"");
    }
}
