// Reads the head of a CSV or TSV file for the import preview: the first PREVIEW_ROWS rows of
// at most PREVIEW_BYTES, parsed as RFC 4180 (quoted fields, doubled quotes, CRLF or LF, a BOM)
// with at most PREVIEW_COLUMNS fields a row and PREVIEW_FIELD characters a field, so a hostile
// file costs the page no more than those numbers. It also guesses where each file column goes,
// with the server's rules (io::csv_import): a header matches a column name, then a column id,
// then `_recordId`/`Record ID` and `_path`/`Path`; formula columns are never targets.

export const PREVIEW_BYTES = 256 * 1024;
export const PREVIEW_ROWS = 6;
export const PREVIEW_COLUMNS = 1064;
export const PREVIEW_FIELD = 200;

/** Parses `text` (the head of a file) into at most `maxRows` rows. A last row cut off by the
 * byte limit is dropped unless the text is the whole file (`complete`). */
export function parseDelimited(text, delimiter = ',', maxRows = PREVIEW_ROWS, complete = true) {
  const rows = [];
  let row = [];
  let fieldText = '';
  let quoted = false;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const push = () => {
    if (row.length < PREVIEW_COLUMNS) row.push(fieldText.slice(0, PREVIEW_FIELD));
    fieldText = '';
  };
  for (; i < text.length && rows.length < maxRows; i += 1) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') { fieldText += '"'; i += 1; }
      else if (ch === '"') quoted = false;
      else if (fieldText.length <= PREVIEW_FIELD) fieldText += ch;
    } else if (ch === '"' && fieldText === '') quoted = true;
    else if (ch === delimiter) push();
    else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i += 1;
      push();
      rows.push(row);
      row = [];
    } else if (fieldText.length <= PREVIEW_FIELD) fieldText += ch;
  }
  if (complete && rows.length < maxRows && (fieldText !== '' || row.length)) {
    push();
    rows.push(row);
  }
  return rows;
}

/** The head rows of `file` (a File or Blob) as `delimiter`-separated text. */
export async function readHead(file, delimiter) {
  const complete = file.size <= PREVIEW_BYTES;
  const text = await file.slice(0, PREVIEW_BYTES).text();
  return parseDelimited(text, delimiter, PREVIEW_ROWS, complete);
}

/** Where a header goes: a column id, `_recordId`, `_path` or '' (ignored). */
export function guessTarget(header, columns) {
  const name = String(header || '').trim();
  const column = columns.find((c) => c.name === name) || columns.find((c) => c.id === name);
  if (column) return column.type === 'formula' ? '' : column.id;
  if (name === '_recordId' || name === 'Record ID') return '_recordId';
  if (name === '_path' || name === 'Path') return '_path';
  return '';
}

/** The import request of a mapping (`targets[i]` for file column i; '' ignores it). Two file
 * columns with one target are refused here, as the server would. */
export function importRequest(targets, withHeader) {
  const seen = new Map();
  const columnMappings = [];
  targets.forEach((target, index) => {
    if (!target) return;
    if (seen.has(target)) {
      throw new Error(`File columns ${seen.get(target) + 1} and ${index + 1} both go to ${target}.`);
    }
    seen.set(target, index);
    columnMappings.push({ columnId: target, fileColumnIndex: index });
  });
  if (!columnMappings.some((m) => !m.columnId.startsWith('_'))) {
    throw new Error('Map at least one file column to a column of the view.');
  }
  return { withHeader: false, firstDataRow: withHeader ? 2 : 1, columnMappings };
}
