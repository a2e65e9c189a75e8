//! `ColumnBuilder`: a column built apart from any store, a chunk at a time, from its cells in
//! row order (image loading, on several threads at once).

use crate::grid::damage::LoadResult;
use std::sync::Arc;

use super::super::chunked::{Chunk, Chunked, CHUNK_ROWS};
use super::super::text::{encode_list, TextChunk};
use super::super::versions::Versions;
use super::{empty_of, stored_number, Cells, Column, ColumnChunk, LoadCell, Stored};
use crate::grid::value::StorageKind;

/// Arena bytes a text value of `len` bytes takes in a chunk (`ColumnBuilder::push`'s sizing):
/// none for an empty one or one held apart.
pub fn arena_cost(len: usize) -> usize {
    if len == 0 || len > super::super::text::INLINE_MAX {
        0
    } else {
        len + 1
    }
}

/// Builds a column apart from any store (image loading, on several threads at once; see
/// `ColumnStore::install_column`) from its cells given in row order, a chunk at a time, so that
/// a load hands them over as it reads them.
pub struct ColumnBuilder {
    kind: StorageKind,
    localized: bool,
    rows: usize,
    built: usize,
    chunks: Vec<ColumnChunk>,
    open: Option<OpenChunk>,
    /// A list cell's encoding, reused.
    scratch: String,
}

/// The chunk a `ColumnBuilder` is filling.
struct OpenChunk {
    cells: Cells,
    versions: Versions,
    statuses: Option<Vec<u8>>,
    len: usize,
    rows: usize,
}

impl ColumnBuilder {
    /// A builder of a column of `rows` cells of `kind` (with status bytes when `localized`).
    pub fn new(kind: StorageKind, localized: bool, rows: usize) -> Self {
        ColumnBuilder {
            kind,
            localized,
            rows,
            built: 0,
            // Grown as chunks fill, not reserved from `rows`: a damaged image's head can claim
            // any number of records, and its cells, not its claim, bound what a load holds.
            chunks: Vec::new(),
            open: None,
            scratch: String::new(),
        }
    }

    /// Cells the chunk being filled still takes (between chunks, the next one's rows).
    pub fn room(&self) -> usize {
        match &self.open {
            Some(open) => open.rows - open.len,
            None => (self.rows - self.built).min(CHUNK_ROWS),
        }
    }

    /// Adds the next cell, its version and its status byte. A chunk's text arena is sized when
    /// its first cell comes, to `text(rows)`: the `arena_cost` of the text of that cell and the
    /// ones after it in the chunk, as far as the caller knows them (`rows` of them at most);
    /// an arena told less grows as a chunk filled by writes does.
    pub fn push(
        &mut self,
        value: &LoadCell<'_>,
        version: u32,
        status: u8,
        text: impl FnOnce(usize) -> usize,
    ) -> LoadResult<()> {
        let kind = self.kind;
        let rows = self.next_chunk_rows()?;
        let open = open_chunk(&mut self.open, kind, self.localized, rows, text);
        let stored = match (kind, value) {
            (_, LoadCell::Empty) => empty_of(kind),
            (StorageKind::Text, LoadCell::Text(s)) => Stored::Text(Some(s)),
            (StorageKind::Number, LoadCell::Number(n)) => stored_number(*n),
            (StorageKind::Boolean, LoadCell::Boolean(b)) => Stored::Boolean(u8::from(*b)),
            (StorageKind::Datetime, LoadCell::Datetime(t)) => Stored::Datetime(*t),
            (StorageKind::List, LoadCell::List(items)) => {
                encode_list(items, &mut self.scratch);
                Stored::Text(Some(&self.scratch))
            }
            (kind, value) => return Err(format!("a {value:?} cell in a {kind:?} column").into()),
        };
        open.cells.push(stored);
        open.versions.push(version);
        if let Some(statuses) = &mut open.statuses {
            statuses.push(status);
        }
        open.len += 1;
        self.built += 1;
        self.close_if_full();
        Ok(())
    }

    /// Adds `count` text cells of a text column, as `push` would one by one but a chunk's run
    /// at a time: `cell(i)` gives cell `i`'s text (`None` when empty), version and status byte,
    /// and `text(i, rows)` the `arena_cost` of cells `i..i + rows` (sizing each chunk's arena
    /// when its first cell comes, as `push`'s `text` does).
    pub fn push_texts<'t>(
        &mut self,
        count: usize,
        cell: impl Fn(usize) -> LoadResult<(Option<&'t str>, u32, u8)>,
        text: impl Fn(usize, usize) -> usize,
    ) -> LoadResult<()> {
        if self.kind != StorageKind::Text {
            return Err(format!("text cells in a {:?} column", self.kind).into());
        }
        let mut i = 0;
        while i < count {
            let open = self.open(|rows| text(i, rows))?;
            let take = (open.rows - open.len).min(count - i);
            let Cells::Text(chunk) = &mut open.cells else {
                return Err("a text column with a chunk of another kind".into());
            };
            let (versions, statuses) = (&mut open.versions, &mut open.statuses);
            chunk.extend((i..i + take).map(|k| {
                let (value, version, status) = cell(k)?;
                versions.push(version);
                if let Some(statuses) = statuses.as_mut() {
                    statuses.push(status);
                }
                LoadResult::Ok(value)
            }))?;
            open.len += take;
            self.built += take;
            i += take;
            self.close_if_full();
        }
        Ok(())
    }

    /// The chunk being filled, opened (its arena sized to `text(rows)`) when none is; an
    /// error once every record has its cell.
    fn open(&mut self, text: impl FnOnce(usize) -> usize) -> LoadResult<&mut OpenChunk> {
        let rows = self.next_chunk_rows()?;
        Ok(open_chunk(&mut self.open, self.kind, self.localized, rows, text))
    }

    /// The rows of a chunk opened now (the records left, at most a chunk's); an error once
    /// every record has its cell.
    fn next_chunk_rows(&self) -> LoadResult<usize> {
        if self.built == self.rows {
            return Err("more cells than records".into());
        }
        Ok((self.rows - self.built).min(CHUNK_ROWS))
    }

    /// Hands the chunk being filled over to the column once it is full.
    fn close_if_full(&mut self) {
        if self.open.as_ref().is_none_or(|open| open.len < open.rows) {
            return;
        }
        if let Some(open) = self.open.take() {
            let OpenChunk { mut cells, versions, statuses, .. } = open;
            // A chunk whose arena grew past its text gives the rest back.
            if let Cells::Text(text) = &mut cells {
                text.shrink();
            }
            self.chunks.push(ColumnChunk { cells: Arc::new(cells), versions, status: statuses });
        }
    }

    /// The column, once it has a cell per record.
    pub fn finish(self) -> LoadResult<super::super::BuiltColumn> {
        self.into_column().map(super::super::BuiltColumn)
    }

    pub(super) fn into_column(self) -> LoadResult<Column> {
        if self.built != self.rows {
            return Err(format!("{} cells for {} records", self.built, self.rows).into());
        }
        let (kind, localized) = (self.kind, self.localized);
        Ok(Column { kind, localized, chunks: Chunked::from_chunks(self.chunks, self.rows) })
    }
}

/// The chunk in `open`, or a new one of `rows` rows of `kind` (its arena sized to `text(rows)`)
/// when there is none. A function of the builder's fields, not a method, so that `push` can
/// still encode a list into the builder's scratch buffer while it holds the chunk.
fn open_chunk(
    open: &mut Option<OpenChunk>,
    kind: StorageKind,
    localized: bool,
    rows: usize,
    text: impl FnOnce(usize) -> usize,
) -> &mut OpenChunk {
    open.get_or_insert_with(|| {
        let cells = match kind {
            StorageKind::Text => Cells::Text(TextChunk::with_capacity(rows, text(rows))),
            _ => Cells::with_capacity(kind, rows),
        };
        let statuses = localized.then(|| Vec::with_capacity(rows));
        OpenChunk { cells, versions: Versions::default(), statuses, len: 0, rows }
    })
}
