//! One owner per branch: leases in the `<prefix>_leases` KV bucket.
//!
//! - acquire = `create` (refused while the key holds a live lease): the create's revision is the
//!   lease's *epoch*, the fencing token of everything the owner publishes (`branch_log`). Epochs
//!   only grow: a later owner's create comes after the earlier key's expiry or deletion, on the
//!   same bucket stream, so its revision is higher.
//! - renew = `update` with the revision the owner last wrote: refused when the key changed
//!   (it expired and another node created it), which is `LeaseLost`.
//! - release = delete with the revision: refused likewise when no longer ours.
//! - expiry: the bucket's max age is the lease TTL, so a key not renewed for a TTL vanishes (a
//!   killed owner's leases free themselves). An owner counts its lease valid only until the
//!   renewal's *send* time plus the TTL (`Lease::valid_until`), never longer than the server.
//!
//! A lease alone does not stop a stale owner that has not noticed its loss: the branch log's
//! fence does (see `branch_log`). Owns the lease bucket; knows nothing of placement.

use std::time::{Duration, Instant};

use async_nats::jetstream::kv::{self, Operation, UpdateError, UpdateErrorKind};
use serde::{Deserialize, Serialize};

use super::{check_token, unavailable, wrong_last_sequence, ClusterError, ClusterLink};

/// Whether a KV update was refused because the key's revision is not the expected one.
fn is_stale_revision(err: &UpdateError) -> bool {
    err.kind() == UpdateErrorKind::WrongLastRevision || wrong_last_sequence(err)
}

/// A lease entry's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct LeaseValue {
    node: String,
    /// The acquisition's revision; 0 in the create itself (not known before it).
    epoch: u64,
}

/// A lease this node holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub branch: String,
    pub node: String,
    /// The fencing token: the revision of the create that took the lease.
    pub epoch: u64,
    /// The key's revision as this node last wrote it (what a renewal must match).
    pub revision: u64,
    /// Until when this node may act as owner without renewing.
    pub valid_until: Instant,
}

impl Lease {
    pub fn is_valid(&self) -> bool {
        Instant::now() < self.valid_until
    }
}

/// Who holds a branch's lease, as the bucket says now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub node: String,
    /// The lease's epoch when known (0 until its first renewal: then the key's revision is it).
    pub epoch: u64,
    pub revision: u64,
}

/// The lease bucket, as one node uses it.
#[derive(Debug, Clone)]
pub struct LeaseTable {
    kv: kv::Store,
    node: String,
    ttl: Duration,
}

impl LeaseTable {
    /// Opens the lease bucket (creating it when missing) for `node`.
    pub async fn open(link: &ClusterLink, node: &str) -> Result<LeaseTable, ClusterError> {
        check_token("node", node)?;
        let ttl = link.settings.lease_ttl;
        let kv = link.open_bucket("leases", ttl).await?;
        Ok(LeaseTable { kv, node: node.to_string(), ttl })
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn value(&self, epoch: u64) -> bytes::Bytes {
        let value = LeaseValue { node: self.node.clone(), epoch };
        serde_json::to_vec(&value).expect("a lease serializes").into()
    }

    /// Takes the branch's lease when nobody holds it (None when somebody does).
    ///
    /// A KV create by hand: an update expecting no entry, else, when the key's last entry is a
    /// release, an update expecting that entry. The client's own `create` reads the entry
    /// through any replica and reports a replica lagging behind a racing create as an error.
    pub async fn acquire(&self, branch: &str) -> Result<Option<Lease>, ClusterError> {
        check_token("branch", branch)?;
        if let Some(lease) = self.create_expecting(branch, 0).await? {
            return Ok(Some(lease));
        }
        let released = match self.kv.entry(branch).await.map_err(unavailable)? {
            Some(entry) => match entry.operation {
                Operation::Delete | Operation::Purge => Some(entry.revision),
                Operation::Put => None,
            },
            None => None,
        };
        match released {
            Some(revision) => self.create_expecting(branch, revision).await,
            None => Ok(None),
        }
    }

    /// Writes a fresh lease if the key's last revision is `revision` (0: no entry at all).
    async fn create_expecting(
        &self,
        branch: &str,
        revision: u64,
    ) -> Result<Option<Lease>, ClusterError> {
        let sent = Instant::now();
        match self.kv.update(branch, self.value(0), revision).await {
            Ok(revision) => Ok(Some(Lease {
                branch: branch.to_string(),
                node: self.node.clone(),
                epoch: revision,
                revision,
                valid_until: sent + self.ttl,
            })),
            Err(err) if is_stale_revision(&err) => Ok(None),
            Err(err) => Err(unavailable(err)),
        }
    }

    /// Extends the lease by a TTL from now; `LeaseLost` when the key is no longer ours.
    pub async fn renew(&self, lease: &mut Lease) -> Result<(), ClusterError> {
        let sent = Instant::now();
        match self.kv.update(&lease.branch, self.value(lease.epoch), lease.revision).await {
            Ok(revision) => {
                lease.revision = revision;
                lease.valid_until = sent + self.ttl;
                Ok(())
            }
            Err(err) if is_stale_revision(&err) => {
                Err(ClusterError::LeaseLost { branch: lease.branch.clone() })
            }
            Err(err) => Err(unavailable(err)),
        }
    }

    /// Gives the lease up at once (a handover, a clean shutdown).
    pub async fn release(&self, lease: Lease) -> Result<(), ClusterError> {
        match self.kv.delete_expect_revision(&lease.branch, Some(lease.revision)).await {
            Ok(()) => Ok(()),
            Err(err) if is_stale_revision(&err) => {
                Err(ClusterError::LeaseLost { branch: lease.branch })
            }
            Err(err) => Err(unavailable(err)),
        }
    }

    /// The keys of every lease held now (one listing of the bucket; expired and released
    /// leases are not in it).
    pub async fn held(&self) -> Result<std::collections::HashSet<String>, ClusterError> {
        use futures_util::TryStreamExt;
        let keys = self.kv.keys().await.map_err(unavailable)?;
        keys.try_collect().await.map_err(unavailable)
    }

    /// Who holds the branch's lease now (None when nobody).
    pub async fn holder(&self, branch: &str) -> Result<Option<Holder>, ClusterError> {
        check_token("branch", branch)?;
        let Some(entry) = self.kv.entry(branch).await.map_err(unavailable)? else {
            return Ok(None);
        };
        match entry.operation {
            Operation::Put => {}
            Operation::Delete | Operation::Purge => return Ok(None),
        }
        let value: LeaseValue = serde_json::from_slice(&entry.value)
            .map_err(|err| ClusterError::Unavailable(format!("lease {branch}: {err}")))?;
        let epoch = if value.epoch == 0 { entry.revision } else { value.epoch };
        Ok(Some(Holder { node: value.node, epoch, revision: entry.revision }))
    }
}
