//! `Histogram`: fixed bucket bounds, lock-free atomic counts, rendered in the Prometheus text
//! format; and the exposition's small helpers. A leaf: the WAL, snapshots and the HTTP metrics
//! middleware all keep their histograms here, and it knows none of them.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A histogram's bucket bounds, and each as the exposition writes it (`le="..."`, as `f64`'s
/// `Display` writes it): formatting the floats on every scrape was a seventh of `/metrics`' own
/// work.
#[derive(Debug)]
pub struct Bounds {
    values: &'static [f64],
    texts: &'static [&'static str],
}

impl Bounds {
    /// The bounds, ascending.
    pub fn values(&self) -> &'static [f64] {
        self.values
    }
}

/// Latency bucket bounds, in seconds (100 µs to 10 s).
pub const LATENCY_BOUNDS: &Bounds = &Bounds {
    values: &[
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
        5.0, 10.0,
    ],
    texts: &[
        "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
        "0.25", "0.5", "1", "2.5", "5", "10",
    ],
};

/// Count bucket bounds (batch sizes): powers of two up to 4096.
pub const COUNT_BOUNDS: &Bounds = &Bounds {
    values: &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0],
    texts: &["1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1024", "2048", "4096"],
};

/// A cumulative histogram with fixed bounds; observing is a few relaxed atomic adds.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static Bounds,
    /// One count per bound (observations <= bound, not cumulative) plus one for `+Inf`.
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    /// Sum of observations, in millionths.
    sum_micros: AtomicU64,
}

impl Histogram {
    /// An empty histogram over `bounds` (ascending).
    pub fn new(bounds: &'static Bounds) -> Self {
        Histogram {
            bounds,
            buckets: (0..=bounds.values.len()).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }

    /// Records one value.
    pub fn observe(&self, value: f64) {
        let bucket = self.bounds.values.partition_point(|&bound| bound < value);
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add((value * 1e6).max(0.0) as u64, Ordering::Relaxed);
    }

    /// Records a duration, in seconds.
    pub fn observe_duration(&self, elapsed: Duration) {
        self.observe(elapsed.as_secs_f64());
    }

    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Appends the `_bucket`, `_sum` and `_count` series of `name` with `labels` (`a="b",...`,
    /// possibly empty).
    pub fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (bound, bucket) in self.bounds.texts.iter().zip(&self.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}");
        }
        cumulative += self.buckets[self.bounds.values.len()].load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {cumulative}");
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let braces = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
        let _ = writeln!(out, "{name}_sum{braces} {sum}");
        let _ = writeln!(out, "{name}_count{braces} {}", self.count());
    }
}

/// `# HELP` and `# TYPE` lines of a metric.
pub fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A label value escaped for the exposition format.
pub fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        const BOUNDS: &Bounds = &Bounds { values: &[1.0, 2.0], texts: &["1", "2"] };
        let h = Histogram::new(BOUNDS);
        for v in [0.5, 1.0, 1.5, 3.0] {
            h.observe(v);
        }
        let mut out = String::new();
        h.render(&mut out, "x", "a=\"b\"");
        assert!(out.contains("x_bucket{a=\"b\",le=\"1\"} 2\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"2\"} 3\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"+Inf\"} 4\n"), "{out}");
        assert!(out.contains("x_sum{a=\"b\"} 6\n"), "{out}");
        assert!(out.contains("x_count{a=\"b\"} 4\n"), "{out}");
    }

    #[test]
    fn each_bound_is_written_as_its_value_displays() {
        for bounds in [LATENCY_BOUNDS, COUNT_BOUNDS] {
            let shown: Vec<String> = bounds.values.iter().map(f64::to_string).collect();
            assert_eq!(shown, bounds.texts, "{bounds:?}");
            assert!(bounds.values.is_sorted(), "{bounds:?}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
