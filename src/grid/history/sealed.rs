//! Sealed chunks of the history log: full chunks, never written again, held compressed.
//!
//! A chunk is sealed with its plain bytes and handed to the packer, one thread per process,
//! which compresses it with zstd in independent blocks of `BLOCK_BYTES` and then drops the plain
//! bytes (localization text shrinks four to five times). Readers use whichever form is there:
//! an entry read from a packed chunk decompresses only the blocks it spans. A chunk that does not
//! compress (or a packer that cannot start) stays plain. Snapshots store packed chunks as they
//! are (`to_part`), packing first any the packer has not reached. Packed bytes are spilled to
//! disk once made (`spill`), so a chunk holds only where its blocks end.

use std::borrow::Cow;
use std::io;
use std::ops::Deref;
use std::sync::{mpsc, Arc, Mutex, OnceLock, Weak};

use super::spill::{self, Spilled};

/// Plain bytes per compressed block a chunk is packed in (each chunk records its own): an entry
/// read costs one block's decompression (tens of microseconds) unless it spans more.
#[cfg(not(test))]
pub(super) const BLOCK_BYTES: usize = 64 << 10;
#[cfg(test)]
pub(super) const BLOCK_BYTES: usize = 64;

/// zstd's fastest level: on 64 KiB blocks of history it compresses within 6% of level 3.
const LEVEL: i32 = 1;

/// A sealed chunk. See the module doc.
#[derive(Debug)]
pub(super) struct Sealed {
    len: usize,
    /// The plain bytes, until the chunk is packed.
    plain: Mutex<Option<Arc<Vec<u8>>>>,
    /// The packed form once the packer (or a snapshot) has made it; `None` inside when the
    /// chunk stays plain.
    packed: OnceLock<Option<Packed>>,
}

/// A chunk's bytes compressed block by block.
#[derive(Debug)]
struct Packed {
    /// Plain bytes per block (the last may hold fewer).
    block: usize,
    /// Where each compressed block ends in `data`.
    ends: Box<[u32]>,
    data: Data,
}

/// Where a packed chunk's compressed blocks are.
#[derive(Debug)]
enum Data {
    Heap(Box<[u8]>),
    Disk(Spilled),
}

impl Data {
    /// Spilled to disk when it can be, else kept.
    fn spilled(bytes: Box<[u8]>) -> Data {
        match spill::spill(&bytes) {
            Some(spilled) => Data::Disk(spilled),
            None => Data::Heap(bytes),
        }
    }

    /// All the bytes, read back when spilled.
    fn to_vec(&self) -> io::Result<Vec<u8>> {
        match self {
            Data::Heap(bytes) => Ok(bytes.to_vec()),
            Data::Disk(spilled) => spilled.read(0, spilled.len()),
        }
    }

    /// Bytes held on the heap.
    fn heap_bytes(&self) -> usize {
        match self {
            Data::Heap(bytes) => bytes.len(),
            Data::Disk(_) => 0,
        }
    }

    /// Bytes `start..end`; `None` when they lie outside or cannot be read back.
    fn get(&self, start: usize, end: usize) -> Option<Cow<'_, [u8]>> {
        match self {
            Data::Heap(bytes) => bytes.get(start..end).map(Cow::Borrowed),
            Data::Disk(spilled) => match spilled.read(start, end) {
                Ok(bytes) => Some(Cow::Owned(bytes)),
                Err(error) => {
                    tracing::warn!(%error, "a history chunk could not be read back from disk");
                    None
                }
            },
        }
    }
}

/// A sealed chunk as an image stores it: packed (`ends` non-empty) or plain.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChunkPart {
    /// Plain length in bytes.
    pub len: u32,
    /// Plain bytes per block when packed.
    pub block: u32,
    /// Where each compressed block ends in `data`; empty when `data` is plain.
    pub ends: Vec<u32>,
    pub data: Vec<u8>,
}

/// Bytes read from a chunk: shared plain bytes or a decompressed copy.
pub(super) enum ChunkBytes {
    Shared(Arc<Vec<u8>>),
    Owned(Vec<u8>),
}

impl Deref for ChunkBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            ChunkBytes::Shared(bytes) => bytes.as_slice(),
            ChunkBytes::Owned(bytes) => bytes.as_slice(),
        }
    }
}

/// The most plain bytes per block an image may claim (a chunk holds less than 4 GiB).
const MAX_BLOCK_BYTES: u32 = 1 << 30;

/// Compresses `plain` block by block; `None` when zstd fails or it would not be smaller.
fn pack(plain: &[u8]) -> Option<Packed> {
    thread_local! {
        static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = zstd::bulk::Compressor::new(LEVEL).ok();
        }
        let compressor = cell.as_mut()?;
        let mut data = Vec::with_capacity(plain.len() / 3);
        let mut ends = Vec::with_capacity(plain.len().div_ceil(BLOCK_BYTES));
        for block in plain.chunks(BLOCK_BYTES) {
            data.extend_from_slice(&compressor.compress(block).ok()?);
            ends.push(u32::try_from(data.len()).ok()?);
        }
        (data.len() < plain.len()).then(|| Packed {
            block: BLOCK_BYTES,
            ends: ends.into_boxed_slice(),
            data: Data::spilled(data.into_boxed_slice()),
        })
    })
}

impl Packed {
    /// The plain bytes of blocks `first..last` of a chunk of `len` bytes; `None` when the data
    /// is damaged.
    fn unpack(&self, len: usize, first: usize, last: usize) -> Option<Vec<u8>> {
        debug_assert!(first <= last && last <= self.ends.len());
        let end_of =
            |block: usize| if block == 0 { Some(0) } else { self.ends.get(block - 1).copied() };
        // One read for the blocks wanted, however many.
        let from = end_of(first)? as usize;
        let data = self.data.get(from, end_of(last)? as usize)?;
        let mut out = Vec::with_capacity((last - first) * self.block);
        for block in first..last {
            let start = (end_of(block)? as usize).checked_sub(from)?;
            let end = (*self.ends.get(block)? as usize).checked_sub(from)?;
            let plain = len.checked_sub(block * self.block)?.min(self.block);
            let bytes = zstd::bulk::decompress(data.get(start..end)?, plain).ok()?;
            if bytes.len() != plain {
                return None;
            }
            out.extend_from_slice(&bytes);
        }
        Some(out)
    }
}

/// The packer's queue; `None` when its thread could not start (chunks then stay plain).
fn packer() -> Option<&'static Mutex<mpsc::Sender<Weak<Sealed>>>> {
    static PACKER: OnceLock<Option<Mutex<mpsc::Sender<Weak<Sealed>>>>> = OnceLock::new();
    PACKER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Weak<Sealed>>();
            let spawned =
                std::thread::Builder::new().name("history-packer".into()).spawn(move || {
                    for chunk in rx {
                        if let Some(chunk) = chunk.upgrade() {
                            chunk.pack_now();
                        }
                    }
                });
            spawned.ok().map(|_| Mutex::new(tx))
        })
        .as_ref()
}

impl Sealed {
    /// Seals plain bytes and queues them for packing.
    pub(super) fn new(plain: Arc<Vec<u8>>) -> Arc<Sealed> {
        let sealed = Arc::new(Sealed {
            len: plain.len(),
            plain: Mutex::new(Some(plain)),
            packed: OnceLock::new(),
        });
        if let Some(queue) = packer() {
            let queue = queue.lock().unwrap_or_else(|e| e.into_inner());
            // A packer that has stopped leaves the chunk plain.
            let _ = queue.send(Arc::downgrade(&sealed));
        }
        sealed
    }

    /// A sealed chunk from an image's part; `Err` when a packed part's blocks do not fit.
    pub(super) fn from_part(part: ChunkPart) -> Result<Arc<Sealed>, String> {
        if part.ends.is_empty() {
            if part.data.len() != part.len as usize {
                return Err("history: a plain chunk has the wrong length".to_owned());
            }
            return Ok(Sealed::new(Arc::new(part.data)));
        }
        let len = part.len as usize;
        if part.block == 0 || part.block > MAX_BLOCK_BYTES {
            return Err(format!("history: a packed chunk claims blocks of {} bytes", part.block));
        }
        let block = part.block as usize;
        let mut last = 0;
        let fits = part.ends.len() == len.div_ceil(block)
            && part.ends.iter().all(|&end| {
                let ok = end >= last && end as usize <= part.data.len();
                last = end;
                ok
            });
        if !fits {
            return Err("history: a packed chunk's blocks do not fit its data".to_owned());
        }
        let packed = Packed {
            block,
            ends: part.ends.into_boxed_slice(),
            data: Data::spilled(part.data.into_boxed_slice()),
        };
        Ok(Arc::new(Sealed { len, plain: Mutex::new(None), packed: OnceLock::from(Some(packed)) }))
    }

    fn plain(&self) -> Option<Arc<Vec<u8>>> {
        self.plain.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Packs the chunk if nobody has yet and drops its plain bytes once packed.
    pub(super) fn pack_now(&self) {
        let packed = self.packed.get_or_init(|| self.plain().and_then(|plain| pack(&plain)));
        if packed.is_some() {
            *self.plain.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    /// The packed form, if the chunk has one by now.
    fn packed(&self) -> Option<&Packed> {
        self.packed.get().and_then(Option::as_ref)
    }

    /// `parse` applied to the bytes from `offset` on: given the plain bytes, or the fewest
    /// decompressed blocks it succeeds on (doubling the blocks it is given). `None` when it
    /// fails on every byte up to the chunk's end, or the chunk is damaged.
    pub(super) fn read<R>(&self, offset: usize, parse: impl Fn(&[u8]) -> Option<R>) -> Option<R> {
        if offset >= self.len {
            return None;
        }
        if self.packed().is_none() {
            if let Some(plain) = self.plain() {
                return parse(plain.get(offset..)?);
            }
        }
        // Packed, or packed since the check above (which drops the plain bytes after).
        let packed = self.packed()?;
        let first = offset / packed.block;
        let blocks = packed.ends.len();
        let mut count = 1;
        loop {
            let last = (first + count).min(blocks);
            let bytes = packed.unpack(self.len, first, last)?;
            if let Some(read) = parse(bytes.get(offset - first * packed.block..)?) {
                return Some(read);
            }
            if last == blocks {
                return None;
            }
            count *= 2;
        }
    }

    /// All the chunk's bytes; `None` when its packed form is damaged.
    pub(super) fn whole(&self) -> Option<ChunkBytes> {
        if self.packed().is_none() {
            if let Some(plain) = self.plain() {
                return Some(ChunkBytes::Shared(plain));
            }
        }
        let packed = self.packed()?;
        packed.unpack(self.len, 0, packed.ends.len()).map(ChunkBytes::Owned)
    }

    /// The chunk as an image stores it, packing it first if the packer has not; an error when
    /// its spilled bytes cannot be read back.
    pub(super) fn to_part(&self) -> io::Result<ChunkPart> {
        self.pack_now();
        let len = self.len as u32;
        Ok(match self.packed() {
            Some(packed) => ChunkPart {
                len,
                block: packed.block as u32,
                ends: packed.ends.to_vec(),
                data: packed.data.to_vec()?,
            },
            None => ChunkPart {
                len,
                block: 0,
                ends: Vec::new(),
                data: self.plain().map(|p| p.as_ref().clone()).unwrap_or_default(),
            },
        })
    }

    /// Heap bytes held: the packed form unless spilled, and the plain bytes while they are
    /// kept.
    pub(super) fn heap_bytes(&self) -> usize {
        let packed = self.packed().map_or(0, |p| p.data.heap_bytes() + p.ends.len() * 4);
        let plain = self.plain().map_or(0, |p| p.capacity());
        std::mem::size_of::<Sealed>() + packed + plain
    }

    /// Whether the chunk is held packed (tests wait for the packer with it).
    #[cfg(test)]
    pub(super) fn is_packed(&self) -> bool {
        self.packed().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text that compresses even in the tests' 64-byte blocks.
    fn text(len: usize) -> Vec<u8> {
        "Einstellungen speichern · 設定 ".bytes().cycle().take(len).collect()
    }

    #[test]
    fn a_packed_chunk_reads_every_span_back() {
        let plain = text(1000);
        let sealed = Sealed::new(Arc::new(plain.clone()));
        sealed.pack_now();
        assert!(sealed.is_packed(), "repetitive text compresses");
        assert!(sealed.heap_bytes() < plain.len(), "the plain bytes are dropped");
        for offset in [0, 1, 63, 64, 65, 500, 999] {
            for want in [1, 10, 64, 200, 1000] {
                let got = sealed.read(offset, |b| (b.len() >= want).then(|| b[..want].to_vec()));
                let expected = plain.get(offset..offset + want).map(<[u8]>::to_vec);
                assert_eq!(got, expected, "offset {offset}, {want} bytes");
            }
        }
        assert_eq!(sealed.whole().as_deref(), Some(plain.as_slice()));
        let again =
            Sealed::from_part(sealed.to_part().expect("reads")).expect("a stored part loads");
        assert_eq!(again.whole().as_deref(), Some(plain.as_slice()));
    }

    #[test]
    fn a_spilled_chunk_holds_only_its_block_ends_and_reads_back() {
        super::super::spill::tests::test_dir();
        let plain = text(5000);
        let sealed = Sealed::new(Arc::new(plain.clone()));
        sealed.pack_now();
        let Some(Packed { data: Data::Disk(_), ends, .. }) = sealed.packed() else {
            panic!("a packed chunk is spilled once a directory is configured");
        };
        assert_eq!(sealed.heap_bytes(), std::mem::size_of::<Sealed>() + ends.len() * 4);
        for offset in [0, 64, 4000] {
            let got = sealed.read(offset, |b| (b.len() >= 100).then(|| b[..100].to_vec()));
            assert_eq!(got.as_deref(), Some(&plain[offset..offset + 100]));
        }
        assert_eq!(sealed.whole().as_deref(), Some(plain.as_slice()));
        let part = sealed.to_part().expect("reads back");
        let again = Sealed::from_part(part.clone()).expect("loads");
        assert_eq!(again.whole().as_deref(), Some(plain.as_slice()));
        assert_eq!(again.to_part().expect("reads back"), part);
    }

    #[test]
    fn bytes_that_do_not_compress_stay_plain() {
        let noise: Vec<u8> =
            (0..500u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let sealed = Sealed::new(Arc::new(noise.clone()));
        sealed.pack_now();
        assert!(!sealed.is_packed(), "noise does not compress");
        assert_eq!(sealed.whole().as_deref(), Some(noise.as_slice()));
        assert_eq!(sealed.read(10, |b| Some(b[0])), Some(noise[10]));
    }

    #[test]
    fn damaged_parts_are_refused_or_read_as_nothing() {
        let sealed = Sealed::new(Arc::new(text(300)));
        let mut part = sealed.to_part().expect("reads");
        assert!(!part.ends.is_empty());
        let mut short = part.clone();
        short.ends.pop();
        assert!(Sealed::from_part(short).is_err(), "a block missing");
        let mut beyond = part.clone();
        *beyond.ends.last_mut().expect("blocks") += 1;
        assert!(Sealed::from_part(beyond).is_err(), "a block past the data");
        let mut no_block = part.clone();
        no_block.block = 0;
        assert!(Sealed::from_part(no_block).is_err(), "blocks of no bytes");
        for byte in part.data.iter_mut().step_by(3) {
            *byte ^= 0x5a;
        }
        let damaged = Sealed::from_part(part).expect("the shape is right");
        let _ = damaged.read(100, |b| Some(b.len()));
        let _ = damaged.whole();
    }
}
