//! The grids this node owns: each one's lease and its branches' publishers.
//!
//! Written by the supervisor (a grid created here, a branch added, a grid dropped) and by the
//! owner loop (renewals, takeovers, failures); read by both. A grid whose publisher failed is
//! marked, and the owner loop drops it.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::lease::Lease;
use super::publisher::BranchPublisher;

/// One owned grid.
#[derive(Debug)]
pub struct OwnedGrid {
    pub lease: Lease,
    /// By branch id.
    pub publishers: HashMap<String, BranchPublisher>,
}

/// Every grid this node owns.
#[derive(Debug, Default)]
pub struct Owned {
    grids: Mutex<HashMap<String, OwnedGrid>>,
    failed: Mutex<HashSet<String>>,
}

impl Owned {
    fn grids(&self) -> std::sync::MutexGuard<'_, HashMap<String, OwnedGrid>> {
        self.grids.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a grid whose lease this node just took.
    pub fn insert(&self, grid: &str, lease: Lease) {
        self.grids().insert(grid.to_string(), OwnedGrid { lease, publishers: HashMap::new() });
    }

    pub fn add_publisher(&self, grid: &str, publisher: BranchPublisher) {
        if let Some(owned) = self.grids().get_mut(grid) {
            owned.publishers.insert(publisher.branch().to_string(), publisher);
        }
    }

    pub fn remove_publisher(&self, grid: &str, branch: &str) {
        if let Some(owned) = self.grids().get_mut(grid) {
            owned.publishers.remove(branch);
        }
    }

    /// The grid's lease while this node holds it.
    pub fn lease(&self, grid: &str) -> Option<Lease> {
        self.grids().get(grid).map(|owned| owned.lease.clone())
    }

    pub fn owns(&self, grid: &str) -> bool {
        self.grids().contains_key(grid)
    }

    /// Every owned grid's lease.
    pub fn leases(&self) -> Vec<Lease> {
        self.grids().values().map(|owned| owned.lease.clone()).collect()
    }

    /// The publishers of an owned grid's branches.
    pub fn publishers_of(&self, grid: &str) -> Vec<BranchPublisher> {
        let grids = self.grids();
        grids
            .get(grid)
            .map(|owned| owned.publishers.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Every owned branch's publisher.
    pub fn publishers(&self) -> Vec<BranchPublisher> {
        self.grids().values().flat_map(|owned| owned.publishers.values().cloned()).collect()
    }

    /// Keeps a renewed lease (if the grid is still owned and the lease is the same one).
    pub fn renewed(&self, lease: Lease) {
        if let Some(owned) = self.grids().get_mut(&lease.branch) {
            if owned.lease.epoch == lease.epoch {
                owned.lease = lease;
            }
        }
    }

    /// Forgets the grid (its publishers end when their actors drop them).
    pub fn remove(&self, grid: &str) -> Option<OwnedGrid> {
        self.failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(grid);
        self.grids().remove(grid)
    }

    /// Marks a grid whose publisher failed, for the owner loop to drop.
    pub fn mark_failed(&self, grid: &str) {
        self.failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(grid.into());
    }

    /// The grids marked failed (and clears the marks).
    pub fn take_failed(&self) -> Vec<String> {
        let mut failed = self.failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        failed.drain().collect()
    }
}
