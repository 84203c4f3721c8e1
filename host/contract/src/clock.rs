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
    /// What another process needs to run this clock as its own (a worker
    /// running a call): `None` when it cannot (the worker then reads its
    /// system clock).
    fn portable(&self) -> Option<PortableClock> {
        None
    }
    /// The copy from [`Clock::portable`] was read `reads` times: move on
    /// as if this clock had been.
    fn advance_reads(&self, reads: u64) {
        let _ = reads;
    }
}

/// A clock as data, for another process to run ([`Clock::portable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PortableClock {
    /// The system's clock.
    System,
    /// A [`SteppingClock`], read `reads` times so far.
    Stepping {
        /// Its start, ms since the Unix epoch.
        wall_ms: u64,
        /// Its monotonic start.
        mono_ns: u64,
        /// Its step per read.
        step_ns: u64,
        /// Reads so far.
        reads: u64,
    },
}

impl PortableClock {
    /// Reads so far (a system clock counts none).
    pub fn reads(self) -> u64 {
        match self {
            PortableClock::System => 0,
            PortableClock::Stepping { reads, .. } => reads,
        }
    }

    /// The clock this describes.
    pub fn clock(self) -> Arc<dyn Clock> {
        match self {
            PortableClock::System => SystemClock::shared(),
            PortableClock::Stepping {
                wall_ms,
                mono_ns,
                step_ns,
                reads,
            } => {
                let c = SteppingClock::new(wall_ms, mono_ns, step_ns);
                c.reads.store(reads, Ordering::SeqCst);
                Arc::new(c)
            }
        }
    }
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

    fn portable(&self) -> Option<PortableClock> {
        Some(PortableClock::System)
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

    fn portable(&self) -> Option<PortableClock> {
        Some(PortableClock::Stepping {
            wall_ms: self.start_wall_ms,
            mono_ns: self.start_mono_ns,
            step_ns: self.step_ns,
            reads: self.reads(),
        })
    }

    fn advance_reads(&self, reads: u64) {
        self.reads.fetch_add(reads, Ordering::SeqCst);
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

    #[test]
    fn a_portable_copy_of_a_stepping_clock_reads_on_where_it_was() {
        let c = SteppingClock::new(1_000, 5, 2_000_000);
        c.monotonic_ns();
        let copy = c.portable().expect("portable").clock();
        assert_eq!(copy.monotonic_ns(), 2_000_005);
        c.advance_reads(1);
        assert_eq!(c.monotonic_ns(), 4_000_005);
    }
}
