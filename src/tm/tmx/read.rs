//! The TMX reader: a streaming pass with quick-xml over the events, the open elements on a
//! bounded stack, one `Unit` built at a time and handed to the caller.

use std::io::BufRead;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::{
    escape, parse_date, Header, TmxError, Unit, Variant, MAX_DEPTH, MAX_PROPS, MAX_SEG_BYTES,
    MAX_VARIANTS,
};

/// Elements whose content is native code, not text.
const NATIVE: [&[u8]; 5] = [b"bpt", b"ept", b"ph", b"it", b"ut"];

/// Where the reader is.
#[derive(Debug, Default)]
struct State {
    /// Names of the open elements.
    open: Vec<Vec<u8>>,
    header: Header,
    unit: Option<Unit>,
    units: usize,
    /// The text of the `prop` (its type) or `note` being read.
    field: Option<(Option<String>, String)>,
    variant: Option<Variant>,
    /// The `seg` being read: its depth, its markup, whether it has elements, and how many
    /// native-code elements are open.
    seg: Option<Seg>,
}

#[derive(Debug, Default)]
struct Seg {
    depth: usize,
    markup: String,
    text: String,
    elements: bool,
    native: usize,
}

fn xml_error<R>(reader: &Reader<R>, err: impl std::fmt::Display) -> TmxError {
    TmxError::Xml { at: reader.buffer_position(), reason: err.to_string() }
}

/// The attribute `name` of an element, unescaped.
fn attribute<R>(
    reader: &Reader<R>,
    e: &BytesStart<'_>,
    names: &[&[u8]],
) -> Result<Option<String>, TmxError> {
    for attr in e.attributes() {
        let attr = attr.map_err(|err| xml_error(reader, err))?;
        if names.contains(&attr.key.as_ref()) {
            let value = attr
                .decode_and_unescape_value(reader.decoder())
                .map_err(|err| xml_error(reader, err))?;
            return Ok(Some(value.into_owned()));
        }
    }
    Ok(None)
}

/// The element's start tag as markup (`<name a="v">`, or `<name a="v"/>` when `empty`).
fn start_markup<R>(
    reader: &Reader<R>,
    e: &BytesStart<'_>,
    empty: bool,
) -> Result<String, TmxError> {
    let mut out = format!("<{}", String::from_utf8_lossy(e.name().as_ref()));
    for attr in e.attributes() {
        let attr = attr.map_err(|err| xml_error(reader, err))?;
        let value = attr
            .decode_and_unescape_value(reader.decoder())
            .map_err(|err| xml_error(reader, err))?;
        out.push_str(&format!(
            r#" {}="{}""#,
            String::from_utf8_lossy(attr.key.as_ref()),
            escape(&value)
        ));
    }
    out.push_str(if empty { "/>" } else { ">" });
    Ok(out)
}

impl State {
    fn parent(&self) -> &[u8] {
        self.open.last().map_or(b"", Vec::as_slice)
    }

    fn seg_grew(&self) -> Result<(), TmxError> {
        match &self.seg {
            Some(seg) if seg.markup.len() > MAX_SEG_BYTES || seg.text.len() > MAX_SEG_BYTES => {
                Err(TmxError::SegTooLarge { unit: self.units })
            }
            _ => Ok(()),
        }
    }

    /// An element starts (`empty`: and ends at once, which may finish a unit).
    fn start<R>(
        &mut self,
        reader: &Reader<R>,
        e: &BytesStart<'_>,
        empty: bool,
    ) -> Result<Option<Unit>, TmxError> {
        let name = e.name().as_ref().to_vec();
        if self.open.is_empty() && name != b"tmx" {
            return Err(TmxError::NotTmx(String::from_utf8_lossy(&name).into_owned()));
        }
        if self.open.len() >= MAX_DEPTH {
            return Err(TmxError::TooDeep);
        }
        if let Some(seg) = &mut self.seg {
            seg.markup.push_str(&start_markup(reader, e, empty)?);
            seg.elements = true;
            if !empty {
                seg.native += usize::from(NATIVE.contains(&name.as_slice()));
                self.open.push(name);
            }
            self.seg_grew()?;
            return Ok(None);
        }
        self.structure(reader, e, &name)?;
        self.open.push(name);
        if empty {
            return self.end();
        }
        Ok(None)
    }

    /// An element outside any `seg` starts.
    fn structure<R>(
        &mut self,
        reader: &Reader<R>,
        e: &BytesStart<'_>,
        name: &[u8],
    ) -> Result<(), TmxError> {
        match (self.parent(), name) {
            (b"tmx", b"header") => self.header.srclang = attribute(reader, e, &[b"srclang"])?,
            (b"body", b"tu") => {
                self.units += 1;
                let date = |names: &[&[u8]]| -> Result<Option<i64>, TmxError> {
                    Ok(attribute(reader, e, names)?.as_deref().and_then(parse_date))
                };
                self.unit = Some(Unit {
                    tuid: attribute(reader, e, &[b"tuid"])?,
                    srclang: attribute(reader, e, &[b"srclang"])?,
                    creation_ms: date(&[b"creationdate"])?,
                    creation_id: attribute(reader, e, &[b"creationid"])?,
                    change_ms: date(&[b"changedate"])?,
                    change_id: attribute(reader, e, &[b"changeid"])?,
                    ..Unit::default()
                });
            }
            (b"tu", b"prop") => {
                self.field = Some((
                    Some(attribute(reader, e, &[b"type"])?.unwrap_or_default()),
                    String::new(),
                ))
            }
            (b"tu", b"note") => self.field = Some((None, String::new())),
            (b"tu", b"tuv") => {
                let lang = attribute(reader, e, &[b"xml:lang", b"lang"])?.unwrap_or_default();
                if !crate::tm::text::valid_language(&lang) {
                    return Err(TmxError::NoLanguage { unit: self.units });
                }
                self.variant = Some(Variant { lang, ..Variant::default() });
            }
            (b"tuv", b"seg") if self.variant.is_some() => {
                self.seg = Some(Seg { depth: self.open.len() + 1, ..Seg::default() })
            }
            _ => {}
        }
        Ok(())
    }

    fn text(&mut self, text: &str) -> Result<(), TmxError> {
        if let Some(seg) = &mut self.seg {
            seg.markup.push_str(&escape(text));
            if seg.native == 0 {
                seg.text.push_str(text);
            }
            return self.seg_grew();
        }
        if let Some((_, value)) = &mut self.field {
            if value.len() + text.len() > MAX_SEG_BYTES {
                return Err(TmxError::SegTooLarge { unit: self.units });
            }
            value.push_str(text);
        }
        Ok(())
    }

    /// The innermost element ends; a finished unit is answered.
    fn end(&mut self) -> Result<Option<Unit>, TmxError> {
        let name = self.open.pop().unwrap_or_default();
        if let Some(seg) = &mut self.seg {
            if self.open.len() >= seg.depth {
                seg.markup.push_str(&format!("</{}>", String::from_utf8_lossy(&name)));
                if NATIVE.contains(&name.as_slice()) {
                    seg.native = seg.native.saturating_sub(1);
                }
                self.seg_grew()?;
                return Ok(None);
            }
            let seg = self.seg.take().unwrap_or_default();
            if let Some(variant) = &mut self.variant {
                variant.text = seg.text;
                variant.markup = seg.elements.then_some(seg.markup);
            }
            return Ok(None);
        }
        let unit = self.units;
        match name.as_slice() {
            b"prop" | b"note" => {
                if let (Some((kind, value)), Some(tu)) = (self.field.take(), &mut self.unit) {
                    match kind {
                        Some(kind) if tu.props.len() < MAX_PROPS => tu.props.push((kind, value)),
                        None if tu.notes.len() < MAX_PROPS => tu.notes.push(value),
                        _ => {
                            return Err(TmxError::TooMany {
                                unit,
                                what: "props or notes",
                                limit: MAX_PROPS,
                            })
                        }
                    }
                }
            }
            b"tuv" => {
                if let (Some(variant), Some(tu)) = (self.variant.take(), &mut self.unit) {
                    if tu.variants.len() >= MAX_VARIANTS {
                        return Err(TmxError::TooMany {
                            unit,
                            what: "variants",
                            limit: MAX_VARIANTS,
                        });
                    }
                    tu.variants.push(variant);
                }
            }
            b"tu" => return Ok(self.unit.take()),
            _ => {}
        }
        Ok(None)
    }
}

/// Reads a TMX document, handing each `tu` to `on_unit` as it ends; answers the header. Refuses
/// a file without any `tu`.
pub fn read_tmx<R: BufRead>(
    input: R,
    mut on_unit: impl FnMut(&Header, Unit) -> Result<(), TmxError>,
) -> Result<Header, TmxError> {
    let mut reader = Reader::from_reader(input);
    reader.config_mut().trim_text(false);
    let mut state = State::default();
    let mut buf = Vec::new();
    loop {
        let event = reader.read_event_into(&mut buf).map_err(|err| xml_error(&reader, err))?;
        match event {
            Event::DocType(_) => return Err(TmxError::Doctype),
            Event::Start(e) => state.start(&reader, &e, false).map(|_| ())?,
            Event::Empty(e) => {
                if let Some(unit) = state.start(&reader, &e, true)? {
                    on_unit(&state.header, unit)?;
                }
            }
            Event::End(_) => {
                if let Some(unit) = state.end()? {
                    on_unit(&state.header, unit)?;
                }
            }
            Event::Text(t) => {
                let text = t.unescape().map_err(|err| xml_error(&reader, err))?;
                state.text(&text)?;
            }
            Event::CData(t) => state.text(&String::from_utf8_lossy(&t.into_inner()))?,
            Event::Eof if state.open.is_empty() => break,
            Event::Eof => {
                let open = String::from_utf8_lossy(state.parent()).into_owned();
                return Err(xml_error(&reader, format!("the file ends inside <{open}>")));
            }
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
        }
        buf.clear();
    }
    if state.units == 0 {
        return Err(TmxError::Empty);
    }
    Ok(state.header)
}
