//! The translation memories' log on JetStream: the `<prefix>_tm` stream, one subject per memory
//! (`<prefix>.tm.<memory id>`), replicated on `replicas` NATS servers like the branches' log.
//! An entry is one change of one memory; its bytes are the caller's (`api::transmems::replica`).
//!
//! A change is cut in parts of at most `PART_BYTES` (NATS's default message limit is 1 MiB):
//! each part carries the change's id (`Gridd-Op`) and its place (`Gridd-Part: <i>/<n>`).
//! Several nodes may write one memory at once, so the parts of two changes may interleave: a
//! change counts at its last part's sequence, and every node applies the changes in that order
//! (`Reassembly`), so every node's copy goes through the same states. A change whose parts never
//! all land (its writer died part way; it was never acknowledged) is never applied: its parts
//! are dropped once `STALE_AFTER` later entries went by, or the oldest first when the parts
//! held exceed `PENDING_BYTES`.
//!
//! Reads: `follow` (a long-lived ordered consumer over every memory's subject, re-created after
//! an error) hands each whole change to its caller; `tail` tells a memory's last sequence, so
//! a read can wait until this node applied everything written before it.
//!
//! Compaction (the caller's policy, `api::transmems::replica`): a change holding a memory's
//! whole state as of some sequence is published like any other; `read_changes` reads back the
//! memory's changes that landed between that sequence and the image, and `purge_below` drops
//! the memory's entries before it (the caller keeps the parts of changes unfinished there,
//! `TmEntry::held_from`).

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use async_nats::header::HeaderMap;
use async_nats::jetstream::consumer::{pull::OrderedConfig, DeliverPolicy};
use async_nats::jetstream::stream::{self, LastRawMessageErrorKind, StorageType};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

use super::{check_token, unavailable, ClusterError, ClusterLink};

/// The header naming the change a part belongs to.
pub const OP_HEADER: &str = "Gridd-Op";
/// The header placing a part in its change: `<index>/<count>`.
pub const PART_HEADER: &str = "Gridd-Part";
/// The largest part published.
pub const PART_BYTES: usize = 768 * 1024;
/// The most parts one change is cut in (a change larger than this many parts is refused).
pub const MAX_PARTS: usize = 1024;
/// A change still missing parts after this many later entries is dropped.
pub const STALE_AFTER: u64 = 100_000;
/// The most bytes of unfinished changes held; the oldest are dropped beyond it.
pub const PENDING_BYTES: usize = 1 << 30;
/// How long `follow` waits before re-creating its consumer after an error.
const FOLLOW_RETRY: Duration = Duration::from_millis(250);

/// One whole change of a memory, as `follow` hands it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmEntry {
    /// Its last part's sequence.
    pub sequence: u64,
    /// The first sequence of the same memory's changes still unfinished when it was handed
    /// over (their parts must outlive a purge); None when there are none.
    pub held_from: Option<u64>,
    pub memory: String,
    pub op: String,
    pub payload: Bytes,
}

/// The memories' stream.
#[derive(Debug, Clone)]
pub struct TmLog {
    link: ClusterLink,
    stream: stream::Stream,
    subject_prefix: String,
}

impl TmLog {
    /// Opens the stream (creating it when missing), waiting (within six request timeouts) until
    /// it answers.
    pub async fn open(link: &ClusterLink) -> Result<TmLog, ClusterError> {
        let subject_prefix = format!("{}.tm", link.settings.prefix);
        let config = stream::Config {
            name: link.name("tm"),
            subjects: vec![format!("{subject_prefix}.*")],
            num_replicas: link.settings.replicas,
            storage: StorageType::File,
            allow_direct: true,
            ..Default::default()
        };
        // A fresh NATS cluster may take several request timeouts to create a stream while
        // other nodes start too.
        let deadline = tokio::time::Instant::now() + link.settings.request_timeout * 6;
        loop {
            let opened = link.jetstream.get_or_create_stream(config.clone()).await;
            let mut opened = match opened {
                Ok(stream) => stream,
                Err(err) if tokio::time::Instant::now() < deadline => {
                    tracing::info!(error = %err, "opening the translation memories' log: retried");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                Err(err) => return Err(ClusterError::Setup(err.to_string())),
            };
            match opened.info().await {
                Ok(_) => {
                    return Ok(TmLog { link: link.clone(), stream: opened, subject_prefix });
                }
                Err(err) if tokio::time::Instant::now() >= deadline => {
                    return Err(ClusterError::Setup(err.to_string()))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    fn subject(&self, memory: &str) -> Result<String, ClusterError> {
        check_token("memory", memory)?;
        Ok(format!("{}.{memory}", self.subject_prefix))
    }

    /// Publishes change `op` of `memory` (its parts in order); the last part's sequence.
    pub async fn publish(
        &self,
        memory: &str,
        op: &str,
        payload: Bytes,
    ) -> Result<u64, ClusterError> {
        let subject = self.subject(memory)?;
        check_token("change", op)?;
        let count = payload.len().div_ceil(PART_BYTES).max(1);
        if count > MAX_PARTS {
            return Err(ClusterError::Unavailable(format!(
                "a change of {} bytes is larger than {} parts",
                payload.len(),
                MAX_PARTS
            )));
        }
        let mut last = 0;
        for index in 0..count {
            let part =
                payload.slice(index * PART_BYTES..((index + 1) * PART_BYTES).min(payload.len()));
            let mut headers = HeaderMap::new();
            headers.insert(OP_HEADER, op);
            headers.insert(PART_HEADER, format!("{index}/{count}").as_str());
            let acked = super::publish_until_found(&self.link, &subject, headers, part).await;
            last = acked.map_err(unavailable)?.sequence;
        }
        Ok(last)
    }

    /// `memory`'s whole changes whose last part lies after `after` and before `before`, in the
    /// order of their last parts, reading its entries from `from` (at most `after + 1`: the
    /// first part of a change that straddles `after`); each read within `wait`.
    pub async fn read_changes(
        &self,
        memory: &str,
        from: u64,
        after: u64,
        before: u64,
        wait: Duration,
    ) -> Result<Vec<TmEntry>, ClusterError> {
        let subject = self.subject(memory)?;
        let mut changes = Vec::new();
        if before <= after + 1 {
            return Ok(changes);
        }
        let config = OrderedConfig {
            filter_subject: subject,
            deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: from.max(1) },
            ..Default::default()
        };
        let consumer = self.stream.create_consumer(config).await.map_err(unavailable)?;
        let mut messages = consumer.messages().await.map_err(unavailable)?;
        let mut parts = Reassembly::default();
        loop {
            let next = tokio::time::timeout(wait, messages.next()).await.map_err(|_| {
                ClusterError::Unavailable("reading a memory's log timed out".into())
            })?;
            let Some(message) = next else { break };
            let message = message.map_err(unavailable)?;
            let sequence = message.info().map_err(unavailable)?.stream_sequence;
            if sequence >= before {
                break;
            }
            let Some((op, (index, count))) = headers_of(&message) else { continue };
            let whole = parts.push(sequence, memory, &op, index, count, message.payload.clone());
            if let Some(payload) = whole.filter(|_| sequence > after) {
                let memory = memory.to_owned();
                changes.push(TmEntry { sequence, held_from: None, memory, op, payload });
            }
        }
        Ok(changes)
    }

    /// Drops `memory`'s entries below `sequence` (those at and after it stay).
    pub async fn purge_below(&self, memory: &str, sequence: u64) -> Result<(), ClusterError> {
        let subject = self.subject(memory)?;
        let purge = self.stream.purge().filter(subject).sequence(sequence);
        purge.await.map(drop).map_err(unavailable)
    }

    /// The sequence of the last part written for `memory` (0 when none).
    pub async fn tail(&self, memory: &str) -> Result<u64, ClusterError> {
        let subject = self.subject(memory)?;
        match self.stream.get_last_raw_message_by_subject(&subject).await {
            Ok(message) => Ok(message.sequence),
            Err(err) if err.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(0),
            Err(err) => Err(unavailable(err)),
        }
    }

    /// Removes every entry of `memory` (it was deleted).
    pub async fn purge(&self, memory: &str) -> Result<(), ClusterError> {
        let subject = self.subject(memory)?;
        self.stream.purge().filter(subject).await.map(drop).map_err(unavailable)
    }

    /// Hands every whole change to `deliver`, in the order of their last parts, for ever
    /// (after an error it waits a moment and goes on). `passed` is told each sequence read, so
    /// that a caller knows how far the log was read even when no change ended there.
    pub async fn follow<F, Fut>(&self, mut deliver: F, mut passed: impl FnMut(u64))
    where
        F: FnMut(TmEntry) -> Fut,
        Fut: Future<Output = ()>,
    {
        let mut parts = Reassembly::default();
        let mut after = 0;
        loop {
            let followed =
                self.follow_once(&mut after, &mut parts, &mut deliver, &mut passed).await;
            if let Err(err) = followed {
                tracing::warn!(error = %err, after, "following the memories' log: retrying");
                tokio::time::sleep(FOLLOW_RETRY).await;
            }
        }
    }

    async fn follow_once<F, Fut>(
        &self,
        after: &mut u64,
        parts: &mut Reassembly,
        deliver: &mut F,
        passed: &mut impl FnMut(u64),
    ) -> Result<(), ClusterError>
    where
        F: FnMut(TmEntry) -> Fut,
        Fut: Future<Output = ()>,
    {
        let config = OrderedConfig {
            filter_subject: format!("{}.*", self.subject_prefix),
            deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: *after + 1 },
            ..Default::default()
        };
        let consumer = self.stream.create_consumer(config).await.map_err(unavailable)?;
        let mut messages = consumer.messages().await.map_err(unavailable)?;
        let subject_start = format!("{}.", self.subject_prefix);
        while let Some(message) = messages.next().await {
            let message = message.map_err(unavailable)?;
            let sequence = message.info().map_err(unavailable)?.stream_sequence;
            if sequence <= *after {
                continue;
            }
            let memory = message
                .subject
                .as_str()
                .strip_prefix(&subject_start)
                .unwrap_or_default()
                .to_owned();
            match headers_of(&message) {
                Some((op, (index, count))) => {
                    let part = message.payload.clone();
                    if let Some(payload) = parts.push(sequence, &memory, &op, index, count, part) {
                        let held_from = parts.held_from(&memory);
                        let entry = TmEntry { sequence, held_from, memory, op, payload };
                        deliver(entry).await;
                    }
                }
                None => tracing::warn!(sequence, "a memory log entry without its headers skipped"),
            }
            *after = sequence;
            passed(sequence);
        }
        Err(ClusterError::Unavailable("the memories' consumer ended".into()))
    }
}

/// A part's change id and place, from its headers.
fn headers_of(message: &async_nats::jetstream::Message) -> Option<(String, (usize, usize))> {
    let header = |name: &str| message.headers.as_ref()?.get(name).map(|v| v.as_str().to_owned());
    let place = header(PART_HEADER).as_deref().and_then(parse_part)?;
    Some((header(OP_HEADER)?, place))
}

/// `<index>/<count>` with index < count <= MAX_PARTS.
fn parse_part(text: &str) -> Option<(usize, usize)> {
    let (index, count) = text.split_once('/')?;
    let (index, count) = (index.parse().ok()?, count.parse().ok()?);
    (index < count && count <= MAX_PARTS).then_some((index, count))
}

/// The parts of changes not yet whole, by change id.
#[derive(Debug, Default)]
pub struct Reassembly {
    pending: HashMap<String, Pending>,
    bytes: usize,
}

#[derive(Debug)]
struct Pending {
    first: u64,
    memory: String,
    parts: Vec<Option<Bytes>>,
}

impl Reassembly {
    /// Takes part `index` of `count` of change `op` of `memory`, read at `sequence`; the whole
    /// change when that was its last missing part. Drops changes gone stale and the oldest past
    /// the byte bound.
    pub fn push(
        &mut self,
        sequence: u64,
        memory: &str,
        op: &str,
        index: usize,
        count: usize,
        part: Bytes,
    ) -> Option<Bytes> {
        if count == 1 {
            self.evict(sequence);
            return Some(part);
        }
        let pending = self.pending.entry(op.to_owned()).or_insert_with(|| Pending {
            first: sequence,
            memory: memory.to_owned(),
            parts: vec![None; count],
        });
        if pending.parts.len() != count || index >= count {
            return None;
        }
        if pending.parts[index].is_none() {
            self.bytes += part.len();
        }
        pending.parts[index] = Some(part);
        let whole = if pending.parts.iter().all(Option::is_some) {
            let done = self.pending.remove(op).map(|p| p.parts).unwrap_or_default();
            let mut joined = BytesMut::new();
            for part in done.into_iter().flatten() {
                self.bytes -= part.len();
                joined.extend_from_slice(&part);
            }
            Some(joined.freeze())
        } else {
            None
        };
        self.evict(sequence);
        whole
    }

    /// Drops what went stale by `sequence`, then the oldest while over `PENDING_BYTES`.
    fn evict(&mut self, sequence: u64) {
        let stale: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| sequence.saturating_sub(p.first) > STALE_AFTER)
            .map(|(op, _)| op.clone())
            .collect();
        for op in stale {
            self.drop_op(&op);
        }
        while self.bytes > PENDING_BYTES {
            let oldest = self.pending.iter().min_by_key(|(_, p)| p.first).map(|(op, _)| op.clone());
            match oldest {
                Some(op) => self.drop_op(&op),
                None => break,
            }
        }
    }

    fn drop_op(&mut self, op: &str) {
        if let Some(pending) = self.pending.remove(op) {
            self.bytes -= pending.parts.iter().flatten().map(Bytes::len).sum::<usize>();
            tracing::warn!(op, "an unfinished translation memory change dropped");
        }
    }

    /// How many changes wait for parts.
    pub fn waiting(&self) -> usize {
        self.pending.len()
    }

    /// The first sequence of `memory`'s changes waiting for parts, if any.
    pub fn held_from(&self, memory: &str) -> Option<u64> {
        self.pending.values().filter(|p| p.memory == memory).map(|p| p.first).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_parts_make_whole_changes_at_their_last_part() {
        let mut parts = Reassembly::default();
        let part = |text: &'static str| Bytes::from_static(text.as_bytes());
        assert_eq!(parts.push(1, "m", "a", 0, 2, part("a0")), None);
        assert_eq!(parts.push(2, "n", "b", 1, 2, part("b1")), None);
        assert_eq!((parts.held_from("m"), parts.held_from("n")), (Some(1), Some(2)));
        assert_eq!(parts.push(3, "m", "c", 0, 1, part("c")), Some(Bytes::from("c")));
        assert_eq!(parts.push(4, "n", "b", 0, 2, part("b0")), Some(Bytes::from("b0b1")));
        assert_eq!(parts.held_from("n"), None);
        // A part read again (a consumer re-created) changes nothing.
        assert_eq!(parts.push(5, "m", "a", 0, 2, part("a0")), None);
        assert_eq!(parts.push(6, "m", "a", 1, 2, part("a1")), Some(Bytes::from("a0a1")));
        assert_eq!(parts.held_from("m"), None);
        assert_eq!(parts.waiting(), 0);
        assert_eq!(parts.bytes, 0);
    }

    #[test]
    fn unfinished_changes_are_dropped_when_stale_and_bad_places_are_ignored() {
        let mut parts = Reassembly::default();
        assert_eq!(parts.push(1, "m", "dead", 0, 3, Bytes::from_static(b"x")), None);
        assert_eq!(parts.push(2, "m", "odd", 5, 2, Bytes::from_static(b"x")), None);
        assert_eq!(parts.push(3, "m", "dead", 0, 4, Bytes::from_static(b"y")), None);
        assert_eq!(parts.waiting(), 2);
        let late = STALE_AFTER + 10;
        assert_eq!(parts.push(late, "m", "new", 0, 1, Bytes::new()), Some(Bytes::new()));
        assert_eq!(parts.waiting(), 0);
        assert_eq!(parts.bytes, 0);
        assert_eq!(parse_part("0/1"), Some((0, 1)));
        for bad in ["1/1", "x/2", "0/0", "3", "0/100000"] {
            assert_eq!(parse_part(bad), None, "{bad}");
        }
    }
}
