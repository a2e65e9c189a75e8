//! The one `Config` of the server: command-line flags with `GRIDD_*` environment fallbacks.
//!
//! Owns parsing and defaults only; it opens nothing and starts nothing.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, FromArgMatches};

/// Everything a running server needs to know. Defaults are documented in the README.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port (the bound address is logged).
    #[arg(long, env = "GRIDD_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    /// Directory holding the catalogue, the write-ahead log, snapshots and uploaded files.
    #[arg(long, env = "GRIDD_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Value of the bootstrap owner key, used on first start of an empty data directory
    /// (random and printed once when absent).
    #[arg(long, env = "GRIDD_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// Base URL clients reach the server at, used in `Link` headers and share links
    /// (defaults to `http://<bound address>`).
    #[arg(long, env = "GRIDD_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Log filter, e.g. `info` or `gridd=debug,actix_web=info`.
    #[arg(long, env = "GRIDD_LOG", default_value = "info")]
    pub log_level: String,

    /// Largest JSON request body accepted, in bytes.
    #[arg(long, env = "GRIDD_MAX_JSON_BYTES", default_value_t = 32 * 1024 * 1024)]
    pub max_json_bytes: usize,

    /// A branch writes a snapshot after writing this many records (added, updated, deleted)...
    #[arg(long, env = "GRIDD_SNAPSHOT_EVERY_RECORDS", default_value_t = 250_000)]
    pub snapshot_every_records: u64,

    /// ...or this many bytes of WAL records, whichever comes first. 96 MiB is about 160k
    /// records of a bulk add in the compact WAL layout (617 bytes a record of 12 cells), the
    /// replay 128 MiB bounded in the original layout.
    #[arg(long, env = "GRIDD_SNAPSHOT_EVERY_BYTES", default_value_t = 96 * 1024 * 1024)]
    pub snapshot_every_bytes: u64,

    /// ...and at least this often (seconds) while it has changes.
    #[arg(long, env = "GRIDD_SNAPSHOT_INTERVAL_SECS", default_value_t = 300)]
    pub snapshot_interval_secs: u64,

    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "GRIDD_WORKERS")]
    pub workers: Option<usize>,

    /// Threads the grid actors share, each branch's actor on one of them (default: one per
    /// core). Heavy work (schema changes, imports, merges, exports) runs off these threads.
    #[arg(long, env = "GRIDD_GRID_THREADS")]
    pub grid_threads: Option<usize>,

    /// Heavy writes (schema changes over every record, imports, merges, restores) one company
    /// runs at once across all its branches; the others wait for a turn (at least 1).
    #[arg(long, env = "GRIDD_HEAVY_WRITES_PER_COMPANY", default_value_t = 2)]
    pub heavy_writes_per_company: usize,

    /// Requests per second each API key may make on average (0: no limit). Over it: 429 with
    /// Retry-After.
    #[arg(long, env = "GRIDD_RATE_LIMIT", default_value_t = 0.0)]
    pub rate_limit: f64,

    /// Requests a key may make at once before the rate limit applies.
    #[arg(long, env = "GRIDD_RATE_BURST", default_value_t = 50)]
    pub rate_burst: u32,

    /// Milliseconds a client has to send a request's head (line and headers) once connected;
    /// 0 disables the timeout.
    #[arg(long, env = "GRIDD_REQUEST_TIMEOUT_MS", default_value_t = 10_000)]
    pub request_timeout_ms: u64,

    /// Milliseconds a client has, after the head, to send the whole request body; then 408
    /// `requestTimeout`. 0 disables the timeout.
    #[arg(long, env = "GRIDD_BODY_TIMEOUT_MS", default_value_t = 60_000)]
    pub body_timeout_ms: u64,

    /// Most bytes a zip upload may unpack to (its mapped entries together); over it, or over
    /// the compression ratio rule of `api::files_zip`, the upload is 413 and writes nothing.
    #[arg(long, env = "GRIDD_ZIP_UNPACKED_LIMIT", default_value_t = 1024 * 1024 * 1024)]
    pub zip_unpacked_limit: u64,

    /// Seconds between runs of the file collector, which removes files no branch, backup or
    /// history entry refers to any more; 0 disables it.
    #[arg(long, env = "GRIDD_FILE_GC_INTERVAL_SECS", default_value_t = 600)]
    pub file_gc_interval_secs: u64,

    /// Seconds a file is kept after its upload before the collector may remove it (uploads in
    /// flight are not yet in their cells).
    #[arg(long, env = "GRIDD_FILE_GC_GRACE_SECS", default_value_t = 3600)]
    pub file_gc_grace_secs: u64,

    /// Lets webhooks target loopback addresses (127.0.0.0/8, ::1, `localhost`, 0.0.0.0), which
    /// are refused otherwise, at creation and when each delivery resolves its host (for tests
    /// and single-machine setups).
    #[arg(long, env = "GRIDD_ALLOW_LOOPBACK_WEBHOOKS")]
    pub allow_loopback_webhooks: bool,

    /// Milliseconds before a failed webhook delivery's first retry; each further retry waits
    /// twice as long, at most 10 minutes.
    #[arg(long, env = "GRIDD_WEBHOOK_RETRY_BASE_MS", default_value_t = 1000)]
    pub webhook_retry_base_ms: u64,

    /// Seconds a webhook may fail without a success before it is paused.
    #[arg(long, env = "GRIDD_WEBHOOK_PAUSE_AFTER_SECS", default_value_t = 86_400)]
    pub webhook_pause_after_secs: u64,

    /// Milliseconds a webhook receiver has to answer a delivery before the attempt fails.
    #[arg(long, env = "GRIDD_WEBHOOK_TIMEOUT_MS", default_value_t = 10_000)]
    pub webhook_timeout_ms: u64,

    /// How far back a grid can be restored to (`POST /v1/grids/<id>/restore`): `30m`, `24h`,
    /// `7d`, or seconds; `0` keeps no history. The server keeps two base images per branch and
    /// up to twice this much WAL for it.
    #[arg(long, env = "GRIDD_RETAIN_HISTORY", default_value = "1d", value_parser = parse_period)]
    pub retain_history: Duration,

    /// Largest TMX file a translation memory upload or import takes, in bytes (413 past it).
    #[arg(long, env = "GRIDD_TMX_UPLOAD_LIMIT", default_value_t = 256 * 1024 * 1024)]
    pub tmx_upload_limit: u64,

    /// Run as a node of a cluster: the NATS servers (`nats://host:4222`, comma-separated) whose
    /// JetStream holds the cluster's logs, leases and snapshots (docs/CLUSTER.md). Needs
    /// `--node-id` and `--advertise`. Without it the server runs alone, as always.
    #[arg(long, env = "GRIDD_CLUSTER", value_delimiter = ',', requires_all = ["node_id", "advertise"])]
    pub cluster: Vec<String>,

    /// This node's id in the cluster: 1 to 64 of `[A-Za-z0-9_-]`, unique among the nodes.
    #[arg(long, env = "GRIDD_NODE_ID", requires = "cluster")]
    pub node_id: Option<String>,

    /// The URL other nodes reach this node's HTTP API at (requests are forwarded there).
    #[arg(long, env = "GRIDD_ADVERTISE", requires = "cluster")]
    pub advertise: Option<String>,

    /// Replicas of the cluster's streams and buckets (at most the number of NATS servers).
    #[arg(long, env = "GRIDD_CLUSTER_REPLICAS", default_value_t = 3)]
    pub cluster_replicas: usize,

    /// Prefix of the cluster's stream and bucket names, so two gridd clusters can share NATS.
    #[arg(long, env = "GRIDD_CLUSTER_PREFIX", default_value = "GRIDD")]
    pub cluster_prefix: String,

    /// Milliseconds a grid's lease lasts without renewal (renewed every third of it): how long
    /// after an owner dies its grids are taken over.
    #[arg(long, env = "GRIDD_LEASE_TTL_MS", default_value_t = 10_000)]
    pub lease_ttl_ms: u64,
}

/// A period written as a number with an optional unit: `s` (the default), `m`, `h` or `d`.
pub fn parse_period(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let seconds_per = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(format!("{text:?}: a period is a number with s, m, h or d (e.g. 24h)")),
    };
    let number: u64 = number.parse().map_err(|_| format!("{text:?}: not a number of {unit}"))?;
    number
        .checked_mul(seconds_per)
        .filter(|s| *s <= 3_650 * 86_400)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?}: more than ten years"))
}

impl Config {
    /// A configuration for tests and embedding: every default of the command line (the
    /// `GRIDD_*` environment not read), with the given data directory and bootstrap key, port
    /// 0 on loopback, two HTTP workers and `warn` logs.
    pub fn for_data_dir(data_dir: impl Into<PathBuf>, api_key: &str) -> Config {
        let command = Config::augment_args(clap::Command::new("gridd"))
            .mut_args(|arg| arg.env(None::<&'static str>));
        let defaults = command
            .try_get_matches_from(["gridd"])
            .and_then(|matches| Config::from_arg_matches(&matches))
            .expect("every flag has a default or is optional: an empty command line parses");
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data_dir.into(),
            api_key: Some(api_key.to_owned()),
            log_level: "warn".to_owned(),
            workers: Some(2),
            ..defaults
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_configuration_takes_the_command_lines_defaults() {
        std::env::set_var("GRIDD_RATE_BURST", "7");
        let config = Config::for_data_dir("/tmp/x", "key");
        assert_eq!(config.data_dir, PathBuf::from("/tmp/x"));
        assert_eq!(config.api_key.as_deref(), Some("key"));
        assert_eq!(config.bind.port(), 0);
        assert_eq!(config.snapshot_every_records, 250_000);
        assert_eq!(config.heavy_writes_per_company, 2);
        assert_eq!(config.max_json_bytes, 32 * 1024 * 1024);
        assert_eq!(config.rate_burst, 50, "the environment is not read");
        assert_eq!(config.file_gc_grace_secs, 3600);
        assert!(!config.allow_loopback_webhooks);
        assert_eq!(config.webhook_pause_after_secs, 86_400);
        assert_eq!(config.retain_history, Duration::from_secs(86_400));
    }

    #[test]
    fn periods_take_a_unit_or_mean_seconds() {
        assert_eq!(parse_period("0"), Ok(Duration::ZERO));
        assert_eq!(parse_period("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_period("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_period("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_period(" 7d "), Ok(Duration::from_secs(7 * 86_400)));
        for bad in ["", "h", "1w", "-1h", "1.5h", "99999999999999999999d", "4000d"] {
            assert!(parse_period(bad).is_err(), "{bad:?}");
        }
    }
}
