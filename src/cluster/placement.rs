//! Where a branch should live: rendezvous (highest random weight) hashing over the live nodes.
//!
//! Every node computes, for a branch, a score per live node (`score(node, branch)`, a stable
//! 64-bit hash of both ids) and the branch belongs on the node with the highest score. Nodes
//! agree without talking because the hash is fixed here (FNV-1a then the splitmix64 finalizer,
//! not `std`'s or a crate's seeded hasher, whose output may change between builds). So:
//! - balance: each node gets about `1/n` of the branches (the scores are independent);
//! - minimal movement: when a node leaves, only its branches move (each to the node with its
//!   next score); when a node joins, only the branches it now scores highest on move, to it.
//!
//! Placement is the *wish*; the lease (`cluster::lease`) is the truth: a node serves a branch
//! only while it holds the branch's lease, wherever placement says it should be. This module
//! knows nothing of NATS, leases or the catalogue.

/// A node's stable score for a branch; the owner is the node with the highest.
pub fn score(node: &str, branch: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in node.bytes().chain([0xff]).chain(branch.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    finalize(hash)
}

/// splitmix64's finalizer: spreads FNV's low-entropy high bits over the whole word.
fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The node a branch belongs on among `nodes` (None when there is none). Ties, which need two
/// equal 64-bit scores, go to the smaller node id so that every node picks the same one.
pub fn owner<'a, N: AsRef<str>>(branch: &str, nodes: &'a [N]) -> Option<&'a N> {
    nodes.iter().max_by(|a, b| {
        let (a_id, b_id) = (a.as_ref(), b.as_ref());
        score(a_id, branch).cmp(&score(b_id, branch)).then_with(|| b_id.cmp(a_id))
    })
}

/// The nodes in the order a branch prefers them (owner first, then who takes over if it
/// leaves, and so on), at most `count` of them.
pub fn ranked<'a, N: AsRef<str>>(branch: &str, nodes: &'a [N], count: usize) -> Vec<&'a N> {
    let mut scored: Vec<(u64, &'a N)> =
        nodes.iter().map(|node| (score(node.as_ref(), branch), node)).collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.as_ref().cmp(b.1.as_ref())));
    scored.into_iter().take(count).map(|(_, node)| node).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn nodes(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("node-{i}")).collect()
    }

    fn branches(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("b{i:013}")).collect()
    }

    fn per_node(branches: &[String], nodes: &[String]) -> Vec<usize> {
        let mut counts = vec![0; nodes.len()];
        for branch in branches {
            let owner = owner(branch, nodes).expect("nodes");
            let at = nodes.iter().position(|n| n == owner).expect("member");
            counts[at] += 1;
        }
        counts
    }

    #[test]
    fn score_is_fixed_across_builds() {
        // Nodes of different builds must agree: these values may never change.
        assert_eq!(score("n1", "g1"), 0xadf7_d808_d1e7_1bd0);
        assert_eq!(score("node-a", "xpzyv44ym2v49f"), 0xcfb4_9d99_ed55_8645);
        assert_ne!(score("ab", "c"), score("a", "bc"));
    }

    #[test]
    fn no_nodes_no_owner() {
        let none: Vec<String> = Vec::new();
        assert!(owner("b", &none).is_none());
        assert!(ranked("b", &none, 3).is_empty());
    }

    #[test]
    fn ranked_starts_with_the_owner() {
        let nodes = nodes(7);
        for branch in branches(200) {
            let ranked = ranked(&branch, &nodes, 3);
            assert_eq!(ranked.len(), 3);
            assert_eq!(ranked[0], owner(&branch, &nodes).expect("owner"));
        }
    }

    #[test]
    fn balanced_over_ten_nodes() {
        let counts = per_node(&branches(10_000), &nodes(10));
        for count in counts {
            // Expected 1000, binomial stddev ~30: 5 stddevs either way.
            assert!((850..=1150).contains(&count), "{count}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn a_leaving_node_moves_only_its_branches(count in 2usize..12, gone in 0usize..12) {
            let before = nodes(count);
            let gone = gone % count;
            let after: Vec<String> =
                before.iter().enumerate().filter(|(i, _)| *i != gone).map(|(_, n)| n.clone()).collect();
            for branch in branches(300) {
                let was = owner(&branch, &before).expect("owner");
                let now = owner(&branch, &after).expect("owner");
                if was != &before[gone] {
                    prop_assert_eq!(was, now);
                } else {
                    // It goes to its second choice.
                    prop_assert_eq!(now, ranked(&branch, &before, 2)[1]);
                }
            }
        }

        #[test]
        fn a_joining_node_takes_only_what_it_wins(count in 1usize..12) {
            let before = nodes(count);
            let mut after = before.clone();
            after.push("newcomer".to_string());
            let mut moved = 0;
            for branch in branches(1000) {
                let was = owner(&branch, &before).expect("owner");
                let now = owner(&branch, &after).expect("owner");
                if was != now {
                    prop_assert_eq!(now.as_str(), "newcomer");
                    moved += 1;
                }
            }
            // About 1/(count+1) of the branches move; allow wide binomial slack.
            let expected = 1000.0 / (count as f64 + 1.0);
            prop_assert!((moved as f64) > expected * 0.6 && (moved as f64) < expected * 1.4 + 20.0,
                "moved {} expected {}", moved, expected);
        }

        #[test]
        fn the_owner_does_not_depend_on_list_order(seed in any::<u64>()) {
            let mut shuffled = nodes(9);
            let len = shuffled.len();
            shuffled.rotate_left((seed % len as u64) as usize);
            shuffled.swap(0, (seed >> 8) as usize % len);
            let ordered = nodes(9);
            for branch in branches(100) {
                prop_assert_eq!(owner(&branch, &ordered), owner(&branch, &shuffled));
            }
        }
    }
}
