//! Per-principal quotas: calls running at once, and calls started in any
//! sliding minute. A call over either is refused before it runs (the front
//! end turns the refusal into an `isError` result with the stable code
//! `quota_exceeded` and the seconds to wait).
//!
//! State is per process: behind a load balancer each replica counts what it
//! serves (N replicas allow up to N times the per-minute bound). Principals
//! with nothing running and no call in the last minute are forgotten.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The bounds; `None` is unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Calls of one principal running at once.
    pub concurrent: Option<usize>,
    /// Calls of one principal started in any 60 s.
    pub per_minute: Option<usize>,
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaRefusal {
    /// Which bound, in words.
    pub message: String,
    /// Seconds until a call would be accepted (at least 1).
    pub retry_after_s: u64,
}

#[derive(Default)]
struct Use {
    running: usize,
    /// Start times within the last minute, oldest first.
    started: VecDeque<Instant>,
}

/// The quotas of every principal.
pub struct Quotas {
    limits: Limits,
    window: Duration,
    state: Shared,
}

/// The state every principal's use is counted in.
type Shared = Arc<Mutex<HashMap<String, Use>>>;

/// Holds a principal's running slot until dropped.
pub struct Running {
    /// The principal and the state it counts in; `None` when nothing is bounded.
    slot: Option<(String, Shared)>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some((principal, state)) = &self.slot else {
            return;
        };
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(u) = s.get_mut(principal) {
            u.running = u.running.saturating_sub(1);
        }
    }
}

/// Principals kept before idle ones are swept.
const SWEEP_AT: usize = 4096;

impl Quotas {
    /// Quotas with `limits`.
    pub fn new(limits: Limits) -> Quotas {
        Quotas::with_window(limits, Duration::from_secs(60))
    }

    /// As [`new`](Self::new), with another window for the per-minute bound
    /// (tests).
    pub fn with_window(limits: Limits, window: Duration) -> Quotas {
        Quotas {
            limits,
            window,
            state: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Whether any bound is set.
    pub fn is_bounded(&self) -> bool {
        self.limits.concurrent.is_some() || self.limits.per_minute.is_some()
    }

    /// Admits a call of `principal` now, or says why not.
    pub fn admit(&self, principal: &str) -> Result<Running, QuotaRefusal> {
        if !self.is_bounded() {
            return Ok(Running { slot: None });
        }
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.len() >= SWEEP_AT {
            let window = self.window;
            s.retain(|_, u| {
                u.running > 0
                    || u.started
                        .back()
                        .is_some_and(|t| now.duration_since(*t) < window)
            });
        }
        let u = s.entry(principal.to_owned()).or_default();
        while u
            .started
            .front()
            .is_some_and(|t| now.duration_since(*t) >= self.window)
        {
            u.started.pop_front();
        }
        if let Some(max) = self.limits.concurrent
            && u.running >= max
        {
            return Err(QuotaRefusal {
                message: format!(
                    "{max} calls of yours are running already, as many as your quota allows at once"
                ),
                retry_after_s: 1,
            });
        }
        if let Some(max) = self.limits.per_minute
            && u.started.len() >= max
        {
            let wait = u.started.front().map_or(self.window, |t| {
                self.window.saturating_sub(now.duration_since(*t))
            });
            return Err(QuotaRefusal {
                message: format!(
                    "you started {max} calls in the last {} s, as many as your quota allows",
                    self.window.as_secs()
                ),
                retry_after_s: wait.as_secs_f64().ceil().max(1.0) as u64,
            });
        }
        u.running += 1;
        // Only a rate bound needs the start times, and never more than it
        // allows: a call past it is refused above.
        if self.limits.per_minute.is_some() {
            u.started.push_back(now);
        }
        Ok(Running {
            slot: Some((principal.to_owned(), self.state.clone())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_calls_are_bounded_per_principal() {
        let q = Quotas::new(Limits {
            concurrent: Some(2),
            per_minute: None,
        });
        let a = q.admit("alice").expect("1");
        let _b = q.admit("alice").expect("2");
        assert!(q.admit("alice").is_err());
        assert!(q.admit("bob").is_ok(), "another principal has its own");
        drop(a);
        assert!(q.admit("alice").is_ok());
    }

    #[test]
    fn unbounded_quotas_keep_nothing() {
        let q = Quotas::new(Limits::default());
        for _ in 0..10_000 {
            drop(q.admit("alice").expect("unbounded"));
        }
        assert!(q.state.lock().map(|s| s.is_empty()).unwrap_or(false));
        // A concurrency bound alone keeps no start times.
        let q = Quotas::new(Limits {
            concurrent: Some(4),
            per_minute: None,
        });
        for _ in 0..10_000 {
            drop(q.admit("alice").expect("within"));
        }
        let kept = q
            .state
            .lock()
            .map(|s| s["alice"].started.len())
            .unwrap_or(usize::MAX);
        assert_eq!(kept, 0);
    }

    #[test]
    fn the_rate_is_a_sliding_window_and_says_when_to_retry() {
        let q = Quotas::with_window(
            Limits {
                concurrent: None,
                per_minute: Some(3),
            },
            Duration::from_millis(300),
        );
        for _ in 0..3 {
            drop(q.admit("alice").expect("within"));
        }
        let refused = q.admit("alice").err().expect("over");
        assert_eq!(refused.retry_after_s, 1);
        std::thread::sleep(Duration::from_millis(350));
        assert!(q.admit("alice").is_ok());
    }
}
