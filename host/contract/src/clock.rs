//! Injectable time. The only place in the core that reads the system clock.
//!
//! Pipelines, session logs and sandboxes take an `Arc<dyn Clock>`, so tests and
//! deterministic replay substitute a [`ManualClock`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A source of wall-clock and monotonic time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn wall_ms(&self) -> u64;
    /// Nanoseconds since an arbitrary, fixed origin; never decreases.
    fn monotonic_ns(&self) -> u64;
}

/// The real clock.
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A system clock whose monotonic origin is now.
    pub fn new() -> SystemClock {
        SystemClock {
            origin: Instant::now(),
        }
    }

    /// Shared handle.
    pub fn shared() -> Arc<dyn Clock> {
        Arc::new(SystemClock::new())
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    // The one sanctioned read of the system clock.
    #[allow(clippy::disallowed_methods)]
    fn wall_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    fn monotonic_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// A virtual clock that only moves when told to (tests, replay).
#[derive(Debug, Default)]
pub struct ManualClock {
    wall_ms: AtomicU64,
    mono_ns: AtomicU64,
}

impl ManualClock {
    /// A clock frozen at `wall_ms`, monotonic time 0.
    pub fn new(wall_ms: u64) -> ManualClock {
        ManualClock {
            wall_ms: AtomicU64::new(wall_ms),
            mono_ns: AtomicU64::new(0),
        }
    }

    /// Moves both clocks forward.
    pub fn advance_ms(&self, ms: u64) {
        self.wall_ms.fetch_add(ms, Ordering::SeqCst);
        self.mono_ns
            .fetch_add(ms.saturating_mul(1_000_000), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn wall_ms(&self) -> u64 {
        self.wall_ms.load(Ordering::SeqCst)
    }

    fn monotonic_ns(&self) -> u64 {
        self.mono_ns.load(Ordering::SeqCst)
    }
}
