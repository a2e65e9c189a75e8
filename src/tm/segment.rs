//! One translation memory segment (decisions.md section 13): a source text in one language and
//! its translation in another, when and by whom it was created and last changed, and where it
//! came from; plus what a TMX file said of it that gridd keeps for the round trip (the inline
//! markup of each side, `prop`s and `note`s).
//!
//! A segment's identity is its key: the source language, the hash of its normalized source text
//! and the target language (`SegmentKey`), so a memory holds one translation of a source per
//! target language, and the segments of one source sort together (an export writes them as one
//! `tu`). Plain data and its byte encodings; no storage.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::text::{language_key, normalize};

/// Where a segment came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Origin {
    /// A TMX file (upload or import).
    Import,
    /// A translated cell of a linked project's grid.
    Grid,
    /// Written through the API.
    Api,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Import => "import",
            Origin::Grid => "grid",
            Origin::Api => "api",
        }
    }

    pub fn parse(text: &str) -> Option<Origin> {
        match text {
            "import" => Some(Origin::Import),
            "grid" => Some(Origin::Grid),
            "api" => Some(Origin::Api),
            _ => None,
        }
    }
}

/// One side of a segment: its language as given, its plain text (what lookups compare and
/// answer) and, when the file had inline tags, the `seg` element's content as XML.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Side {
    pub lang: String,
    pub text: String,
    pub markup: Option<String>,
}

/// A stored segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub source: Side,
    pub target: Side,
    /// Milliseconds since the Unix epoch.
    pub created_ms: i64,
    pub created_by: String,
    pub changed_ms: i64,
    pub changed_by: String,
    pub origin: Origin,
    /// The `tu`'s `prop` elements (type, value).
    pub props: Vec<(String, String)>,
    /// The `tu`'s `note` elements.
    pub notes: Vec<String>,
}

/// Length of a normalized source's hash in a key.
pub const HASH_LEN: usize = 16;

/// A segment's key: `<source language key> 0x00 <16-byte hash> <target language key>`.
/// Language keys are ASCII alphanumerics, so the layout is unambiguous, and no key starts with
/// 0xFF (the memory's own entries, such as feed cursors, do).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SegmentKey(pub Vec<u8>);

/// The hash of a normalized source text.
pub fn source_hash(normalized: &str) -> [u8; HASH_LEN] {
    let digest = Sha256::digest(normalized.as_bytes());
    let mut hash = [0; HASH_LEN];
    hash.copy_from_slice(&digest[..HASH_LEN]);
    hash
}

impl SegmentKey {
    pub fn new(source_lang: &str, hash: &[u8; HASH_LEN], target_lang: &str) -> SegmentKey {
        let (source, target) = (language_key(source_lang), language_key(target_lang));
        let mut key = Vec::with_capacity(source.len() + 1 + HASH_LEN + target.len());
        key.extend_from_slice(source.as_bytes());
        key.push(0);
        key.extend_from_slice(hash);
        key.extend_from_slice(target.as_bytes());
        SegmentKey(key)
    }

    /// The key of a segment.
    pub fn of(segment: &Segment) -> SegmentKey {
        let hash = source_hash(&normalize(&segment.source.text));
        SegmentKey::new(&segment.source.lang, &hash, &segment.target.lang)
    }

    /// The part shared by every segment of one source (its language and hash).
    pub fn source_part(&self) -> &[u8] {
        let end = self.0.iter().position(|b| *b == 0).map_or(self.0.len(), |at| at + 1);
        &self.0[..(end + HASH_LEN).min(self.0.len())]
    }
}

impl Segment {
    pub fn encode(&self) -> Vec<u8> {
        bincode::serialize(self).expect("segments always serialize")
    }

    pub fn decode(bytes: &[u8]) -> Result<Segment, bincode::Error> {
        bincode::deserialize(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn segment(source: &str, target_lang: &str, target: &str) -> Segment {
        let side =
            |lang: &str, text: &str| Side { lang: lang.into(), text: text.into(), markup: None };
        Segment {
            source: side("en-US", source),
            target: side(target_lang, target),
            created_ms: 1,
            created_by: "u".into(),
            changed_ms: 2,
            changed_by: "v".into(),
            origin: Origin::Api,
            props: vec![("x-domain".into(), "ui".into())],
            notes: vec!["a note".into()],
        }
    }

    #[test]
    fn keys_identify_the_normalized_source_and_both_languages() {
        let a = SegmentKey::of(&segment("Save  changes", "fr-FR", "x"));
        let b = SegmentKey::of(&segment(" Save changes ", "frFR", "y"));
        assert_eq!(a, b);
        let c = SegmentKey::of(&segment("Save changes", "de-DE", "y"));
        assert_ne!(a, c);
        assert_eq!(a.source_part(), c.source_part());
        assert_ne!(a, SegmentKey::of(&segment("save changes", "fr-FR", "x")));
        assert!(a.0[0] != 0xFF);
    }

    #[test]
    fn segments_encode_and_decode() {
        let s = segment("Save", "fr", "Enregistrer");
        assert_eq!(Segment::decode(&s.encode()).expect("decodes"), s);
        assert!(Segment::decode(b"\x01").is_err());
    }
}
