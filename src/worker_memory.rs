//! HTTP workers give back to the OS what they freed, once they are quiet.
//!
//! mimalloc returns a thread's freed pages to the OS only when that same thread allocates
//! again. An HTTP worker that parsed a bulk load's bodies (their records are freed on the grid
//! actor's thread and come back to the worker's pages) then sleeps on them: after a 1M-record
//! load over 4 connections about 40 MiB stayed resident that way. Each worker notes when it last
//! finished handling a request (`note_served`, from the metrics middleware), and a task on the
//! worker (`start_on_this_worker`, from the app factory, which runs on each worker's thread)
//! gives that worker's freed memory back (`alloc_release::release_freed`) once it has finished
//! none for `QUIET`. A worker busy with short requests never releases; one long request (an
//! export) may still be streaming when it does, which costs it nothing but the walk. An idle
//! worker wakes once per `QUIET` to look.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// How long a worker serves nothing before it gives its freed memory back (the read pool's
/// threads wait as long: `grid::read_pool`).
pub(crate) const QUIET: Duration = Duration::from_secs(1);

thread_local! {
    /// When this worker last finished handling a request, unless it gave memory back since.
    static SERVED_AT: Cell<Option<Instant>> = const { Cell::new(None) };
    /// Whether the release task runs on this worker.
    static WATCHED: Cell<bool> = const { Cell::new(false) };
}

/// Notes that the calling worker finished handling a request at `at`.
pub fn note_served(at: Instant) {
    SERVED_AT.with(|served| served.set(Some(at)));
}

/// Starts the release task on the calling worker (once per thread; the app factory may run
/// more than once on one worker). Needs the worker's runtime.
pub fn start_on_this_worker() {
    if WATCHED.with(|watched| watched.replace(true)) {
        return;
    }
    actix_web::rt::spawn(async {
        let mut tick = actix_web::rt::time::interval(QUIET);
        loop {
            tick.tick().await;
            let served = SERVED_AT.with(Cell::get);
            if quiet_since(served, Instant::now()) {
                SERVED_AT.with(|at| at.set(None));
                alloc_release::release_freed();
            }
        }
    });
}

/// Whether a worker that last served at `served` (`None`: nothing since its last release) has
/// been quiet long enough at `now` to give its memory back.
fn quiet_since(served: Option<Instant>, now: Instant) -> bool {
    served.is_some_and(|at| now.saturating_duration_since(at) >= QUIET)
}

#[cfg(test)]
mod tests {
    use super::{quiet_since, QUIET};
    use std::time::{Duration, Instant};

    #[test]
    fn a_worker_releases_once_quiet_after_serving_and_not_again_until_it_serves() {
        let now = Instant::now();
        let served = now.checked_sub(QUIET).expect("a past instant");
        assert!(quiet_since(Some(served), now));
        assert!(!quiet_since(Some(now - Duration::from_millis(10)), now));
        assert!(!quiet_since(None, now));
    }
}
