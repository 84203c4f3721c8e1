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

/// Where virtual time starts: 2026-01-01T00:00:00Z, in ms since the epoch.
pub const VIRTUAL_EPOCH_MS: u64 = 1_767_225_600_000;

/// The step of a virtual clock per read: one millisecond.
pub const VIRTUAL_STEP_NS: u64 = 1_000_000;

/// A virtual clock for deterministic runs: it starts at a fixed instant and
/// every read moves it forward by a fixed step, so a guest that reads the
/// clock in a loop still sees time pass, and two runs that read it in the
/// same order see the same times.
#[derive(Debug)]
pub struct SteppingClock {
    start_wall_ms: u64,
    start_mono_ns: u64,
    step_ns: u64,
    reads: AtomicU64,
}

impl SteppingClock {
    /// A clock at `wall_ms` (monotonic `mono_ns`) that advances `step_ns`
    /// nanoseconds on every read of either clock.
    pub fn new(wall_ms: u64, mono_ns: u64, step_ns: u64) -> SteppingClock {
        SteppingClock {
            start_wall_ms: wall_ms,
            start_mono_ns: mono_ns,
            step_ns,
            reads: AtomicU64::new(0),
        }
    }

    /// Nanoseconds elapsed after this read.
    fn tick(&self) -> u64 {
        let n = self.reads.fetch_add(1, Ordering::SeqCst);
        n.saturating_mul(self.step_ns)
    }

    /// How many times the clock has been read.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::SeqCst)
    }
}

impl Clock for SteppingClock {
    fn wall_ms(&self) -> u64 {
        self.start_wall_ms.saturating_add(self.tick() / 1_000_000)
    }

    fn monotonic_ns(&self) -> u64 {
        self.start_mono_ns.saturating_add(self.tick())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stepping_clock_moves_by_its_step_on_every_read() {
        let c = SteppingClock::new(1_000, 5, 2_000_000);
        assert_eq!(c.monotonic_ns(), 5);
        assert_eq!(c.monotonic_ns(), 2_000_005);
        assert_eq!(c.wall_ms(), 1_004);
        assert_eq!(c.reads(), 3);
        let again = SteppingClock::new(1_000, 5, 2_000_000);
        let seq: Vec<u64> = (0..4).map(|_| again.monotonic_ns()).collect();
        assert!(seq.windows(2).all(|w| w[0] < w[1]), "{seq:?}");
    }
}
