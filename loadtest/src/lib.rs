//! loadtest: an open-model load generator for gridd (see `loadtest/README.md`).
//!
//! A run sets up its target (starts a server, or takes `--url`), seeds a grid or attaches to a
//! view, then runs phases of constant-rate load ([`runner`]) while watching `/metrics` for
//! snapshots, and reports percentiles per phase and scenario ([`report`]), as a table, as JSON
//! and as a latency-over-time plot ([`plot`]). In step mode the rate rises phase by phase until
//! p99 passes the threshold; the last rate that held is the sustainable throughput.

pub mod api;
pub mod data;
pub mod options;
pub mod plot;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod server;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use options::{Mix, Options};
pub use report::Report;

use api::Api;
use report::PhaseReport;
use runner::{phase_rng, PhaseRun, PhaseSpec, Runner, SnapshotWatch};
use server::Server;

/// Why a run could not go on (failed requests during the load are not errors: they are
/// counted in the report).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("invalid options: {0}")]
    Options(String),
    #[error("{context}: {source}")]
    Http { context: String, source: reqwest::Error },
    #[error("{context}: HTTP {status}: {body}")]
    Status { context: String, status: u16, body: String },
    #[error("unexpected JSON from the server: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Server(String),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error("plot {0}")]
    Plot(String),
}

/// How often the snapshot watcher reads `/metrics`.
const METRICS_POLL: Duration = Duration::from_millis(100);

/// Runs the whole load test `options` describe and returns its report (also written to
/// `--json` and `--plot` when given).
pub async fn run(options: &Options) -> Result<Report, LoadError> {
    options.validate().map_err(LoadError::Options)?;
    let server = match &options.url {
        Some(_) => None,
        None => {
            let bin = options.server_bin.clone();
            let key = options.key.clone();
            let args = options.server_args.clone();
            let started = tokio::task::spawn_blocking(move || {
                Server::start(bin.as_deref(), key.as_deref(), &args)
            });
            Some(started.await.map_err(|e| LoadError::Server(e.to_string()))??)
        }
    };
    let (base, key) = match (&server, &options.url, &options.key) {
        (Some(server), _, _) => (server.base.clone(), server.key.clone()),
        (None, Some(url), Some(key)) => (url.clone(), key.clone()),
        (None, _, _) => return Err(LoadError::Options("--url needs --key".into())),
    };
    let api = Api::new(&base, &key, options.timeout)?;
    api.wait_ready(Duration::from_secs(60)).await?;
    let target = match &options.view {
        Some(view) => api.attach(view, options).await?,
        None => api.seed(options).await?,
    };
    let report = load(options, &api, &target, server.as_ref().and_then(Server::pid)).await;
    if let (Some(grid), false, None) = (&target.seeded_grid, options.keep_grid, &server) {
        api.delete_grid(grid).await?;
    }
    if let Some(server) = server {
        tokio::task::spawn_blocking(move || server.stop())
            .await
            .map_err(|e| LoadError::Server(e.to_string()))??;
    }
    let report = report?;
    if let Some(path) = &options.json {
        let json = serde_json::to_vec_pretty(&report)?;
        std::fs::write(path, json)
            .map_err(|source| LoadError::Io { context: path.display().to_string(), source })?;
    }
    if let Some(path) = &options.plot {
        plot::write_svg(&report, path)?;
    }
    Ok(report)
}

/// Warm-up, then one measured phase or the steps.
async fn load(
    options: &Options,
    api: &Api,
    target: &api::Target,
    server_pid: Option<u32>,
) -> Result<Report, LoadError> {
    let origin = Instant::now();
    let runner = Arc::new(Runner {
        api: api.clone(),
        workload: target.workload.clone(),
        mix: options.mix.clone(),
        timeout: options.timeout,
        max_in_flight: options.max_in_flight,
        origin,
        server_pid,
    });
    let (watch, unobserved) = if options.no_metrics {
        (None, Some("--no-metrics".to_owned()))
    } else {
        match SnapshotWatch::start(api.clone(), origin, METRICS_POLL).await {
            Ok(watch) => (Some(watch), None),
            Err(why) => (None, Some(why)),
        }
    };
    let mut runs: Vec<(String, PhaseRun)> = Vec::new();
    if !options.warmup.is_zero() {
        let spec = PhaseSpec { rate: options.rate, duration: options.warmup };
        runs.push((
            "warm-up".into(),
            runner.run_phase(spec, &mut phase_rng(options.seed, 0)).await,
        ));
    }
    let mut verdicts = Vec::new();
    if options.step {
        let mut rate = options.rate;
        let (mut step, mut attempt) = (1, 0);
        while rate <= options.max_rate {
            let spec = PhaseSpec { rate, duration: options.step_duration };
            let seed = step * 16 + attempt as usize;
            let run = runner.run_phase(spec, &mut phase_rng(options.seed, seed)).await;
            let passed = PhaseReport::of(String::new(), &run, &[]).meets(options.p99_max_ms);
            let name = match attempt {
                0 => format!("step {step}"),
                n => format!("step {step}, retry {n}"),
            };
            runs.push((name, run));
            verdicts.push((runs.len() - 1, passed));
            if !passed {
                if attempt < options.step_retries {
                    attempt += 1;
                    continue;
                }
                break;
            }
            rate *= options.step_factor;
            (step, attempt) = (step + 1, 0);
        }
    } else {
        let spec = PhaseSpec { rate: options.rate, duration: options.duration };
        runs.push(("run".into(), runner.run_phase(spec, &mut phase_rng(options.seed, 1)).await));
    }
    let windows = match watch {
        Some(watch) => watch.finish().await,
        None => Vec::new(),
    };
    let mut phases: Vec<PhaseReport> = runs
        .iter()
        .map(|(name, run)| {
            let mut phase = PhaseReport::of(name.clone(), run, &windows);
            let per_request = |seconds: Option<f64>| {
                seconds.filter(|_| phase.sent > 0).map(|s| s * 1000.0 / phase.sent as f64)
            };
            phase.server_cpu_ms_per_request = per_request(run.cpu_s.0);
            phase.client_cpu_ms_per_request = per_request(run.cpu_s.1);
            phase
        })
        .collect();
    for (index, passed) in &verdicts {
        phases[*index].sustained = Some(*passed);
    }
    let sustainable_rate = verdicts
        .iter()
        .filter(|(_, passed)| *passed)
        .map(|(index, _)| phases[*index].asked_rate)
        .reduce(f64::max);
    let only_runs: Vec<PhaseRun> = runs.into_iter().map(|(_, run)| run).collect();
    Ok(Report {
        target: api.base.clone(),
        started_server: server_pid.is_some(),
        view_id: target.workload.view.clone(),
        records: target.workload.ids.len(),
        columns: target.columns,
        setup_s: target.seed_seconds,
        mix: options.mix.to_string(),
        client_threads: options.threads,
        p99_max_ms: options.step.then_some(options.p99_max_ms),
        phases,
        sustainable_rate,
        snapshot_windows_s: windows
            .iter()
            .map(|w| (w.start_us as f64 / 1e6, w.end_us as f64 / 1e6))
            .collect(),
        snapshots_unobserved: unobserved,
        timeline: report::timeline(&only_runs, options.interval_ms * 1000),
    })
}
