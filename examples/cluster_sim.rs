//! Placement simulation for docs/CLUSTER.md: 10,000 grids (their master branches) placed by
//! rendezvous hashing (`gridd::cluster::placement`) over 50 nodes. Prints the balance (branches
//! per node: min, max, mean, standard deviation) and, for every one of the 50 nodes leaving
//! and for a 51st node joining, the share of branches that move and how the moved ones spread
//! (the takeover load: how many one surviving node takes on).
//!
//! `cargo run --example cluster_sim [grids] [nodes]` (defaults 10000 50). Deterministic: the
//! branch ids come from a fixed seed.

#![allow(clippy::print_stdout)] // the report is the program's output

use gridd::cluster::placement;

/// 14 lowercase alphanumerics, as gridd's generated ids, from a fixed splitmix64 sequence.
fn branch_ids(count: usize) -> Vec<String> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut state: u64 = 0x05ee_d0f9_121d;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (0..count)
        .map(|_| {
            (0..14)
                .map(|_| char::from(ALPHABET[(next() % ALPHABET.len() as u64) as usize]))
                .collect()
        })
        .collect()
}

fn owners(branches: &[String], nodes: &[String]) -> Vec<usize> {
    branches
        .iter()
        .map(|branch| {
            let owner = placement::owner(branch, nodes).expect("at least one node");
            nodes.iter().position(|n| n == owner).expect("a member")
        })
        .collect()
}

struct Spread {
    min: usize,
    max: usize,
    mean: f64,
    stddev: f64,
}

fn spread(counts: &[usize]) -> Spread {
    let mean = counts.iter().sum::<usize>() as f64 / counts.len() as f64;
    let var = counts.iter().map(|&c| (c as f64 - mean).powi(2)).sum::<f64>() / counts.len() as f64;
    Spread {
        min: counts.iter().copied().min().unwrap_or(0),
        max: counts.iter().copied().max().unwrap_or(0),
        mean,
        stddev: var.sqrt(),
    }
}

fn per_node(owners: &[usize], nodes: usize) -> Vec<usize> {
    let mut counts = vec![0; nodes];
    for &owner in owners {
        counts[owner] += 1;
    }
    counts
}

/// One node leaving: (moved, moved from other nodes, the most one survivor takes on).
fn leave(
    branches: &[String],
    nodes: &[String],
    before: &[usize],
    gone: usize,
) -> (usize, usize, usize) {
    let survivors: Vec<String> =
        nodes.iter().enumerate().filter(|(i, _)| *i != gone).map(|(_, n)| n.clone()).collect();
    let after = owners(branches, &survivors);
    let mut moved = 0;
    let mut wrongly = 0;
    let mut taken = vec![0usize; survivors.len()];
    for (b, &now) in after.iter().enumerate() {
        if nodes[before[b]] != survivors[now] {
            moved += 1;
            taken[now] += 1;
            if before[b] != gone {
                wrongly += 1;
            }
        }
    }
    (moved, wrongly, taken.into_iter().max().unwrap_or(0))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let grids: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let node_count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let branches = branch_ids(grids);
    let nodes: Vec<String> = (0..node_count).map(|i| format!("node-{i:02}")).collect();
    let before = owners(&branches, &nodes);
    let s = spread(&per_node(&before, node_count));
    println!("{grids} branches over {node_count} nodes (rendezvous hashing)");
    println!(
        "balance: min {} max {} mean {:.1} stddev {:.1} (max/mean {:.2}; a binomial's stddev {:.1})",
        s.min,
        s.max,
        s.mean,
        s.stddev,
        s.max as f64 / s.mean,
        (s.mean * (1.0 - 1.0 / node_count as f64)).sqrt()
    );
    let mut shares = Vec::new();
    let mut wrong_total = 0;
    let mut takeover_max = 0;
    for gone in 0..node_count {
        let (moved, wrongly, most) = leave(&branches, &nodes, &before, gone);
        shares.push(moved as f64 / grids as f64);
        wrong_total += wrongly;
        takeover_max = takeover_max.max(most);
    }
    let min = shares.iter().copied().fold(f64::INFINITY, f64::min);
    let max = shares.iter().copied().fold(0.0, f64::max);
    let mean = shares.iter().sum::<f64>() / shares.len() as f64;
    println!(
        "one node leaves (each of the {node_count} in turn): moved share min {:.2}% mean {:.2}% max {:.2}% \
         (ideal {:.2}%); branches moved that the leaver did not own: {wrong_total}; \
         the most one survivor takes over: {takeover_max}",
        min * 100.0,
        mean * 100.0,
        max * 100.0,
        100.0 / node_count as f64
    );
    let mut grown = nodes.clone();
    grown.push(format!("node-{node_count:02}"));
    let after = owners(&branches, &grown);
    let moved = after.iter().zip(&before).filter(|(a, b)| grown[**a] != nodes[**b]).count();
    let to_new = after.iter().filter(|&&a| a == node_count).count();
    println!(
        "one node joins: moved share {:.2}% (ideal {:.2}%), all of them to the new node: {}",
        moved as f64 * 100.0 / grids as f64,
        100.0 / (node_count + 1) as f64,
        moved == to_new
    );
}
