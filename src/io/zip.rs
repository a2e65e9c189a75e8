//! Reading an uploaded zip archive safely, apart from HTTP (`api::files_zip` stores what this
//! plans). Every step is bounded by the upload, before it allocates:
//!
//! - `check_entry_count` reads the end-of-central-directory record (and its zip64 form) and
//!   refuses more than `MAX_ENTRIES` entries, or more than the upload could hold (a central
//!   header takes at least 46 bytes), before `ZipArchive::new` reads the directory.
//! - `check_entry_names`: no entry anywhere may escape the archive (a `..` component, an
//!   absolute name, a NUL byte, a symbolic link).
//! - `plan`: every mapped name is a stored or deflated, unencrypted file in the archive; the
//!   declared sizes pass the ratio rule per entry and stay within `Budget::limit` together.
//! - `copy_counted` counts the bytes as they are unpacked (headers may lie) against the same
//!   rules.
//!
//! The ratio rule: an entry that unpacks to more than `RATIO_FLOOR` bytes may be at most
//! `MAX_RATIO` times its compressed size, and the mapped entries together may unpack to at
//! most `MAX_RATIO` times the upload's size (or `RATIO_FLOOR`, if that is more), so many
//! small entries cannot add up to a bomb. Ordinary files (text, images, documents) stay far
//! below 200:1; zip bombs are far above it (a deflated run of zeros is about 1000:1).

use std::io::{Read, Seek, SeekFrom, Write};

use indexmap::IndexMap;
use zip::read::ZipFile;
use zip::{CompressionMethod, ZipArchive};

use crate::error::{ApiError, ApiResult, ErrorCode};

/// An entry unpacking to more than this many bytes is held to `MAX_RATIO`.
pub const RATIO_FLOOR: u64 = 1024 * 1024;
/// The most an entry over `RATIO_FLOOR` (and the mapped entries together) may unpack to per
/// compressed byte.
pub const MAX_RATIO: u64 = 200;
/// The most entries an archive may have.
pub const MAX_ENTRIES: u64 = 65_535;
/// The smallest central directory header (without name, extra field and comment).
const CENTRAL_HEADER_BYTES: u64 = 46;
/// The end-of-central-directory record without its comment, and the longest comment.
const EOCD_BYTES: u64 = 22;
const MAX_COMMENT: u64 = 65_535;
/// The size of the chunks an entry is copied in.
const COPY_CHUNK: usize = 64 * 1024;
/// The mode bits of a symbolic link in a unix `st_mode` (`S_IFLNK` under `S_IFMT`).
const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;

/// Record id to the names of its files in the zip, in the request's order.
pub type Mappings = IndexMap<String, Vec<String>>;

/// A mapped entry of the archive.
#[derive(Debug, Clone)]
pub struct Entry {
    pub index: usize,
    pub name: String,
    pub compressed: u64,
}

/// How much the mapped entries of one upload may unpack to, and how much they did so far.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The configured limit (`--zip-unpacked-limit`).
    pub configured: u64,
    /// The size of the upload.
    pub upload: u64,
    /// Bytes unpacked so far.
    pub unpacked: u64,
}

impl Budget {
    pub fn new(configured: u64, upload: u64) -> Budget {
        Budget { configured, upload, unpacked: 0 }
    }

    /// The ratio bound: `MAX_RATIO` times the upload, at least `RATIO_FLOOR`.
    pub fn ratio_bound(&self) -> u64 {
        self.upload.saturating_mul(MAX_RATIO).max(RATIO_FLOOR)
    }

    /// 413 when `total` bytes unpacked pass either bound.
    fn check(&self, total: u64) -> ApiResult<()> {
        if total > self.configured {
            return Err(too_large(format!(
                "The mapped files unpack to more than the {} bytes allowed.",
                self.configured
            )));
        }
        if total > self.ratio_bound() {
            return Err(too_large(format!(
                "The mapped files unpack to more than {MAX_RATIO} times the upload's {} bytes; it looks like a zip bomb.",
                self.upload
            )));
        }
        Ok(())
    }
}

/// Opens an archive of `size` bytes after `check_entry_count`, then `check_entry_names`.
pub fn open_checked<R: Read + Seek>(mut reader: R, size: u64) -> ApiResult<ZipArchive<R>> {
    check_entry_count(&mut reader, size)?;
    reader.seek(SeekFrom::Start(0)).map_err(|e| not_a_zip(&e))?;
    let mut archive = ZipArchive::new(reader).map_err(|e| not_a_zip(&e))?;
    check_entry_names(&mut archive)?;
    Ok(archive)
}

/// The entry count the end-of-central-directory record declares (the zip64 one when the
/// record defers to it): 400 when there is no such record, 413 past `MAX_ENTRIES` or past
/// what `size` bytes can hold. Reads at most the last 64 KiB and the zip64 record.
pub fn check_entry_count<R: Read + Seek>(reader: &mut R, size: u64) -> ApiResult<u64> {
    let tail_len = size.min(EOCD_BYTES + MAX_COMMENT);
    let mut tail = vec![0; tail_len as usize];
    reader.seek(SeekFrom::Start(size - tail_len)).map_err(|e| not_a_zip(&e))?;
    reader.read_exact(&mut tail).map_err(|e| not_a_zip(&e))?;
    let at = (0..tail.len().saturating_sub(EOCD_BYTES as usize - 1))
        .rev()
        .find(|&i| tail[i..].starts_with(b"PK\x05\x06"))
        .ok_or_else(|| not_a_zip(&"no end of central directory record"))?;
    let mut count = u64::from(u16_at(&tail, at + 10));
    let locator = at.checked_sub(20).filter(|&l| tail[l..].starts_with(b"PK\x06\x07"));
    if let Some(locator) = locator {
        let offset = u64_at(&tail, locator + 8);
        count = count.max(zip64_count(reader, offset, size)?);
    }
    let fits = size / CENTRAL_HEADER_BYTES;
    if count > MAX_ENTRIES || count > fits {
        return Err(too_large(format!(
            "The zip declares {count} entries; at most {MAX_ENTRIES} are read, and {size} bytes hold at most {fits}."
        )));
    }
    Ok(count)
}

/// The entry count of the zip64 end-of-central-directory record at `offset`.
fn zip64_count<R: Read + Seek>(reader: &mut R, offset: u64, size: u64) -> ApiResult<u64> {
    if offset.checked_add(56).is_none_or(|end| end > size) {
        return Err(not_a_zip(&"the zip64 end of central directory is outside the file"));
    }
    let mut record = [0u8; 56];
    reader.seek(SeekFrom::Start(offset)).map_err(|e| not_a_zip(&e))?;
    reader.read_exact(&mut record).map_err(|e| not_a_zip(&e))?;
    if !record.starts_with(b"PK\x06\x06") {
        return Err(not_a_zip(&"the zip64 end of central directory is damaged"));
    }
    Ok(u64_at(&record, 32))
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    let mut b = [0u8; 2];
    b.copy_from_slice(&bytes[at..at + 2]);
    u16::from_le_bytes(b)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

/// 400 for a file that is not a readable zip archive.
pub fn not_a_zip(err: &dyn std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("The file is not a valid zip archive: {err}."))
}

/// 400 for an entry that cannot be read.
pub fn damaged(name: &str, err: &dyn std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("The zip entry \"{name}\" cannot be read: {err}."))
}

fn too_large(message: String) -> ApiError {
    ApiError::new(ErrorCode::PayloadTooLarge, message)
}

/// Every entry of the archive, mapped or not, must stay inside it: 400 naming the first that
/// has a `..` component, an absolute name (`/x`, `\x`, `C:\x`), a NUL byte, or is a symbolic
/// link.
pub fn check_entry_names<R: Read + Seek>(archive: &mut ZipArchive<R>) -> ApiResult<()> {
    for index in 0..archive.len() {
        let entry = archive.by_index_raw(index).map_err(|e| not_a_zip(&e))?;
        let name = entry.name();
        let reason = if name.contains('\0') {
            Some("has a NUL byte in its name")
        } else if name.starts_with(['/', '\\']) || is_drive_path(name) {
            Some("has an absolute name")
        } else if name.split(['/', '\\']).any(|part| part == "..") {
            Some("has a \"..\" component")
        } else if entry.unix_mode().is_some_and(|mode| mode & S_IFMT == S_IFLNK) {
            Some("is a symbolic link")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(ApiError::bad_request(format!(
                "The zip entry \"{name}\" {reason}; entries must stay inside the archive. Nothing was written."
            )));
        }
    }
    Ok(())
}

/// `C:...`: a name starting with a drive letter.
pub fn is_drive_path(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// The entries each record gets: 400 when a mapped name is not a file in the zip, or one that
/// cannot be read (encrypted, another compression than stored or deflate); 413 when the
/// declared sizes go over the budget or an entry's over the ratio rule.
pub fn plan<R: Read + Seek>(
    archive: &mut ZipArchive<R>,
    mappings: &Mappings,
    budget: &Budget,
) -> ApiResult<Vec<(String, Vec<Entry>)>> {
    let mut missing = Vec::new();
    let mut declared = 0u64;
    let mut planned = Vec::with_capacity(mappings.len());
    for (record_id, names) in mappings {
        let mut entries = Vec::with_capacity(names.len());
        for name in names {
            let Some(index) = archive.index_for_name(name) else {
                missing.push(format!("\"{name}\""));
                continue;
            };
            let entry = archive.by_index_raw(index).map_err(|e| not_a_zip(&e))?;
            if entry.is_dir() {
                missing.push(format!("\"{name}\" (a directory)"));
                continue;
            }
            check_readable(&entry)?;
            check_ratio(name, entry.size(), entry.compressed_size())?;
            declared = declared.saturating_add(entry.size());
            let compressed = entry.compressed_size();
            entries.push(Entry { index, name: name.clone(), compressed });
        }
        planned.push((record_id.clone(), entries));
    }
    if !missing.is_empty() {
        return Err(ApiError::bad_request(format!(
            "fileMappings names what is not a file in the zip: {}.",
            missing.join(", ")
        )));
    }
    budget.check(declared).map_err(|e| {
        let message = e.message.replacen("more than", &format!("{declared} bytes, more than"), 1);
        ApiError::new(e.code, message)
    })?;
    Ok(planned)
}

/// 400 for an entry this server cannot unpack.
fn check_readable<R: Read>(entry: &ZipFile<'_, R>) -> ApiResult<()> {
    let name = entry.name();
    if entry.encrypted() {
        return Err(ApiError::bad_request(format!("The zip entry \"{name}\" is encrypted.")));
    }
    if !matches!(entry.compression(), CompressionMethod::Stored | CompressionMethod::Deflated) {
        return Err(ApiError::bad_request(format!(
            "The zip entry \"{name}\" uses the compression {}; only stored and deflate are supported.",
            entry.compression()
        )));
    }
    Ok(())
}

/// 413 for an entry over `RATIO_FLOOR` bytes unpacked that is more than `MAX_RATIO` times its
/// compressed size.
pub fn check_ratio(name: &str, unpacked: u64, compressed: u64) -> ApiResult<()> {
    if unpacked > RATIO_FLOOR && unpacked > compressed.saturating_mul(MAX_RATIO) {
        return Err(too_large(format!(
            "The zip entry \"{name}\" unpacks to more than {MAX_RATIO} times its compressed size ({compressed} bytes); it looks like a zip bomb."
        )));
    }
    Ok(())
}

/// Copies an entry into `out`, counting the bytes as they come (headers may lie): stops with
/// 413 before writing past the budget for the whole upload (`budget.unpacked` counts what
/// earlier entries took) or past the ratio rule. Returns the entry's size; `write` errors are
/// the caller's (`on_write`).
pub fn copy_counted(
    reader: &mut impl Read,
    out: &mut impl Write,
    entry: &Entry,
    budget: &mut Budget,
    on_write: impl Fn(std::io::Error) -> ApiError,
) -> ApiResult<u64> {
    let mut chunk = vec![0; COPY_CHUNK];
    let mut size = 0u64;
    loop {
        let read = reader.read(&mut chunk).map_err(|e| damaged(&entry.name, &e))?;
        if read == 0 {
            break;
        }
        size += read as u64;
        budget.unpacked += read as u64;
        budget.check(budget.unpacked)?;
        check_ratio(&entry.name, size, entry.compressed)?;
        out.write_all(&chunk[..read]).map_err(&on_write)?;
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_rule_spares_small_and_ordinary_entries() {
        assert!(check_ratio("a", RATIO_FLOOR, 1).is_ok(), "small entries are never held to it");
        assert!(check_ratio("a", 200 * 100_000, 100_000).is_ok(), "200:1 is allowed");
        let err = check_ratio("a", 200 * 100_000 + 1, 100_000).expect_err("over 200:1");
        assert_eq!(err.code, ErrorCode::PayloadTooLarge);
        assert!(check_ratio("a", u64::MAX, 0).is_err());
    }

    #[test]
    fn the_total_is_bounded_by_the_upload_and_the_configured_limit() {
        let budget = Budget::new(10 << 30, 10_000);
        assert_eq!(budget.ratio_bound(), 2_000_000);
        assert!(budget.check(2_000_000).is_ok());
        assert!(budget.check(2_000_001).is_err_and(|e| e.message.contains("zip bomb")));
        assert_eq!(Budget::new(10 << 30, 10).ratio_bound(), RATIO_FLOOR);
        let small = Budget::new(100, 10_000);
        assert!(small.check(101).is_err_and(|e| e.message.contains("100 bytes allowed")));
    }

    #[test]
    fn drive_letters_are_absolute() {
        assert!(is_drive_path("C:\\x") && is_drive_path("c:x"));
        assert!(!is_drive_path("c") && !is_drive_path("1:x") && !is_drive_path("dir/C:x"));
    }

    /// An end-of-central-directory record declaring `count` entries after `before` bytes.
    fn eocd(before: usize, count: u16) -> Vec<u8> {
        let mut zip = vec![0u8; before];
        zip.extend_from_slice(b"PK\x05\x06\0\0\0\0");
        zip.extend_from_slice(&count.to_le_bytes());
        zip.extend_from_slice(&count.to_le_bytes());
        zip.extend_from_slice(&[0; 10]);
        zip
    }

    #[test]
    fn the_entry_count_is_checked_before_the_directory_is_read() {
        let check =
            |zip: &[u8]| check_entry_count(&mut std::io::Cursor::new(zip), zip.len() as u64);
        assert_eq!(check(&eocd(0, 0)).expect("empty zip"), 0);
        assert_eq!(check(&eocd(46 * 10, 10)).expect("fits"), 10);
        let err = check(&eocd(0, 1000)).expect_err("22 bytes cannot hold 1000 entries");
        assert_eq!(err.code, ErrorCode::PayloadTooLarge);
        assert_eq!(check(b"PK\x03\x04 no end").expect_err("no record").code, ErrorCode::BadRequest);
        assert_eq!(check(b"").expect_err("empty").code, ErrorCode::BadRequest);
        // A zip64 locator pointing at a record that declares 2^40 entries.
        let mut zip = vec![0u8; 100];
        zip[..4].copy_from_slice(b"PK\x06\x06");
        zip[32..40].copy_from_slice(&(1u64 << 40).to_le_bytes());
        zip.extend_from_slice(b"PK\x06\x07\0\0\0\0");
        zip.extend_from_slice(&0u64.to_le_bytes());
        zip.extend_from_slice(&1u32.to_le_bytes());
        zip.extend(eocd(0, 0xFFFF));
        let err = check(&zip).expect_err("2^40 entries");
        assert!(err.message.contains("1099511627776 entries"), "{}", err.message);
    }
}
