//! A branch's log on JetStream: the `<prefix>_log` stream, one subject per branch
//! (`<prefix>.log.<branch>`), replicated on `replicas` NATS servers, and fenced.
//!
//! Every entry carries the writer's lease epoch (`Gridd-Lease-Epoch` header) and is published
//! with `Nats-Expected-Last-Subject-Sequence`: the sequence of the subject's last entry as the
//! writer knows it. JetStream appends it only if that is still the subject's last entry, so a
//! branch has one linear history and an entry is acknowledged only once stored on a quorum.
//!
//! Fencing: a node that takes a branch over first appends a *fence* (an entry of kind `fence`
//! with its own, higher epoch) after the last entry it sees, retrying when an entry slipped in
//! meanwhile (that entry was acknowledged, so it is kept: the new owner replays up to its own
//! fence). From then on the old owner's next publish names a last sequence that is no longer
//! the subject's last, and JetStream refuses it: `Fenced`, however late the old owner learns
//! that its lease expired. A fence is also refused when the subject already ends with a newer
//! epoch than the lease's (a newer owner came first). `replay` checks that epochs never go
//! down along the subject. Owns the stream; knows nothing of what an entry's payload means.

use std::time::Duration;

use async_nats::header::{HeaderMap, NATS_EXPECTED_LAST_SUBJECT_SEQUENCE};
use async_nats::jetstream::consumer::{pull::OrderedConfig, DeliverPolicy};
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::stream::{self, LastRawMessageErrorKind, StorageType};
use bytes::Bytes;
use futures_util::StreamExt;

use super::lease::Lease;
use super::{check_token, unavailable, wrong_last_sequence, ClusterError, ClusterLink};

/// The header holding the writer's lease epoch.
pub const EPOCH_HEADER: &str = "Gridd-Lease-Epoch";
/// The header saying what an entry is: `fence` or `ops`.
pub const KIND_HEADER: &str = "Gridd-Entry";
/// The header of an `ops` entry whose payload continues in the next entry (a batch larger than
/// one NATS message): a reader joins the parts, and drops a last batch left without its end.
pub const MORE_HEADER: &str = "Gridd-More";
/// A takeover retries its fence at most this many times when entries keep slipping in, and an
/// append its publish when JetStream refuses it while the subject is still the writer's.
const FENCE_ATTEMPTS: usize = 16;

/// What an entry of a branch's log is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A new owner's marker: everything after it is that owner's.
    Fence,
    /// A batch of the branch's ops (a local WAL entry's payload).
    Ops,
}

impl EntryKind {
    fn as_str(self) -> &'static str {
        match self {
            EntryKind::Fence => "fence",
            EntryKind::Ops => "ops",
        }
    }

    fn parse(text: &str) -> Option<EntryKind> {
        match text {
            "fence" => Some(EntryKind::Fence),
            "ops" => Some(EntryKind::Ops),
            _ => None,
        }
    }
}

/// One entry read back from a branch's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    pub sequence: u64,
    pub epoch: u64,
    pub kind: EntryKind,
    /// The payload continues in the next entry (`MORE_HEADER`).
    pub more: bool,
    pub payload: Bytes,
}

/// The last entry of a branch's subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tail {
    pub sequence: u64,
    pub epoch: u64,
}

/// The stream of every branch's log.
#[derive(Debug, Clone)]
pub struct BranchLog {
    link: ClusterLink,
    stream: stream::Stream,
    subject_prefix: String,
}

/// The right to append to one branch's log, won by a fence; lost once another node fences.
///
/// An append whose outcome is unknown (no acknowledgement: a timeout, a connection lost) may
/// still land later, so the writer no longer knows the subject's last sequence: it refuses
/// every later append (`Uncertain`) and its owner must fence again (same lease) and replay up to
/// the new fence, which tells what landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedWriter {
    pub branch: String,
    pub epoch: u64,
    /// The subject's last sequence as this writer knows it.
    pub last: u64,
    uncertain: bool,
}

fn headers(epoch: u64, kind: EntryKind, expected_last: u64) -> HeaderMap {
    headers_more(epoch, kind, expected_last, false)
}

fn headers_more(epoch: u64, kind: EntryKind, expected_last: u64, more: bool) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if more {
        headers.insert(MORE_HEADER, "1");
    }
    headers.insert(EPOCH_HEADER, epoch.to_string().as_str());
    headers.insert(KIND_HEADER, kind.as_str());
    headers.insert(NATS_EXPECTED_LAST_SUBJECT_SEQUENCE, expected_last.to_string().as_str());
    headers
}

fn read_headers(headers: &HeaderMap) -> Option<(u64, EntryKind)> {
    let epoch = headers.get(EPOCH_HEADER)?.as_str().parse().ok()?;
    let kind = EntryKind::parse(headers.get(KIND_HEADER)?.as_str())?;
    Some((epoch, kind))
}

/// How a fenced publish ended.
enum Appended {
    At(u64),
    /// The subject's last sequence was not the expected one.
    Behind,
}

impl BranchLog {
    /// Opens the log stream (creating it when missing, with the settings' replicas).
    pub async fn open(link: &ClusterLink) -> Result<BranchLog, ClusterError> {
        let name = link.name("log");
        let subject_prefix = format!("{}.log", link.settings.prefix);
        let config = stream::Config {
            name: name.clone(),
            subjects: vec![format!("{subject_prefix}.*")],
            num_replicas: link.settings.replicas,
            storage: StorageType::File,
            allow_direct: true,
            ..Default::default()
        };
        let stream = match link.jetstream.get_or_create_stream(config).await {
            Ok(stream) => stream,
            Err(err) => return Err(ClusterError::Setup(err.to_string())),
        };
        Ok(BranchLog { link: link.clone(), stream, subject_prefix })
    }

    fn subject(&self, branch: &str) -> Result<String, ClusterError> {
        check_token("branch", branch)?;
        Ok(format!("{}.{branch}", self.subject_prefix))
    }

    /// Removes the branch's entries below `sequence` (an image covers them); the entry at
    /// `sequence` and those after it stay, so the subject's tail is untouched.
    pub async fn purge_before(&self, branch: &str, sequence: u64) -> Result<(), ClusterError> {
        let subject = self.subject(branch)?;
        self.stream.purge().filter(subject).sequence(sequence).await.map(drop).map_err(unavailable)
    }

    /// Removes every entry of the branch (its grid or branch was deleted).
    pub async fn purge_all(&self, branch: &str) -> Result<(), ClusterError> {
        let subject = self.subject(branch)?;
        self.stream.purge().filter(subject).await.map(drop).map_err(unavailable)
    }

    /// The branch's last entry (None for a branch never logged).
    pub async fn tail(&self, branch: &str) -> Result<Option<Tail>, ClusterError> {
        let subject = self.subject(branch)?;
        match self.stream.get_last_raw_message_by_subject(&subject).await {
            Ok(message) => {
                let (epoch, _) =
                    read_headers(&message.headers).ok_or_else(|| ClusterError::Disordered {
                        branch: branch.to_string(),
                        sequence: message.sequence,
                    })?;
                Ok(Some(Tail { sequence: message.sequence, epoch }))
            }
            Err(err) if err.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(err) => Err(unavailable(err)),
        }
    }

    async fn publish(
        &self,
        subject: String,
        headers: HeaderMap,
        payload: Bytes,
    ) -> Result<Appended, ClusterError> {
        match super::publish_until_found(&self.link, &subject, headers, payload).await {
            Ok(ack) => Ok(Appended::At(ack.sequence)),
            Err(err)
                if err.kind() == PublishErrorKind::WrongLastSequence
                    || wrong_last_sequence(&err) =>
            {
                Ok(Appended::Behind)
            }
            Err(err) => Err(unavailable(err)),
        }
    }

    /// Takes the branch's log over for `lease`: appends a fence after the subject's last entry.
    /// `Fenced` when a newer epoch already wrote there (or the entries kept slipping in).
    pub async fn fence(&self, lease: &Lease) -> Result<FencedWriter, ClusterError> {
        let subject = self.subject(&lease.branch)?;
        let fenced = || ClusterError::Fenced { branch: lease.branch.clone() };
        for _ in 0..FENCE_ATTEMPTS {
            let tail = self.tail(&lease.branch).await?;
            if tail.is_some_and(|tail| tail.epoch > lease.epoch) {
                return Err(fenced());
            }
            let last = tail.map_or(0, |tail| tail.sequence);
            let headers = headers(lease.epoch, EntryKind::Fence, last);
            match self.publish(subject.clone(), headers, Bytes::new()).await? {
                Appended::At(sequence) => {
                    return Ok(FencedWriter {
                        branch: lease.branch.clone(),
                        epoch: lease.epoch,
                        last: sequence,
                        uncertain: false,
                    })
                }
                Appended::Behind => continue,
            }
        }
        Err(fenced())
    }

    /// Appends `payload` as the writer's next entry and returns its sequence once JetStream
    /// stored it; `Fenced` when another node fenced the branch since the writer's last entry;
    /// `Unavailable` when the outcome is unknown, after which the writer is `Uncertain`.
    pub async fn append(
        &self,
        writer: &mut FencedWriter,
        payload: Bytes,
    ) -> Result<u64, ClusterError> {
        self.append_part(writer, payload, false).await
    }

    /// `append` of one part of a payload that continues in the next entry when `more`.
    pub async fn append_part(
        &self,
        writer: &mut FencedWriter,
        payload: Bytes,
        more: bool,
    ) -> Result<u64, ClusterError> {
        if writer.uncertain {
            return Err(ClusterError::Uncertain { branch: writer.branch.clone() });
        }
        let subject = self.subject(&writer.branch)?;
        for attempt in 1..=FENCE_ATTEMPTS as u64 {
            let headers = headers_more(writer.epoch, EntryKind::Ops, writer.last, more);
            match self.publish(subject.clone(), headers, payload.clone()).await {
                Ok(Appended::At(sequence)) => {
                    writer.last = sequence;
                    return Ok(sequence);
                }
                Ok(Appended::Behind) => {}
                Err(err) => {
                    writer.uncertain = true;
                    return Err(err);
                }
            }
            // Refused as behind. JetStream also refuses, now and then, a publish that follows
            // its writer's previous one too closely (its per-subject check of the proposals in
            // flight): only a subject that moved on means another owner.
            let still_ours = self
                .tail(&writer.branch)
                .await?
                .is_some_and(|tail| tail.sequence == writer.last && tail.epoch == writer.epoch);
            if !still_ours {
                return Err(ClusterError::Fenced { branch: writer.branch.clone() });
            }
            tracing::debug!(branch = %writer.branch, attempt, "append refused spuriously: retried");
            tokio::time::sleep(Duration::from_millis(attempt)).await;
        }
        Err(ClusterError::Unavailable(format!(
            "branch {}: append refused {FENCE_ATTEMPTS} times though nobody else wrote",
            writer.branch
        )))
    }

    /// The branch's entries after sequence `after` up to `upto` (inclusive), in order, each
    /// read within `wait`; epochs must not go down along the way (`Disordered`).
    pub async fn replay(
        &self,
        branch: &str,
        after: u64,
        upto: u64,
        wait: Duration,
    ) -> Result<Vec<LogEntry>, ClusterError> {
        let mut entries = Vec::new();
        self.replay_each(branch, (after, upto), wait, |entry| entries.push(entry)).await?;
        Ok(entries)
    }

    /// `replay`, handing each entry to `each` as it is read instead of collecting them.
    pub async fn replay_each(
        &self,
        branch: &str,
        (after, upto): (u64, u64),
        wait: Duration,
        mut each: impl FnMut(LogEntry),
    ) -> Result<(), ClusterError> {
        let subject = self.subject(branch)?;
        if upto <= after {
            return Ok(());
        }
        let config = OrderedConfig {
            filter_subject: subject,
            deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: after + 1 },
            ..Default::default()
        };
        let consumer = self.stream.create_consumer(config).await.map_err(unavailable)?;
        let mut messages = consumer.messages().await.map_err(unavailable)?;
        let mut epoch = 0;
        loop {
            let next = tokio::time::timeout(wait, messages.next())
                .await
                .map_err(|_| ClusterError::Unavailable(format!("replay of {branch} timed out")))?;
            let Some(message) = next else { break };
            let message = message.map_err(unavailable)?;
            let sequence = message.info().map_err(unavailable)?.stream_sequence;
            let disordered = || ClusterError::Disordered { branch: branch.to_string(), sequence };
            let headers = message.headers.as_ref().ok_or_else(disordered)?;
            let (entry_epoch, kind) = read_headers(headers).ok_or_else(disordered)?;
            if entry_epoch < epoch {
                return Err(disordered());
            }
            epoch = entry_epoch;
            let more = headers.get(MORE_HEADER).is_some();
            each(LogEntry { sequence, epoch, kind, more, payload: message.payload.clone() });
            if sequence >= upto {
                break;
            }
        }
        Ok(())
    }
}
