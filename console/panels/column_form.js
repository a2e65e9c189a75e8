// The add/edit form of one column: name, id, type and the options of its type (language code
// and source/target role, selection options with their colors, number format, datetime zone,
// reference target, formula text). It turns the form into the API's ColumnRequest and sends
// it: POST /v1/views/<id>/columns (add) or PATCH /v1/views/<id>/columns/<columnId> (edit).
// It owns only its form; the columns panel lists and reloads.

import { el, field, select, statusLine, action, fill, seg } from './common.js';

export const TYPES = [
  'singleLine', 'multipleLines', 'richText', 'markdown', 'html', 'language', 'number',
  'boolean', 'datetime', 'singleSelection', 'multipleSelections', 'files', 'reference',
  'formula', 'json', 'yaml',
];

export const COLORS = [
  'atlantis', 'crusta', 'lightCyan', 'burntSlena', 'brightRed', 'seaGreen', 'shamRock',
  'dodgerBlue', 'sun', 'midGrey', 'fuchsiaBlue', 'shipCove', 'funBlue', 'froly', 'lightLavender',
];

/** The most selection options the form sends (the API takes 1000). */
const MAX_OPTIONS = 1000;

/** Parses selection option lines `value` or `value : color` (blank lines skipped). */
export function parseOptions(text) {
  const options = [];
  for (const line of text.split('\n').slice(0, MAX_OPTIONS)) {
    const at = line.lastIndexOf(':');
    const color = at > 0 ? line.slice(at + 1).trim() : '';
    const known = COLORS.includes(color);
    const value = (known ? line.slice(0, at) : line).trim();
    if (value) options.push(known ? { value, color } : { value });
  }
  return options;
}

function optionsText(column) {
  const options = (column && column.selection && column.selection.options) || [];
  return options.map((o) => (o.color ? `${o.value} : ${o.color}` : o.value)).join('\n');
}

/** The inputs of the type-specific part, keyed by request field. */
function typeInputs(column) {
  const c = column || {};
  return {
    languageCode: el('input', { type: 'text', value: c.languageCode || '', placeholder: 'frFR' }),
    localizationType: select(
      [['', 'none'], ['sourceLanguage', 'source language'], ['targetLanguage', 'target language']],
      c.localizationType || ''),
    options: el('textarea', { rows: 4, value: optionsText(c) }),
    numberType: select([['decimal', 'decimal'], ['integer', 'integer']],
      (c.numberFormat && c.numberFormat.type) || 'decimal'),
    decimalPlaces: el('input', { type: 'number', min: 0, max: 20,
      value: c.numberFormat && c.numberFormat.decimalPlaces != null ? c.numberFormat.decimalPlaces : '' }),
    zoneOffset: el('input', { type: 'text', placeholder: '+00:00',
      value: (c.dateTimeFormat && c.dateTimeFormat.zoneOffset) || '' }),
    refGrid: el('input', { type: 'text', value: (c.reference && c.reference.gridId) || '' }),
    refColumn: el('input', { type: 'text', value: (c.reference && c.reference.columnId) || '' }),
    refMultiple: el('input', { type: 'checkbox',
      checked: Boolean(c.reference && c.reference.selectionType === 'multiple') }),
    formulaText: el('textarea', { rows: 2,
      value: (c.formula && c.formula.formulaText) || '' }),
  };
}

/** The labelled controls shown for `type`. */
function typeFields(type, i) {
  switch (type) {
    case 'language': return [field('Language code', i.languageCode),
      field('Role', i.localizationType, 'A target language follows a source through a dependency.')];
    case 'singleSelection':
    case 'multipleSelections':
      return [field('Options', i.options, `One per line; "value : color" with a color among ${COLORS.join(', ')}.`)];
    case 'number': return [field('Number type', i.numberType), field('Decimal places', i.decimalPlaces)];
    case 'datetime': return [field('Time zone offset', i.zoneOffset)];
    case 'reference': return [field('Referenced grid id', i.refGrid),
      field('Referenced column id', i.refColumn), field('Several records', i.refMultiple)];
    case 'formula': return [field('Formula', i.formulaText, 'e.g. CONCAT([key], "_", UPPER([enUS]))')];
    default: return [];
  }
}

/** The type-specific fields of a ColumnRequest. */
function typeRequest(type, i) {
  switch (type) {
    case 'language': return {
      languageCode: i.languageCode.value.trim() || undefined,
      localizationType: i.localizationType.value || undefined };
    case 'singleSelection':
    case 'multipleSelections': return { selection: { options: parseOptions(i.options.value) } };
    case 'number': return { numberFormat: {
      type: i.numberType.value,
      decimalPlaces: i.decimalPlaces.value === '' ? undefined : Number(i.decimalPlaces.value) } };
    case 'datetime': return i.zoneOffset.value.trim()
      ? { dateTimeFormat: { zoneOffset: i.zoneOffset.value.trim() } } : {};
    case 'reference': return { reference: {
      gridId: i.refGrid.value.trim(), columnId: i.refColumn.value.trim(),
      selectionType: i.refMultiple.checked ? 'multiple' : 'single' } };
    case 'formula': return { formula: { formulaText: i.formulaText.value } };
    default: return {};
  }
}

/** A column form for `view` (`column` to edit, or none to add); `done(column)` after a save. */
export function columnForm(ctx, viewId, column, done) {
  const status = statusLine();
  const name = el('input', { type: 'text', required: true, value: column ? column.name : '' });
  const id = el('input', { type: 'text', value: column ? column.id : '', pattern: '[A-Za-z0-9]\\w*' });
  const type = select(TYPES.map((t) => [t, t]), column ? column.type : 'singleLine');
  const inputs = typeInputs(column);
  const extra = el('div', { class: 'panel-type-fields' });
  const showType = () => fill(extra, typeFields(type.value, inputs));
  type.addEventListener('change', showType);
  showType();
  const save = action(column ? 'Save column' : 'Add column', async () => {
    const body = { name: name.value.trim(), type: type.value, ...typeRequest(type.value, inputs) };
    const newId = id.value.trim();
    if (!body.name) throw new Error('The column needs a name.');
    let answer;
    if (column) {
      if (newId && newId !== column.id) body.newId = newId;
      answer = await ctx.api.send('PATCH', `/v1/views/${seg(viewId)}/columns/${seg(column.id)}`, body);
    } else {
      if (newId) body.id = newId;
      answer = await ctx.api.send('POST', `/v1/views/${seg(viewId)}/columns`, body);
    }
    status.show(`Saved column "${answer.body.name}".`);
    await done(answer.body);
  }, status, { class: 'primary', 'data-panel': 'save-column' });
  const form = el('form', { class: 'panel-form', 'aria-label': column ? `Edit column ${column.name}` : 'Add a column',
    onsubmit: (e) => { e.preventDefault(); save.click(); } },
  field('Name', name), field('Id', id, column ? 'Renames the column id.' : 'Optional; generated when empty.'),
  field('Type', type, column ? 'Changing the type converts the cells the API can.' : undefined),
  extra, save, status.node);
  return form;
}
