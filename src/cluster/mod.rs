//! Clustering over NATS JetStream (issue 24; design and status in `docs/CLUSTER.md`).
//!
//! What is here is the foundation, each part tested against real `nats-server` processes:
//! - `placement`: rendezvous hashing of branches over live nodes (pure, no NATS);
//! - `rebalance`: what a node does with leases on each heartbeat (pure: acquire, hand over);
//! - `membership`: each node's heartbeat in a KV bucket whose entries expire (the live-node list);
//! - `lease`: one owner per branch through a KV bucket with a TTL (create, renew with the
//!   expected revision, release with the revision, expiry by the bucket's max age);
//! - `locate`: which node serves a grid, branch or view id now (a core NATS request answered by
//!   the node that serves it; cached), for request forwarding (`api::forward`);
//! - `branch_log`: a branch's log entries on a replicated JetStream stream, each published with
//!   the owner's lease epoch and the subject's expected last sequence, so that once a new owner
//!   has fenced the branch (its own marker on the subject) a stale owner's publish is refused.
//!
//! It owns its NATS connection, buckets and stream, and knows nothing of HTTP, the catalogue,
//! grid actors or the local WAL: nothing in the server calls it yet (no `--cluster` flag), see
//! "What is built" in `docs/CLUSTER.md`.

pub mod asks;
pub mod branch_log;
pub mod catalog_log;
pub mod cdn_files;
pub mod files;
pub mod lease;
pub mod locate;
pub mod membership;
pub mod node;
pub mod owned;
pub mod placement;
pub mod publisher;
pub mod rebalance;
pub mod snapshots;
pub mod tm_log;

use std::fmt;
use std::time::Duration;

use async_nats::jetstream::{self, kv};

use crate::error::{Coded, ErrorCode};

/// How a node reaches the NATS cluster and sizes what it creates there.
#[derive(Debug, Clone)]
pub struct ClusterSettings {
    /// `nats://host:port` URLs of the NATS servers (any one is enough to connect).
    pub servers: Vec<String>,
    /// Replicas of every bucket and stream gridd creates (3 in the tests; at most the number of
    /// NATS servers).
    pub replicas: usize,
    /// Prefix of gridd's bucket and stream names (`GRIDD` by default), so that tests, or two
    /// gridd clusters, can share one NATS cluster.
    pub prefix: String,
    /// A node not heard from for this long is no longer live (membership entries' max age).
    pub node_ttl: Duration,
    /// A lease not renewed for this long expires (lease entries' max age).
    pub lease_ttl: Duration,
    /// How long one NATS request (a KV operation, a publish's acknowledgement) may take.
    pub request_timeout: Duration,
}

impl ClusterSettings {
    /// The defaults a server would use: 3 replicas, a 10 s node TTL and a 10 s lease TTL.
    pub fn new(servers: Vec<String>) -> ClusterSettings {
        ClusterSettings {
            servers,
            replicas: 3,
            prefix: "GRIDD".to_string(),
            node_ttl: Duration::from_secs(10),
            lease_ttl: Duration::from_secs(10),
            request_timeout: Duration::from_secs(5),
        }
    }
}

/// A connection to the NATS cluster with its JetStream context.
#[derive(Clone)]
pub struct ClusterLink {
    pub settings: ClusterSettings,
    pub jetstream: jetstream::Context,
}

impl fmt::Debug for ClusterLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterLink").field("settings", &self.settings).finish()
    }
}

impl ClusterLink {
    /// Connects to any of the servers (bounded by the request timeout) as `node`.
    pub async fn connect(
        settings: ClusterSettings,
        node: &str,
    ) -> Result<ClusterLink, ClusterError> {
        let client = async_nats::ConnectOptions::new()
            .name(format!("gridd {node}"))
            .connection_timeout(settings.request_timeout)
            .request_timeout(Some(settings.request_timeout))
            .connect(settings.servers.clone())
            .await
            .map_err(|err| ClusterError::Connect(err.to_string()))?;
        let mut jetstream = jetstream::new(client);
        jetstream.set_timeout(settings.request_timeout);
        Ok(ClusterLink { settings, jetstream })
    }

    /// The name of one of gridd's buckets or streams, under the settings' prefix.
    fn name(&self, suffix: &str) -> String {
        format!("{}_{suffix}", self.settings.prefix)
    }

    /// Opens one of gridd's KV buckets (creating it when missing: two nodes creating it at
    /// once with the same settings both succeed), keeping one entry per key, each expiring
    /// `max_age` after it was written.
    pub(crate) async fn open_bucket(
        &self,
        suffix: &str,
        max_age: Duration,
    ) -> Result<kv::Store, ClusterError> {
        let bucket = self.name(suffix);
        let config = kv::Config {
            bucket: bucket.clone(),
            history: 1,
            max_age,
            num_replicas: self.settings.replicas,
            storage: jetstream::stream::StorageType::File,
            ..Default::default()
        };
        match self.jetstream.create_key_value(config).await {
            Ok(store) => Ok(store),
            Err(create) => self
                .jetstream
                .get_key_value(bucket)
                .await
                .map_err(|open| ClusterError::Setup(format!("{create}; {open}"))),
        }
    }
}

impl ClusterLink {
    /// Opens one of gridd's object stores (creating it when missing), replicated as the rest.
    pub(crate) async fn open_object_store(
        &self,
        suffix: &str,
    ) -> Result<jetstream::object_store::ObjectStore, ClusterError> {
        let bucket = self.name(suffix);
        let config = jetstream::object_store::Config {
            bucket: bucket.clone(),
            num_replicas: self.settings.replicas,
            storage: jetstream::stream::StorageType::File,
            ..Default::default()
        };
        match self.jetstream.create_object_store(config).await {
            Ok(store) => Ok(store),
            Err(create) => self
                .jetstream
                .get_object_store(&bucket)
                .await
                .map_err(|open| ClusterError::Setup(format!("{create}; {open}"))),
        }
    }
}

/// A node or branch id that can be a KV key and a subject token: 1..=64 of `[A-Za-z0-9_-]`
/// (gridd's generated ids are 14 lowercase alphanumerics).
pub fn check_token(kind: &'static str, id: &str) -> Result<(), ClusterError> {
    let valid = !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if valid {
        Ok(())
    } else {
        Err(ClusterError::InvalidId { kind, id: id.chars().take(80).collect() })
    }
}

/// What went wrong talking to the cluster, or what the cluster refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterError {
    /// No NATS server of the list answered.
    Connect(String),
    /// A bucket or stream could not be created or opened.
    Setup(String),
    /// A KV operation or a read of the stream failed (NATS unreachable, no quorum, timeout).
    Unavailable(String),
    /// A node or branch id that cannot be a key or subject token.
    InvalidId { kind: &'static str, id: String },
    /// The lease was renewed or released with a revision that is no longer the key's: it
    /// expired, or another node holds it now.
    LeaseLost { branch: String },
    /// A publish refused because another owner fenced the branch since this writer's last
    /// entry: the writer is stale and must stop writing.
    Fenced { branch: String },
    /// An earlier append's outcome is unknown (it may still land): the writer must fence
    /// again and replay before it appends.
    Uncertain { branch: String },
    /// An entry read back that breaks the log's order (a lower lease epoch after a higher one).
    Disordered { branch: String, sequence: u64 },
    /// The catalogue's log no longer holds the entries after `after` (it was purged below an
    /// image, up to `first`): the reader must start again from the image.
    Purged { after: u64, first: u64 },
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::Connect(why) => write!(f, "cannot reach the NATS cluster: {why}"),
            ClusterError::Setup(why) => write!(f, "cannot set up the cluster's buckets: {why}"),
            ClusterError::Unavailable(why) => write!(f, "the NATS cluster is unavailable: {why}"),
            ClusterError::InvalidId { kind, id } => {
                write!(f, "{kind} id {id:?} is not usable in the cluster (1..=64 of [A-Za-z0-9_-])")
            }
            ClusterError::LeaseLost { branch } => {
                write!(f, "this node no longer holds the lease of branch {branch:?}")
            }
            ClusterError::Fenced { branch } => {
                write!(f, "branch {branch:?} was taken over by another node: write refused")
            }
            ClusterError::Uncertain { branch } => write!(
                f,
                "branch {branch:?}'s last log append has an unknown outcome: fence and replay first"
            ),
            ClusterError::Disordered { branch, sequence } => write!(
                f,
                "branch {branch:?}'s log entry {sequence} has an older lease than the one before it"
            ),
            ClusterError::Purged { after, first } => write!(
                f,
                "the catalogue's log was purged past sequence {after} (it starts at {first})"
            ),
        }
    }
}

impl std::error::Error for ClusterError {}

impl Coded for ClusterError {
    fn code(&self) -> ErrorCode {
        match self {
            ClusterError::InvalidId { .. } => ErrorCode::BadRequest,
            ClusterError::Disordered { .. } => ErrorCode::InternalServerError,
            ClusterError::Connect(_)
            | ClusterError::Setup(_)
            | ClusterError::Unavailable(_)
            | ClusterError::LeaseLost { .. }
            | ClusterError::Fenced { .. }
            | ClusterError::Uncertain { .. }
            | ClusterError::Purged { .. } => ErrorCode::ServiceUnavailable,
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            ClusterError::InvalidId { .. } | ClusterError::Disordered { .. } => None,
            ClusterError::Connect(_)
            | ClusterError::Setup(_)
            | ClusterError::Unavailable(_)
            | ClusterError::LeaseLost { .. }
            | ClusterError::Fenced { .. }
            | ClusterError::Uncertain { .. }
            | ClusterError::Purged { .. } => Some(1),
        }
    }
}

/// Whether a NATS error (or one it wraps) is JetStream refusing a publish because the subject's
/// last sequence is not the expected one: codes 10071 and 10164 (the second, newer, is not
/// mapped to a kind by the client, and a KV create wraps the first in other kinds).
pub(crate) fn wrong_last_sequence(err: &(dyn std::error::Error + 'static)) -> bool {
    use async_nats::jetstream::{Error as JsError, ErrorCode as JsCode};
    let mut next = Some(err);
    let mut depth = 0;
    while let Some(err) = next {
        if let Some(js) = err.downcast_ref::<JsError>() {
            let code = js.error_code();
            if code == JsCode::STREAM_WRONG_LAST_SEQUENCE
                || code == JsCode::STREAM_WRONG_LAST_SEQUENCE_CONSTANT
            {
                return true;
            }
        }
        depth += 1;
        next = if depth < 8 { err.source() } else { None };
    }
    false
}

/// Publishes to JetStream and waits for the acknowledgement, publishing again while no stream
/// answers for the subject ("no stream found": nothing stored it; a stream just created on
/// several servers answers so until its replicas elected a leader), 2 s at most.
pub(crate) async fn publish_until_found(
    link: &ClusterLink,
    subject: &str,
    headers: async_nats::HeaderMap,
    payload: bytes::Bytes,
) -> Result<jetstream::publish::PublishAck, jetstream::context::PublishError> {
    use jetstream::context::PublishErrorKind;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let sent = link
            .jetstream
            .publish_with_headers(subject.to_string(), headers.clone(), payload.clone())
            .await;
        let acked = match sent {
            Ok(ack) => ack.await,
            Err(err) => Err(err),
        };
        match acked {
            Err(err) if err.kind() == PublishErrorKind::StreamNotFound && attempt < 40 => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}

/// Any error of the NATS client, as the cluster's "unavailable".
pub(crate) fn unavailable(err: impl fmt::Display) -> ClusterError {
    ClusterError::Unavailable(err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert!(check_token("branch", "xpzyv44ym2v49f").is_ok());
        assert!(check_token("node", "node-1_a").is_ok());
        for bad in ["", "a.b", "a*", "a>", "a b", "é", &"x".repeat(65)] {
            assert!(check_token("node", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn codes() {
        let fenced = ClusterError::Fenced { branch: "b".into() };
        assert_eq!(fenced.code(), ErrorCode::ServiceUnavailable);
        assert_eq!(fenced.retry_after(), Some(1));
        let bad = ClusterError::InvalidId { kind: "node", id: "a.b".into() };
        assert_eq!(bad.code(), ErrorCode::BadRequest);
    }
}
