// A small, safe Markdown preview for markdown cells: headings, paragraphs, bullet and numbered
// lists, **bold**, *italic*, `code` and fenced code blocks, built as elements (text is never
// parsed as HTML). Anything else shows as written.

import { h } from '../ui.js';

/** Inline spans of one line: `code`, **bold**, *italic*. */
function inline(text) {
  const out = [];
  const pattern = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*]+\*)/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) out.push(text.slice(last, match.index));
    const token = match[0];
    if (token.startsWith('`')) out.push(h('code', {}, token.slice(1, -1)));
    else if (token.startsWith('**')) out.push(h('strong', {}, token.slice(2, -2)));
    else out.push(h('em', {}, token.slice(1, -1)));
    last = match.index + token.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** The preview of `text` (at most its first 20,000 characters). */
export function markdownPreview(text) {
  const lines = String(text).slice(0, 20_000).split('\n');
  const blocks = [];
  let list = null;
  let code = null;
  for (const line of lines) {
    if (line.startsWith('```')) {
      if (code) { blocks.push(h('pre', {}, code.join('\n'))); code = null; } else code = [];
      continue;
    }
    if (code) { code.push(line); continue; }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*([-*+]|\d+\.)\s+(.*)$/.exec(line);
    if (item) {
      const tag = /\d/.test(item[1]) ? 'ol' : 'ul';
      if (!list || list.tagName.toLowerCase() !== tag) { list = h(tag, {}); blocks.push(list); }
      list.append(h('li', {}, inline(item[2])));
      continue;
    }
    list = null;
    if (heading) blocks.push(h(`h${heading[1].length + 2 > 6 ? 6 : heading[1].length + 2}`, {}, inline(heading[2])));
    else if (line.trim()) blocks.push(h('p', {}, inline(line)));
  }
  if (code) blocks.push(h('pre', {}, code.join('\n')));
  return h('div', { class: 'md' }, blocks);
}
