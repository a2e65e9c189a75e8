// Reads the head of an XLSX workbook for the import preview, in the page: the zip's central
// directory (found from its end record), the first sheet (workbook.xml and its relationships,
// as the server picks it) and the shared strings, each inflated with the browser's
// DecompressionStream('deflate-raw') and cut at a bound (MAX_SHEET_CHARS of the sheet,
// MAX_STRINGS_CHARS of the strings), then the first rows' cells by their references (A1, B1...).
// A hostile file costs the page at most those bounds; a file it cannot read shows no preview
// (the server still checks it on import). Only what a preview needs: no styles, no dates.

export const MAX_DIRECTORY_BYTES = 4 * 1024 * 1024;
export const MAX_SHEET_CHARS = 2 * 1024 * 1024;
export const MAX_STRINGS_CHARS = 8 * 1024 * 1024;
export const MAX_PREVIEW_COLUMNS = 1064;

const u16 = (v, at) => v.getUint16(at, true);
const u32 = (v, at) => v.getUint32(at, true);

async function bytes(file, start, end) {
  return new DataView(await file.slice(start, end).arrayBuffer());
}

/** The zip's entries: name -> {method, size, offset}. */
export async function zipEntries(file) {
  const tailStart = Math.max(0, file.size - 65557);
  const tail = await bytes(file, tailStart, file.size);
  let end = -1;
  for (let at = tail.byteLength - 22; at >= 0; at -= 1) {
    if (u32(tail, at) === 0x06054b50) { end = at; break; }
  }
  if (end < 0) throw new Error('This is not an XLSX file (no zip directory).');
  const size = u32(tail, end + 12);
  const offset = u32(tail, end + 16);
  if (size > MAX_DIRECTORY_BYTES || offset + size > file.size) throw new Error('The zip directory is too large or broken.');
  const dir = await bytes(file, offset, offset + size);
  const entries = new Map();
  const names = new TextDecoder();
  for (let at = 0; at + 46 <= dir.byteLength && u32(dir, at) === 0x02014b50;) {
    const nameLength = u16(dir, at + 28);
    const length = Math.min(nameLength, dir.byteLength - at - 46);
    const name = names.decode(new Uint8Array(dir.buffer, dir.byteOffset + at + 46, length));
    entries.set(name, { method: u16(dir, at + 10), size: u32(dir, at + 20), offset: u32(dir, at + 42) });
    at += 46 + nameLength + u16(dir, at + 30) + u16(dir, at + 32);
  }
  return entries;
}

/** An entry's text, inflated, cut at `maxChars`. */
export async function entryText(file, entry, maxChars) {
  const local = await bytes(file, entry.offset, entry.offset + 30);
  if (u32(local, 0) !== 0x04034b50) throw new Error('A zip entry is broken.');
  const start = entry.offset + 30 + u16(local, 26) + u16(local, 28);
  let stream = file.slice(start, start + entry.size).stream();
  if (entry.method === 8) stream = stream.pipeThrough(new DecompressionStream('deflate-raw'));
  else if (entry.method !== 0) throw new Error('A zip entry uses an unknown compression.');
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  try {
    while (text.length < maxChars) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  return text.slice(0, maxChars);
}

/** XML text with its five entities and character references resolved. */
export function unescapeXml(text) {
  return text.replace(/&(lt|gt|amp|quot|apos|#x[0-9a-fA-F]+|#[0-9]+);/g, (_, name) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return code <= 0x10ffff ? String.fromCodePoint(code) : '';
    }
    return { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }[name];
  });
}

/** The text of an element's `<t>` runs (a shared string or an inline string). */
const runs = (xml) => [...xml.matchAll(/<t(?:\s[^>]*)?>([\s\S]*?)<\/t>/g)].map((m) => unescapeXml(m[1])).join('');

/** The 0-based column of a cell reference (`C7` -> 2), or -1. */
export function columnOf(ref) {
  const letters = /^[A-Z]+/.exec(ref || '');
  if (!letters) return -1;
  let n = 0;
  for (const ch of letters[0]) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

/** The first `maxRows` rows of a sheet's XML, cells as raw {col, type, value}. */
export function sheetRows(xml, maxRows) {
  const rows = [];
  for (const row of xml.matchAll(/<row\b[^>]*>([\s\S]*?)<\/row>/g)) {
    if (rows.length >= maxRows) break;
    const cells = [];
    for (const c of row[1].matchAll(/<c\b([^>]*?)(?:\/>|>([\s\S]*?)<\/c>)/g)) {
      const ref = /\br="([A-Z]+\d+)"/.exec(c[1]);
      const type = (/\bt="(\w+)"/.exec(c[1]) || [])[1] || 'n';
      const inner = c[2] || '';
      const v = /<v>([\s\S]*?)<\/v>/.exec(inner);
      const value = type === 'inlineStr' ? runs(inner) : v ? unescapeXml(v[1]) : '';
      const col = ref ? columnOf(ref[1]) : cells.length;
      if (col >= 0 && col < MAX_PREVIEW_COLUMNS) cells.push({ col, type, value });
    }
    rows.push(cells);
  }
  return rows;
}

/** The path of the workbook's first sheet, from workbook.xml and its relationships. */
async function firstSheet(file, entries) {
  const fallback = 'xl/worksheets/sheet1.xml';
  const book = entries.get('xl/workbook.xml');
  const rels = entries.get('xl/_rels/workbook.xml.rels');
  if (!book || !rels) return fallback;
  const sheet = /<sheet\b[^>]*\br:id="([^"]+)"/.exec(await entryText(file, book, 1024 * 1024));
  if (!sheet) return fallback;
  const relsXml = await entryText(file, rels, 1024 * 1024);
  const rel = [...relsXml.matchAll(/<Relationship\b[^>]*>/g)].map((m) => m[0]).find((r) => r.includes(`Id="${sheet[1]}"`));
  const target = rel && /Target="([^"]+)"/.exec(rel);
  if (!target) return fallback;
  return target[1].startsWith('/') ? target[1].slice(1) : `xl/${target[1]}`;
}

/** The first `maxRows` rows of the workbook's first sheet as text, like a CSV head. */
export async function readXlsxHead(file, maxRows) {
  const entries = await zipEntries(file);
  const sheet = entries.get(await firstSheet(file, entries));
  if (!sheet) throw new Error('The workbook has no sheet.');
  const raw = sheetRows(await entryText(file, sheet, MAX_SHEET_CHARS), maxRows);
  const needed = Math.max(-1, ...raw.flat().filter((c) => c.type === 's').map((c) => Number(c.value)));
  let strings = [];
  if (needed >= 0 && entries.has('xl/sharedStrings.xml')) {
    const xml = await entryText(file, entries.get('xl/sharedStrings.xml'), MAX_STRINGS_CHARS);
    strings = [...xml.matchAll(/<si>([\s\S]*?)<\/si>/g)].slice(0, needed + 1).map((m) => runs(m[1]));
  }
  return raw.map((cells) => {
    const row = [];
    for (const c of cells) row[c.col] = c.type === 's' ? strings[Number(c.value)] || '' : c.value;
    return Array.from(row, (v) => v || '');
  });
}
