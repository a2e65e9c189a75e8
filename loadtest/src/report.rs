//! Turns a run's samples into the report: HDR-histogram percentiles per scenario and per phase,
//! errors by status, throughput achieved against asked, latency during snapshots, a
//! latency-over-time series, and the terminal table. Serialized as-is for `--json`.

use std::collections::BTreeMap;
use std::fmt::Write;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::runner::{Outcome, PhaseRun, Sample, Window};
use crate::scenario::Scenario;

/// Latency percentiles in milliseconds, from an HDR histogram of microseconds (3 significant
/// digits).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Stats {
    pub count: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

/// A histogram of microseconds from 1 µs to an hour.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

impl Stats {
    pub fn of(histogram: &Histogram<u64>) -> Stats {
        let ms = |us: u64| us as f64 / 1000.0;
        Stats {
            count: histogram.len(),
            p50_ms: ms(histogram.value_at_quantile(0.50)),
            p90_ms: ms(histogram.value_at_quantile(0.90)),
            p99_ms: ms(histogram.value_at_quantile(0.99)),
            p999_ms: ms(histogram.value_at_quantile(0.999)),
            max_ms: ms(histogram.max()),
            mean_ms: histogram.mean() / 1000.0,
        }
    }

    /// Percentiles of the samples `keep` selects (those that were sent).
    pub fn from_samples<'a>(samples: impl Iterator<Item = &'a Sample>) -> Option<Stats> {
        let mut h = histogram();
        for sample in samples.filter(|s| s.outcome != Outcome::NotSent) {
            h.saturating_record(sample.latency_us.max(1));
        }
        (!h.is_empty()).then(|| Stats::of(&h))
    }
}

/// One phase of the report.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseReport {
    pub name: String,
    pub asked_rate: f64,
    /// Successful answers per second, over the phase from its first request to its last answer.
    pub achieved_rate: f64,
    pub duration_s: f64,
    pub sent: u64,
    pub succeeded: u64,
    /// Mean body bytes per answer.
    pub mean_body_bytes: f64,
    /// Failed requests by status (or `timeout`, `transport`, `not sent`).
    pub errors: BTreeMap<String, u64>,
    pub all: Option<Stats>,
    pub scenarios: BTreeMap<String, Stats>,
    /// Requests that were due while the server wrote a snapshot, by scenario.
    pub during_snapshots: BTreeMap<String, Stats>,
    pub snapshots: usize,
    /// Step mode: whether the phase met the p99 threshold with no errors and kept up.
    pub sustained: Option<bool>,
    /// CPU time per request sent of a server loadtest started (user + system).
    pub server_cpu_ms_per_request: Option<f64>,
    /// The same for loadtest itself.
    pub client_cpu_ms_per_request: Option<f64>,
    /// Percent of the machine's CPU time stolen by the hypervisor during the phase: on a shared
    /// virtual machine, latency figures from a phase with high steal are not comparable.
    pub steal_percent: Option<f64>,
}

impl PhaseReport {
    pub fn of(name: String, run: &PhaseRun, windows: &[Window]) -> PhaseReport {
        let samples = &run.samples;
        let duration_s = run.end_us.saturating_sub(run.start_us) as f64 / 1e6;
        let succeeded = samples.iter().filter(|s| s.outcome.is_success()).count() as u64;
        let mut errors = BTreeMap::new();
        for sample in samples.iter().filter(|s| !s.outcome.is_success()) {
            *errors.entry(sample.outcome.label()).or_insert(0) += 1;
        }
        let mut scenarios = BTreeMap::new();
        let mut during_snapshots = BTreeMap::new();
        let in_phase: Vec<&Window> = windows
            .iter()
            .filter(|w| w.end_us >= run.start_us && w.start_us <= run.end_us)
            .collect();
        for scenario in Scenario::ALL {
            let of_kind = || samples.iter().filter(move |s| s.scenario == scenario);
            if let Some(stats) = Stats::from_samples(of_kind()) {
                scenarios.insert(scenario.name().to_owned(), stats);
            }
            let during = of_kind().filter(|s| in_phase.iter().any(|w| w.contains(s.due_us)));
            if let Some(stats) = Stats::from_samples(during) {
                during_snapshots.insert(scenario.name().to_owned(), stats);
            }
        }
        let bytes: u64 = samples.iter().map(|s| u64::from(s.bytes)).sum();
        let answered = samples.iter().filter(|s| matches!(s.outcome, Outcome::Status(_))).count();
        PhaseReport {
            name,
            mean_body_bytes: if answered > 0 { bytes as f64 / answered as f64 } else { 0.0 },
            asked_rate: run.spec.rate,
            achieved_rate: if duration_s > 0.0 { succeeded as f64 / duration_s } else { 0.0 },
            duration_s,
            sent: samples.iter().filter(|s| s.outcome != Outcome::NotSent).count() as u64,
            succeeded,
            errors,
            all: Stats::from_samples(samples.iter()),
            scenarios,
            during_snapshots,
            snapshots: in_phase.len(),
            sustained: None,
            server_cpu_ms_per_request: None,
            client_cpu_ms_per_request: None,
            steal_percent: run.steal.map(|s| s * 100.0),
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Met `p99_max_ms` with no errors, answering at least 95% of the rate asked.
    pub fn meets(&self, p99_max_ms: f64) -> bool {
        self.error_count() == 0
            && self.all.as_ref().is_some_and(|s| s.p99_ms <= p99_max_ms)
            && self.achieved_rate >= 0.95 * self.asked_rate
    }
}

/// One point of the latency-over-time series.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Start of the interval, seconds since the run's start.
    pub t_s: f64,
    pub scenario: String,
    pub count: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// Points per `interval_us` of due time, per scenario and for all (`"all"`).
pub fn timeline(runs: &[PhaseRun], interval_us: u64) -> Vec<Point> {
    let mut buckets: BTreeMap<(u64, Option<Scenario>), Histogram<u64>> = BTreeMap::new();
    for sample in runs.iter().flat_map(|r| &r.samples) {
        if sample.outcome == Outcome::NotSent {
            continue;
        }
        let slot = sample.due_us / interval_us;
        for key in [(slot, Some(sample.scenario)), (slot, None)] {
            buckets
                .entry(key)
                .or_insert_with(histogram)
                .saturating_record(sample.latency_us.max(1));
        }
    }
    buckets
        .into_iter()
        .map(|((slot, scenario), h)| {
            let stats = Stats::of(&h);
            Point {
                t_s: (slot * interval_us) as f64 / 1e6,
                scenario: scenario.map_or("all", Scenario::name).to_owned(),
                count: stats.count,
                p50_ms: stats.p50_ms,
                p99_ms: stats.p99_ms,
                max_ms: stats.max_ms,
            }
        })
        .collect()
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub target: String,
    pub started_server: bool,
    pub view_id: String,
    pub records: usize,
    pub columns: usize,
    /// Seconds spent seeding (or reading the record ids of an existing view).
    pub setup_s: f64,
    pub mix: String,
    pub client_threads: usize,
    pub p99_max_ms: Option<f64>,
    pub phases: Vec<PhaseReport>,
    /// Step mode: the highest rate sustained.
    pub sustainable_rate: Option<f64>,
    pub snapshot_windows_s: Vec<(f64, f64)>,
    /// Why snapshots were not observed, if they were not.
    pub snapshots_unobserved: Option<String>,
    pub timeline: Vec<Point>,
}

impl Report {
    pub fn total_errors(&self) -> u64 {
        self.phases.iter().map(PhaseReport::error_count).sum()
    }

    /// The terminal table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} · view {} · {} records × {} columns · setup {:.1} s · mix {}",
            self.target, self.view_id, self.records, self.columns, self.setup_s, self.mix
        );
        for phase in &self.phases {
            let verdict = match phase.sustained {
                Some(true) => " · sustained",
                Some(false) => " · NOT sustained",
                None => "",
            };
            let _ = writeln!(
                out,
                "\n{}: asked {:.0}/s, achieved {:.1}/s over {:.1} s · {} sent, {} ok · {:.1} KiB \
                 per answer{verdict}",
                phase.name,
                phase.asked_rate,
                phase.achieved_rate,
                phase.duration_s,
                phase.sent,
                phase.succeeded,
                phase.mean_body_bytes / 1024.0
            );
            let _ = writeln!(
                out,
                "  {:<22}{:>8}{:>9}{:>9}{:>9}{:>9}{:>9}   (ms)",
                "scenario", "count", "p50", "p90", "p99", "p99.9", "max"
            );
            let mut rows: Vec<(String, &Stats)> =
                phase.scenarios.iter().map(|(n, s)| (n.clone(), s)).collect();
            rows.extend(phase.all.iter().map(|s| ("all".to_owned(), s)));
            rows.extend(
                phase.during_snapshots.iter().map(|(n, s)| (format!("{n} in snapshot"), s)),
            );
            for (name, s) in rows {
                let _ = writeln!(
                    out,
                    "  {name:<22}{:>8}{:>9.2}{:>9.2}{:>9.2}{:>9.2}{:>9.2}",
                    s.count, s.p50_ms, s.p90_ms, s.p99_ms, s.p999_ms, s.max_ms
                );
            }
            if !phase.errors.is_empty() {
                let errors: Vec<String> =
                    phase.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                let _ = writeln!(out, "  errors: {}", errors.join(", "));
            }
            if let (Some(server), Some(client)) =
                (phase.server_cpu_ms_per_request, phase.client_cpu_ms_per_request)
            {
                let _ = writeln!(
                    out,
                    "  CPU per request: server {server:.3} ms, loadtest {client:.3} ms"
                );
            }
            if let Some(steal) = phase.steal_percent.filter(|s| *s >= 0.5) {
                let _ = writeln!(out, "  CPU stolen by the hypervisor: {steal:.1}% of the machine");
            }
            if phase.snapshots > 0 {
                let _ = writeln!(out, "  snapshots during the phase: {}", phase.snapshots);
            }
        }
        if let Some(why) = &self.snapshots_unobserved {
            let _ = writeln!(out, "\nsnapshots not observed: {why}");
        }
        if let (Some(threshold), true) = (self.p99_max_ms, !self.phases.is_empty()) {
            match self.sustainable_rate {
                Some(rate) => {
                    let _ = writeln!(
                        out,
                        "\nsustainable: {rate:.0} requests/s at p99 ≤ {threshold} ms"
                    );
                }
                None => {
                    let _ = writeln!(out, "\nno step met p99 ≤ {threshold} ms");
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::PhaseSpec;
    use std::time::Duration;

    fn sample(scenario: Scenario, due_us: u64, latency_us: u64, outcome: Outcome) -> Sample {
        Sample { scenario, due_us, latency_us, outcome, bytes: 100 }
    }

    #[test]
    fn phase_report_counts_errors_percentiles_and_snapshot_windows() {
        let mut samples: Vec<Sample> = (0..100)
            .map(|i| sample(Scenario::Page, i * 10_000, 1000 + i * 10, Outcome::Status(200)))
            .collect();
        samples.push(sample(Scenario::Edit, 500_000, 40_000, Outcome::Status(200)));
        samples.push(sample(Scenario::Edit, 600_000, 5_000, Outcome::Status(500)));
        samples.push(sample(Scenario::Edit, 700_000, 0, Outcome::NotSent));
        let run = PhaseRun {
            spec: PhaseSpec { rate: 100.0, duration: Duration::from_secs(1) },
            samples,
            start_us: 0,
            end_us: 1_000_000,
            cpu_s: (None, None),
            steal: None,
        };
        let window = Window { start_us: 450_000, end_us: 550_000 };
        let report = PhaseReport::of("run".into(), &run, &[window]);
        assert_eq!(report.sent, 102);
        assert_eq!(report.succeeded, 101);
        assert_eq!(report.errors.get("500"), Some(&1));
        assert_eq!(report.errors.len(), 2);
        assert_eq!(report.scenarios["edit"].count, 2);
        assert_eq!(report.during_snapshots["edit"].count, 1);
        assert!((report.during_snapshots["edit"].max_ms - 40.0).abs() < 0.1);
        assert_eq!(report.during_snapshots["page"].count, 11);
        assert!((report.scenarios["page"].p50_ms - 1.49).abs() < 0.02);
        assert!(!report.meets(10.0), "errors fail a step");
        assert!((report.achieved_rate - 101.0).abs() < 1e-9);
    }

    #[test]
    fn timeline_buckets_by_due_time() {
        let run = PhaseRun {
            spec: PhaseSpec { rate: 10.0, duration: Duration::from_secs(2) },
            samples: vec![
                sample(Scenario::Page, 100_000, 2_000, Outcome::Status(200)),
                sample(Scenario::Page, 1_100_000, 9_000, Outcome::Status(200)),
            ],
            start_us: 0,
            end_us: 2_000_000,
            cpu_s: (None, None),
            steal: None,
        };
        let points = timeline(&[run], 1_000_000);
        assert_eq!(points.len(), 4, "page and all, two intervals");
        assert!((points[2].t_s - 1.0).abs() < 1e-9 && (points[2].max_ms - 9.0).abs() < 0.01);
    }
}
