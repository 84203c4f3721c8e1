//! What the server has to say while it runs (a component compiling in the
//! background, one that failed to load): written to stderr, which MCP
//! clients keep in their server logs, and sent as MCP log messages
//! (`notifications/message`) to the clients that asked for them: a session
//! that set a level with `logging/setLevel` (before 2026-07-28), or a
//! request that carries a log level in its `_meta` (2026-07-28).

// MCP logging is deprecated by SEP-2577 but is what clients display today;
// it is only sent to clients that opted in.
#![allow(deprecated)]

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{Peer, RoleServer};
use serde_json::json;
use std::path::Path;
use std::time::Instant;
use tokio::sync::broadcast;
use toolhost_contract::LogLevel;

/// How severe a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Progress (`info`).
    Info,
    /// Something is not served, or not yet (`warning`).
    Warning,
    /// Something failed (`error`).
    Error,
}

impl Severity {
    fn level(self) -> LogLevel {
        match self {
            Severity::Info => LogLevel::Info,
            Severity::Warning => LogLevel::Warning,
            Severity::Error => LogLevel::Error,
        }
    }
}

/// Whether a notice of `severity` passes a client's `level`.
pub(crate) fn passes(severity: Severity, level: LoggingLevel) -> bool {
    severity.level() >= from_mcp(level)
}

/// A level as MCP names it, as the contract's (ordered by severity).
pub(crate) fn from_mcp(l: LoggingLevel) -> LogLevel {
    match l {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

/// The contract's level as MCP names it.
pub(crate) fn to_mcp(l: LogLevel) -> LoggingLevel {
    match l {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// One notice.
#[derive(Debug, Clone)]
pub struct Notice {
    /// How severe.
    pub severity: Severity,
    /// What happened, one line.
    pub text: String,
}

impl Notice {
    /// The MCP log message for this notice.
    pub(crate) fn message(&self) -> LoggingMessageNotificationParam {
        let mut m = LoggingMessageNotificationParam::new(
            to_mcp(self.severity.level()),
            json!(self.text.clone()),
        );
        m.logger = Some("toolhost".into());
        m
    }

    /// Sends it to `peer` when it passes `level`.
    pub(crate) async fn send(&self, peer: &Peer<RoleServer>, level: LoggingLevel) {
        if passes(self.severity, level) {
            // A client that went away misses the notice; nothing else to do.
            let _ = peer.notify_logging_message(self.message()).await;
        }
    }
}

/// The server's notices: stderr, and every session or request listening.
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct Notices {
    tx: broadcast::Sender<Notice>,
}

impl Default for Notices {
    fn default() -> Self {
        Notices {
            tx: broadcast::channel(64).0,
        }
    }
}

impl Notices {
    /// A new channel of notices.
    pub fn new() -> Notices {
        Notices::default()
    }

    /// Says `text`: on stderr (`toolhost: …`) and to whoever listens.
    pub fn say(&self, severity: Severity, text: impl Into<String>) {
        let text = text.into();
        eprintln!("toolhost: {text}");
        // No receiver: no client listening right now.
        let _ = self.tx.send(Notice { severity, text });
    }

    /// The notices from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Notice> {
        self.tx.subscribe()
    }
}

/// A component's file name (or its origin when it has none): what notices
/// call it.
pub fn short_name(origin: &Path) -> String {
    origin.file_name().map_or_else(
        || origin.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

impl toolhost_runtime::CompileProgress for Notices {
    fn compiling(&self, origin: &Path, bytes: usize) -> Box<dyn Send> {
        let name = short_name(origin);
        self.say(
            Severity::Info,
            format!(
                "compiling {name} ({:.1} MiB) in the background, once (then cached); its tools are served when it is ready",
                bytes as f64 / (1 << 20) as f64
            ),
        );
        struct Done {
            notices: Notices,
            name: String,
            started: Instant,
        }
        impl Drop for Done {
            fn drop(&mut self) {
                self.notices.say(
                    Severity::Info,
                    format!(
                        "compiled {} in {:.1} s",
                        self.name,
                        self.started.elapsed().as_secs_f64()
                    ),
                );
            }
        }
        Box::new(Done {
            notices: self.clone(),
            name,
            started: Instant::now(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_filter_by_severity() {
        assert!(passes(Severity::Info, LoggingLevel::Debug));
        assert!(passes(Severity::Info, LoggingLevel::Info));
        assert!(!passes(Severity::Info, LoggingLevel::Warning));
        assert!(passes(Severity::Warning, LoggingLevel::Warning));
        assert!(passes(Severity::Error, LoggingLevel::Warning));
        assert!(!passes(Severity::Error, LoggingLevel::Critical));
        for l in [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Notice,
            LogLevel::Warning,
            LogLevel::Error,
            LogLevel::Critical,
            LogLevel::Alert,
            LogLevel::Emergency,
        ] {
            assert_eq!(from_mcp(to_mcp(l)), l);
        }
    }

    #[test]
    fn compiling_says_when_it_starts_and_ends() {
        use toolhost_runtime::CompileProgress;
        let notices = Notices::new();
        let mut rx = notices.subscribe();
        let guard = notices.compiling(Path::new("/x/table.wasm"), 3 << 20);
        drop(guard);
        let first = rx.try_recv().expect("a start");
        assert!(first.text.starts_with("compiling table.wasm (3.0 MiB)"));
        let second = rx.try_recv().expect("an end");
        assert!(second.text.starts_with("compiled table.wasm in "));
    }
}
