//! What a node should do with leases on each heartbeat: a pure plan from the live nodes, the
//! branches and who holds them (docs/CLUSTER.md, "Rebalance").
//!
//! - A branch nobody holds is taken by the node placement ranks first among the live nodes; once
//!   it has been free for `grace` without being taken, by the second too, after `2 x grace` by
//!   the third, and so on (the first may be live for membership but cut off from the leases).
//! - A branch this node holds that now belongs on another live node (a node joined, or came
//!   back) is handed over: the owner releases it once its last entries are acknowledged, and
//!   the other node takes it as a free branch. At most `max_handovers` per plan, so that a join
//!   moves branches a few at a time.
//! - A branch held by another node is left alone, whatever placement says: the lease is the
//!   truth, and its holder hands it over.
//!
//! Knows nothing of NATS: the caller reads the bucket and carries the plan out.

use std::time::Duration;

use super::placement;

/// A branch as the lease bucket shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchLease<'a> {
    pub branch: &'a str,
    /// The node holding its lease, if any.
    pub holder: Option<&'a str>,
    /// How long it has been seen free (zero when held).
    pub free_for: Duration,
}

/// What this node does now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Free branches to try to acquire (a create: another node may win).
    pub acquire: Vec<String>,
    /// Held branches to hand over: release after the last append is acknowledged.
    pub hand_over: Vec<String>,
}

/// How the plan is bounded and paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// How long a free branch waits for each rank before the next may take it.
    pub grace: Duration,
    /// At most this many handovers per plan.
    pub max_handovers: usize,
}

/// This node's plan: `me` among the `live` nodes (it must be one of them).
pub fn plan<N: AsRef<str>>(
    me: &str,
    live: &[N],
    branches: &[BranchLease<'_>],
    pacing: Pacing,
) -> Plan {
    let mut plan = Plan::default();
    for lease in branches {
        match lease.holder {
            None => {
                if may_take(me, live, lease, pacing.grace) {
                    plan.acquire.push(lease.branch.to_string());
                }
            }
            Some(holder) if holder == me => {
                let wanted = placement::owner(lease.branch, live).map(AsRef::as_ref);
                if wanted.is_some_and(|wanted| wanted != me)
                    && plan.hand_over.len() < pacing.max_handovers
                {
                    plan.hand_over.push(lease.branch.to_string());
                }
            }
            Some(_) => {}
        }
    }
    plan
}

/// Whether `me` may take a free branch now: its rank (0 = owner) is within the ranks the
/// branch's free time has reached.
fn may_take<N: AsRef<str>>(me: &str, live: &[N], lease: &BranchLease<'_>, grace: Duration) -> bool {
    let reached = if grace.is_zero() {
        live.len()
    } else {
        (lease.free_for.as_nanos() / grace.as_nanos()) as usize + 1
    };
    placement::ranked(lease.branch, live, reached.min(live.len()))
        .iter()
        .any(|node| node.as_ref() == me)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACING: Pacing = Pacing { grace: Duration::from_secs(20), max_handovers: 16 };

    fn ids(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("node-{i}")).collect()
    }

    fn branch_ids(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("g{i:05}")).collect()
    }

    fn free(branches: &[String], free_for: Duration) -> Vec<BranchLease<'_>> {
        branches.iter().map(|b| BranchLease { branch: b, holder: None, free_for }).collect()
    }

    #[test]
    fn free_branches_go_to_their_owner_only_at_first() {
        let live = ids(5);
        let branches = branch_ids(500);
        let leases = free(&branches, Duration::ZERO);
        let mut taken = 0;
        for me in &live {
            let plan = plan(me, &live, &leases, PACING);
            for branch in &plan.acquire {
                assert_eq!(placement::owner(branch, &live), Some(me));
            }
            assert!(plan.hand_over.is_empty());
            taken += plan.acquire.len();
        }
        assert_eq!(taken, 500, "every branch wanted by exactly one node");
    }

    #[test]
    fn a_branch_left_free_widens_to_the_next_ranks() {
        let live = ids(5);
        let branches = branch_ids(50);
        for (free_for, ranks) in [(Duration::from_secs(25), 2), (Duration::from_secs(45), 3)] {
            let leases = free(&branches, free_for);
            for branch in &branches {
                let wanting: Vec<&String> = live
                    .iter()
                    .filter(|me| plan(me, &live, &leases, PACING).acquire.contains(branch))
                    .collect();
                let mut expected = placement::ranked(branch, &live, ranks);
                expected.sort();
                let mut wanting = wanting;
                wanting.sort();
                assert_eq!(wanting, expected);
            }
        }
    }

    #[test]
    fn a_join_hands_over_only_what_the_newcomer_wins_a_few_at_a_time() {
        let before = ids(4);
        let mut after = before.clone();
        after.push("newcomer".to_string());
        let branches = branch_ids(400);
        let held: Vec<BranchLease<'_>> = branches
            .iter()
            .map(|b| BranchLease {
                branch: b,
                holder: placement::owner(b, &before).map(String::as_str),
                free_for: Duration::ZERO,
            })
            .collect();
        let mut handed = 0;
        for me in &before {
            let plan = plan(me, &after, &held, PACING);
            assert!(plan.acquire.is_empty(), "nothing is free");
            assert!(plan.hand_over.len() <= PACING.max_handovers);
            for branch in &plan.hand_over {
                assert_eq!(placement::owner(branch, &after).map(String::as_str), Some("newcomer"));
            }
            handed += plan.hand_over.len();
        }
        assert!(handed > 0);
        let newcomer = plan("newcomer", &after, &held, PACING);
        assert_eq!(newcomer, Plan::default(), "the newcomer takes branches only once released");
    }

    #[test]
    fn a_branch_held_elsewhere_is_left_alone() {
        let live = ids(3);
        let branches = branch_ids(100);
        let held: Vec<BranchLease<'_>> = branches
            .iter()
            .map(|b| BranchLease { branch: b, holder: Some("gone-node"), free_for: Duration::ZERO })
            .collect();
        for me in &live {
            assert_eq!(plan(me, &live, &held, PACING), Plan::default());
        }
    }
}
