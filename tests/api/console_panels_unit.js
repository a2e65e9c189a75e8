// Unit tests of the panels' parsers, run inside the console page by tests/api/console_panels.rs
// (the modules are ES modules of the page: no Node.js needed). The expression resolves to a
// JSON list of failures, empty when every check holds.
(async () => {
  const base = document.querySelector('script[type=module]').src.replace(/app\.js$/, '');
  const csv = await import(`${base}panels/csv_preview.js`);
  const live = await import(`${base}panels/live.js`);
  const form = await import(`${base}panels/column_form.js`);
  const keys = await import(`${base}panels/keys.js`);
  const transfer = await import(`${base}panels/transfer.js`);
  const xlsx = await import(`${base}panels/xlsx_preview.js`);
  const failures = [];
  const eq = (name, got, want) => {
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      failures.push(`${name}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    }
  };
  const throws = (name, run) => {
    try { run(); failures.push(`${name}: did not throw`); } catch { /* expected */ }
  };

  // CSV/TSV heads: quotes, doubled quotes, CRLF, a BOM, a cut-off last row, bounds.
  eq('csv quoted', csv.parseDelimited('\ufeffa,"b ""x""",c\r\n1,"two\nlines",3\n4,5', ','),
    [['a', 'b "x"', 'c'], ['1', 'two\nlines', '3'], ['4', '5']]);
  eq('csv cut off', csv.parseDelimited('a,b\n1,2\n3,4', ',', 6, false), [['a', 'b'], ['1', '2']]);
  eq('tsv', csv.parseDelimited('a\tb\n1\t2\n', '\t'), [['a', 'b'], ['1', '2']]);
  eq('rows bounded', csv.parseDelimited('1\n2\n3\n4\n', ',', 2).length, 2);
  eq('field bounded', csv.parseDelimited('x'.repeat(5000), ',')[0][0].length, csv.PREVIEW_FIELD);
  eq('columns bounded', csv.parseDelimited(','.repeat(5000), ',')[0].length, csv.PREVIEW_COLUMNS);
  eq('unclosed quote', csv.parseDelimited('"abc', ','), [['abc']]);
  eq('empty', csv.parseDelimited('', ','), []);
  const columns = [{ id: 'en', name: 'English', type: 'language' }, { id: 'f', name: 'F', type: 'formula' }];
  eq('guess by name', csv.guessTarget(' English ', columns), 'en');
  eq('guess by id', csv.guessTarget('en', columns), 'en');
  eq('formula ignored', csv.guessTarget('F', columns), '');
  eq('record id', csv.guessTarget('Record ID', columns), '_recordId');
  eq('path', csv.guessTarget('_path', columns), '_path');
  eq('unknown', csv.guessTarget('nope', columns), '');
  eq('request', csv.importRequest(['_recordId', '', 'en'], true), {
    withHeader: false, firstDataRow: 2,
    columnMappings: [{ columnId: '_recordId', fileColumnIndex: 0 }, { columnId: 'en', fileColumnIndex: 2 }],
  });
  eq('request without header', csv.importRequest(['en'], false).firstDataRow, 1);
  throws('two columns one target', () => csv.importRequest(['en', 'en'], true));
  throws('no view column', () => csv.importRequest(['_recordId', ''], true));

  // Server-sent events: comments, CRLF, an event split across chunks, multi-line data, bounds.
  const parser = new live.SseParser(200);
  eq('sse first', parser.push(': hello\n\nevent: records\nid: 7\ndata: {"position":7,\ndata: "records":[{"id":"a"}],"deleted":[{"id":"b","path":""}]}\n\nevent: sch'),
    [{ event: 'records', id: '7', data: '{"position":7,\n"records":[{"id":"a"}],"deleted":[{"id":"b","path":""}]}' }]);
  eq('sse split', parser.push('ema\r\ndata: {}\r\n\r\n'), [{ event: 'schema', id: null, data: '{}' }]);
  throws('sse too large', () => parser.push(`data: ${'x'.repeat(300)}`));
  throws('sse too large without newline', () => new live.SseParser(100).push('x'.repeat(150)));
  eq('change of records', live.changeOf({ event: 'records', data: '{"position":7,"records":[{"id":"a"}],"deleted":[{"id":"b","path":""}]}' }).ids, ['a', 'b']);
  eq('change of schema', live.changeOf({ event: 'schema', data: '{}' }), { kind: 'schema' });
  eq('change of resync', live.changeOf({ event: 'resync', data: '{}' }), { kind: 'resync' });
  eq('change of other', live.changeOf({ event: 'message', data: '' }), null);

  // Selection option lines, key id lists, file types, download names.
  eq('options', form.parseOptions('Red : brightRed\n\nplain\nratio 1:2\n'),
    [{ value: 'Red', color: 'brightRed' }, { value: 'plain' }, { value: 'ratio 1:2' }]);
  eq('options bounded', form.parseOptions('x\n'.repeat(3000)).length, 1000);
  eq('id list', keys.idList(' a, b\nc ,, '), ['a', 'b', 'c']);
  eq('file types', ['a.CSV', 'b.tsv', 'c.xlsx', 'd.xls', 'e'].map(transfer.fileType), ['csv', 'tsv', 'xlsx', null, null]);
  eq('download name', transfer.downloadName('attachment; filename="a b.csv"; filename*=UTF-8\'\'%C3%A9t%C3%A9.csv', 'x'), 'été.csv');
  eq('download plain', transfer.downloadName('attachment; filename="grid.xlsx"', 'x'), 'grid.xlsx');
  eq('download none', transfer.downloadName(null, 'export.csv'), 'export.csv');
  // XLSX heads: the first sheet by the workbook's relationships, shared, rich and inline
  // strings, numbers, gaps between cells; something else is refused, not read.
  const book = Uint8Array.from(atob('UEsDBBQAAAAIAFg+e10lu2+/RwAAAFsAAAAPAAAAeGwvd29ya2Jvb2sueG1ssynPL8pOys/PVqjIzckrtiqyVapQsrMpzkhNLSmG0gp5ibmptkrBSgpgrmeKrZKhkkKRVSaQUeSZYq6kb2ejD9OhDzPQDgBQSwMEFAAAAAgAWD57XT6aEntKAAAAXwAAABoAAAB4bC9fcmVscy93b3JrYm9vay54bWwucmVsc7MJSs1JLMnMzyvOyCwotrNB5ip4ptgqFXmmmCsphFQWpNoqlQAZiUXpqSW2SuX5RdnFGampJcX6+SUZqUV6Fbk5Svp2Nvqo5gEAUEsDBBQAAAAIAFg+e115L6+UWwAAAIQAAAAUAAAAeGwvc2hhcmVkU3RyaW5ncy54bWyzKS4usbMpzrSzKbELSk3OL0pR8HSx0QeK6YMEIRKueek5mcUZqMJFIBmPVIhgEYSvUJGbY1VckJicaqtUUJRanFpUlqpkl5OTr6CWmFtgrZBUiVAPNkgfZD0AUEsDBBQAAAAIAFg+e13tzQNYewAAAOoAAAAXAAAAeGwvd29ya3NoZWV0cy9vdGhlci54bWyzKc8vyi7OSE0tsbMBUy6JJYl2NkX55QpFtkqGSnY2ySCGo6GSQomtUjGQX2ZnYKNfZmejnwyVc0aWM4TL6QPNgBtkBDfICKw4My8nMy81uKQIKJ5ZbGdTYpcN1Al0gz6IhzDaCMloI1RrXYzAosZ6pmhW6iP5Qx/hPQBQSwECFAMUAAAACABYPntdJbtvv0cAAABbAAAADwAAAAAAAAAAAAAAgAEAAAAAeGwvd29ya2Jvb2sueG1sUEsBAhQDFAAAAAgAWD57XT6aEntKAAAAXwAAABoAAAAAAAAAAAAAAIABdAAAAHhsL19yZWxzL3dvcmtib29rLnhtbC5yZWxzUEsBAhQDFAAAAAgAWD57XXkvr5RbAAAAhAAAABQAAAAAAAAAAAAAAIAB9gAAAHhsL3NoYXJlZFN0cmluZ3MueG1sUEsBAhQDFAAAAAgAWD57Xe3NA1h7AAAA6gAAABcAAAAAAAAAAAAAAIABgwEAAHhsL3dvcmtzaGVldHMvb3RoZXIueG1sUEsFBgAAAAAEAAQADAEAADMCAAAAAA=='), (c) => c.charCodeAt(0));
  eq('xlsx head', await xlsx.readXlsxHead(new Blob([book]), 6),
    [['Record ID', '', 'English'], ['k1', '', 'Hello & bye', '3.5']]);
  eq('xlsx one row', (await xlsx.readXlsxHead(new Blob([book]), 1)).length, 1);
  eq('column of', ['A1', 'Z9', 'AA3', '1'].map(xlsx.columnOf), [0, 25, 26, -1]);
  eq('xml entities', xlsx.unescapeXml('&lt;a&gt; &amp;&#233;&#x4e2d;&quot;'), '<a> &é中"');
  eq('rows bounded', xlsx.sheetRows('<row><c r="A1"><v>1</v></c></row>'.repeat(50), 3).length, 3);
  eq('columns bounded', xlsx.sheetRows('<row><c r="ZZZ1"><v>1</v></c><c r="B1"><v>2</v></c></row>', 1), [[{ col: 1, type: 'n', value: '2' }]]);
  let refused = false;
  try { await xlsx.readXlsxHead(new Blob(['not a zip']), 6); } catch { refused = true; }
  eq('not a zip', refused, true);
  return JSON.stringify(failures);
})()
