//! `GET /metrics`: the operators' view of a running server in the Prometheus text format
//! (version 0.0.4). Needs an admin key (`Authorization: ApiKey <key>`, which Prometheus sends
//! with `authorization: {type: ApiKey, credentials: ...}` in its scrape config), since the
//! series name grids and routes.
//!
//! Series: `gridd_http_requests_total` and `gridd_http_request_duration_seconds` by route
//! pattern, method and status; `gridd_wal_fsync_seconds`, `gridd_wal_batch_records`,
//! `gridd_wal_records_total`, `gridd_wal_bytes_total`; `gridd_snapshot_seconds`,
//! `gridd_snapshot_bytes_total` by kind (written, borrowed);
//! `gridd_branch_records`, `gridd_branch_store_bytes`, `gridd_branch_index_bytes` by grid and
//! branch, `gridd_branch_heap_bytes` by grid, branch and part; `gridd_branch_cell_bytes` and
//! `gridd_branch_cells` by grid, branch and column type; `gridd_history_disk_bytes`;
//! `gridd_heavy_writes_running` and `gridd_heavy_writes_waiting` by company;
//! `gridd_record_reads_total` by who answered (view, actor); `gridd_process_resident_bytes`,
//! `gridd_process_cpu_seconds_total`.

use std::fmt::Write as _;

use actix_web::{get, web, HttpResponse};
use futures_util::future::join_all;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::auth::Principal;
use crate::catalog::BranchRoute;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::grid::actor::{BranchStats, ReadStats};
use crate::histogram::{escape, header};
use crate::persist::durability::Durability;
use crate::state::AppState;

/// The exposition format's content type.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[utoipa::path(tag = "server", responses((status = 200, description = "Prometheus metrics (admin key)")))]
#[get("/metrics")]
async fn metrics(state: web::Data<AppState>, p: Principal) -> ApiResult<HttpResponse> {
    p.require_admin()?;
    let mut out = String::with_capacity(16 * 1024);
    state.requests.render(&mut out);
    let durability = state
        .durability
        .upgrade()
        .ok_or_else(|| ApiError::new(ErrorCode::ServiceUnavailable, "The server is stopping."))?;
    render_durability(&mut out, &durability);
    drop(durability);
    let branches: Vec<_> = state.routes.branches.iter().map(|e| e.value().clone()).collect();
    let answers = join_all(branches.iter().map(|route| route.addr.send(ReadStats))).await;
    let stats: Vec<(&BranchRoute, &BranchStats)> = branches
        .iter()
        .zip(&answers)
        .filter_map(|(route, answer)| Some((&**route, answer.as_ref().ok()?)))
        .collect();
    render_branches(&mut out, &stats);
    render_branch_memory(&mut out, &stats);
    render_heavy_writes(&mut out, &state);
    render_process(&mut out, &state);
    Ok(HttpResponse::Ok().content_type(CONTENT_TYPE).body(out))
}

/// The WAL's fsync and batch histograms and totals, and the snapshots' time and bytes.
fn render_durability(out: &mut String, durability: &Durability) {
    let wal = &durability.wal;
    let stats = wal.stats();
    let (fsync, batches) = wal.histograms();
    header(out, "gridd_wal_fsync_seconds", "histogram", "WAL fdatasync latency.");
    fsync.render(out, "gridd_wal_fsync_seconds", "");
    header(out, "gridd_wal_batch_records", "histogram", "Records per WAL group commit.");
    batches.render(out, "gridd_wal_batch_records", "");
    header(out, "gridd_wal_records_total", "counter", "WAL records made durable.");
    let _ = writeln!(out, "gridd_wal_records_total {}", stats.records);
    header(out, "gridd_wal_bytes_total", "counter", "WAL bytes written.");
    let _ = writeln!(out, "gridd_wal_bytes_total {}", stats.bytes_written);
    header(out, "gridd_snapshot_seconds", "histogram", "Time to encode and store a snapshot.");
    durability.snapshot_seconds.render(out, "gridd_snapshot_seconds", "");
    header(
        out,
        "gridd_snapshot_bytes_total",
        "counter",
        "Bytes of snapshot images: written, or borrowed from earlier images of the chain.",
    );
    for (kind, bytes) in [
        ("written", &durability.snapshot_bytes_written),
        ("borrowed", &durability.snapshot_bytes_borrowed),
    ] {
        let bytes = bytes.load(std::sync::atomic::Ordering::Relaxed);
        let _ = writeln!(out, "gridd_snapshot_bytes_total{{kind=\"{kind}\"}} {bytes}");
    }
}

/// `grid="..",branch=".."` of a branch's series.
fn branch_labels(route: &BranchRoute) -> String {
    format!("grid=\"{}\",branch=\"{}\"", escape(&route.grid_id), escape(&route.branch_id))
}

/// Per branch: live records, store and index bytes.
fn render_branches(out: &mut String, stats: &[(&BranchRoute, &BranchStats)]) {
    let series = [
        ("gridd_branch_records", "Live records of a grid branch."),
        ("gridd_branch_store_bytes", "Heap bytes of a branch's records (shared chunks counted)."),
        ("gridd_branch_index_bytes", "Heap bytes of a branch's query indexes."),
    ];
    for (i, (name, help)) in series.iter().enumerate() {
        header(out, name, "gauge", help);
        for (route, stats) in stats {
            let value = [stats.records, stats.store.total(), stats.index_bytes][i];
            let _ = writeln!(out, "{name}{{{}}} {value}", branch_labels(route));
        }
    }
}

/// Per branch: heap bytes by part, and cells and their bytes by column type.
fn render_branch_memory(out: &mut String, stats: &[(&BranchRoute, &BranchStats)]) {
    header(
        out,
        "gridd_branch_heap_bytes",
        "gauge",
        "Heap bytes of a branch by part: cells, records (ids, paths, times, stamps), keys (the \
         id index), history, indexes (the query indexes), journal (their change journal). \
         Chunks shared with other branches are counted in each.",
    );
    for (route, stats) in stats {
        let parts = [
            ("cells", stats.store.cells),
            ("records", stats.store.records),
            ("keys", stats.store.keys),
            ("history", stats.history_bytes),
            ("indexes", stats.index_bytes),
            ("journal", stats.store.journal),
        ];
        let labels = branch_labels(route);
        for (part, value) in parts {
            let _ = writeln!(out, "gridd_branch_heap_bytes{{{labels},part=\"{part}\"}} {value}");
        }
    }
    header(
        out,
        "gridd_branch_cell_bytes",
        "gauge",
        "Heap bytes of a branch's cells by column type (values, versions, statuses); divided by \
         gridd_branch_cells of the same type, the bytes a cell of that type costs.",
    );
    for (route, stats) in stats {
        let labels = branch_labels(route);
        for &(column_type, bytes, _) in &stats.by_type {
            let _ =
                writeln!(out, "gridd_branch_cell_bytes{{{labels},type=\"{column_type}\"}} {bytes}");
        }
    }
    header(out, "gridd_branch_cells", "gauge", "Cells of a branch by column type.");
    for (route, stats) in stats {
        let labels = branch_labels(route);
        for &(column_type, _, columns) in &stats.by_type {
            let cells = columns * stats.records;
            let _ = writeln!(out, "gridd_branch_cells{{{labels},type=\"{column_type}\"}} {cells}");
        }
    }
}

/// Each company's heavy writes running and waiting for a turn (`--heavy-writes-per-company`).
fn render_heavy_writes(out: &mut String, state: &AppState) {
    let counts = state.routes.heavy_turns.counts();
    header(
        out,
        "gridd_heavy_writes_running",
        "gauge",
        "Heavy writes (schema changes over every record, imports, merges, restores) running, by \
         company.",
    );
    for (company, turns) in &counts {
        let _ =
            writeln!(out, "gridd_heavy_writes_running{{company=\"{company}\"}} {}", turns.running);
    }
    header(
        out,
        "gridd_heavy_writes_waiting",
        "gauge",
        "Heavy writes waiting for one of their company's turns, by company.",
    );
    for (company, turns) in &counts {
        let _ =
            writeln!(out, "gridd_heavy_writes_waiting{{company=\"{company}\"}} {}", turns.waiting);
    }
}

/// History on disk, record reads by who answered them, and the process's memory and CPU.
fn render_process(out: &mut String, state: &AppState) {
    header(
        out,
        "gridd_history_disk_bytes",
        "gauge",
        "Bytes of packed record history held on disk instead of the heap (all branches).",
    );
    let _ = writeln!(out, "gridd_history_disk_bytes {}", crate::grid::history::spilled_bytes());
    header(
        out,
        "gridd_record_reads_total",
        "counter",
        "Record reads (pages, view exports) by who answered them: a published view, or the \
         grid's actor (a query wanting an index no view had yet).",
    );
    let answered = &state.reads_answered;
    for (by, count) in [("view", &answered.by_view), ("actor", &answered.by_actor)] {
        let count = count.load(std::sync::atomic::Ordering::Relaxed);
        let _ = writeln!(out, "gridd_record_reads_total{{answered_by=\"{by}\"}} {count}");
    }
    if let Some(bytes) = resident_bytes() {
        header(out, "gridd_process_resident_bytes", "gauge", "Resident memory of gridd.");
        let _ = writeln!(out, "gridd_process_resident_bytes {bytes}");
    }
    header(
        out,
        "gridd_process_cpu_seconds_total",
        "counter",
        "CPU time gridd has used, user and system, all threads (a load generator on another \
         machine divides its increase by the requests it sent).",
    );
    let _ = writeln!(out, "gridd_process_cpu_seconds_total {}", cpu_seconds());
}

/// User plus system CPU seconds of the whole process (all threads), to the nanosecond: a clock
/// read, where `/proc/self/stat` cost a file's open, the kernel's formatting of 52 fields and a
/// parse, with 10 ms ticks.
fn cpu_seconds() -> f64 {
    let spent = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    spent.tv_sec as f64 + spent.tv_nsec as f64 / 1e9
}

/// Resident set size from `/proc/self/statm` (Linux; `None` elsewhere): its second field, in
/// pages. `statm` reads the kernel's counters only, where `status` also formats some fifty
/// other lines (a tenth of a millisecond a scrape).
fn resident_bytes() -> Option<u64> {
    resident_bytes_of(&std::fs::read_to_string("/proc/self/statm").ok()?)
}

fn resident_bytes_of(statm: &str) -> Option<u64> {
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(metrics);
}

#[cfg(test)]
mod tests {
    use super::{cpu_seconds, resident_bytes, resident_bytes_of};

    #[test]
    fn resident_bytes_are_statm_s_second_field_in_pages() {
        let page = rustix::param::page_size() as u64;
        assert_eq!(resident_bytes_of("2000 300 100 4 0 150 0\n"), Some(300 * page));
        assert_eq!(resident_bytes_of("2000"), None);
        assert_eq!(resident_bytes_of("2000 many"), None);
        assert!(resident_bytes().is_some_and(|bytes| bytes > 0));
    }

    #[test]
    fn cpu_seconds_count_this_process_s_work() {
        let before = cpu_seconds();
        let mut sum = 0u64;
        for i in 0..20_000_000u64 {
            sum = std::hint::black_box(sum.wrapping_add(i * i));
        }
        assert!(sum > 0);
        assert!(cpu_seconds() > before);
    }
}
