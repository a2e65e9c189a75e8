//! The JSON of a records write read without serde's machinery, for the body nearly every bulk
//! write sends: `[{"id": .., "path": .., "cells": [{"columnId": .., "value": ..}, ..]}, ..]`.
//! Through serde a cell cost about 90 ns beyond scanning its bytes (an `Option` of a 32-byte
//! value returned through the stack at each step): reading the records was a quarter of the
//! server's CPU during a bulk load.
//!
//! It owns only the reading of that shape, and answers `None` for anything else it meets: an
//! unknown or repeated field, an escaped key, a value that is an object or a list of other than
//! strings, a number in a list, bytes after the end. `None` sends the body to serde
//! (`RecordsBody`'s and `RecordInput`'s own `Deserialize`), which then gives the answer, or the error, it always
//! gave. So this reader needs to be right only about what it accepts: what it answers equals
//! serde's answer for the same body (a property test compares both on bodies of every shape).
//! Strings with escapes and numbers are handed to `serde_json` as they stand (one string, one
//! number), so their meaning is serde's to the bit.
//!
//! Grammar read (JSON whitespace anywhere between tokens):
//! ```text
//! body    = "[" [record {"," record}] "]"
//! record  = "{" [field {"," field}] "}"      fields: id, path, ifMatch (string or null),
//!                                             markUpdatedCellsWithMTFlag (bool or null), cells
//! cells   = "[" [cell {"," cell}] "]"
//! cell    = "{" [key ":" value {"," ...}] "}"  keys: columnId, dependencyStatus, sourceStatus
//!                                             (string or null), value, referencedIds
//! value   = string | number | true | false | null | "[" [string {"," string}] "]"
//! ```

use serde_json::Value;

use super::input::{CellInput, RecordInput, RecordsBody, StatusesIn, ValueIn};
use super::MAX_RECORDS_PER_REQUEST;

/// The records of `body` (valid UTF-8, as `SizedJson` checked it), or `None` when the body is
/// not of the shape read here (serde then reads it). Records past `MAX_RECORDS_PER_REQUEST` are
/// read, dropped and counted (`RecordsBody`).
pub fn parse_records(body: &str) -> Option<RecordsBody> {
    let mut scan = Scan { text: body, at: 0, scratch: String::new() };
    scan.expect(b'[')?;
    let mut records = RecordsBody::default();
    if !scan.eat(b']') {
        loop {
            if records.records.len() < MAX_RECORDS_PER_REQUEST {
                records.records.push(RecordInput::default());
                scan.record(records.records.last_mut().expect("just pushed"))?;
            } else {
                scan.record(&mut RecordInput::default())?;
            }
            records.count += 1;
            if scan.eat(b']') {
                break;
            }
            scan.expect(b',')?;
        }
    }
    scan.skip_space();
    (scan.at == body.len()).then_some(records)
}

/// A place in the body being read.
struct Scan<'a> {
    text: &'a str,
    at: usize,
    /// A string holding escapes, read (`unescape`) before it is copied out at its length.
    scratch: String,
}

/// The fields of a record, each a bit of the set read so far (a field given twice is serde's).
const ID: u8 = 1;
const PATH: u8 = 2;
const CELLS: u8 = 4;
const MARK_MT: u8 = 8;
const IF_MATCH: u8 = 16;
const RECORD_FIELDS: [(&str, u8); 5] = [
    ("id", ID),
    ("path", PATH),
    ("cells", CELLS),
    ("markUpdatedCellsWithMTFlag", MARK_MT),
    ("ifMatch", IF_MATCH),
];

/// The fields of a cell, likewise.
const COLUMN_ID: u8 = 1;
const VALUE: u8 = 2;
const REFERENCED_IDS: u8 = 4;
const DEPENDENCY: u8 = 8;
const SOURCE: u8 = 16;
const CELL_FIELDS: [(&str, u8); 5] = [
    ("columnId", COLUMN_ID),
    ("value", VALUE),
    ("referencedIds", REFERENCED_IDS),
    ("dependencyStatus", DEPENDENCY),
    ("sourceStatus", SOURCE),
];

/// The bit of field `key` among `fields`, marked in `seen`; `None` for a key not among them
/// or one already seen.
fn field(key: &str, fields: &[(&str, u8)], seen: &mut u8) -> Option<u8> {
    let &(_, bit) = fields.iter().find(|(name, _)| *name == key)?;
    if *seen & bit != 0 {
        return None;
    }
    *seen |= bit;
    Some(bit)
}

impl<'a> Scan<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes().get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after any whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.bytes().get(self.at).copied()
    }

    /// Consumes `byte` if it comes next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        self.at += usize::from(next);
        next
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// Consumes `word` (`null`, `true`, `false`) if it comes next.
    fn eat_word(&mut self, word: &str) -> bool {
        let next =
            self.bytes().get(self.at..).is_some_and(|rest| rest.starts_with(word.as_bytes()));
        if next {
            self.at += word.len();
        }
        next
    }

    /// Reads a JSON object's members, `member` reading each value after its key. `None` if
    /// the next token is not an object or `member` gives up.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.expect(b'{')?;
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            let key = self.raw_string()?;
            self.expect(b':')?;
            member(self, key)?;
            if self.eat(b'}') {
                return Some(());
            }
            self.expect(b',')?;
        }
    }

    /// The text between the quotes of a string without escapes, borrowed from the body.
    /// `None` if the next token is not a string, or is one holding an escape.
    fn raw_string(&mut self) -> Option<&'a str> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let from = self.at + 1;
        let end = next_special(self.bytes(), from)?;
        (self.bytes()[end] == b'"').then(|| {
            self.at = end + 1;
            &self.text[from..end]
        })
    }

    /// A string value: borrowed from the body when it holds no escape, read into `scratch`
    /// first when it does. `None` if the next token is not a string, holds a control character
    /// (which JSON forbids raw) or an escape `unescape` leaves to serde.
    fn string<T: for<'s> From<&'s str>>(&mut self) -> Option<T> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let from = self.at + 1;
        let special = next_special(self.bytes(), from)?;
        match self.bytes()[special] {
            b'"' => {
                self.at = special + 1;
                Some(T::from(&self.text[from..special]))
            }
            b'\\' => {
                self.unescape(from, special)?;
                Some(T::from(self.scratch.as_str()))
            }
            _ => None,
        }
    }

    /// Reads the rest of a string holding an escape into `scratch`: its text from `from` (just
    /// past its opening quote), whose first escape is at `escape`, to its closing quote, past
    /// which it leaves the scan. Escapes are read as serde_json reads them; `None` for one it
    /// refuses (an unknown escape, a `\u` escape of a lone surrogate), which then goes to serde
    /// for its error, and for a control character.
    ///
    /// Clients that write JSON in ASCII (Python's `json.dumps` by default) send every accented
    /// or non-Latin letter as a `\u` escape. Through `serde_json::from_str`, one string at a
    /// time, such strings were a fifth of the server's CPU during a bulk load; scanned for
    /// their end, then read again, they cost as much.
    fn unescape(&mut self, from: usize, mut escape: usize) -> Option<()> {
        let (text, bytes) = (self.text, self.bytes());
        self.scratch.clear();
        self.scratch.push_str(&text[from..escape]);
        loop {
            let (c, length) = read_escape(bytes, escape)?;
            self.scratch.push(c);
            let run = escape + length;
            // Escapes often follow one another (a Cyrillic or Chinese text is nothing else).
            let special = match *bytes.get(run)? {
                b'"' | b'\\' => run,
                byte if byte < 0x20 => return None,
                _ => next_special(bytes, run)?,
            };
            self.scratch.push_str(&text[run..special]);
            match bytes[special] {
                b'"' => {
                    self.at = special + 1;
                    return Some(());
                }
                b'\\' => escape = special,
                _ => return None,
            }
        }
    }

    /// `null` as `None`, a string as `Some`, as serde reads an `Option` of a string.
    fn optional_string<T: for<'s> From<&'s str>>(&mut self) -> Option<Option<T>> {
        if self.peek() == Some(b'n') {
            return self.eat_word("null").then_some(None);
        }
        self.string().map(Some)
    }

    fn optional_bool(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b'n' => self.eat_word("null").then_some(None),
            b't' => self.eat_word("true").then_some(Some(true)),
            b'f' => self.eat_word("false").then_some(Some(false)),
            _ => None,
        }
    }

    /// A list of strings; `None` for a list holding anything else.
    fn strings(&mut self) -> Option<Vec<String>> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        if self.eat(b']') {
            return Some(items);
        }
        loop {
            items.push(self.string()?);
            if self.eat(b']') {
                return Some(items);
            }
            self.expect(b',')?;
        }
    }

    /// A number, read by serde_json from its own characters.
    fn number(&mut self) -> Option<ValueIn> {
        let start = self.at;
        let length = self.bytes()[start..]
            .iter()
            .take_while(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .count();
        self.at += length;
        serde_json::from_str(&self.text[start..self.at]).ok()
    }

    /// A cell's `value`.
    fn value(&mut self) -> Option<ValueIn> {
        Some(match self.peek()? {
            b'"' => ValueIn::String(self.string()?),
            b'n' => self.eat_word("null").then_some(ValueIn::Null)?,
            b't' | b'f' => ValueIn::Bool(self.optional_bool()??),
            b'-' | b'0'..=b'9' => self.number()?,
            b'[' => ValueIn::Array(self.strings()?.into_iter().map(Value::String).collect()),
            _ => return None,
        })
    }

    /// Reads a cell into `cell` (a default one), in place: a cell built aside and moved into
    /// its list cost more than reading it.
    fn cell(&mut self, cell: &mut CellInput) -> Option<()> {
        let mut seen = 0u8;
        let (mut dependency, mut source, mut referenced_ids) = (None, None, None);
        self.object(|scan, key| {
            match field(key, &CELL_FIELDS, &mut seen)? {
                COLUMN_ID => cell.column_id = scan.optional_string()?,
                VALUE => cell.value = Some(scan.value()?),
                REFERENCED_IDS if scan.peek() == Some(b'n') => {
                    scan.eat_word("null").then_some(())?
                }
                REFERENCED_IDS => referenced_ids = Some(scan.strings()?),
                DEPENDENCY => dependency = scan.optional_string()?,
                _ => source = scan.optional_string()?,
            }
            Some(())
        })?;
        if dependency.is_some() || source.is_some() {
            cell.statuses = Some(Box::new(StatusesIn { dependency, source }));
        }
        if let Some(ids) = referenced_ids {
            if cell.value.is_some() {
                return None;
            }
            cell.value = Some(ValueIn::Array(ids.into_iter().map(Value::String).collect()));
        }
        Some(())
    }

    fn cells(&mut self) -> Option<Vec<CellInput>> {
        self.expect(b'[')?;
        if self.eat(b']') {
            return Some(Vec::new());
        }
        // As `cells_with_room`: room for a typical record's cells from the start.
        let mut cells = Vec::with_capacity(16);
        loop {
            cells.push(CellInput::default());
            self.cell(cells.last_mut().expect("just pushed"))?;
            if self.eat(b']') {
                return Some(cells);
            }
            self.expect(b',')?;
        }
    }

    /// Reads a record into `record` (a default one), in place as `cell`.
    fn record(&mut self, record: &mut RecordInput) -> Option<()> {
        let mut seen = 0u8;
        self.object(|scan, key| {
            match field(key, &RECORD_FIELDS, &mut seen)? {
                ID => record.id = scan.optional_string()?,
                PATH => record.path = scan.optional_string()?,
                CELLS => record.cells = scan.cells()?,
                MARK_MT => record.mark_mt = scan.optional_bool()?,
                _ => record.if_match = scan.optional_string()?,
            }
            Some(())
        })
    }
}

/// The character the escape at `at` (a backslash) stands for and the escape's length, as
/// serde_json reads it; `None` for an unknown escape or a `\u` escape of a lone surrogate.
fn read_escape(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let kind = *bytes.get(at + 1)?;
    // `\u` first, by far the most frequent; the two-byte escapes through a table rather than a
    // `match`, which compiled to an indirect jump at every escape (3% of reading an
    // ASCII-written body in `benches/ingest.rs`).
    if kind == b'u' {
        return match hex4(bytes, at + 2)? {
            high @ 0xD800..=0xDBFF => {
                if bytes.get(at + 6..at + 8)? != b"\\u" {
                    return None;
                }
                let low = hex4(bytes, at + 8)?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return None;
                }
                Some((char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))?, 12))
            }
            code => Some((char::from_u32(code)?, 6)),
        };
    }
    let c = *SHORT_ESCAPES.get(usize::from(kind))?;
    if c == 0 {
        return None;
    }
    Some((char::from(c), 2))
}

/// What each two-byte escape's second byte stands for, 0 where it is none.
const SHORT_ESCAPES: [u8; 128] = {
    let mut table = [0; 128];
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'/' as usize] = b'/';
    table[b'b' as usize] = 0x08;
    table[b'f' as usize] = 0x0c;
    table[b'n' as usize] = b'\n';
    table[b'r' as usize] = b'\r';
    table[b't' as usize] = b'\t';
    table
};

/// The value of the four hex digits at `at`, `None` where any is not one.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    bytes
        .get(at..at + 4)?
        .iter()
        .try_fold(0u32, |code, &b| Some(code << 4 | char::from(b).to_digit(16)?))
}

/// Where the first quote, backslash or control character (below 0x20) of `bytes` at or past
/// `at` is, looked for eight bytes at a time (a byte is zero in `word ^ repeated` exactly where
/// `word` holds that byte; `word - repeated(0x20)` borrows into a byte's high bit where it is
/// below 0x20), then byte by byte in the eight holding one.
fn next_special(bytes: &[u8], mut at: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = ONES * 0x80;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        let special = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word);
        if special & HIGHS != 0 {
            break;
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::parse_records;
    use crate::grid::records::{RecordsBody, MAX_RECORDS_PER_REQUEST};
    use proptest::prelude::*;

    fn serde(body: &str) -> Option<RecordsBody> {
        serde_json::from_str(body).ok()
    }

    #[test]
    fn the_usual_shape_reads_as_serde_reads_it() {
        let bodies = [
            "[]",
            " [ ] ",
            "[{}]",
            r#"[{"id": "r1", "path": "ui/menu", "cells": [{"columnId": "enUS", "value": "Grüße, 世界"},
                {"columnId": "count", "value": -12.5e3}, {"columnId": "final", "value": true},
                {"columnId": "tags", "value": ["a", "b"]}, {"columnId": "x", "value": null},
                {"columnId": "refs", "referencedIds": ["r2"]}, {"columnId": "big", "value": 18446744073709551616},
                {"columnId": "deDE", "value": "a \"quoted\" \\ word \u00e9 \ud83d\ude00", "dependencyStatus": "outOfDate",
                 "sourceStatus": null}]}]"#,
            r#"[{"id": null, "cells": [], "markUpdatedCellsWithMTFlag": false, "ifMatch": "\"3\""}]"#,
            r#"[{"cells": [{"columnId": null}, {"value": []}, {"referencedIds": null, "value": "v"}]}]"#,
            "[{\"id\":\"a\"},\n\t{\"id\":\"b\"}]\r\n",
            // As a client writing JSON in ASCII sends text.
            r#"[{"id": "r\u00e9", "cells": [{"columnId": "deDE", "value": "\u00dcbersetzt \u4E16\u754c \ud83d\ude00 \/ \b\f\n\r\t \"\\ \u0000"},
                {"columnId": "tags", "value": ["gr\u00fc\u00dfe", "\uDBFF\uDFFF"]}]}]"#,
        ];
        for body in bodies {
            let ours = parse_records(body);
            assert!(ours.is_some(), "{body}");
            assert_eq!(ours, serde(body), "{body}");
        }
    }

    #[test]
    fn any_other_shape_is_left_to_serde() {
        let bodies = [
            "",
            "{}",
            "[",
            "[{}",
            "[{},]",
            "[{}] x",
            "\u{feff}[]",
            r#"[{"id": "a", "id": "b"}]"#,
            r#"[{"other": 1}]"#,
            r#"[{"\u0069d": "a"}]"#,
            r#"[{"id": 7}]"#,
            r#"[{"cells": null}]"#,
            r#"[{"cells": [{"value": {"a": 1}}]}]"#,
            r#"[{"cells": [{"value": [1, 2]}]}]"#,
            r#"[{"cells": [{"value": 01}]}]"#,
            r#"[{"cells": [{"value": -}]}]"#,
            r#"[{"cells": [{"value": "\x"}]}]"#,
            r#"[{"cells": [{"value": "\ud800"}]}]"#,
            r#"[{"cells": [{"value": "\ude00"}]}]"#,
            r#"[{"cells": [{"value": "\ud83d\u0041"}]}]"#,
            r#"[{"cells": [{"value": "\u12g4"}]}]"#,
            r#"[{"cells": [{"value": "\u12"}]}]"#,
            "[{\"cells\": [{\"value\": \"tab\tinside\"}]}]",
            r#"[{"cells": [{"value": "a", "referencedIds": ["b"]}]}]"#,
            r#"[{"cells": [{"value": "a", "value": "b"}]}]"#,
            r#"[{"cells": [{"columnId": "a", "other": true}]}]"#,
            r#"[{"cells": [{"value": nul}]}]"#,
            r#"[{"cells": [{"value": "unterminated}]}]"#,
        ];
        for body in bodies {
            assert_eq!(parse_records(body), None, "{body}");
        }
    }

    #[test]
    fn records_past_the_limit_are_read_and_counted_not_kept() {
        for extra in [0, 1, 5000] {
            let n = MAX_RECORDS_PER_REQUEST + extra;
            let body = format!("[{}]", vec![r#"{"cells": [{}]}"#; n].join(","));
            let ours = parse_records(&body).expect("the usual shape");
            assert_eq!((ours.records.len(), ours.count), (MAX_RECORDS_PER_REQUEST, n));
            assert_eq!(Some(ours), serde(&body));
            // Serde reads a body of another shape the same way.
            let other = body.replace("{}", r#"{"other": 1}"#);
            assert_eq!(parse_records(&other), None);
            let theirs = serde(&other).expect("serde reads it");
            assert_eq!((theirs.records.len(), theirs.count), (MAX_RECORDS_PER_REQUEST, n));
        }
        // A malformed record past the limit is refused, as before.
        let body =
            format!("[{}, {{\"id\": 7}}]", vec!["{}"; MAX_RECORDS_PER_REQUEST + 1].join(","));
        assert_eq!(parse_records(&body), None);
        assert!(serde_json::from_str::<RecordsBody>(&body).is_err());
    }

    /// A JSON value's text, mostly of the shapes read here and some of every other.
    fn value_text() -> impl Strategy<Value = String> {
        let string = any::<String>().prop_map(|s| serde_json::to_string(&s).expect("a string"));
        let raw = "[ -~\\t\\u{0}\\u{1f}é世😀\\\\\"]{0,12}".prop_map(|s| format!("\"{s}\""));
        // As a client writing JSON in ASCII sends any text (`\u` escapes in either case).
        let ascii = (any::<String>(), any::<bool>()).prop_map(|(s, upper)| ascii_json(&s, upper));
        // Escapes of every kind, good and bad, among plain letters.
        let escapes = prop::collection::vec(prop::sample::select(ESCAPE_PIECES), 0..8)
            .prop_map(|pieces| format!("\"{}\"", pieces.concat()));
        prop_oneof![
            4 => string.clone(),
            2 => raw,
            2 => ascii,
            2 => escapes,
            1 => any::<i64>().prop_map(|n| n.to_string()),
            1 => any::<f64>().prop_map(|n| n.to_string()),
            1 => "-?[0-9]{1,25}(\\.[0-9]{0,5})?([eE][-+]?[0-9]{0,4})?",
            1 => Just("null".to_owned()),
            1 => any::<bool>().prop_map(|b| b.to_string()),
            1 => prop::collection::vec(string.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(","))),
            1 => Just("[1, \"a\"]".to_owned()),
            1 => Just("{\"k\": \"v\"}".to_owned()),
        ]
    }

    /// `text` as a JSON string in ASCII: each other character as `\u` escapes (a pair of them
    /// past U+FFFF), their hex digits in upper or lower case.
    fn ascii_json(text: &str, upper: bool) -> String {
        let mut out = String::from("\"");
        for c in text.chars() {
            if c.is_ascii() {
                let quoted = serde_json::to_string(&c.to_string()).expect("a string");
                out.push_str(&quoted[1..quoted.len() - 1]);
                continue;
            }
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&if upper {
                    format!("\\u{unit:04X}")
                } else {
                    format!("\\u{unit:04x}")
                });
            }
        }
        out.push('"');
        out
    }

    const ESCAPE_PIECES: &[&str] = &[
        "a",
        "é",
        "\\\"",
        "\\\\",
        "\\/",
        "\\b",
        "\\f",
        "\\n",
        "\\r",
        "\\t",
        "\\u00e9",
        "\\u00E9",
        "\\u0000",
        "\\uD83D\\uDE00",
        "\\ud83d\\ude00",
        "\\ud83d",
        "\\ude00",
        "\\uDBFF\\uDFFF",
        "\\ud83d\\u0041",
        "\\u12",
        "\\u12g4",
        "\\x",
        "\\",
        "\\u",
    ];

    /// An object's text from its members, keys drawn from `keys`, some repeated.
    fn object_text(
        keys: &'static [&'static str],
        value: impl Strategy<Value = String>,
    ) -> impl Strategy<Value = String> {
        let member = (prop::sample::select(keys), value).prop_map(|(k, v)| format!("\"{k}\": {v}"));
        prop::collection::vec(member, 0..5).prop_map(|m| format!("{{{}}}", m.join(", ")))
    }

    const CELL_KEYS: &[&str] = &[
        "columnId",
        "value",
        "value",
        "value",
        "referencedIds",
        "dependencyStatus",
        "sourceStatus",
        "other",
        "col\\u0075mnId",
    ];
    const RECORD_KEYS: &[&str] = &["id", "path", "markUpdatedCellsWithMTFlag", "ifMatch", "nope"];

    fn body_text() -> impl Strategy<Value = String> {
        let cell = object_text(CELL_KEYS, value_text());
        let cells = prop::collection::vec(cell, 0..4).prop_map(|c| format!("[{}]", c.join(",")));
        let record =
            (object_text(RECORD_KEYS, value_text()), cells).prop_map(
                |(fields, cells)| match fields.strip_suffix('}') {
                    Some(open) if open.len() > 1 => format!("{open}, \"cells\": {cells}}}"),
                    _ => format!("{{\"cells\": {cells}}}"),
                },
            );
        prop::collection::vec(record, 0..4).prop_map(|r| format!("[{}]", r.join(",\n ")))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The first special byte is found wherever it lies, as a plain look at each byte
        /// finds it.
        #[test]
        fn the_first_special_byte_is_found(
            bytes in prop::collection::vec(prop::sample::select(&b"ab\"\\\x00\x1f\x20\x7f\xc3"[..]), 0..80),
            at in 0usize..90,
        ) {
            let plain = bytes
                .get(at..)
                .and_then(|rest| rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20))
                .map(|i| at + i);
            prop_assert_eq!(super::next_special(&bytes, at), plain);
        }

        /// What is read here is what serde reads: whenever this reader answers, serde answers
        /// the same records.
        #[test]
        fn what_it_reads_serde_reads_alike(body in body_text()) {
            if let Some(ours) = parse_records(&body) {
                prop_assert_eq!(Some(ours), serde(&body), "{}", body);
            }
        }

        /// Likewise for a body cut short or with a byte changed anywhere.
        #[test]
        fn a_damaged_body_reads_alike_or_not_at_all(
            body in body_text(),
            at in any::<prop::sample::Index>(),
            byte in prop::sample::select(&b"\"\\,:[]{}0 ae\t"[..]),
            cut in any::<bool>(),
        ) {
            let mut at = at.index(body.len() + 1);
            while !body.is_char_boundary(at) {
                at -= 1;
            }
            let mut bytes = body.into_bytes();
            if cut {
                bytes.truncate(at);
            } else if at < bytes.len() && bytes[at].is_ascii() {
                bytes[at] = byte;
            }
            let body = String::from_utf8(bytes).expect("cut at a character, ASCII for ASCII");
            if let Some(ours) = parse_records(&body) {
                prop_assert_eq!(Some(ours), serde(&body), "{}", body);
            }
        }
    }
}
