//! The fixed header stored in front of every snapshot generation's payload chunks.
//!
//! Layout (all little-endian): magic `GRIDDSNP` (8) | format version u32 | WAL LSN u64 |
//! payload length u64 | payload crc32c u32 | crc32c of the preceding 32 bytes u32: 36 bytes.
//! A generation that borrows sections of another (a delta on a base) has the magic `GRIDDSN2`
//! and the base's generation (u64) after the payload crc: 44 bytes.
//! Owns this byte layout only; it must not know where headers are stored.

use super::{ImageDamage, ImageHeader};

/// Identifies a snapshot header.
pub(super) const MAGIC: [u8; 8] = *b"GRIDDSNP";
/// Identifies the header of a generation with a base.
const MAGIC_WITH_BASE: [u8; 8] = *b"GRIDDSN2";
/// Encoded size of a header without a base.
pub(super) const HEADER_LEN: usize = 36;
/// Encoded size of a header with a base (the most a header takes).
pub(super) const LONGEST: usize = 44;

/// The length of the header that starts with `magic`, if it is a header's.
pub(super) fn len_for(magic: &[u8]) -> Option<usize> {
    match magic.get(..8)? {
        m if m == MAGIC => Some(HEADER_LEN),
        m if m == MAGIC_WITH_BASE => Some(LONGEST),
        _ => None,
    }
}

/// Encodes `header` with its checksum.
pub(super) fn encode(header: &ImageHeader) -> Vec<u8> {
    let mut out = Vec::with_capacity(LONGEST);
    out.extend_from_slice(if header.base.is_some() { &MAGIC_WITH_BASE } else { &MAGIC });
    out.extend_from_slice(&header.format_version.to_le_bytes());
    out.extend_from_slice(&header.wal_lsn.to_le_bytes());
    out.extend_from_slice(&header.payload_len.to_le_bytes());
    out.extend_from_slice(&header.payload_crc.to_le_bytes());
    if let Some(base) = header.base {
        out.extend_from_slice(&base.to_le_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes and checks a stored header. Never panics, whatever the bytes.
pub(super) fn decode(bytes: &[u8]) -> Result<ImageHeader, ImageDamage> {
    let Some(len) = len_for(bytes) else {
        return Err(if bytes.len() < 8 {
            ImageDamage::HeaderLength { found: bytes.len() }
        } else {
            ImageDamage::BadMagic
        });
    };
    if bytes.len() != len {
        return Err(ImageDamage::HeaderLength { found: bytes.len() });
    }
    let checked = len - 4;
    let stored = u32::from_le_bytes(field(bytes, checked));
    if crc32c::crc32c(&bytes[..checked]) != stored {
        return Err(ImageDamage::HeaderCrc);
    }
    Ok(ImageHeader {
        format_version: u32::from_le_bytes(field(bytes, 8)),
        wal_lsn: u64::from_le_bytes(field(bytes, 12)),
        payload_len: u64::from_le_bytes(field(bytes, 20)),
        payload_crc: u32::from_le_bytes(field(bytes, 28)),
        base: (len == LONGEST).then(|| u64::from_le_bytes(field(bytes, 32))),
    })
}

/// The `N` bytes at the constant offset `at` of a header (checked to be long enough).
fn field<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> ImageHeader {
        ImageHeader {
            format_version: 3,
            wal_lsn: 1234,
            payload_len: 99,
            payload_crc: 0xDEAD_BEEF,
            base: None,
        }
    }

    #[test]
    fn a_header_with_a_base_round_trips() {
        let with_base = ImageHeader { base: Some(7), ..sample() };
        let bytes = encode(&with_base);
        assert_eq!((bytes.len(), &bytes[..8]), (LONGEST, &b"GRIDDSN2"[..]));
        assert_eq!(decode(&bytes), Ok(with_base));
        assert_eq!(decode(&bytes[..HEADER_LEN]), Err(ImageDamage::HeaderLength { found: 36 }));
    }

    #[test]
    fn round_trip() {
        let bytes = encode(&sample());
        assert_eq!(&bytes[..8], b"GRIDDSNP");
        assert_eq!(decode(&bytes), Ok(sample()));
    }

    #[test]
    fn wrong_length_and_magic_are_named() {
        let bytes = encode(&sample());
        assert_eq!(decode(&bytes[..35]), Err(ImageDamage::HeaderLength { found: 35 }));
        let mut other = bytes.clone();
        other[0] = b'X';
        assert_eq!(decode(&other), Err(ImageDamage::BadMagic));
    }

    proptest! {
        #[test]
        fn any_flipped_bit_is_detected(bit in 0..LONGEST * 8, based in any::<bool>()) {
            let header = ImageHeader { base: based.then_some(3), ..sample() };
            let mut bytes = encode(&header);
            let bit = bit % (bytes.len() * 8);
            bytes[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(decode(&bytes).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = decode(&bytes);
        }
    }
}
