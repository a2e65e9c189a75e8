//! [`SnapshotStore`] over plain files: one directory per key under the store's root, one file
//! per generation, `<generation:020>.snap`, holding the 36-byte header then the payload.
//!
//! A put writes `<generation>.partial`, makes it durable (`fdatasync`), renames it into place and
//! syncs the directory, so a generation file is either whole or absent; a crash mid-put leaves a
//! `.partial` file, which the next put or listing ignores and the next put of the key removes.
//! A generation's damage (flipped bits, a cut file, a garbage header) is found by its header
//! and payload checksums on load. Directory names escape every byte outside `[A-Za-z0-9_~.-]`
//! (and a leading `.`) as `%XX`, so any key maps to one directory and no key escapes the root.
//!
//! Data directories from before this store kept their images in sled ([`SledSnapshotStore`]);
//! given that store as `legacy`, this one reads its generations as older ones of the same key:
//! loads fall back to them, new generations are numbered above them, and puts retire them like
//! any older generation. Images of a gigabyte went through sled at about 35 MB/s and took three
//! times their size on disk; here they are written at disk speed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

mod disk;

use self::disk::{payload_crc, read_up_to, remove_gently, sync_dir, PayloadWriter};
use super::header::{self, HEADER_LEN, LONGEST};
use super::{
    FilePayload, Generation, GenerationInfo, ImageDamage, ImageHeader, LoadedSnapshot, Payload,
    SledSnapshotStore, SnapshotError, SnapshotImage, SnapshotStore, MAX_LINKS,
};

const GENERATION_DIGITS: usize = 20;
/// Bytes read at a time to check a payload's checksum.
const CHECK_BUFFER: usize = 4 << 20;
const SUFFIX: &str = ".snap";
const PARTIAL: &str = ".partial";

/// Snapshot images as files under `root`, with an optional sled store of older images.
#[derive(Debug)]
pub struct FileSnapshotStore {
    root: PathBuf,
    legacy: Option<SledSnapshotStore>,
    /// Generations this process wrote and synced, or loaded whole: known intact, so retiring
    /// older generations does not read them back.
    known_intact: Mutex<HashSet<(String, u64)>>,
}

/// Why one generation could not be loaded: the storage failed, or the image is damaged.
enum LoadError {
    Io(io::Error),
    Damaged(ImageDamage),
}

/// Files checked by one load: by generation, the header and payload of an intact one, or what
/// is wrong with a damaged one.
type Checked = HashMap<u64, Result<(ImageHeader, Arc<FilePayload>), ImageDamage>>;

/// Where a generation lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Home {
    File,
    Legacy,
}

fn io_error(error: io::Error) -> SnapshotError {
    SnapshotError::Io(error.to_string())
}

impl FileSnapshotStore {
    /// Opens (creating if needed) the store rooted at `root`; `legacy` holds images written
    /// before this store existed, if any.
    pub fn open(
        root: &Path,
        legacy: Option<SledSnapshotStore>,
    ) -> Result<FileSnapshotStore, SnapshotError> {
        fs::create_dir_all(root).map_err(io_error)?;
        Ok(FileSnapshotStore {
            root: root.to_path_buf(),
            legacy,
            known_intact: Mutex::new(HashSet::new()),
        })
    }

    fn key_dir(&self, key: &str) -> Result<PathBuf, SnapshotError> {
        if key.is_empty() {
            return Err(SnapshotError::EmptyKey);
        }
        let mut name = String::with_capacity(key.len());
        for (i, byte) in key.bytes().enumerate() {
            let plain = byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'~' | b'-');
            if plain || (byte == b'.' && i > 0) {
                name.push(char::from(byte));
            } else {
                name.push_str(&format!("%{byte:02X}"));
            }
        }
        Ok(self.root.join(name))
    }

    /// The keys with a stored generation in their directory under the root (images in the
    /// legacy store not included), in no particular order. A directory whose name no key
    /// escapes to is skipped, and so is one holding no generation yet: the first put of a key
    /// makes its directory before its file is complete, and a key listed then would not load.
    pub fn keys(&self) -> Result<Vec<String>, SnapshotError> {
        let mut keys = Vec::new();
        for entry in fs::read_dir(&self.root).map_err(io_error)? {
            let entry = entry.map_err(io_error)?;
            if !entry.file_type().map_err(io_error)?.is_dir() {
                continue;
            }
            let Some(key) = entry.file_name().to_str().and_then(unescape) else { continue };
            if !Self::file_generations(&entry.path())?.is_empty() {
                keys.push(key);
            }
        }
        Ok(keys)
    }

    /// Every generation of `key` in both homes, oldest first.
    fn stored(&self, key: &str, dir: &Path) -> Result<BTreeMap<u64, Home>, SnapshotError> {
        let mut found = BTreeMap::new();
        if let Some(legacy) = &self.legacy {
            for info in legacy.generations(key)? {
                found.insert(info.generation.0, Home::Legacy);
            }
        }
        for number in Self::file_generations(dir)? {
            found.insert(number, Home::File);
        }
        Ok(found)
    }

    /// The generations with a file in `dir`.
    fn file_generations(dir: &Path) -> Result<Vec<u64>, SnapshotError> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(e)),
        };
        let mut numbers = Vec::new();
        for entry in entries {
            let name = entry.map_err(io_error)?.file_name();
            numbers.extend(name.to_str().and_then(|n| parse_name(n, SUFFIX)));
        }
        Ok(numbers)
    }

    fn file(dir: &Path, generation: u64, suffix: &str) -> PathBuf {
        dir.join(format!("{generation:0GENERATION_DIGITS$}{suffix}"))
    }

    /// Reads and checks one generation file: its header and its payload.
    fn load_file(path: &Path) -> Result<(ImageHeader, FilePayload), LoadError> {
        let mut file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(LoadError::Damaged(ImageDamage::MissingHeader))
            }
            Err(e) => return Err(LoadError::Io(e)),
        };
        let size = file.metadata().map_err(LoadError::Io)?.len();
        let (header, header_len) =
            Self::read_header(&mut file).map_err(LoadError::Io)?.map_err(LoadError::Damaged)?;
        let found = size.saturating_sub(header_len as u64);
        if found != header.payload_len {
            let expected = header.payload_len;
            return Err(LoadError::Damaged(ImageDamage::LengthMismatch { expected, found }));
        }
        // The checksum is computed over the file as it streams past (the payload is not
        // kept), a share on each core: a load then reads the sections it needs
        // (`Payload::File`).
        let start = header_len as u64;
        let began = std::time::Instant::now();
        let checked = payload_crc(&file, start, found).map_err(LoadError::Io)?;
        tracing::debug!(bytes = found, ms = began.elapsed().as_millis() as u64, "payload checksum");
        let crc = match checked {
            Some(crc) => crc,
            None => {
                // The file shrank since its size was read.
                let expected = found;
                let found = file.metadata().map_err(LoadError::Io)?.len().saturating_sub(start);
                return Err(LoadError::Damaged(ImageDamage::LengthMismatch { expected, found }));
            }
        };
        if crc != header.payload_crc {
            let stored = header.payload_crc;
            return Err(LoadError::Damaged(ImageDamage::PayloadCrc { stored, computed: crc }));
        }
        Ok((header, FilePayload::new(file, start, found)))
    }

    /// Reads the header at the start of `file` (leaving the file at the payload) and its
    /// length.
    fn read_header(file: &mut File) -> io::Result<Result<(ImageHeader, usize), ImageDamage>> {
        let mut head = [0u8; LONGEST];
        let read = read_up_to(file, &mut head[..HEADER_LEN])?;
        let len = header::len_for(&head[..read]).unwrap_or(HEADER_LEN);
        let more = if len > read && read == HEADER_LEN {
            read_up_to(file, &mut head[HEADER_LEN..len])?
        } else {
            0
        };
        Ok(header::decode(&head[..read + more]).map(|h| (h, len)))
    }

    /// The header of generation `number`'s file, if it reads and checks.
    fn file_header(dir: &Path, number: u64) -> Option<ImageHeader> {
        let mut file = File::open(Self::file(dir, number, SUFFIX)).ok()?;
        Self::read_header(&mut file).ok()?.ok().map(|(header, _)| header)
    }

    /// Loads one generation from its home, with the payloads of its chain (files already in
    /// `checked` are not read again).
    fn load_generation(
        &self,
        key: &str,
        dir: &Path,
        number: u64,
        home: Home,
        checked: &mut Checked,
    ) -> Result<LoadedSnapshot, SnapshotError> {
        let (mut loaded, mut next) = self.load_one(key, dir, number, home, checked)?;
        let mut newer = number;
        while let Some(base) = next {
            let damaged = || SnapshotError::Damaged {
                key: key.to_owned(),
                generation: Generation(number),
                damage: ImageDamage::BaseDamaged { base },
            };
            // Each link is an older generation; the chain is as long as a table can reach.
            if base >= newer || loaded.chain.len() >= MAX_LINKS {
                return Err(damaged());
            }
            match self.load_one(key, dir, base, Home::File, checked) {
                Ok((link, after)) => {
                    loaded.chain.push(link.bytes);
                    loaded.links.push(Generation(base));
                    next = after;
                    newer = base;
                }
                Err(SnapshotError::Damaged { .. }) => return Err(damaged()),
                Err(other) => return Err(other),
            }
        }
        Ok(loaded)
    }

    /// The chain of generation `number` by its headers (itself first, down to a whole image),
    /// or `None` when a link is missing, its header damaged, or the chain too long.
    fn chain_of(dir: &Path, number: u64) -> Option<Vec<u64>> {
        let mut chain = vec![number];
        let mut at = number;
        while let Some(base) = Self::file_header(dir, at)?.base {
            if base >= at || chain.len() > MAX_LINKS {
                return None;
            }
            chain.push(base);
            at = base;
        }
        Some(chain)
    }

    /// Loads one generation's own payload from its home, and the base its header names. A
    /// file's checks are done once per `checked`: a generation on a chain is read again for
    /// every generation above it that a fallback tries.
    fn load_one(
        &self,
        key: &str,
        dir: &Path,
        number: u64,
        home: Home,
        checked: &mut Checked,
    ) -> Result<(LoadedSnapshot, Option<u64>), SnapshotError> {
        let generation = Generation(number);
        match home {
            Home::File => {
                let result = match checked.get(&number) {
                    Some(known) => known.clone(),
                    None => {
                        let found = match Self::load_file(&Self::file(dir, number, SUFFIX)) {
                            Ok((header, payload)) => Ok((header, Arc::new(payload))),
                            Err(LoadError::Io(e)) => return Err(io_error(e)),
                            Err(LoadError::Damaged(damage)) => Err(damage),
                        };
                        checked.insert(number, found.clone());
                        found
                    }
                };
                match result {
                    Ok((header, payload)) => {
                        let payload = Payload::File(payload.try_clone().map_err(io_error)?);
                        Ok((LoadedSnapshot::checked(&header, generation, payload), header.base))
                    }
                    Err(damage) => {
                        Err(SnapshotError::Damaged { key: key.to_owned(), generation, damage })
                    }
                }
            }
            Home::Legacy => {
                let legacy = self.legacy.as_ref().ok_or(SnapshotError::EmptyKey)?;
                legacy.load_generation_of(key, generation).map(|loaded| (loaded, None))
            }
        }
    }

    /// Whether a generation passes every load check (a generation this process wrote does).
    fn intact(
        &self,
        key: &str,
        dir: &Path,
        number: u64,
        home: Home,
    ) -> Result<bool, SnapshotError> {
        if home == Home::File && self.is_known_intact(key, number) {
            return Ok(true);
        }
        match self.load_generation(key, dir, number, home, &mut Checked::new()) {
            Ok(_) => Ok(true),
            Err(SnapshotError::Damaged { damage, .. }) => {
                tracing::error!(key, generation = number, %damage, "retiring a damaged snapshot generation");
                Ok(false)
            }
            Err(other) => Err(other),
        }
    }

    fn is_known_intact(&self, key: &str, number: u64) -> bool {
        let known = self.known_intact.lock().unwrap_or_else(|e| e.into_inner());
        known.contains(&(key.to_owned(), number))
    }

    fn remove(&self, key: &str, dir: &Path, number: u64, home: Home) -> Result<(), SnapshotError> {
        match home {
            Home::File => {
                match remove_gently(&Self::file(dir, number, SUFFIX)) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io_error(e)),
                }
                self.known_intact
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&(key.to_owned(), number));
                Ok(())
            }
            Home::Legacy => match &self.legacy {
                Some(legacy) => legacy.delete_generation(key, Generation(number)),
                None => Ok(()),
            },
        }
    }

    /// Writes what `write` produces as generation `number` of the key in `dir`: a partial file
    /// (header written last, once the payload's length and checksum are known) made durable,
    /// then renamed into place and the directory synced.
    fn write_file(
        dir: &Path,
        number: u64,
        format_version: u32,
        wal_lsn: u64,
        base: Option<u64>,
        write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        fs::create_dir_all(dir)?;
        let partial = Self::file(dir, number, PARTIAL);
        let file = OpenOptions::new().write(true).create(true).truncate(true).open(&partial)?;
        let mut payload = PayloadWriter {
            file: BufWriter::with_capacity(1 << 20, file),
            crc: 0,
            len: 0,
            unsynced: 0,
        };
        // A provisional header (no length, no checksum) says what kind of image is on its way;
        // the real one replaces it once the payload is written.
        let provisional =
            ImageHeader { format_version, wal_lsn, payload_len: 0, payload_crc: 0, base };
        payload.file.write_all(&header::encode(&provisional))?;
        write(&mut payload)?;
        let header = header::encode(&ImageHeader {
            format_version,
            wal_lsn,
            payload_len: payload.len,
            payload_crc: payload.crc,
            base,
        });
        let mut file = payload.file.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&header)?;
        file.sync_data()?;
        drop(file);
        fs::rename(&partial, Self::file(dir, number, SUFFIX))?;
        sync_dir(dir)?;
        if let Some(parent) = dir.parent() {
            sync_dir(parent)?;
        }
        Ok(())
    }

    /// Removes what failed puts left in `dir`.
    /// After a new generation (its `chain` written or kept): keeps the newest intact
    /// generation older than all of the chain, with its own chain, and removes every other of
    /// `older`. Whichever one generation is damaged, another loads, and with it the WAL from the
    /// older one's position (after a fallback, the damaged one goes).
    fn retire_older(
        &self,
        key: &str,
        dir: &Path,
        older: &BTreeMap<u64, Home>,
        chain: &[u64],
    ) -> Result<(), SnapshotError> {
        let mut keep: BTreeSet<u64> = chain.iter().copied().collect();
        let oldest_kept = keep.first().copied().unwrap_or(u64::MAX);
        for (&older_number, &home) in older.range(..oldest_kept).rev() {
            if self.intact(key, dir, older_number, home)? {
                keep.insert(older_number);
                if home == Home::File {
                    keep.extend(Self::chain_of(dir, older_number).unwrap_or_default());
                }
                break;
            }
        }
        for (&older_number, &home) in older {
            if !keep.contains(&older_number) {
                self.remove(key, dir, older_number, home)?;
            }
        }
        if older.values().any(|h| *h == Home::Legacy) {
            if let Some(legacy) = &self.legacy {
                legacy.flush()?;
            }
        }
        Ok(())
    }

    fn remove_partials(dir: &Path) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_str().is_some_and(|n| parse_name(n, PARTIAL).is_some()) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// The key a directory name is the escape of (`key_dir`), if it is one.
fn unescape(name: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(name.len());
    let mut rest = name.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok().filter(|key| !key.is_empty())
}

/// The generation of `<generation:020><suffix>`.
fn parse_name(name: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_suffix(suffix)?;
    (digits.len() == GENERATION_DIGITS && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())?
}

impl SnapshotStore for FileSnapshotStore {
    fn keeps_bases(&self) -> bool {
        true
    }

    fn put(&self, key: &str, image: &SnapshotImage) -> Result<Generation, SnapshotError> {
        self.put_streamed(key, image.format_version, image.wal_lsn, None, &mut |out| {
            out.write_all(&image.bytes)
        })
    }

    fn put_streamed(
        &self,
        key: &str,
        format_version: u32,
        wal_lsn: u64,
        base: Option<Generation>,
        write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> Result<Generation, SnapshotError> {
        let dir = self.key_dir(key)?;
        let older = self.stored(key, &dir)?;
        let number = older.keys().next_back().map_or(1, |g| g + 1);
        // The new image's chain: it, then its base's.
        let mut chain = vec![number];
        if let Some(base) = base {
            let links = (older.get(&base.0) == Some(&Home::File))
                .then(|| Self::chain_of(&dir, base.0))
                .flatten()
                .filter(|links| links.len() < MAX_LINKS);
            let Some(links) = links else {
                return Err(SnapshotError::Damaged {
                    key: key.to_owned(),
                    generation: Generation(number),
                    damage: ImageDamage::BaseDamaged { base: base.0 },
                });
            };
            chain.extend(links);
        }
        let base = base.map(|b| b.0);
        if let Err(error) = Self::write_file(&dir, number, format_version, wal_lsn, base, write) {
            if error.kind() == io::ErrorKind::NotFound && !dir.exists() {
                // The branch was deleted (`delete`) while its image was being written.
                tracing::debug!(key, generation = number, "snapshots deleted during a write");
            } else {
                tracing::error!(key, generation = number, %error, "writing a snapshot failed");
            }
            Self::remove_partials(&dir);
            return Err(io_error(error));
        }
        self.known_intact
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((key.to_owned(), number));
        Self::remove_partials(&dir);
        self.retire_older(key, &dir, &older, &chain)?;
        Ok(Generation(number))
    }

    fn load_latest(&self, key: &str) -> Result<Option<LoadedSnapshot>, SnapshotError> {
        let dir = self.key_dir(key)?;
        let mut damaged = Vec::new();
        let mut checked = Checked::new();
        for (&number, &home) in self.stored(key, &dir)?.iter().rev() {
            let generation = Generation(number);
            match self.load_generation(key, &dir, number, home, &mut checked) {
                Ok(mut loaded) => {
                    if home == Home::File {
                        let mut known = self.known_intact.lock().unwrap_or_else(|e| e.into_inner());
                        let files =
                            std::iter::once(loaded.generation).chain(loaded.links.iter().copied());
                        known.extend(files.map(|g| (key.to_owned(), g.0)));
                    }
                    if !damaged.is_empty() {
                        tracing::error!(key, %generation, "fell back to an older snapshot generation");
                    }
                    loaded.damaged_newer = damaged.into_iter().map(|(g, _)| g).collect();
                    return Ok(Some(loaded));
                }
                Err(SnapshotError::Damaged { damage, .. }) => {
                    tracing::error!(key, %generation, %damage, "snapshot generation is damaged");
                    damaged.push((generation, damage));
                }
                Err(other) => return Err(other),
            }
        }
        if damaged.is_empty() {
            return Ok(None);
        }
        Err(SnapshotError::NoIntactGeneration { key: key.to_owned(), damaged })
    }

    fn generations(&self, key: &str) -> Result<Vec<GenerationInfo>, SnapshotError> {
        let dir = self.key_dir(key)?;
        let legacy = match &self.legacy {
            Some(legacy) => legacy.generations(key)?,
            None => Vec::new(),
        };
        let mut listed: BTreeMap<u64, GenerationInfo> =
            legacy.into_iter().map(|info| (info.generation.0, info)).collect();
        for number in Self::file_generations(&dir)? {
            let header = Self::file_header(&dir, number);
            listed.insert(number, GenerationInfo { generation: Generation(number), header });
        }
        Ok(listed.into_values().collect())
    }

    fn delete(&self, key: &str) -> Result<(), SnapshotError> {
        let dir = self.key_dir(key)?;
        match fs::remove_dir_all(&dir) {
            Ok(()) => sync_dir(&self.root).map_err(io_error)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(e)),
        }
        self.known_intact.lock().unwrap_or_else(|e| e.into_inner()).retain(|(k, _)| k != key);
        if let Some(legacy) = &self.legacy {
            legacy.delete(key)?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), SnapshotError> {
        // Every put and delete of files is durable when it returns.
        match &self.legacy {
            Some(legacy) => legacy.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::disk::REMOVE_STEP;
    use super::*;
    use crate::grid::image::SectionSource;

    #[test]
    fn a_large_file_is_removed_in_steps_and_a_missing_one_is_reported() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("old.snap");
        let file = File::create(&path).expect("created");
        file.set_len(3 * REMOVE_STEP + 5).expect("sized (sparse)");
        drop(file);
        remove_gently(&path).expect("removed");
        assert!(!path.exists());
        let missing = remove_gently(&path).expect_err("gone already");
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    const KEY: &str = "grid-1";

    fn image(wal_lsn: u64, len: usize) -> SnapshotImage {
        let bytes = (0..len)
            .map(|i| (i as u64).wrapping_mul(2_654_435_761).wrapping_add(wal_lsn) as u8)
            .collect();
        SnapshotImage { format_version: 3, wal_lsn, bytes }
    }

    fn store(dir: &Path) -> FileSnapshotStore {
        FileSnapshotStore::open(&dir.join("snapshots"), None).expect("open")
    }

    /// A branch deleted while its image is written (the image's file already open): the write
    /// fails, and neither its file nor its directory comes back.
    #[test]
    fn a_write_racing_its_keys_deletion_fails_and_leaves_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = store(dir.path());
        store.put(KEY, &image(1, 64)).expect("a first image");
        let key_dir = store.key_dir(KEY).expect("key");
        let written = store.put_streamed(KEY, 3, 2, None, &mut |out| {
            store.delete(KEY).map_err(|e| io::Error::other(e.to_string()))?;
            out.write_all(&image(2, 64).bytes)
        });
        assert!(written.is_err());
        assert!(!key_dir.exists(), "{}", key_dir.display());
        assert!(store.load_latest(KEY).expect("read").is_none());
    }

    fn numbers(store: &FileSnapshotStore, key: &str) -> Vec<u64> {
        store.generations(key).expect("listed").iter().map(|g| g.generation.0).collect()
    }

    fn generation_file(dir: &Path, key: &str, number: u64) -> PathBuf {
        let store = store(dir);
        FileSnapshotStore::file(&store.key_dir(key).expect("key"), number, SUFFIX)
    }

    #[test]
    fn puts_round_trip_aligned_and_keep_two_generations() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        assert!(store.load_latest(KEY).expect("load").is_none());
        for lsn in 1..=4 {
            store.put(KEY, &image(lsn, 1000 + lsn as usize)).expect("put");
        }
        assert_eq!(numbers(&store, KEY), [3, 4]);
        let loaded = store.load_latest(KEY).expect("load").expect("present");
        assert_eq!((loaded.generation, loaded.wal_lsn), (Generation(4), 4));
        let bytes = loaded.bytes.whole().expect("reads");
        assert_eq!(&bytes[..], &image(4, 1004).bytes[..]);
        assert_eq!(bytes.as_ptr() as usize % 16, 0);
        let empty = SnapshotImage { format_version: 1, wal_lsn: 9, bytes: Vec::new() };
        store.put("other", &empty).expect("put");
        assert_eq!(store.load_latest("other").expect("load").expect("present").bytes.len(), 0);
        store.delete(KEY).expect("deleted");
        assert!(store.load_latest(KEY).expect("load").is_none());
        assert_eq!(numbers(&store, "other"), [1]);
    }

    /// A payload's checksum read in shares on several threads is the checksum of its bytes, and
    /// a file shorter than the payload claims is found.
    #[test]
    fn a_payload_checksum_in_shares_is_the_whole_checksum() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("payload");
        let bytes: Vec<u8> =
            (0..(40u32 << 20) + 5).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
        fs::write(&path, &bytes).expect("write");
        let file = File::open(&path).expect("open");
        let len = bytes.len() as u64 - 7;
        assert_eq!(payload_crc(&file, 7, len).expect("reads"), Some(crc32c::crc32c(&bytes[7..])));
        assert_eq!(payload_crc(&file, 0, 100).expect("reads"), Some(crc32c::crc32c(&bytes[..100])));
        assert_eq!(payload_crc(&file, 7, len + 1).expect("reads"), None, "the file ends early");
    }

    /// A streamed put stores what its writer wrote, in pieces, with the header written after;
    /// a writer that fails stores nothing and leaves no partial file.
    #[test]
    fn streamed_puts_store_what_was_written_and_a_failed_one_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        let whole = image(7, 3_000_000);
        let put = store
            .put_streamed(KEY, 3, 7, None, &mut |out: &mut dyn Write| {
                whole.bytes.chunks(1000).try_for_each(|piece| out.write_all(piece))
            })
            .expect("put");
        let loaded = store.load_latest(KEY).expect("load").expect("present");
        assert_eq!((loaded.generation, loaded.wal_lsn, loaded.format_version), (put, 7, 3));
        assert_eq!(&loaded.bytes.whole().expect("reads")[..], &whole.bytes[..]);
        // The payload stays in its file and is read a range at a time, aligned.
        assert!(matches!(loaded.bytes, Payload::File(_)), "{:?}", loaded.bytes);
        let range = loaded.bytes.read_at(1_000_016, 4096).expect("reads");
        assert_eq!(&range[..], &whole.bytes[1_000_016..1_004_112]);
        assert_eq!(range.as_ptr() as usize % 16, 0);
        assert!(loaded.bytes.read_at(2_999_000, 1001).is_err(), "past the end");
        let failed = store.put_streamed(KEY, 3, 8, None, &mut |out: &mut dyn Write| {
            out.write_all(b"half an image")?;
            Err(io::Error::other("the encoder gave up"))
        });
        assert!(matches!(failed, Err(SnapshotError::Io(_))), "{failed:?}");
        assert_eq!(numbers(&store, KEY), [put.0]);
        let key_dir = store.key_dir(KEY).expect("key");
        let names: Vec<_> = fs::read_dir(&key_dir).expect("dir").flatten().collect();
        assert_eq!(names.len(), 1, "no partial file is left");
        assert_eq!(store.load_latest(KEY).expect("load").expect("present").wal_lsn, 7);
    }

    /// A generation on a base loads with the payloads of its whole chain (its base, that one's
    /// base, ... down to a whole image); the chain and an older generation with its chain are
    /// kept beside the newest, so any one damaged file leaves a generation that loads.
    #[test]
    fn generations_on_a_chain_keep_it_and_fall_back_past_its_damage() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        let put = |lsn: u64, base: Option<u64>| {
            let bytes = image(lsn, 100 + lsn as usize).bytes;
            store.put_streamed(KEY, 5, lsn, base.map(Generation), &mut |out: &mut dyn Write| {
                out.write_all(&bytes)
            })
        };
        put(1, None).expect("whole");
        put(2, None).expect("whole");
        put(3, Some(2)).expect("on 2");
        put(4, Some(3)).expect("on 3");
        assert_eq!(numbers(&store, KEY), [1, 2, 3, 4]);
        let loaded = store.load_latest(KEY).expect("load").expect("present");
        assert_eq!(loaded.generation, Generation(4));
        let chain: Vec<_> =
            loaded.chain.iter().map(|p| p.whole().expect("reads").to_vec()).collect();
        assert_eq!(chain, [image(3, 103).bytes, image(2, 102).bytes], "link 0 first");
        let header = store.generations(KEY).expect("listed")[3].header.expect("intact");
        assert_eq!(header.base, Some(3));
        put(5, Some(4)).expect("on 4");
        assert_eq!(numbers(&store, KEY), [1, 2, 3, 4, 5], "the chain and one older whole");
        put(6, None).expect("whole");
        assert_eq!(numbers(&store, KEY), [2, 3, 4, 5, 6], "the older generation keeps its chain");
        assert!(store.load_latest(KEY).expect("load").expect("present").chain.is_empty());
        put(7, Some(6)).expect("on 6");
        assert_eq!(numbers(&store, KEY), [2, 3, 4, 5, 6, 7]);
        assert!(put(8, Some(1)).is_err(), "a base must be stored");
        put(8, None).expect("whole");
        assert_eq!(numbers(&store, KEY), [6, 7, 8]);

        let file = |n| generation_file(dir.path(), KEY, n);
        let flip = |n| {
            let mut bytes = fs::read(file(n)).expect("read");
            let at = bytes.len() - 1;
            bytes[at] ^= 0x42;
            fs::write(file(n), bytes).expect("write");
        };
        flip(6);
        assert_eq!(store.load_latest(KEY).expect("load").expect("ok").generation, Generation(8));
        flip(8);
        let failed = store.load_latest(KEY).expect_err("no generation loads");
        let SnapshotError::NoIntactGeneration { damaged, .. } = failed else {
            panic!("{failed:?}")
        };
        assert_eq!(damaged[1], (Generation(7), ImageDamage::BaseDamaged { base: 6 }));
    }

    /// A damaged link in the middle of a chain: the generations on it fail, the one under it
    /// loads.
    #[test]
    fn a_damaged_link_falls_back_to_the_generation_under_it() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        for (lsn, base) in [(1, None), (2, None), (3, Some(2)), (4, Some(3)), (5, Some(4))] {
            let bytes = image(lsn, 300).bytes;
            store
                .put_streamed(KEY, 5, lsn, base.map(Generation), &mut |out: &mut dyn Write| {
                    out.write_all(&bytes)
                })
                .expect("put");
        }
        let path = generation_file(dir.path(), KEY, 4);
        let mut bytes = fs::read(&path).expect("read");
        let at = bytes.len() / 2;
        bytes[at] ^= 1;
        fs::write(&path, bytes).expect("write");
        let reopened = FileSnapshotStore::open(&dir.path().join("snapshots"), None).expect("open");
        let loaded = reopened.load_latest(KEY).expect("load").expect("a fallback");
        assert_eq!((loaded.generation, loaded.chain.len()), (Generation(3), 1));
        assert_eq!(loaded.damaged_newer, [Generation(5), Generation(4)]);
    }

    /// A chain is at most `MAX_LINKS` generations under its newest: a put on a base whose chain
    /// is that long is refused.
    #[test]
    fn a_chain_longer_than_a_table_reaches_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        let bytes = image(1, 20).bytes;
        let put = |base: Option<u64>| {
            store.put_streamed(KEY, 5, 1, base.map(Generation), &mut |out: &mut dyn Write| {
                out.write_all(&bytes)
            })
        };
        let mut newest = put(None).expect("whole").0;
        for _ in 0..MAX_LINKS - 1 {
            newest = put(Some(newest)).expect("on the newest").0;
        }
        assert!(matches!(
            put(Some(newest)),
            Err(SnapshotError::Damaged { damage: ImageDamage::BaseDamaged { .. }, .. })
        ));
        let loaded = store.load_latest(KEY).expect("load").expect("present");
        assert_eq!(loaded.chain.len(), MAX_LINKS - 1);
    }

    #[test]
    fn damaged_newest_generations_fall_back_and_the_next_put_retires_them() {
        type Damage = fn(&Path);
        let flip: Damage = |p| {
            let mut bytes = fs::read(p).expect("read");
            let at = bytes.len() / 2;
            bytes[at] ^= 0x42;
            fs::write(p, bytes).expect("write");
        };
        let cut: Damage = |p| {
            let bytes = fs::read(p).expect("read");
            fs::write(p, &bytes[..bytes.len() / 3]).expect("write");
        };
        let garbage_header: Damage = |p| {
            let mut bytes = fs::read(p).expect("read");
            bytes[..HEADER_LEN].fill(0xa5);
            fs::write(p, bytes).expect("write");
        };
        let empty: Damage = |p| fs::write(p, b"").expect("write");
        for damage in [flip, cut, garbage_header, empty] {
            let dir = tempfile::tempdir().expect("dir");
            let store = store(dir.path());
            store.put(KEY, &image(1, 5000)).expect("put");
            store.put(KEY, &image(2, 5000)).expect("put");
            damage(&generation_file(dir.path(), KEY, 2));
            let reopened =
                FileSnapshotStore::open(&dir.path().join("snapshots"), None).expect("open");
            let loaded = reopened.load_latest(KEY).expect("load").expect("fallback");
            assert_eq!((loaded.wal_lsn, loaded.damaged_newer.clone()), (1, vec![Generation(2)]));
            reopened.put(KEY, &image(3, 5000)).expect("put");
            assert_eq!(numbers(&reopened, KEY), [1, 3], "the damaged generation is retired");
            damage(&generation_file(dir.path(), KEY, 3));
            damage(&generation_file(dir.path(), KEY, 1));
            match reopened.load_latest(KEY) {
                Err(SnapshotError::NoIntactGeneration { damaged, .. }) => {
                    assert_eq!(damaged.len(), 2)
                }
                other => panic!("both damaged: {other:?}"),
            }
        }
    }

    #[test]
    fn a_partial_file_is_ignored_and_removed_by_the_next_put() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        store.put(KEY, &image(1, 100)).expect("put");
        let key_dir = store.key_dir(KEY).expect("key");
        fs::write(FileSnapshotStore::file(&key_dir, 2, PARTIAL), b"torn").expect("partial");
        assert_eq!(store.load_latest(KEY).expect("load").expect("present").wal_lsn, 1);
        store.put(KEY, &image(3, 100)).expect("put");
        assert_eq!(numbers(&store, KEY), [1, 2]);
        assert!(!FileSnapshotStore::file(&key_dir, 2, PARTIAL).exists());
    }

    #[test]
    fn keys_are_listed_back_from_their_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store(dir.path());
        let keys = ["plain", "with space/and~slash", "ünïcode.1", ".hidden"];
        for key in keys {
            store.put(key, &image(1, 10)).expect("put");
        }
        std::fs::create_dir(dir.path().join("%zz")).expect("a stranger");
        // A first put under way: its directory holds only the partial file, nothing to load.
        let pending = store.key_dir("pending").expect("a key");
        std::fs::create_dir(&pending).expect("its directory");
        std::fs::write(FileSnapshotStore::file(&pending, 1, PARTIAL), b"half").expect("partial");
        assert_eq!(store.load_latest("pending").expect("loads").map(|l| l.generation), None);
        let mut listed = store.keys().expect("keys");
        listed.sort();
        let mut expected: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        expected.sort();
        assert_eq!(listed, expected);
    }

    #[test]
    fn keys_map_to_one_directory_each_inside_the_root() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path());
        let keys = ["a/b", "a%2Fb", "..", ".", "~catalog", "backup:1", "ü", "a.b"];
        let dirs: HashSet<PathBuf> = keys.iter().map(|k| store.key_dir(k).expect("key")).collect();
        assert_eq!(dirs.len(), keys.len());
        for d in &dirs {
            assert_eq!(d.parent(), Some(store.root.as_path()), "{d:?}");
        }
        for (i, key) in keys.iter().enumerate() {
            store.put(key, &image(i as u64, 10)).expect("put");
        }
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(store.load_latest(key).expect("load").expect("present").wal_lsn, i as u64);
        }
        assert!(matches!(store.put("", &image(1, 1)), Err(SnapshotError::EmptyKey)));
    }

    /// A data directory whose images are in sled: they load, new generations are numbered above
    /// them, the first put keeps the newest sled generation as the older one, the next retires it.
    #[test]
    fn images_in_sled_load_and_are_retired_by_later_puts() {
        let dir = tempfile::tempdir().expect("dir");
        let db = sled::open(dir.path().join("db")).expect("sled");
        let legacy = SledSnapshotStore::open(&db).expect("legacy");
        legacy.put(KEY, &image(1, 3000)).expect("put");
        legacy.put(KEY, &image(2, 3000)).expect("put");
        let store = FileSnapshotStore::open(&dir.path().join("snapshots"), Some(legacy.clone()))
            .expect("open");
        assert_eq!(store.load_latest(KEY).expect("load").expect("legacy").wal_lsn, 2);
        assert_eq!(numbers(&store, KEY), [1, 2]);
        let floor_before = store.generations(KEY).expect("listed")[0].header.map(|h| h.wal_lsn);
        assert_eq!(floor_before, Some(1));
        store.put(KEY, &image(3, 3000)).expect("put");
        assert_eq!(numbers(&store, KEY), [2, 3]);
        assert_eq!(legacy.generations(KEY).expect("listed").len(), 1, "sled keeps the older one");
        store.put(KEY, &image(4, 3000)).expect("put");
        assert_eq!(numbers(&store, KEY), [3, 4]);
        assert!(legacy.generations(KEY).expect("listed").is_empty());
        assert_eq!(store.load_latest(KEY).expect("load").expect("file").wal_lsn, 4);
        legacy.put("gone", &image(1, 10)).expect("put");
        store.delete("gone").expect("deleted");
        assert!(store.load_latest("gone").expect("load").is_none());
    }
}
