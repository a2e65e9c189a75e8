//! The fixed 36-byte header stored in front of every snapshot generation's payload chunks.
//!
//! Layout (all little-endian): magic `GRIDDSNP` (8) | format version u32 | WAL LSN u64 |
//! payload length u64 | payload crc32c u32 | crc32c of the preceding 32 bytes u32.
//! Owns this byte layout only; it must not know where headers are stored.

use super::{ImageDamage, ImageHeader};

/// Identifies a snapshot header.
pub(super) const MAGIC: [u8; 8] = *b"GRIDDSNP";
/// Encoded size of a header.
pub(super) const HEADER_LEN: usize = 36;
/// Bytes covered by the header's own checksum.
const CHECKED_LEN: usize = HEADER_LEN - 4;

/// Encodes `header` with its checksum.
pub(super) fn encode(header: &ImageHeader) -> [u8; HEADER_LEN] {
    let mut out = [0u8; HEADER_LEN];
    out[..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&header.format_version.to_le_bytes());
    out[12..20].copy_from_slice(&header.wal_lsn.to_le_bytes());
    out[20..28].copy_from_slice(&header.payload_len.to_le_bytes());
    out[28..32].copy_from_slice(&header.payload_crc.to_le_bytes());
    let crc = crc32c::crc32c(&out[..CHECKED_LEN]);
    out[CHECKED_LEN..].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes and checks a stored header. Never panics, whatever the bytes.
pub(super) fn decode(bytes: &[u8]) -> Result<ImageHeader, ImageDamage> {
    let Ok(bytes) = <&[u8; HEADER_LEN]>::try_from(bytes) else {
        return Err(ImageDamage::HeaderLength { found: bytes.len() });
    };
    if bytes[..8] != MAGIC {
        return Err(ImageDamage::BadMagic);
    }
    let stored = u32::from_le_bytes(field(bytes, CHECKED_LEN));
    if crc32c::crc32c(&bytes[..CHECKED_LEN]) != stored {
        return Err(ImageDamage::HeaderCrc);
    }
    Ok(ImageHeader {
        format_version: u32::from_le_bytes(field(bytes, 8)),
        wal_lsn: u64::from_le_bytes(field(bytes, 12)),
        payload_len: u64::from_le_bytes(field(bytes, 20)),
        payload_crc: u32::from_le_bytes(field(bytes, 28)),
    })
}

/// The `N` bytes at the constant offset `at` of a header.
fn field<const N: usize>(bytes: &[u8; HEADER_LEN], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> ImageHeader {
        ImageHeader { format_version: 3, wal_lsn: 1234, payload_len: 99, payload_crc: 0xDEAD_BEEF }
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
        let mut other = bytes;
        other[0] = b'X';
        assert_eq!(decode(&other), Err(ImageDamage::BadMagic));
    }

    proptest! {
        #[test]
        fn any_flipped_bit_is_detected(bit in 0..HEADER_LEN * 8) {
            let mut bytes = encode(&sample());
            bytes[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(decode(&bytes).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = decode(&bytes);
        }
    }
}
