//! Operator metrics in the Prometheus text format (`GET /metrics`).
//!
//! Owns `Histogram` (fixed bucket bounds, lock-free atomic counts) and `RequestMetrics` (one
//! latency histogram per route pattern, method and status, filled by the `track` middleware).
//! The WAL and snapshots keep their own histograms (`persist`); `api::metrics` gathers
//! everything into one exposition.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::body::MessageBody;
use std::future::Future;

use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::{web, Error};
use dashmap::DashMap;

/// Latency bucket bounds, in seconds (100 µs to 10 s).
pub const LATENCY_BOUNDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// Count bucket bounds (batch sizes): powers of two up to 4096.
pub const COUNT_BOUNDS: &[f64] =
    &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0];

/// A cumulative histogram with fixed bounds; observing is a few relaxed atomic adds.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// One count per bound (observations <= bound, not cumulative) plus one for `+Inf`.
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    /// Sum of observations, in millionths.
    sum_micros: AtomicU64,
}

impl Histogram {
    /// An empty histogram over `bounds` (ascending).
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }

    /// Records one value.
    pub fn observe(&self, value: f64) {
        let bucket = self.bounds.partition_point(|&bound| bound < value);
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
        for (bound, bucket) in self.bounds.iter().zip(&self.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}");
        }
        cumulative += self.buckets[self.bounds.len()].load(Ordering::Relaxed);
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

/// Request latency by (route pattern, method, status).
#[derive(Debug, Default)]
pub struct RequestMetrics {
    by_route: DashMap<(String, String, u16), Arc<Histogram>>,
}

impl RequestMetrics {
    /// Records one answered request.
    pub fn observe(&self, route: &str, method: &str, status: u16, elapsed: Duration) {
        let key = (route.to_owned(), method.to_owned(), status);
        let histogram = match self.by_route.get(&key) {
            Some(h) => h.clone(),
            None => self
                .by_route
                .entry(key)
                .or_insert_with(|| Arc::new(Histogram::new(LATENCY_BOUNDS)))
                .clone(),
        };
        histogram.observe_duration(elapsed);
    }

    /// Appends `gridd_http_requests_total` and `gridd_http_request_duration_seconds`.
    pub fn render(&self, out: &mut String) {
        let mut rows: Vec<_> =
            self.by_route.iter().map(|e| (e.key().clone(), e.value().clone())).collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        let label = |(route, method, status): &(String, String, u16)| {
            format!("route=\"{}\",method=\"{method}\",status=\"{status}\"", escape(route))
        };
        header(out, "gridd_http_requests_total", "counter", "HTTP requests answered.");
        for (key, histogram) in &rows {
            let _ =
                writeln!(out, "gridd_http_requests_total{{{}}} {}", label(key), histogram.count());
        }
        header(
            out,
            "gridd_http_request_duration_seconds",
            "histogram",
            "Time from a request's arrival to its response, by route pattern, method and status.",
        );
        for (key, histogram) in &rows {
            histogram.render(out, "gridd_http_request_duration_seconds", &label(key));
        }
    }
}

/// Middleware body (use with `wrap_fn`, outside the error renderer so the final status is
/// seen): times every request and files it under its route pattern (`unmatched` for none).
pub fn track<S, B>(
    req: ServiceRequest,
    srv: &S,
) -> impl Future<Output = Result<ServiceResponse<B>, Error>>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody,
{
    let started = Instant::now();
    let state = req.app_data::<web::Data<crate::state::AppState>>().cloned();
    let method = req.method().to_string();
    let path = req.path().to_owned();
    let fut = srv.call(req);
    async move {
        let result = fut.await;
        // Still on the worker the request came to (actix runs it there).
        crate::worker_memory::note_served(Instant::now());
        if let Some(state) = state {
            let (route, status) = match &result {
                Ok(res) => (res.request().match_pattern(), res.status()),
                // An error is rendered further out; its route is found from the path.
                Err(err) => (None, err.as_response_error().status_code()),
            };
            let route = route
                .or_else(|| {
                    let pattern = state.path_patterns.iter().find(|p| p.is_match(&path))?;
                    pattern.pattern().map(str::to_owned)
                })
                .unwrap_or_else(|| "unmatched".to_owned());
            state.requests.observe(&route, &method, status.as_u16(), started.elapsed());
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = Histogram::new(&[1.0, 2.0]);
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
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
