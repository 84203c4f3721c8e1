//! Deterministic mode: what a call observes is derived from the session seed
//! and the call's position, never from the machine.
//!
//! The ordering rule: a call's *position* is the order in which
//! [`Pipeline::execute`](crate::Pipeline::execute) was first polled (it is
//! taken, with the call's `tool/call` event and its replay key, in one
//! critical section before anything awaits). Everything else follows from
//! the position:
//!
//! - the guest's randomness: a stream seeded with `H(seed, position)`;
//! - the guest's and the pipeline's clocks: a [`SteppingClock`] that starts
//!   at [`VIRTUAL_EPOCH_MS`] + `position` seconds and moves one millisecond
//!   per read, so `meta.timings`, the sandbox metrics and every event's
//!   `tsMs` are virtual too;
//! - the execution token and artifact ids (the session id is the seed);
//! - the order of `tool/result` events (and cassette entries): written in
//!   position order, each once every earlier position has finished, so
//!   concurrent calls that finish in any order leave the same log.
//!
//! So a session is reproducible byte for byte when its calls are submitted
//! in a reproducible order (one task, or `join_all` over a list), and calls
//! that run concurrently do not depend on each other's effects on the
//! files (a write racing a read of the same file is ordered by the
//! scheduler, in any mode).

use crate::call::FrozenCall;
use crate::replay::CallKey;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use toolhost_contract::clock::{Clock, SteppingClock, VIRTUAL_EPOCH_MS, VIRTUAL_STEP_NS};
use toolhost_contract::{ContextSink, sha256_hex};
use toolhost_contract::{SessionEvent, ToolResult};
use toolhost_runtime::{Entropy, Retirement};

/// Virtual milliseconds between the start times of consecutive positions.
const POSITION_SPACING_MS: u64 = 1_000;

/// What one call observes of time and chance.
#[derive(Debug, Clone)]
pub(crate) struct CallEnv {
    /// The guest's randomness.
    pub entropy: Entropy,
    /// The pipeline's clock for this call (events, timings, metrics).
    pub clock: Arc<dyn Clock>,
    /// The guest's clock, when it is not the runtime's own.
    pub guest_clock: Option<Arc<dyn Clock>>,
    /// Where what the tool reports while it runs goes live (the front
    /// end's relay to its client), if anywhere.
    pub sink: Option<Arc<dyn ContextSink>>,
    /// Where the call's sandboxes end, when the front end asked for them
    /// to end after its response is out.
    pub retire: Option<Retirement>,
}

impl CallEnv {
    /// A live call: OS randomness, the given clock, the runtime's guest clock.
    pub fn live(clock: Arc<dyn Clock>) -> CallEnv {
        CallEnv {
            entropy: Entropy::Os,
            clock,
            guest_clock: None,
            sink: None,
            retire: None,
        }
    }

    /// The virtual environment of `position` in a session seeded with `seed`.
    pub fn derived(seed: u64, position: u64) -> CallEnv {
        let h = sha256_hex(format!("toolhost-call\0{seed}\0{position}").as_bytes());
        let start_ms =
            VIRTUAL_EPOCH_MS.saturating_add(position.saturating_mul(POSITION_SPACING_MS));
        Self::virtual_env(seed, &h, start_ms)
    }

    /// The virtual environment of call `index` (from 1) of the script run
    /// by the call at `position`: from the script's position and the
    /// index alone, so other calls running meanwhile change nothing. Its
    /// clock starts `index` milliseconds into the script's second.
    pub fn inner(seed: u64, position: u64, index: u64) -> CallEnv {
        let h = sha256_hex(format!("toolhost-call\0{seed}\0{position}\0{index}").as_bytes());
        let start_ms = VIRTUAL_EPOCH_MS
            .saturating_add(position.saturating_mul(POSITION_SPACING_MS))
            .saturating_add(index);
        Self::virtual_env(seed, &h, start_ms)
    }

    /// A virtual environment seeded from the digest `h`, its clock starting
    /// at `start_ms`.
    fn virtual_env(seed: u64, h: &str, start_ms: u64) -> CallEnv {
        let call_seed = u64::from_str_radix(&h[..16], 16).unwrap_or(seed);
        let clock: Arc<dyn Clock> = Arc::new(SteppingClock::new(
            start_ms,
            start_ms
                .saturating_sub(VIRTUAL_EPOCH_MS)
                .saturating_mul(1_000_000),
            VIRTUAL_STEP_NS,
        ));
        CallEnv {
            entropy: Entropy::Seeded(call_seed),
            clock: clock.clone(),
            guest_clock: Some(clock),
            sink: None,
            retire: None,
        }
    }
}

/// Runs writes in position order: a finished call's writes wait until every
/// earlier position has finished (or was abandoned).
pub(crate) struct InOrder<T> {
    state: Mutex<Pending<T>>,
}

impl<T> Default for InOrder<T> {
    fn default() -> Self {
        InOrder {
            state: Mutex::new(Pending::default()),
        }
    }
}

struct Pending<T> {
    /// The next position to write.
    next: u64,
    /// Finished positions waiting for an earlier one.
    ready: BTreeMap<u64, Option<T>>,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            next: 1,
            ready: BTreeMap::new(),
        }
    }
}

impl<T> InOrder<T> {
    /// `position` finished with `item` (`None`: nothing to write). Writes,
    /// under the lock and in order, every item whose turn has come.
    pub fn finish(&self, position: u64, item: Option<T>, mut write: impl FnMut(T)) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.ready.insert(position, item);
        loop {
            let next = st.next;
            let Some(item) = st.ready.remove(&next) else {
                break;
            };
            st.next += 1;
            if let Some(item) = item {
                write(item);
            }
        }
    }
}

/// What a finished call writes, in position order (deterministic mode).
pub(crate) struct Finished {
    pub(crate) event: Option<SessionEvent>,
    pub(crate) record: Option<Record>,
}

/// A cassette entry to write.
pub(crate) struct Record {
    pub(crate) position: u64,
    pub(crate) key: CallKey,
    /// The key of the script's call, for a call a script made.
    pub(crate) parent: Option<CallKey>,
    pub(crate) call: FrozenCall,
    pub(crate) result: ToolResult,
}

/// Keeps a position's turn in the in-order writer: an abandoned call
/// (its future dropped) gives its turn up instead of holding back the rest.
pub(crate) struct Turn<'a, W: Turns> {
    writer: &'a W,
    position: u64,
    finished: bool,
}

/// Who keeps the turns: told when a call gives its turn up.
pub(crate) trait Turns {
    /// The call at `position` ended without its records: the next goes on.
    fn abandon_turn(&self, position: u64);
}

impl<'a, W: Turns> Turn<'a, W> {
    /// The turn of the call at `position`, kept by `writer`.
    pub(crate) fn new(writer: &'a W, position: u64) -> Turn<'a, W> {
        Turn {
            writer,
            position,
            finished: false,
        }
    }

    /// The call finished: its records are written in its turn.
    pub(crate) fn done(&mut self) {
        self.finished = true;
    }
}

impl<W: Turns> Drop for Turn<'_, W> {
    fn drop(&mut self) {
        if !self.finished {
            self.writer.abandon_turn(self.position);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_come_out_in_position_order_whatever_order_calls_finish_in() {
        let order = InOrder::default();
        let mut out = Vec::new();
        order.finish(3, Some("c"), |x| out.push(x));
        order.finish(2, None, |x| out.push(x));
        assert!(out.is_empty(), "position 1 has not finished");
        order.finish(1, Some("a"), |x| out.push(x));
        order.finish(4, Some("d"), |x| out.push(x));
        assert_eq!(out, ["a", "c", "d"]);
    }

    #[test]
    fn a_position_sees_the_same_environment_every_time_and_others_differ() {
        let a = CallEnv::derived(7, 1);
        let b = CallEnv::derived(7, 1);
        assert_eq!(a.entropy, b.entropy);
        assert_eq!(a.clock.wall_ms(), b.clock.wall_ms());
        assert_ne!(a.entropy, CallEnv::derived(7, 2).entropy);
        assert_ne!(a.entropy, CallEnv::derived(8, 1).entropy);
        let t0 = a.clock.monotonic_ns();
        assert!(a.clock.monotonic_ns() > t0, "time moves on every read");
    }
}
