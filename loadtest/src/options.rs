//! Command-line options of the load generator and the scenario mix they name. Parsing only;
//! what the options do lives in `lib.rs` and the modules it calls.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::Parser;

use crate::scenario::Scenario;

/// Open-model load generator for gridd: requests leave at a fixed arrival rate and latency is
/// measured from the time each one was due, so a stalled server shows in the tail.
#[derive(Debug, Clone, Parser)]
#[command(name = "loadtest", version)]
pub struct Options {
    /// Base URL of a running gridd, e.g. http://127.0.0.1:8080. Without it, loadtest starts its
    /// own server on a temporary data directory and stops it at the end.
    #[arg(long)]
    pub url: Option<String>,
    /// API key for --url (needs write access; an admin key also lets loadtest read /metrics);
    /// without --url, the owner key of the started server [default: a random one].
    #[arg(long, env = "GRIDD_API_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// gridd binary to start when there is no --url [default: the release build next to this
    /// program, brought up to date with `cargo build --release -p gridd`].
    #[arg(long)]
    pub server_bin: Option<PathBuf>,
    /// An argument for the started server; repeat it, e.g.
    /// --server-arg=--snapshot-every-records=2000
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    pub server_args: Vec<String>,
    /// Load an existing view instead of seeding a new grid.
    #[arg(long)]
    pub view: Option<String>,
    /// Database of the seeded grid [default: the first one the key sees].
    #[arg(long)]
    pub db: Option<String>,
    /// Records of the seeded grid (added 1000 per call).
    #[arg(long, default_value_t = 100_000)]
    pub records: usize,
    /// Columns of the seeded grid, 1 to 20 (English source, targets, number, date, state, ...).
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u8).range(1..=20))]
    pub columns: u8,
    /// Keep the grid seeded on a --url server (it is deleted at the end otherwise).
    #[arg(long)]
    pub keep_grid: bool,
    /// Scenarios and their weights: page, query, edit, bulk; e.g. page=90,edit=10.
    #[arg(long, default_value = "page")]
    pub mix: Mix,
    /// Requests per second asked (the first rate in step mode).
    #[arg(long, default_value_t = 100.0)]
    pub rate: f64,
    /// Length of the measured run (not in step mode).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Load at the first rate before measuring (fills caches and builds indexes).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub warmup: Duration,
    /// Step mode: multiply the rate by --step-factor after each step until p99 passes
    /// --p99-max-ms, a request fails, or the server falls behind the rate asked.
    #[arg(long)]
    pub step: bool,
    /// Rate multiplier between steps.
    #[arg(long, default_value_t = 1.25)]
    pub step_factor: f64,
    /// Length of one step.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub step_duration: Duration,
    /// p99 (milliseconds) a step must stay under to count as sustained.
    #[arg(long, default_value_t = 10.0)]
    pub p99_max_ms: f64,
    /// Times a failed step is run again before the search stops (a one-off stall of a shared
    /// machine then does not end it); the step counts as sustained if a run of it passes.
    #[arg(long, default_value_t = 1)]
    pub step_retries: u32,
    /// Highest rate step mode tries.
    #[arg(long, default_value_t = 100_000.0)]
    pub max_rate: f64,
    /// Time a request has to complete, body included; then it counts as an error.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Requests in flight at most; a request due beyond it is not sent and counts as an error.
    #[arg(long, default_value_t = 10_000)]
    pub max_in_flight: usize,
    /// Client worker threads (the server shares the machine: keep them few).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Width of one point of the latency-over-time series, in milliseconds.
    #[arg(long, default_value_t = 500)]
    pub interval_ms: u64,
    /// Write the report as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the latency-over-time plot here (SVG).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Records per page read and per filtered read.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub page_size: u16,
    /// Records per bulk update.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub bulk_size: u16,
    /// Seed of the random data and of the request choices.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Do not poll GET /metrics for snapshots.
    #[arg(long)]
    pub no_metrics: bool,
}

/// Scenarios with their weights; a request picks one with probability weight / total.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix(pub Vec<(Scenario, u32)>);

impl FromStr for Mix {
    type Err = String;

    /// `page=90,edit=10`; a scenario without `=weight` weighs 1.
    fn from_str(text: &str) -> Result<Mix, String> {
        let mut parts = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, weight) = part.split_once('=').unwrap_or((part, "1"));
            let scenario: Scenario = name.trim().parse()?;
            let weight: u32 = weight
                .trim()
                .parse()
                .map_err(|_| format!("weight of {name} must be a whole number, not {weight:?}"))?;
            if parts.iter().any(|(s, _)| *s == scenario) {
                return Err(format!("{name} is named twice"));
            }
            if weight > 0 {
                parts.push((scenario, weight));
            }
        }
        if parts.is_empty() {
            return Err("the mix names no scenario with a weight above 0".into());
        }
        Ok(Mix(parts))
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(s, w)| format!("{}={w}", s.name())).collect();
        f.write_str(&parts.join(","))
    }
}

impl Options {
    /// Checks what clap cannot: rates, factors and the key.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.rate.is_finite() && self.rate > 0.0) {
            return Err(format!("--rate must be above 0, not {}", self.rate));
        }
        if self.step && !(self.step_factor.is_finite() && self.step_factor > 1.0) {
            return Err(format!("--step-factor must be above 1, not {}", self.step_factor));
        }
        if self.url.is_some() && self.key.is_none() {
            return Err("--url needs --key (or GRIDD_API_KEY)".into());
        }
        if self.view.is_none() && self.records == 0 {
            return Err("--records must be at least 1".into());
        }
        if self.interval_ms == 0 || self.threads == 0 || self.max_in_flight == 0 {
            return Err("--interval-ms, --threads and --max-in-flight must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_parses_weights_and_rejects_nonsense() {
        let mix: Mix = "page=90, edit=10".parse().expect("valid mix");
        assert_eq!(mix.0, vec![(Scenario::Page, 90), (Scenario::Edit, 10)]);
        assert_eq!(mix.to_string(), "page=90,edit=10");
        assert_eq!("query".parse::<Mix>().expect("valid").0, vec![(Scenario::Query, 1)]);
        assert!("page=x".parse::<Mix>().is_err());
        assert!("pages=1".parse::<Mix>().is_err());
        assert!("page=1,page=2".parse::<Mix>().is_err());
        assert!("page=0".parse::<Mix>().is_err());
    }

    #[test]
    fn options_parse_and_validate() {
        let options = Options::try_parse_from(["loadtest", "--rate", "50", "--duration", "3s"])
            .expect("valid options");
        assert_eq!(options.duration, Duration::from_secs(3));
        options.validate().expect("valid");
        let options = Options::try_parse_from(["loadtest", "--url", "http://x"]).expect("parses");
        assert!(options.validate().is_err(), "a URL without a key");
        assert!(Options::try_parse_from(["loadtest", "--columns", "21"]).is_err());
    }
}
