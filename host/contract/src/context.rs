//! What a running tool tells its caller (contract 0.3.0's `context`
//! import): progress and log messages, recorded with the call and
//! forwarded to the client when it asked for them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The severity of a tool's log message: the syslog levels MCP uses,
/// least severe first (so `a >= b` reads "a is at least as severe as b").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

impl LogLevel {
    /// The level's name as MCP writes it, e.g. `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing a tool reported while it ran. Recorded in the result's
/// [`Meta::context`](crate::Meta::context), in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ContextEvent {
    /// Progress: `done` units of `total` (when known).
    Progress {
        /// Units done so far.
        done: u64,
        /// Units in all, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<u64>,
        /// A short message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
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

impl ContextEvent {
    /// The bytes the event charges to the call's budget: its texts, plus a
    /// fixed 16 for the numbers and the framing.
    pub fn charge(&self) -> u64 {
        let text = match self {
            ContextEvent::Progress { message, .. } => message.as_ref().map_or(0, String::len),
            ContextEvent::Log { message, .. } => message.len(),
        };
        u64::try_from(text).unwrap_or(u64::MAX).saturating_add(16)
    }
}

/// Where a call's events go live, as they happen (a front end relaying
/// them to its client). Called on the thread running the tool: it must
/// not block.
pub trait ContextSink: Send + Sync + fmt::Debug {
    /// One event the policy let through.
    fn emit(&self, event: &ContextEvent);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_tagged_and_levels_order_by_severity() {
        let e = ContextEvent::Progress {
            done: 3,
            total: Some(10),
            message: None,
        };
        assert_eq!(
            serde_json::to_value(&e).expect("encodes"),
            serde_json::json!({"kind": "progress", "done": 3, "total": 10})
        );
        let l = ContextEvent::Log {
            level: LogLevel::Warning,
            message: "careful".into(),
        };
        let text = serde_json::to_string(&l).expect("encodes");
        assert_eq!(
            text,
            r#"{"kind":"log","level":"warning","message":"careful"}"#
        );
        assert_eq!(
            serde_json::from_str::<ContextEvent>(&text).expect("decodes"),
            l
        );
        assert!(LogLevel::Error > LogLevel::Warning);
        assert!(LogLevel::Debug < LogLevel::Info);
        assert_eq!(l.charge(), 7 + 16);
    }
}
