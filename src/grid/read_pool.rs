//! `ReadPool`: where reads that may scan a branch run (filtered, sorted and cursor pages over a
//! published read view), off the HTTP workers and off the grid actors.
//!
//! The pool has two lanes of its own threads, one per core each: `ReadKind::Light` reads
//! (sorts, equality, ranges: answered from indexes) at the server's priority, and
//! `ReadKind::Scan` reads (text matching and regexps, which read whole columns) scheduled as
//! background work (Linux's `SCHED_IDLE`, which the threads a scan splits into inherit): a
//! grid actor or HTTP worker that wakes takes a core from a scan at once rather than after
//! the scan's time slice, so writes and plain pages keep their latency under a flood of heavy
//! filters (a lower nice value alone still left edits waiting up to a slice at each of their
//! thread hops: p99 12 ms against 5 ms), while light reads are not held back by a busy server
//! (run as background work too, a saturating read/query/edit mix put the queries' p50 at 10.6
//! ms against 4.5).
//!
//! In each lane at most `slots` reads run at once (one per core: a scan already splits a large
//! column between the cores). Each company may hold at most `slots` of a lane's queue at a
//! time; its further reads wait in a queue of its own, so a company that
//! floods the pool with heavy filters delays another company's read by at most `slots` reads,
//! and never delays a write (writes run on the grid actors, which the pool never occupies).
//! A company's own queue is bounded too (`MAX_WAITING`): past it a read is refused with 429
//! rather than queued without bound.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use dashmap::DashMap;
use tokio::sync::{oneshot, Semaphore};

use super::error::{GridError, GridResult};
use crate::ids::CompanyId;
use crate::worker_memory::QUIET;

/// Most reads one company may have waiting or running in one lane of the pool.
pub const MAX_WAITING: usize = 256;

/// A read handed to the pool's threads.
type Job = Box<dyn FnOnce() + Send>;

/// See the module doc.
#[derive(Debug)]
pub struct ReadPool {
    light: Lane,
    scan: Lane,
}

/// Which lane a read runs in; see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    Light,
    Scan,
}

/// One lane of the pool: its threads, its slots and its companies' queues.
#[derive(Debug)]
struct Lane {
    slots: Arc<Semaphore>,
    per_company: usize,
    companies: DashMap<CompanyId, Arc<CompanyQueue>>,
    /// To the pool's threads, which end once the pool is dropped.
    jobs: Mutex<mpsc::Sender<Job>>,
}

/// One company's share of the pool.
#[derive(Debug)]
struct CompanyQueue {
    /// Places in the pool's queue.
    turns: Arc<Semaphore>,
    /// Reads waiting or running.
    held: AtomicUsize,
}

/// Counts a read as the company's until it ends or is given up.
struct Held(Arc<CompanyQueue>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ReadPool {
    /// A pool whose lanes each run `slots` reads at once (at least one) on as many threads of
    /// their own.
    pub fn new(slots: usize) -> Self {
        ReadPool {
            light: Lane::new(slots, ReadKind::Light),
            scan: Lane::new(slots, ReadKind::Scan),
        }
    }

    /// A pool with a slot per core in each lane.
    pub fn per_core() -> Self {
        ReadPool::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// Runs `read` in the lane of `kind` once it is the company's turn and a slot is free.
    /// 429 when the company already has `MAX_WAITING` reads in that lane.
    pub async fn run<T, F>(&self, company: CompanyId, kind: ReadKind, read: F) -> GridResult<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        match kind {
            ReadKind::Light => self.light.run(company, read).await,
            ReadKind::Scan => self.scan.run(company, read).await,
        }
    }
}

impl Lane {
    fn new(slots: usize, kind: ReadKind) -> Self {
        let slots = slots.max(1);
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let name = match kind {
            ReadKind::Light => "gridd-read",
            ReadKind::Scan => "gridd-scan",
        };
        for i in 0..slots {
            let queue = queue.clone();
            let started = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || serve_reads(&queue, kind));
            if let Err(err) = started {
                tracing::error!(error = %err, "a read pool thread could not start");
            }
        }
        Lane {
            slots: Arc::new(Semaphore::new(slots)),
            per_company: slots,
            companies: DashMap::new(),
            jobs: Mutex::new(jobs),
        }
    }

    async fn run<T, F>(&self, company: CompanyId, read: F) -> GridResult<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let queue = self
            .companies
            .entry(company)
            .or_insert_with(|| {
                Arc::new(CompanyQueue {
                    turns: Arc::new(Semaphore::new(self.per_company)),
                    held: AtomicUsize::new(0),
                })
            })
            .clone();
        if queue.held.fetch_add(1, Ordering::AcqRel) >= MAX_WAITING {
            queue.held.fetch_sub(1, Ordering::AcqRel);
            return Err(GridError::TooManyReads);
        }
        let held = Held(queue.clone());
        let closed = |_| GridError::Internal("the read pool closed");
        let turn = queue.turns.clone().acquire_owned().await.map_err(closed)?;
        let slot = self.slots.clone().acquire_owned().await.map_err(closed)?;
        let (done, answer) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = done.send(read());
            drop((slot, turn, held));
        });
        let sent = self.jobs.lock().unwrap_or_else(|e| e.into_inner()).send(job);
        sent.map_err(|_| GridError::Internal("the read pool has no threads"))?;
        answer.await.map_err(|_| GridError::Internal("a read stopped before it answered"))
    }
}

/// A pool thread: becomes background work in the scan lane, then runs reads until the pool is
/// dropped. A read that panics answers nothing (its caller gets an internal error) and the
/// thread goes on. Once no read came for `QUIET` after it served one, the thread gives what
/// it freed back to the OS, as an idle HTTP worker does (`worker_memory`): the sort buffers
/// and row sets of the reads it ran stay resident otherwise (16 MiB over the pool's threads
/// after the queries of the 1M-record scale example).
fn serve_reads(queue: &Mutex<mpsc::Receiver<Job>>, kind: ReadKind) {
    if kind == ReadKind::Scan {
        background_priority();
    }
    let mut served = false;
    loop {
        // The thread holding the lock waits for the next read; the others wait for the lock,
        // and each takes its turn to time out and release once the pool is idle.
        let job = queue.lock().unwrap_or_else(|e| e.into_inner()).recv_timeout(QUIET);
        match job {
            Ok(job) => {
                served = true;
                if std::panic::catch_unwind(AssertUnwindSafe(job)).is_err() {
                    tracing::error!("a read panicked");
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if std::mem::take(&mut served) {
                    alloc_release::release_freed();
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Schedules the calling thread as background work (`SCHED_IDLE` on Linux; elsewhere the
/// lowest priority of the normal policy): for threads of their own, since an unprivileged
/// thread cannot raise its priority again.
pub(crate) fn background_priority() {
    use thread_priority::{
        set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
        ThreadPriority, ThreadSchedulePolicy,
    };
    let policy = if cfg!(target_os = "linux") {
        NormalThreadSchedulePolicy::Idle
    } else {
        NormalThreadSchedulePolicy::Other
    };
    let policy = ThreadSchedulePolicy::Normal(policy);
    if let Err(err) =
        set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Min, policy)
    {
        // Said once: where it is refused, it is refused for every thread.
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            tracing::warn!(error = ?err, "background threads run at the server's priority");
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::Coded;

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn reads_run_as_background_work_and_a_panic_answers_an_error() {
        use thread_priority::ThreadSchedulePolicy::Normal;
        use thread_priority::{thread_schedule_policy, NormalThreadSchedulePolicy, ThreadPriority};
        let pool = ReadPool::new(1);
        let policy =
            pool.run(1, ReadKind::Scan, || thread_schedule_policy().ok()).await.expect("a read");
        // Where the sandbox lets a thread become background work at all (a seccomp profile may
        // refuse sched_setscheduler; the pool then logs a warning and runs at the server's
        // priority), the scan lane's threads are.
        let allowed = std::thread::spawn(|| {
            let idle = Normal(NormalThreadSchedulePolicy::Idle);
            let id = thread_priority::thread_native_id();
            thread_priority::set_thread_priority_and_policy(id, ThreadPriority::Min, idle).is_ok()
        })
        .join()
        .expect("a probe thread");
        if allowed {
            assert_eq!(policy, Some(Normal(NormalThreadSchedulePolicy::Idle)));
            assert_ne!(thread_schedule_policy().ok(), policy);
        }
        // The light lane's threads keep the server's priority, as this thread does.
        let light = pool.run(1, ReadKind::Light, || thread_schedule_policy().ok()).await;
        assert_eq!(light.expect("a read"), thread_schedule_policy().ok());
        let panicked = pool.run(1, ReadKind::Scan, || -> u8 { panic!("a read that panics") }).await;
        let panicked = panicked.expect_err("no answer");
        assert_eq!(panicked.code(), crate::error::ErrorCode::InternalServerError);
        // The thread goes on serving reads.
        assert_eq!(pool.run(1, ReadKind::Scan, || 7).await.expect("a read"), 7);
    }

    #[tokio::test]
    async fn threads_that_gave_memory_back_once_idle_go_on_serving() {
        let pool = ReadPool::new(2);
        for kind in [ReadKind::Light, ReadKind::Scan] {
            let sum = pool.run(1, kind, || (0..1u64 << 20).map(|i| vec![i; 8][7]).sum::<u64>());
            assert_eq!(sum.await.expect("a read"), (1u64 << 20) * ((1 << 20) - 1) / 2);
        }
        // Every thread of both lanes times out at least once (each waits its turn for the
        // queue's lock, then `QUIET` for a read) and releases if it served.
        tokio::time::sleep(QUIET * 3).await;
        for kind in [ReadKind::Light, ReadKind::Scan] {
            let reads: Vec<_> = (0..4u32).map(|i| pool.run(1, kind, move || i * 2)).collect();
            for (i, read) in reads.into_iter().enumerate() {
                assert_eq!(read.await.expect("a read after the idle release"), i as u32 * 2);
            }
        }
    }

    #[tokio::test]
    async fn one_company_waits_behind_its_own_reads_not_another_companys() {
        let pool = Arc::new(ReadPool::new(1));
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let gate = Arc::new(std::sync::Mutex::new(gate));
        // Company 1 takes the only slot and queues more reads behind it.
        let mut flood = Vec::new();
        for _ in 0..4 {
            let (pool, gate) = (pool.clone(), gate.clone());
            flood.push(tokio::spawn(async move {
                pool.run(1, ReadKind::Light, move || gate.lock().expect("the gate").recv().ok())
                    .await
            }));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Company 2's read is next in the pool's queue, ahead of company 1's waiting ones.
        let other = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.run(2, ReadKind::Light, || "other").await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        release.send(()).expect("a read waits");
        let answer = tokio::time::timeout(Duration::from_secs(5), other).await;
        let answer = answer.expect("in time").expect("joined").expect("read");
        assert_eq!(answer, "other");
        for _ in 0..3 {
            release.send(()).expect("a read waits");
        }
        for read in flood {
            assert!(read.await.expect("joined").is_ok());
        }
    }

    #[tokio::test]
    async fn a_company_past_its_bound_is_refused_and_the_refusal_frees_nothing() {
        let pool = Arc::new(ReadPool::new(1));
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let gate = Arc::new(std::sync::Mutex::new(gate));
        let mut held = Vec::new();
        for _ in 0..MAX_WAITING {
            let (pool, gate) = (pool.clone(), gate.clone());
            held.push(tokio::spawn(async move {
                pool.run(7, ReadKind::Light, move || gate.lock().expect("the gate").recv().ok())
                    .await
            }));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let refused = pool.run(7, ReadKind::Light, || ()).await.expect_err("past the bound");
        assert!(matches!(refused, GridError::TooManyReads));
        for _ in 0..MAX_WAITING {
            release.send(()).expect("a read waits");
        }
        for read in held {
            assert!(read.await.expect("joined").is_ok());
        }
        // Every place is given back: the company may read again.
        assert!(pool.run(7, ReadKind::Light, || ()).await.is_ok());
    }
}
