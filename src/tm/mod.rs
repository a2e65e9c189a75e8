//! Translation memories' segments (issue 22): what a memory holds beyond its catalogue entry
//! (`catalog::transmems` keeps the name, links and settings). Owns the segment store
//! (`store`: sled trees, flushed before a write is acknowledged), the lookup index (`index`,
//! scored as `text` documents), TMX reading and writing (`tmx`) and the conversions between
//! TMX units and segments (here). Knows nothing of HTTP, the catalogue or grids: the API's
//! `transmems` module reads grids and feeds segments in.

pub mod index;
pub mod segment;
pub mod store;
pub mod table;
pub mod text;
pub mod tmx;

use segment::{Origin, Segment, SegmentKey, Side};
use text::{language_key, normalize};
use tmx::{Header, Unit, Variant};

/// The language a unit's source is in: its own `srclang`, else the header's, else its first
/// variant's (`*all*` names none).
fn unit_source_lang<'a>(header: &'a Header, unit: &'a Unit) -> Option<&'a str> {
    let named = |lang: &'a Option<String>| lang.as_deref().filter(|l| *l != "*all*");
    named(&unit.srclang)
        .or_else(|| named(&header.srclang))
        .or_else(|| unit.variants.first().map(|v| v.lang.as_str()))
}

/// The segments of a TMX unit: one per variant in another language than the source's, with a
/// non-empty text; none when the unit has no variant in its source language or an empty
/// source. Times and users come from the unit when it has them, else `now_ms` and `user`.
pub fn unit_segments(header: &Header, unit: &Unit, user: &str, now_ms: i64) -> Vec<Segment> {
    let Some(source_lang) = unit_source_lang(header, unit).map(language_key) else {
        return Vec::new();
    };
    let Some(source) = unit.variants.iter().find(|v| language_key(&v.lang) == source_lang) else {
        return Vec::new();
    };
    if normalize(&source.text).is_empty() {
        return Vec::new();
    }
    let side =
        |v: &Variant| Side { lang: v.lang.clone(), text: v.text.clone(), markup: v.markup.clone() };
    let created_ms = unit.creation_ms.unwrap_or(now_ms);
    let created_by = unit.creation_id.clone().unwrap_or_else(|| user.to_owned());
    unit.variants
        .iter()
        .filter(|v| language_key(&v.lang) != source_lang && !v.text.trim().is_empty())
        .map(|target| Segment {
            source: side(source),
            target: side(target),
            created_ms,
            created_by: created_by.clone(),
            changed_ms: unit.change_ms.unwrap_or(created_ms),
            changed_by: unit.change_id.clone().unwrap_or_else(|| created_by.clone()),
            origin: Origin::Import,
            props: unit.props.clone(),
            notes: unit.notes.clone(),
        })
        .collect()
}

/// Which segments an export writes.
#[derive(Debug, Clone, Default)]
pub struct ExportFilter {
    /// Only segments from this language (a language key).
    pub source_lang: Option<String>,
    /// Only segments into these languages (language keys).
    pub target_langs: Option<Vec<String>>,
}

impl ExportFilter {
    pub fn keeps(&self, segment: &Segment) -> bool {
        self.source_lang.as_ref().is_none_or(|l| *l == language_key(&segment.source.lang))
            && self
                .target_langs
                .as_ref()
                .is_none_or(|ls| ls.contains(&language_key(&segment.target.lang)))
    }
}

/// Groups segments in key order (those of one source together) into TMX units: one per source,
/// with the source variant first and one variant per target language; the earliest creation and
/// the latest change of its segments, the first one's props and notes.
pub fn export_units<E>(
    segments: impl Iterator<Item = Result<(SegmentKey, Segment), E>>,
    filter: ExportFilter,
) -> impl Iterator<Item = Result<Unit, E>> {
    let mut pending: Option<(Vec<u8>, Unit)> = None;
    let mut segments = segments.fuse();
    std::iter::from_fn(move || loop {
        let Some(next) = segments.next() else { return pending.take().map(|(_, unit)| Ok(unit)) };
        let (key, segment) = match next {
            Ok(entry) => entry,
            Err(err) => return Some(Err(err)),
        };
        if !filter.keeps(&segment) {
            continue;
        }
        let part = key.source_part().to_vec();
        match &mut pending {
            Some((at, unit)) if *at == part => add_target(unit, segment),
            _ => {
                let unit = new_unit(segment);
                if let Some((_, done)) = pending.replace((part, unit)) {
                    return Some(Ok(done));
                }
            }
        }
    })
}

fn variant(side: Side) -> Variant {
    Variant { lang: side.lang, text: side.text, markup: side.markup }
}

fn new_unit(segment: Segment) -> Unit {
    Unit {
        tuid: None,
        srclang: Some(segment.source.lang.clone()),
        creation_ms: Some(segment.created_ms),
        creation_id: Some(segment.created_by),
        change_ms: Some(segment.changed_ms),
        change_id: Some(segment.changed_by),
        props: segment.props,
        notes: segment.notes,
        variants: vec![variant(segment.source), variant(segment.target)],
    }
}

fn add_target(unit: &mut Unit, segment: Segment) {
    if segment.created_ms < unit.creation_ms.unwrap_or(i64::MAX) {
        unit.creation_ms = Some(segment.created_ms);
        unit.creation_id = Some(segment.created_by);
    }
    if segment.changed_ms > unit.change_ms.unwrap_or(i64::MIN) {
        unit.change_ms = Some(segment.changed_ms);
        unit.change_id = Some(segment.changed_by);
    }
    unit.variants.push(variant(segment.target));
}
