//! The `context` import of contract 0.3.0: what a running tool reports
//! (progress, log messages) and asks (whether its caller cancelled).
//!
//! Everything a tool reports is bounded by its policy: a byte budget per
//! call (`max_context_bytes`) and a rate (`max_context_per_second`, with a
//! burst of as many), measured on the call's own clock so a deterministic
//! call drops exactly the same messages on every run. What passes is
//! recorded (it ends up in the result's `meta.context`) and handed to the
//! call's [`ContextSink`], if any; what does not is counted. A progress
//! update dropped by the rate is not lost for good: the latest one is kept
//! and reported when the call ends, so a client sees where the tool got to.

use crate::bindings::{v3, v4, v5};
use std::sync::Arc;
use toolhost_contract::clock::Clock;
use toolhost_contract::{ContextEvent, ContextSink, LogLevel};
use toolhost_policy::Limits;

/// One second, in nanoseconds.
const SECOND_NS: u64 = 1_000_000_000;

/// One call's reporting channel and its bounds.
pub(crate) struct CallContext {
    sink: Option<Arc<dyn ContextSink>>,
    clock: Arc<dyn Clock>,
    /// What passed, in order.
    events: Vec<ContextEvent>,
    /// Messages dropped by the rate or the byte budget.
    dropped: u64,
    bytes_left: u64,
    /// Nanoseconds between two messages at the policy's rate (`0`: no
    /// message passes the rate; the policy refuses a zero rate anyway).
    interval_ns: u64,
    /// The generic cell rate algorithm's theoretical arrival time: a
    /// message passes while it is at most one second, less one interval,
    /// ahead of now.
    tat_ns: Option<u64>,
    /// The latest progress the rate dropped, reported when the call ends.
    pending_progress: Option<ContextEvent>,
}

impl CallContext {
    /// A channel bounded by `limits`, timed on `clock`.
    pub(crate) fn new(
        limits: &Limits,
        clock: Arc<dyn Clock>,
        sink: Option<Arc<dyn ContextSink>>,
    ) -> CallContext {
        CallContext {
            sink,
            clock,
            events: Vec::new(),
            dropped: 0,
            bytes_left: limits.max_context_bytes,
            interval_ns: SECOND_NS
                .checked_div(limits.max_context_per_second)
                .unwrap_or(0),
            tat_ns: None,
            pending_progress: None,
        }
    }

    /// Whether the rate lets one more message through now.
    fn rate_allows(&mut self) -> bool {
        if self.interval_ns == 0 {
            return false;
        }
        let now = self.clock.monotonic_ns();
        let tat = self.tat_ns.unwrap_or(now).max(now);
        // A burst of `per_second` messages: the last of them arrives with
        // the theoretical time one second, less one interval, ahead.
        if tat.saturating_sub(now) > SECOND_NS.saturating_sub(self.interval_ns) {
            return false;
        }
        self.tat_ns = Some(tat.saturating_add(self.interval_ns));
        true
    }

    /// Records and forwards `event` if the byte budget still holds it.
    fn pass(&mut self, event: ContextEvent) {
        let charge = event.charge();
        if charge > self.bytes_left {
            self.dropped += 1;
            return;
        }
        self.bytes_left -= charge;
        if let Some(sink) = &self.sink {
            sink.emit(&event);
        }
        self.events.push(event);
    }

    /// A progress report.
    pub(crate) fn progress(&mut self, done: u64, total: Option<u64>, message: Option<String>) {
        let event = ContextEvent::Progress {
            done,
            total,
            message,
        };
        if self.rate_allows() {
            if self.pending_progress.take().is_some() {
                self.dropped += 1;
            }
            self.pass(event);
        } else if self.pending_progress.replace(event).is_some() {
            self.dropped += 1;
        }
    }

    /// A log message.
    pub(crate) fn log(&mut self, level: LogLevel, message: String) {
        if self.rate_allows() {
            self.pass(ContextEvent::Log { level, message });
        } else {
            self.dropped += 1;
        }
    }

    /// Ends the call's reporting: the latest progress the rate held back
    /// goes out now, and the sink is let go (a front end's relay ends when
    /// its last sink does, and the sandbox may outlive the call: see
    /// `retire`). Returns what passed and how many were dropped.
    pub(crate) fn finish(&mut self) -> (Vec<ContextEvent>, u64) {
        if let Some(last) = self.pending_progress.take() {
            self.pass(last);
        }
        self.sink = None;
        (std::mem::take(&mut self.events), self.dropped)
    }
}

/// The log levels of one contract version (0.3.0 and 0.4.0 have the same
/// `context` interface, each with its own types) as the contract's.
macro_rules! log_level {
    ($v:ident) => {
        impl From<$v::types::LogLevel> for LogLevel {
            fn from(l: $v::types::LogLevel) -> LogLevel {
                use $v::types::LogLevel as L;
                match l {
                    L::Debug => LogLevel::Debug,
                    L::Info => LogLevel::Info,
                    L::Notice => LogLevel::Notice,
                    L::Warning => LogLevel::Warning,
                    L::Error => LogLevel::Error,
                    L::Critical => LogLevel::Critical,
                    L::Alert => LogLevel::Alert,
                    L::Emergency => LogLevel::Emergency,
                }
            }
        }
    };
}

log_level!(v3);
log_level!(v4);
log_level!(v5);

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use toolhost_contract::clock::SteppingClock;

    #[derive(Debug)]
    struct Collect(Mutex<Vec<ContextEvent>>);
    impl ContextSink for Collect {
        fn emit(&self, event: &ContextEvent) {
            self.0.lock().expect("not poisoned").push(event.clone());
        }
    }

    fn limits(bytes: u64, per_second: u64) -> Limits {
        Limits {
            max_context_bytes: bytes,
            max_context_per_second: per_second,
            ..Limits::default()
        }
    }

    /// A clock that moves `step_ns` on every read.
    fn clock(step_ns: u64) -> Arc<dyn Clock> {
        Arc::new(SteppingClock::new(0, 0, step_ns))
    }

    #[test]
    fn the_rate_passes_a_burst_then_one_per_interval_and_the_last_progress_survives() {
        let sink = Arc::new(Collect(Mutex::new(Vec::new())));
        // 10 a second; the clock moves 1 ms per read: 200 updates in
        // 0.2 s of the call's time.
        let mut ctx = CallContext::new(&limits(1 << 20, 10), clock(1_000_000), Some(sink.clone()));
        for i in 0..200 {
            ctx.progress(i, Some(199), None);
        }
        let (events, dropped) = ctx.finish();
        // A burst of 10, one more 0.1 s after the first, and the final
        // update when the call ends.
        let done: Vec<u64> = events
            .iter()
            .map(|e| match e {
                ContextEvent::Progress { done, .. } => *done,
                ContextEvent::Log { .. } => u64::MAX,
            })
            .collect();
        assert_eq!(done, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 199]);
        assert_eq!(dropped, 200 - 12);
        assert_eq!(
            events.last(),
            Some(&ContextEvent::Progress {
                done: 199,
                total: Some(199),
                message: None
            })
        );
        assert_eq!(*sink.0.lock().expect("not poisoned"), events);
    }

    #[test]
    fn the_byte_budget_drops_what_does_not_fit() {
        let mut ctx = CallContext::new(&limits(100, 1000), clock(SECOND_NS), None);
        ctx.log(LogLevel::Info, "x".repeat(60));
        ctx.log(LogLevel::Info, "y".repeat(60));
        ctx.log(LogLevel::Warning, "short".into());
        let (events, dropped) = ctx.finish();
        assert_eq!(dropped, 1);
        assert_eq!(events.len(), 2);
        assert!(
            matches!(&events[1], ContextEvent::Log { level: LogLevel::Warning, message } if message == "short")
        );
    }

    #[test]
    fn a_deterministic_clock_drops_the_same_messages_every_time() {
        let run = || {
            let mut ctx = CallContext::new(&limits(1 << 20, 5), clock(7_000_000), None);
            for i in 0..100 {
                if i % 3 == 0 {
                    ctx.log(LogLevel::Debug, format!("step {i}"));
                } else {
                    ctx.progress(i, None, Some(format!("at {i}")));
                }
            }
            ctx.finish()
        };
        assert_eq!(run(), run());
    }
}
