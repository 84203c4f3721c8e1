//! What a running tool tells its caller, and asks about its call
//! (contract 0.3.0's `context` import).
//!
//! Every function is cheap and never fails. The host bounds what a call
//! reports (a rate and a byte budget set by its policy; past them reports
//! are dropped, and the latest progress is still delivered at the end),
//! records it with the call, and forwards it to the client only when the
//! client asked for it. So report freely, but not in the inner loop: once
//! per file or per thousand lines is plenty.
//!
//! Natively (unit tests of tool logic) reports are kept in a thread-local
//! list that [`take_reports`] returns, and [`Ctx::cancelled`] is `false`
//! unless a test called [`cancel_for_test`].

/// The severity of a log message (the syslog levels MCP uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// The running call's context: get it with [`ctx()`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Ctx {
    _private: (),
}

/// The running call's context.
pub fn ctx() -> Ctx {
    Ctx { _private: () }
}

/// One report, as kept natively for tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// A progress update.
    Progress {
        /// Units done.
        done: u64,
        /// Units in all, when known.
        total: Option<u64>,
        /// A short message.
        message: Option<String>,
    },
    /// A log message.
    Log {
        /// Its severity.
        level: LogLevel,
        /// The message.
        message: String,
    },
}

impl Ctx {
    /// Reports progress: `done` units of `total` (when known). `done`
    /// should grow from call to call.
    pub fn progress(&self, done: u64, total: Option<u64>, message: Option<&str>) {
        #[cfg(target_arch = "wasm32")]
        crate::__glue::bindings::toolhost::tool::context::progress(done, total, message);
        #[cfg(not(target_arch = "wasm32"))]
        native::push(Report::Progress {
            done,
            total,
            message: message.map(str::to_owned),
        });
    }

    /// Logs a message for the person or agent at the client.
    pub fn log(&self, level: LogLevel, message: &str) {
        #[cfg(target_arch = "wasm32")]
        {
            use crate::__glue::bindings::toolhost::tool::types::LogLevel as L;
            let level = match level {
                LogLevel::Debug => L::Debug,
                LogLevel::Info => L::Info,
                LogLevel::Notice => L::Notice,
                LogLevel::Warning => L::Warning,
                LogLevel::Error => L::Error,
                LogLevel::Critical => L::Critical,
                LogLevel::Alert => L::Alert,
                LogLevel::Emergency => L::Emergency,
            };
            crate::__glue::bindings::toolhost::tool::context::log(level, message);
        }
        #[cfg(not(target_arch = "wasm32"))]
        native::push(Report::Log {
            level,
            message: message.to_owned(),
        });
    }

    /// Whether the caller cancelled the call: check it between units of
    /// work and return early. (The host stops the instance anyway; checking
    /// lets the tool stop where it chooses.)
    pub fn cancelled(&self) -> bool {
        #[cfg(target_arch = "wasm32")]
        return crate::__glue::bindings::toolhost::tool::context::cancelled();
        #[cfg(not(target_arch = "wasm32"))]
        native::cancelled()
    }
}

/// The reports made on this thread since the last call (native only).
#[cfg(not(target_arch = "wasm32"))]
pub fn take_reports() -> Vec<Report> {
    native::take()
}

/// Makes [`Ctx::cancelled`] answer `cancelled` on this thread (native only).
#[cfg(not(target_arch = "wasm32"))]
pub fn cancel_for_test(cancelled: bool) {
    native::set_cancelled(cancelled);
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use super::Report;
    use std::cell::{Cell, RefCell};

    thread_local! {
        static REPORTS: RefCell<Vec<Report>> = const { RefCell::new(Vec::new()) };
        static CANCELLED: Cell<bool> = const { Cell::new(false) };
    }

    pub(super) fn push(r: Report) {
        REPORTS.with(|v| v.borrow_mut().push(r));
    }

    pub(super) fn take() -> Vec<Report> {
        REPORTS.with(|v| std::mem::take(&mut *v.borrow_mut()))
    }

    pub(super) fn cancelled() -> bool {
        CANCELLED.with(Cell::get)
    }

    pub(super) fn set_cancelled(c: bool) {
        CANCELLED.with(|x| x.set(c));
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn reports_are_kept_natively_and_cancellation_can_be_simulated() {
        let c = ctx();
        c.progress(1, Some(2), Some("half"));
        c.log(LogLevel::Warning, "w");
        assert_eq!(
            take_reports(),
            vec![
                Report::Progress {
                    done: 1,
                    total: Some(2),
                    message: Some("half".into())
                },
                Report::Log {
                    level: LogLevel::Warning,
                    message: "w".into()
                }
            ]
        );
        assert!(take_reports().is_empty());
        assert!(!c.cancelled());
        cancel_for_test(true);
        assert!(c.cancelled());
        cancel_for_test(false);
    }
}
