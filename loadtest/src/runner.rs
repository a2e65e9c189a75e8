//! The open-model runner: requests leave on a fixed schedule (request `i` of a phase is due at
//! `start + i / rate`) whether or not earlier ones have answered, and each latency is measured
//! from the time its request was due, not from when it left. A server (or client) that stalls
//! therefore shows the whole stall in the tail, with no coordinated omission. A watcher polls
//! `/metrics` meanwhile to know when the server was writing snapshots.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::task::JoinSet;

use crate::api::{metric_sum, Api};
use crate::options::Mix;
use crate::scenario::{Prepared, Scenario, Workload};
use crate::server::{cpu_seconds, machine_jiffies};

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// An answer with this HTTP status, body read to the end.
    Status(u16),
    /// No complete answer within the timeout.
    Timeout,
    /// The connection failed or broke.
    Transport,
    /// Not sent: too many requests were in flight.
    NotSent,
}

impl Outcome {
    pub fn is_success(self) -> bool {
        matches!(self, Outcome::Status(200..=299))
    }

    pub fn label(self) -> String {
        match self {
            Outcome::Status(code) => code.to_string(),
            Outcome::Timeout => "timeout".into(),
            Outcome::Transport => "transport".into(),
            Outcome::NotSent => "not sent (client saturated)".into(),
        }
    }
}

/// One request: when it was due (since the run's start), how long until its answer was read.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub scenario: Scenario,
    pub due_us: u64,
    pub latency_us: u64,
    pub outcome: Outcome,
    /// Bytes of the answer's body.
    pub bytes: u32,
}

/// One stretch of load at one rate.
#[derive(Debug, Clone, Copy)]
pub struct PhaseSpec {
    pub rate: f64,
    pub duration: Duration,
}

/// What a phase did: its samples and when it started and finished (since the run's start).
#[derive(Debug)]
pub struct PhaseRun {
    pub spec: PhaseSpec,
    pub samples: Vec<Sample>,
    pub start_us: u64,
    /// When the last answer came (or the schedule ended, if later).
    pub end_us: u64,
    /// CPU seconds the server (when loadtest started it) and loadtest used during the phase.
    pub cpu_s: (Option<f64>, Option<f64>),
    /// Share of the machine's CPU time the hypervisor took away during the phase (steal).
    pub steal: Option<f64>,
}

/// Everything the requests share.
#[derive(Debug)]
pub struct Runner {
    pub api: Api,
    pub workload: Workload,
    pub mix: Mix,
    pub timeout: Duration,
    pub max_in_flight: usize,
    /// The run's time origin.
    pub origin: Instant,
    /// The server's process, when loadtest started it (for its CPU time).
    pub server_pid: Option<u32>,
}

/// The numbers `0..total`, each sent when request `i` is due (`start + i / rate`), by an OS
/// thread sleeping until then: the kernel's high-resolution timers wake it tens of microseconds
/// late, where tokio's timer rounds every sleep up to its next millisecond tick, which made each
/// latency (counted from the due time) up to a millisecond longer than the server took.
fn pace(start: Instant, rate: f64, total: u64) -> tokio::sync::mpsc::UnboundedReceiver<u64> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new().name("loadtest-pacer".to_owned()).spawn(move || {
        for i in 0..total {
            let due = start + Duration::from_secs_f64(i as f64 / rate);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if tx.send(i).is_err() {
                return;
            }
        }
    });
    if let Err(err) = spawned {
        eprintln!("loadtest: the pacing thread did not start: {err}");
    }
    rx
}

impl Runner {
    /// Issues `spec.rate` requests per second for `spec.duration`, then waits for the last
    /// answer. `rng` draws the scenarios and their parameters.
    pub async fn run_phase(self: &Arc<Self>, spec: PhaseSpec, rng: &mut StdRng) -> PhaseRun {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let mut in_flight = JoinSet::new();
        let cpu_before = self.cpu().await;
        let jiffies_before = machine_jiffies();
        let start = Instant::now();
        let total = (spec.rate * spec.duration.as_secs_f64()).round() as u64;
        let weights: u32 = self.mix.0.iter().map(|(_, w)| w).sum();
        let mut ticks = pace(start, spec.rate, total);
        while let Some(i) = ticks.recv().await {
            let due = start + Duration::from_secs_f64(i as f64 / spec.rate);
            while in_flight.try_join_next().is_some() {}
            let scenario = self.pick(rng.gen_range(0..weights));
            let due_us = self.micros(due);
            if in_flight.len() >= self.max_in_flight {
                let outcome = Outcome::NotSent;
                let sample = Sample { scenario, due_us, latency_us: 0, outcome, bytes: 0 };
                lock(&samples).push(sample);
                continue;
            }
            let prepared = self.workload.prepare(scenario, rng);
            let runner = Arc::clone(self);
            let samples = Arc::clone(&samples);
            in_flight.spawn(async move {
                let (outcome, bytes) = runner.send(prepared).await;
                let latency_us = due.elapsed().as_micros() as u64;
                lock(&samples).push(Sample { scenario, due_us, latency_us, outcome, bytes });
            });
        }
        let scheduled_end = start + spec.duration;
        while in_flight.join_next().await.is_some() {}
        let end = Instant::now().max(scheduled_end);
        let samples = std::mem::take(&mut *lock(&samples));
        let cpu_after = self.cpu().await;
        let used = |before: Option<f64>, after: Option<f64>| Some(after? - before?);
        let cpu_s = (used(cpu_before.0, cpu_after.0), used(cpu_before.1, cpu_after.1));
        let steal = match (jiffies_before, machine_jiffies()) {
            (Some((s0, t0)), Some((s1, t1))) if t1 > t0 => {
                Some(s1.saturating_sub(s0) as f64 / (t1 - t0) as f64)
            }
            _ => None,
        };
        PhaseRun {
            spec,
            samples,
            start_us: self.micros(start),
            end_us: self.micros(end),
            cpu_s,
            steal,
        }
    }

    /// CPU seconds used so far by the server and by loadtest: the server's from its process
    /// when loadtest started it, else from its `/metrics` (`gridd_process_cpu_seconds_total`;
    /// `None` when the key may not read them, or the server runs elsewhere than Linux).
    async fn cpu(&self) -> (Option<f64>, Option<f64>) {
        let server = match self.server_pid {
            Some(pid) => cpu_seconds(Some(pid)),
            None => self.api.metrics().await.ok().and_then(|text| {
                text.lines()
                    .find_map(|line| line.strip_prefix("gridd_process_cpu_seconds_total "))
                    .and_then(|value| value.trim().parse().ok())
            }),
        };
        (server, cpu_seconds(None))
    }

    fn pick(&self, mut ticket: u32) -> Scenario {
        for (scenario, weight) in &self.mix.0 {
            if ticket < *weight {
                return *scenario;
            }
            ticket -= weight;
        }
        self.mix.0[0].0
    }

    fn micros(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.origin).as_micros() as u64
    }

    /// Sends one request and reads its whole body; how it ended and the body's length.
    async fn send(&self, prepared: Prepared) -> (Outcome, u32) {
        let mut request = self.api.request(prepared.method, &prepared.path);
        if let Some(body) = &prepared.body {
            request = request.json(body);
        }
        let answer = async {
            let mut response = request.send().await?;
            let status = response.status().as_u16();
            // Read chunk by chunk and count: joining a large page into one buffer would be a
            // copy the server's figures do not need, on the machine it shares.
            let mut length = 0;
            while let Some(chunk) = response.chunk().await? {
                length += chunk.len();
            }
            Ok::<(u16, usize), reqwest::Error>((status, length))
        };
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok((status, bytes))) => {
                (Outcome::Status(status), u32::try_from(bytes).unwrap_or(u32::MAX))
            }
            Ok(Err(e)) if e.is_timeout() => (Outcome::Timeout, 0),
            Ok(Err(_)) => (Outcome::Transport, 0),
            Err(_) => (Outcome::Timeout, 0),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A time span since the run's start, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub start_us: u64,
    pub end_us: u64,
}

impl Window {
    pub fn contains(&self, at_us: u64) -> bool {
        self.start_us <= at_us && at_us <= self.end_us
    }
}

/// Polls `/metrics` every `every` and turns each new snapshot into a window: it ended between
/// two polls and lasted the growth of `gridd_snapshot_seconds_sum`, so the window runs from the
/// earlier poll minus that duration to the later poll (a little wider than the snapshot).
#[derive(Debug)]
pub struct SnapshotWatch {
    task: tokio::task::JoinHandle<Vec<Window>>,
    stop: Arc<tokio::sync::Notify>,
}

impl SnapshotWatch {
    /// Starts watching; `None` when `/metrics` cannot be read with this key (with the reason).
    pub async fn start(
        api: Api,
        origin: Instant,
        every: Duration,
    ) -> Result<SnapshotWatch, String> {
        let first = api.metrics().await.map_err(|e| e.to_string())?;
        let stop = Arc::new(tokio::sync::Notify::new());
        let stopped = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let read = |text: &str| {
                (
                    metric_sum(text, "gridd_snapshot_seconds_count").unwrap_or(0.0),
                    metric_sum(text, "gridd_snapshot_seconds_sum").unwrap_or(0.0),
                )
            };
            let (mut count, mut sum) = read(&first);
            let mut polled = Instant::now();
            let mut windows = Vec::new();
            let micros = |at: Instant| at.saturating_duration_since(origin).as_micros() as u64;
            loop {
                tokio::select! {
                    () = stopped.notified() => break,
                    () = tokio::time::sleep(every) => {}
                }
                let Ok(text) = api.metrics().await else { continue };
                let now = Instant::now();
                let (new_count, new_sum) = read(&text);
                if new_count > count {
                    let lasted = Duration::from_secs_f64((new_sum - sum).max(0.0));
                    let start = polled.checked_sub(lasted).unwrap_or(origin);
                    windows.push(Window { start_us: micros(start), end_us: micros(now) });
                }
                (count, sum, polled) = (new_count, new_sum, now);
            }
            windows
        });
        Ok(SnapshotWatch { task, stop })
    }

    pub async fn finish(self) -> Vec<Window> {
        self.stop.notify_one();
        self.task.await.unwrap_or_default()
    }
}

/// A deterministic generator for a phase, so runs with the same `--seed` ask the same things.
pub fn phase_rng(seed: u64, phase: usize) -> StdRng {
    StdRng::seed_from_u64(seed ^ (phase as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}
