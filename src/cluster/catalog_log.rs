//! The catalogue's log on JetStream: the `<prefix>_catalog` stream with its one subject
//! `<prefix>.catalog`, replicated on `replicas` NATS servers, file storage. Each entry is one
//! catalogue change set as bytes (what the payload means is the catalogue's business, not this
//! module's), with the writing node's id in the `Gridd-Node` header.
//!
//! Writes are optimistic: a node publishes with `Nats-Expected-Last-Subject-Sequence` = the
//! sequence it has applied, so JetStream stores the entry only if no other node's entry landed
//! since; otherwise `publish` answers `Behind` and the node catches up (`read_after`) and
//! decides whether to publish again. JetStream may also refuse a publish that follows the
//! previous one closely (code 10164, see `branch_log`): a catch-up then finds nothing new and
//! the publish is simply retried.
//!
//! Reads: `read_after` (bounded: one call reads at most `MAX_READ` entries, each within a wait)
//! for catch-up, and `follow` (a long-lived ordered consumer, re-created after an error) for a
//! node to apply every other node's entries as they land.
//!
//! Purges: `purge_below` drops the entries below a sequence once an image of the catalogue
//! covers them and every live node has read them (`catalog::replica` decides). The stream has
//! one subject, so its sequences have no holes: a read that finds its next entry gone answers
//! `Purged` and the reader starts again from the image.

use std::future::Future;
use std::time::Duration;

use async_nats::header::{HeaderMap, NATS_EXPECTED_LAST_SUBJECT_SEQUENCE};
use async_nats::jetstream::consumer::{pull::OrderedConfig, DeliverPolicy};
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::stream::{self, StorageType};
use bytes::Bytes;
use futures_util::StreamExt;

use super::{unavailable, wrong_last_sequence, ClusterError, ClusterLink};

/// The header naming the node that wrote an entry.
pub const NODE_HEADER: &str = "Gridd-Node";
/// The most entries one `read_after` returns (the caller reads again from the last one).
pub const MAX_READ: usize = 4096;
/// How long `follow` waits before re-creating its consumer after an error.
const FOLLOW_RETRY: Duration = Duration::from_millis(250);

/// One entry of the catalogue's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    pub sequence: u64,
    /// The node that wrote it (empty when the header is missing).
    pub node: String,
    pub payload: Bytes,
}

/// How a publish ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// Stored at this sequence.
    At(u64),
    /// Refused: the subject's last sequence was not the expected one.
    Behind,
}

/// The catalogue's stream.
#[derive(Debug, Clone)]
pub struct CatalogLog {
    link: ClusterLink,
    stream: stream::Stream,
    subject: String,
    node: String,
}

impl CatalogLog {
    /// Opens the stream (creating it when missing) for node `node`'s writes and reads.
    pub async fn open(link: &ClusterLink, node: &str) -> Result<CatalogLog, ClusterError> {
        let subject = format!("{}.catalog", link.settings.prefix);
        let config = stream::Config {
            name: link.name("catalog"),
            subjects: vec![subject.clone()],
            num_replicas: link.settings.replicas,
            storage: StorageType::File,
            allow_direct: true,
            ..Default::default()
        };
        let stream = link
            .jetstream
            .get_or_create_stream(config)
            .await
            .map_err(|err| ClusterError::Setup(err.to_string()))?;
        let log = CatalogLog { link: link.clone(), stream, subject, node: node.to_owned() };
        log.wait_ready(link.settings.request_timeout).await?;
        Ok(log)
    }

    /// Waits (at most `within`) until the stream answers: one just created on several servers
    /// answers "no stream found" for a moment, until its replicas have elected a leader.
    async fn wait_ready(&self, within: Duration) -> Result<(), ClusterError> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match self.last_sequence().await {
                Ok(_) => return Ok(()),
                Err(err) if tokio::time::Instant::now() >= deadline => return Err(err),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Publishes `payload` if the log's last entry is still `expected` (0: the log is empty).
    pub async fn publish(&self, payload: Bytes, expected: u64) -> Result<Published, ClusterError> {
        let mut headers = HeaderMap::new();
        headers.insert(NODE_HEADER, self.node.as_str());
        headers.insert(NATS_EXPECTED_LAST_SUBJECT_SEQUENCE, expected.to_string().as_str());
        let acked = super::publish_until_found(&self.link, &self.subject, headers, payload).await;
        match acked {
            Ok(ack) => Ok(Published::At(ack.sequence)),
            Err(err)
                if err.kind() == PublishErrorKind::WrongLastSequence
                    || wrong_last_sequence(&err) =>
            {
                Ok(Published::Behind)
            }
            Err(err) => Err(unavailable(err)),
        }
    }

    /// The sequence of the log's last entry (0 when empty).
    pub async fn last_sequence(&self) -> Result<u64, ClusterError> {
        Ok(self.bounds().await?.1)
    }

    /// The sequences of the log's first and last entries (first is last + 1 when it is empty).
    pub async fn bounds(&self) -> Result<(u64, u64), ClusterError> {
        let state = self.stream.get_info().await.map_err(unavailable)?.state;
        Ok((state.first_sequence, state.last_sequence))
    }

    /// Drops every entry below `sequence` (those at and after it stay).
    pub async fn purge_below(&self, sequence: u64) -> Result<(), ClusterError> {
        self.stream.purge().sequence(sequence).await.map(drop).map_err(unavailable)
    }

    /// The entries after `after`, in order, up to the log's end as it is when called, at most
    /// `MAX_READ` of them (read again from the last one for more); each read within `wait`.
    pub async fn read_after(
        &self,
        after: u64,
        wait: Duration,
    ) -> Result<Vec<CatalogEntry>, ClusterError> {
        let (first, last) = self.bounds().await?;
        let mut entries = Vec::new();
        if last <= after {
            return Ok(entries);
        }
        if first > after + 1 {
            return Err(ClusterError::Purged { after, first });
        }
        let (name, mut messages) = self.named_consumer(after).await?;
        let read = Self::read_until(&mut messages, after, last, wait, &mut entries).await;
        drop(messages);
        // A catch-up's consumer is done with: deleted now rather than left to the server's
        // inactivity limit, so that a burst of catch-ups does not pile up consumers.
        if tokio::time::timeout(wait, self.delete_catch_up_consumer(&name)).await.is_err() {
            tracing::debug!(consumer = %name, "a catch-up's consumer was left to expire");
        }
        read.map(|()| entries)
    }

    /// Deletes the consumer `name` of a finished read, or, when async-nats re-created it while
    /// reading (it deletes the old one and names the new one `<name>_<n>`), its replacement.
    async fn delete_catch_up_consumer(&self, name: &str) {
        if self.stream.delete_consumer(name).await.is_ok() {
            return;
        }
        let prefix = format!("{name}_");
        let mut names = self.stream.consumer_names();
        let mut replacements = Vec::new();
        while let Some(Ok(other)) = names.next().await {
            if other.starts_with(&prefix) {
                replacements.push(other);
            }
        }
        for other in replacements {
            if self.stream.delete_consumer(&other).await.is_err() {
                tracing::debug!(consumer = %other, "a catch-up's consumer was left to expire");
            }
        }
    }

    /// Reads `messages` into `entries` up to `last` (or `MAX_READ` entries), each within `wait`.
    async fn read_until(
        messages: &mut async_nats::jetstream::consumer::pull::Ordered,
        after: u64,
        last: u64,
        wait: Duration,
        entries: &mut Vec<CatalogEntry>,
    ) -> Result<(), ClusterError> {
        while entries.len() < MAX_READ {
            let next = tokio::time::timeout(wait, messages.next()).await.map_err(|_| {
                ClusterError::Unavailable("reading the catalogue's log timed out".into())
            })?;
            let Some(message) = next else { break };
            let entry = entry_of(message.map_err(unavailable)?)?;
            let expected = entries.last().map_or(after, |e: &CatalogEntry| e.sequence) + 1;
            if entry.sequence < expected {
                // Read already, or before the start: an ordered consumer that async-nats
                // re-creates before it delivered anything starts again from the stream's
                // first entry, not from `after + 1` (seen once in a full test run).
                continue;
            }
            if entry.sequence > expected {
                // Purged between the bounds and this read.
                return Err(ClusterError::Purged { after, first: entry.sequence });
            }
            let done = entry.sequence >= last;
            entries.push(entry);
            if done {
                break;
            }
        }
        Ok(())
    }

    /// Hands every entry after `after` to `deliver`, in order, as they land, for ever: after an
    /// error it waits a moment and goes on after the last entry delivered. Ends when `deliver`
    /// answers false.
    pub async fn follow<F, Fut>(&self, mut after: u64, mut deliver: F)
    where
        F: FnMut(CatalogEntry) -> Fut,
        Fut: Future<Output = bool>,
    {
        loop {
            match self.follow_once(&mut after, &mut deliver).await {
                Ok(()) => return,
                Err(err) => {
                    tracing::warn!(error = %err, after, "following the catalogue's log: retrying");
                    tokio::time::sleep(FOLLOW_RETRY).await;
                }
            }
        }
    }

    /// One consumer's life: Ok when `deliver` asked to stop, Err when the consumer failed.
    async fn follow_once<F, Fut>(
        &self,
        after: &mut u64,
        deliver: &mut F,
    ) -> Result<(), ClusterError>
    where
        F: FnMut(CatalogEntry) -> Fut,
        Fut: Future<Output = bool>,
    {
        let mut messages = self.consumer(*after).await?;
        while let Some(message) = messages.next().await {
            let entry = entry_of(message.map_err(unavailable)?)?;
            let sequence = entry.sequence;
            if sequence <= *after {
                continue;
            }
            if !deliver(entry).await {
                return Ok(());
            }
            *after = sequence;
        }
        Err(ClusterError::Unavailable("the catalogue's consumer ended".into()))
    }

    async fn consumer(
        &self,
        after: u64,
    ) -> Result<async_nats::jetstream::consumer::pull::Ordered, ClusterError> {
        Ok(self.named_consumer(after).await?.1)
    }

    /// An ordered consumer of the entries after `after`, with the name the server gave it.
    async fn named_consumer(
        &self,
        after: u64,
    ) -> Result<(String, async_nats::jetstream::consumer::pull::Ordered), ClusterError> {
        let config = OrderedConfig {
            filter_subject: self.subject.clone(),
            deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: after + 1 },
            ..Default::default()
        };
        let consumer = self.stream.create_consumer(config).await.map_err(unavailable)?;
        let name = consumer.cached_info().name.clone();
        Ok((name, consumer.messages().await.map_err(unavailable)?))
    }
}

fn entry_of(message: async_nats::jetstream::Message) -> Result<CatalogEntry, ClusterError> {
    let sequence = message.info().map_err(unavailable)?.stream_sequence;
    let node = message
        .headers
        .as_ref()
        .and_then(|h| h.get(NODE_HEADER))
        .map(|v| v.as_str().to_owned())
        .unwrap_or_default();
    Ok(CatalogEntry { sequence, node, payload: message.payload.clone() })
}
