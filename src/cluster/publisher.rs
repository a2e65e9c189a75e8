//! A branch's writer to the cluster: the one task that appends the branch's WAL entries to its
//! fenced log and stores its images, in the order the branch's actor made them.
//!
//! Group commit: the entries queued while an append is in flight go out together as one batch
//! (a payload of frames: `u32` count, then each entry as `u32` length + bytes), split into
//! parts of at most `PART_BYTES` when larger (all but the last marked `more`). A write is
//! acknowledged (its `Durable` resolves) only once its batch's last part is stored by
//! JetStream and its local WAL record is durable.
//!
//! An image (`store_image`) is taken after every entry queued before it, so it covers the
//! log up to the last part's sequence; it is stored in the object store, and the log entries
//! it covers are purged.
//!
//! Any failure (NATS unreachable, an outcome unknown, another node fenced the branch) ends the
//! publisher: that batch and every later write fail (`WalError::NotReplicated`, a 503), and
//! `on_failure` tells the grid's owner, which drops the grid so that it is loaded again from
//! the log (which tells what was stored) by whichever node takes it next. The actor's memory
//! may hold a write the log lacks; it is never acknowledged and is dropped with the actor.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::{mpsc, oneshot};

use super::branch_log::{BranchLog, FencedWriter};
use super::snapshots::SnapshotBucket;
use super::ClusterError;
use crate::persist::wal::{Durable, WalError};

/// The largest part of a batch in one log entry (NATS's default message limit is 1 MiB).
pub const PART_BYTES: usize = 768 * 1024;
/// Entries taken into one batch at most.
const BATCH_ENTRIES: usize = 1024;
/// Writes queued for the cluster at most, per branch; past it a write is refused (503).
const QUEUE: usize = 8192;

/// Encodes a branch's image (on a blocking thread).
pub type EncodeImage = Box<dyn FnOnce() -> Result<Vec<u8>, String> + Send>;

/// What the owner is told when a publisher ends on a failure: the branch and why.
pub type OnFailure = Arc<dyn Fn(&str, &ClusterError) + Send + Sync>;

enum Item {
    Entry {
        payload: Vec<u8>,
        local: Durable,
        done: oneshot::Sender<Result<(), WalError>>,
    },
    Image {
        encode: EncodeImage,
        done: oneshot::Sender<Result<u64, ClusterError>>,
    },
    /// Answered once everything queued before it is done.
    Barrier(oneshot::Sender<()>),
}

/// The handle the branch's actor holds.
#[derive(Clone)]
pub struct BranchPublisher {
    branch: Arc<str>,
    queue: mpsc::Sender<Item>,
}

impl std::fmt::Debug for BranchPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BranchPublisher").field("branch", &self.branch).finish()
    }
}

/// What the publisher's task works with.
pub struct PublisherParts {
    pub log: BranchLog,
    pub writer: FencedWriter,
    pub images: SnapshotBucket,
    pub on_failure: OnFailure,
}

impl BranchPublisher {
    /// Starts the branch's publisher task on `runtime`.
    pub fn start(runtime: &tokio::runtime::Handle, parts: PublisherParts) -> BranchPublisher {
        let (queue, items) = mpsc::channel(QUEUE);
        let branch: Arc<str> = parts.writer.branch.as_str().into();
        runtime.spawn(run(parts, items));
        BranchPublisher { branch, queue }
    }

    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// Queues a WAL entry for the cluster; the returned `Durable` resolves once both `local`
    /// and the cluster's append are durable.
    pub fn publish(&self, payload: Vec<u8>, local: Durable) -> Durable {
        let (done, durable) = Durable::joined();
        if let Err(refused) = self.queue.try_send(Item::Entry { payload, local, done }) {
            let why = match &refused {
                mpsc::error::TrySendError::Full(_) => "too many writes waiting for the cluster",
                mpsc::error::TrySendError::Closed(_) => "the branch's cluster writer stopped",
            };
            if let Item::Entry { done, .. } = refused.into_inner() {
                let _ = done.send(Err(WalError::NotReplicated(why.into())));
            }
        }
        durable
    }

    /// Resolves once everything queued so far (entries, images) is done or failed.
    pub fn drained(&self) -> oneshot::Receiver<()> {
        let (done, drained) = oneshot::channel();
        if let Err(refused) = self.queue.try_send(Item::Barrier(done)) {
            if let Item::Barrier(done) = refused.into_inner() {
                let _ = done.send(());
            }
        }
        drained
    }

    /// Queues an image of the branch as it is after every entry published so far; resolves to
    /// the log sequence it covers once stored.
    pub fn store_image(&self, encode: EncodeImage) -> oneshot::Receiver<Result<u64, ClusterError>> {
        let (done, stored) = oneshot::channel();
        if let Err(refused) = self.queue.try_send(Item::Image { encode, done }) {
            if let Item::Image { done, .. } = refused.into_inner() {
                let _ = done.send(Err(ClusterError::Unavailable(
                    "the branch's cluster writer is busy or stopped".into(),
                )));
            }
        }
        stored
    }
}

/// The task: takes what is queued, in order, until the queue closes or a failure ends it.
async fn run(mut parts: PublisherParts, mut items: mpsc::Receiver<Item>) {
    let mut taken = Vec::with_capacity(BATCH_ENTRIES);
    let mut failed: Option<ClusterError> = None;
    while items.recv_many(&mut taken, BATCH_ENTRIES).await > 0 {
        let mut batch = Vec::new();
        for item in taken.drain(..) {
            match item {
                Item::Entry { payload, local, done } => batch.push((payload, local, done)),
                Item::Image { encode, done } => {
                    flush(&mut parts, std::mem::take(&mut batch), &mut failed).await;
                    let stored = match &failed {
                        Some(err) => Err(err.clone()),
                        None => store_image(&parts, encode).await,
                    };
                    let _ = done.send(stored);
                }
                Item::Barrier(done) => {
                    flush(&mut parts, std::mem::take(&mut batch), &mut failed).await;
                    let _ = done.send(());
                }
            }
        }
        flush(&mut parts, batch, &mut failed).await;
    }
}

type Pending = (Vec<u8>, Durable, oneshot::Sender<Result<(), WalError>>);

/// Appends one batch and answers its writers; a failure is kept and answers every later one.
async fn flush(parts: &mut PublisherParts, batch: Vec<Pending>, failed: &mut Option<ClusterError>) {
    if batch.is_empty() {
        return;
    }
    if failed.is_none() {
        let payload = frame(batch.iter().map(|(payload, _, _)| payload.as_slice()));
        if let Err(err) = append_parts(parts, payload).await {
            tracing::error!(branch = %parts.writer.branch, error = %err, "cluster append failed; the branch's writer stops");
            (parts.on_failure)(&parts.writer.branch, &err);
            *failed = Some(err);
        }
    }
    for (_, local, done) in batch {
        let outcome = match &failed {
            Some(err) => Err(WalError::NotReplicated(err.to_string())),
            None => local.await,
        };
        let _ = done.send(outcome);
    }
}

/// The entries as one payload: a count, then each with its length.
fn frame<'a>(entries: impl ExactSizeIterator<Item = &'a [u8]> + Clone) -> Bytes {
    let total: usize = entries.clone().map(|e| e.len() + 4).sum::<usize>() + 4;
    let mut out = BytesMut::with_capacity(total);
    out.put_u32_le(entries.len() as u32);
    for entry in entries {
        out.put_u32_le(entry.len() as u32);
        out.put_slice(entry);
    }
    out.freeze()
}

/// The entries of a batch payload (joined from its parts); an error when it is not one.
pub fn unframe(payload: &[u8]) -> Result<Vec<&[u8]>, String> {
    let read_u32 = |at: usize| -> Result<usize, String> {
        let bytes = payload.get(at..at + 4).ok_or("a batch cut short")?;
        Ok(u32::from_le_bytes(bytes.try_into().expect("four bytes")) as usize)
    };
    let count = read_u32(0)?;
    let mut entries = Vec::with_capacity(count.min(payload.len() / 4));
    let mut at = 4;
    for _ in 0..count {
        let len = read_u32(at)?;
        let entry = payload.get(at + 4..at + 4 + len).ok_or("an entry cut short")?;
        entries.push(entry);
        at += 4 + len;
    }
    if at != payload.len() {
        return Err("bytes after a batch's last entry".into());
    }
    Ok(entries)
}

/// Appends a payload as one or more parts.
async fn append_parts(parts: &mut PublisherParts, payload: Bytes) -> Result<u64, ClusterError> {
    let mut rest = payload;
    loop {
        let more = rest.len() > PART_BYTES;
        let part = if more { rest.split_to(PART_BYTES) } else { std::mem::take(&mut rest) };
        let sequence = parts.log.append_part(&mut parts.writer, part, more).await?;
        if !more {
            return Ok(sequence);
        }
    }
}

/// Encodes an image off the runtime and stores it as covering the writer's last entry, then
/// purges the entries it covers.
async fn store_image(parts: &PublisherParts, encode: EncodeImage) -> Result<u64, ClusterError> {
    let covers = parts.writer.last;
    let bytes = tokio::task::spawn_blocking(encode)
        .await
        .map_err(|err| ClusterError::Unavailable(format!("image encoder: {err}")))?
        .map_err(|err| ClusterError::Unavailable(format!("encoding the image: {err}")))?;
    parts.images.put(&parts.writer.branch, covers, bytes.into()).await?;
    if let Err(err) = parts.log.purge_before(&parts.writer.branch, covers).await {
        // The image is stored: a takeover replays from it whatever is kept before it.
        tracing::warn!(branch = %parts.writer.branch, error = %err, "purging the log under an image failed");
    }
    Ok(covers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_frame_and_unframe() {
        let entries: Vec<Vec<u8>> = vec![b"one".to_vec(), Vec::new(), vec![7; 1000]];
        let framed = frame(entries.iter().map(Vec::as_slice));
        let back = unframe(&framed).expect("unframes");
        assert_eq!(back, entries.iter().map(Vec::as_slice).collect::<Vec<_>>());
        for cut in [0, 3, 5, framed.len() - 1] {
            assert!(unframe(&framed[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = framed.to_vec();
        longer.push(0);
        assert!(unframe(&longer).is_err());
        let hostile = [255u8, 255, 255, 255];
        assert!(unframe(&hostile).is_err());
    }
}
