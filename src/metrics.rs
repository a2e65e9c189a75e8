//! Request metrics: `RequestMetrics` (one latency histogram per route pattern, method and
//! status, filled by the `api::request_timing` middleware). The WAL and snapshots keep their own histograms
//! (`persist`, with the `histogram` leaf); `api::metrics` gathers everything into one
//! exposition in the Prometheus text format (`GET /metrics`).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;

use crate::histogram::{escape, header, Histogram, LATENCY_BOUNDS};

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
