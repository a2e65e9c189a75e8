//! How much memory the process may still take before a snapshot is encoded: the kernel's
//! `MemAvailable`, or a cgroup's headroom when it bounds the process closer.

/// Memory the process may still take: the kernel's `MemAvailable`, or less when a cgroup
/// (v2 `memory.max`, v1 `memory.limit_in_bytes`) bounds it closer. `None` where neither is
/// readable.
pub(super) fn available_memory() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let system = read("/proc/meminfo").and_then(|text| mem_available(&text));
    let v2 = read("/sys/fs/cgroup/memory.max")
        .zip(read("/sys/fs/cgroup/memory.current"))
        .map(|(limit, used)| (limit, used, read("/sys/fs/cgroup/memory.stat")));
    let v1 = read("/sys/fs/cgroup/memory/memory.limit_in_bytes")
        .zip(read("/sys/fs/cgroup/memory/memory.usage_in_bytes"))
        .map(|(limit, used)| (limit, used, read("/sys/fs/cgroup/memory/memory.stat")));
    let cgroup = v2.or(v1).and_then(|(limit, used, stat)| {
        cgroup_headroom(&limit, &used, stat.as_deref().unwrap_or(""))
    });
    match (system, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// What a cgroup's limit leaves above its use, counting its inactive page cache (`stat`'s
/// `inactive_file`, v1's `total_inactive_file`) as free, since the kernel reclaims that first:
/// a cgroup that wrote many files sits near its limit with most of it cache. `None` without a
/// limit (`max`, or v1's huge number).
fn cgroup_headroom(limit: &str, used: &str, stat: &str) -> Option<u64> {
    let limit: u64 = limit.trim().parse().ok().filter(|&l| l < (1 << 60))?;
    let used: u64 = used.trim().parse().ok()?;
    let inactive_file = stat
        .lines()
        .find_map(|line| {
            let value = line
                .strip_prefix("inactive_file ")
                .or_else(|| line.strip_prefix("total_inactive_file "))?;
            value.trim().parse::<u64>().ok()
        })
        .unwrap_or(0);
    Some(limit.saturating_sub(used.saturating_sub(inactive_file)))
}

#[cfg(test)]
mod tests {
    use super::{cgroup_headroom, mem_available};

    #[test]
    fn available_memory_reads_meminfo_and_cgroup_limits() {
        let meminfo = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(mem_available(meminfo), Some(2048 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        assert_eq!(cgroup_headroom("1073741824\n", "73741824\n", ""), Some(1_000_000_000));
        assert_eq!(cgroup_headroom("max\n", "5\n", ""), None, "v2 without a limit");
        let v1_unlimited = cgroup_headroom("9223372036854771712\n", "5\n", "");
        assert_eq!(v1_unlimited, None, "v1 without a limit");
        assert_eq!(cgroup_headroom("10\n", "20\n", ""), Some(0), "over the limit");
        let v2_stat = "anon 100\nfile 900\nactive_file 300\ninactive_file 600\n";
        assert_eq!(cgroup_headroom("1000\n", "990\n", v2_stat), Some(610), "cache reclaimable");
        let v1_stat = "cache 900\ntotal_cache 900\ntotal_inactive_file 600\n";
        assert_eq!(cgroup_headroom("1000\n", "990\n", v1_stat), Some(610), "v1's name");
    }
}
