//! Criterion bench of what the request timing middleware pays per request to file its latency
//! (issue 20: "metrics through the ecosystem's crates if the hot path stays as cheap"):
//!
//! - `gridd`: `metrics::RequestMetrics::observe`, the hand-written histogram by route pattern,
//!   method and status that `GET /metrics` exposes;
//! - `metrics-crate`: the same observation through the `metrics` facade
//!   (`metrics::histogram!` with three labels) into `metrics-exporter-prometheus`'s recorder,
//!   set to the same buckets.
//!
//! Each records one request of a realistic mix (40 route patterns, their methods, a few
//! statuses), single-threaded and from two threads at once (the server's two workers), and
//! renders the exposition of the series filled.
//!
//! `cargo bench --bench request_metrics`

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::Criterion;
use gridd::histogram::LATENCY_BOUNDS;
use gridd::metrics::RequestMetrics;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};

/// (route pattern, method, status) of the requests recorded, in turn.
fn requests() -> Vec<(String, &'static str, u16)> {
    let resources = [
        "/v1/views/{viewId}/records",
        "/v1/views/{viewId}",
        "/v1/views/{viewId}/export",
        "/v1/grids/{gridId}",
        "/v1/grids/{gridId}/branches",
        "/v1/views/{viewId}/columns/{columnId}",
        "/v1/databases/{dbId}/grids",
        "/v1/projects/{projectId}/databases",
    ];
    let methods = ["GET", "POST", "PATCH", "DELETE", "PUT"];
    let statuses = [200, 200, 200, 201, 204, 400, 404];
    let mut out = Vec::new();
    for (i, resource) in resources.iter().enumerate() {
        for (j, method) in methods.iter().enumerate() {
            out.push((resource.to_string(), *method, statuses[(i + j) % statuses.len()]));
        }
    }
    out
}

fn recorder() -> PrometheusRecorder {
    PrometheusBuilder::new()
        .set_buckets(LATENCY_BOUNDS.values())
        .expect("the latency bounds are valid buckets")
        .build_recorder()
}

/// One request filed through the `metrics` facade, labels built from the middleware's strings.
fn observe_facade(route: &str, method: &str, status: u16, elapsed: Duration) {
    metrics::histogram!(
        "gridd_http_request_duration_seconds",
        "route" => route.to_owned(),
        "method" => method.to_owned(),
        "status" => status.to_string(),
    )
    .record(elapsed.as_secs_f64());
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(50)
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let requests = requests();
    let elapsed = Duration::from_micros(640);
    let next = AtomicUsize::new(0);
    let pick = || &requests[next.fetch_add(1, Ordering::Relaxed) % requests.len()];

    let ours = RequestMetrics::default();
    c.bench_function("observe/gridd", |b| {
        b.iter(|| {
            let (route, method, status) = pick();
            ours.observe(route, method, *status, black_box(elapsed));
        })
    });
    let facade = recorder();
    metrics::with_local_recorder(&facade, || {
        c.bench_function("observe/metrics-crate", |b| {
            b.iter(|| {
                let (route, method, status) = pick();
                observe_facade(route, method, *status, black_box(elapsed));
            })
        });
    });

    c.bench_function("observe-2-threads/gridd", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, |i| {
                let (route, method, status) = &requests[i % requests.len()];
                ours.observe(route, method, *status, elapsed);
            })
        })
    });
    let shared = std::sync::Arc::new(recorder());
    metrics::set_global_recorder(SharedRecorder(shared.clone())).expect("no recorder yet");
    c.bench_function("observe-2-threads/metrics-crate", |b| {
        b.iter_custom(|iters| {
            two_threads(iters, |i| {
                let (route, method, status) = &requests[i % requests.len()];
                observe_facade(route, method, *status, elapsed);
            })
        })
    });

    c.bench_function("render/gridd", |b| {
        b.iter(|| {
            let mut out = String::with_capacity(16 * 1024);
            ours.render(&mut out);
            black_box(out)
        })
    });
    let handle_shared = shared.handle();
    c.bench_function("render/metrics-crate", |b| b.iter(|| black_box(handle_shared.render())));
    c.final_summary();
}

/// Time for `iters` calls of `work` split over two threads (each its half, started together).
fn two_threads(iters: u64, work: impl Fn(usize) + Sync) -> Duration {
    let half = (iters / 2) as usize;
    let start = std::time::Instant::now();
    std::thread::scope(|scope| {
        for t in 0..2 {
            let work = &work;
            scope.spawn(move || (t * half..(t + 1) * half).for_each(work));
        }
    });
    start.elapsed()
}

/// A recorder shared with the bench (which renders from it) and installed globally.
struct SharedRecorder(std::sync::Arc<PrometheusRecorder>);

impl metrics::Recorder for SharedRecorder {
    fn describe_counter(
        &self,
        k: metrics::KeyName,
        u: Option<metrics::Unit>,
        d: metrics::SharedString,
    ) {
        self.0.describe_counter(k, u, d)
    }
    fn describe_gauge(
        &self,
        k: metrics::KeyName,
        u: Option<metrics::Unit>,
        d: metrics::SharedString,
    ) {
        self.0.describe_gauge(k, u, d)
    }
    fn describe_histogram(
        &self,
        k: metrics::KeyName,
        u: Option<metrics::Unit>,
        d: metrics::SharedString,
    ) {
        self.0.describe_histogram(k, u, d)
    }
    fn register_counter(&self, k: &metrics::Key, m: &metrics::Metadata<'_>) -> metrics::Counter {
        self.0.register_counter(k, m)
    }
    fn register_gauge(&self, k: &metrics::Key, m: &metrics::Metadata<'_>) -> metrics::Gauge {
        self.0.register_gauge(k, m)
    }
    fn register_histogram(
        &self,
        k: &metrics::Key,
        m: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        self.0.register_histogram(k, m)
    }
}
