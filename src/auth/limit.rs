//! `RateLimiter`: an optional per-key request rate limit (a token bucket per API key).
//!
//! Each key may make `rate` requests per second on average and `burst` at once. A request over
//! the limit is answered 429 `tooManyRequests` with `Retry-After` (whole seconds until a token is
//! back). Off when `rate` is 0 (the default). Buckets are keyed by the key's stored id, so one
//! key is limited across every worker thread. Requests that name no valid key (a missing or
//! unknown key, and the public share pages) are limited the same way per client IP address
//! (`check_client`), so guessing keys or share tokens is as slow as using one key.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix_web::HttpRequest;
use dashmap::DashMap;

use crate::error::{ApiError, ErrorCode};

/// One key's bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets kept before full ones are dropped (a full bucket is the same as none).
const PRUNE_ABOVE: usize = 10_000;

/// Token buckets per API key (and per client address).
#[derive(Debug)]
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: DashMap<String, Bucket>,
    /// When full buckets were last dropped (at most once a second).
    pruned: Mutex<Option<Instant>>,
}

impl RateLimiter {
    /// `rate` requests per second with bursts of `burst` (at least 1); `rate` 0 disables it.
    pub fn new(rate: f64, burst: u32) -> Self {
        RateLimiter {
            rate,
            burst: f64::from(burst.max(1)),
            buckets: DashMap::new(),
            pruned: Mutex::new(None),
        }
    }

    /// True when requests are limited at all.
    pub fn is_enabled(&self) -> bool {
        self.rate > 0.0
    }

    /// Takes a token for `key` at `now`, or says how long to wait.
    pub fn check_at(&self, key: &str, now: Instant) -> Result<(), ApiError> {
        if !self.is_enabled() {
            return Ok(());
        }
        if self.buckets.len() > PRUNE_ABOVE {
            self.prune(now);
        }
        let mut bucket =
            self.buckets.entry(key.to_owned()).or_insert(Bucket { tokens: self.burst, at: now });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.rate).min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let wait = ((1.0 - bucket.tokens) / self.rate).ceil().max(1.0) as u64;
        let mut error = ApiError::new(
            ErrorCode::TooManyRequests,
            format!(
                "This API key is limited to {} requests per second; retry in {wait} s.",
                self.rate
            ),
        );
        error.retry_after = Some(wait);
        Err(error)
    }

    /// Drops the buckets that have refilled to the burst by `now`, so that many client
    /// addresses cannot grow the table without bound; runs at most once a second.
    fn prune(&self, now: Instant) {
        let Ok(mut last) = self.pruned.try_lock() else { return };
        if last.is_some_and(|at| now.saturating_duration_since(at) < Duration::from_secs(1)) {
            return;
        }
        *last = Some(now);
        let refill = self.burst / self.rate;
        self.buckets.retain(|_, b| now.saturating_duration_since(b.at).as_secs_f64() < refill);
    }

    /// Takes a token for `key` now.
    pub fn check(&self, key: &str) -> Result<(), ApiError> {
        self.check_at(key, Instant::now())
    }

    /// Takes a token for the client address of a request without a valid key.
    pub fn check_client(&self, req: &HttpRequest) -> Result<(), ApiError> {
        if !self.is_enabled() {
            return Ok(());
        }
        let ip = req.peer_addr().map_or_else(|| "unknown".to_owned(), |a| a.ip().to_string());
        self.check(&format!("client {ip}"))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_refills_at_the_rate() {
        let limiter = RateLimiter::new(2.0, 3);
        let start = Instant::now();
        for _ in 0..3 {
            limiter.check_at("k", start).expect("within the burst");
        }
        let refused = limiter.check_at("k", start).expect_err("over the burst");
        assert_eq!(refused.code, ErrorCode::TooManyRequests);
        assert_eq!(refused.retry_after, Some(1));
        limiter.check_at("other", start).expect("keys have their own buckets");
        limiter.check_at("k", start + Duration::from_millis(500)).expect("one token back");
        assert!(limiter.check_at("k", start + Duration::from_millis(500)).is_err());
    }

    #[test]
    fn full_buckets_are_dropped_when_there_are_many() {
        let limiter = RateLimiter::new(1.0, 2);
        let start = Instant::now();
        for i in 0..=PRUNE_ABOVE {
            limiter.check_at(&format!("client {i}"), start).expect("a fresh bucket");
        }
        limiter.check_at("client 0", start).expect("the second of a burst of 2");
        assert!(limiter.check_at("client 0", start).is_err());
        let later = start + Duration::from_secs(5);
        limiter.check_at("late", later).expect("a fresh bucket");
        assert!(limiter.buckets.len() <= 2, "{} buckets", limiter.buckets.len());
        limiter.check_at("client 0", later).expect("refilled");
    }

    #[test]
    fn a_zero_rate_never_limits() {
        let limiter = RateLimiter::new(0.0, 1);
        let now = Instant::now();
        for _ in 0..100 {
            limiter.check_at("k", now).expect("off");
        }
    }
}
