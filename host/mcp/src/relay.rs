//! Relaying what a running tool reports (contract 0.3.0's `context`) to
//! the client that called it, and only what it asked for: progress when
//! the request carried a `progressToken`, log messages at or above the
//! level it set (`logging/setLevel`, or the request's own `logLevel` under
//! 2026-07-28). Everything else is dropped here (it is still recorded with
//! the call).
//!
//! The tool reports on the thread running it, which must not wait on the
//! client: reports go into a channel, and [`Relay::forward`] sends them,
//! in order, while the call runs. The forwarding ends when the call's last
//! handle on the relay is dropped, so every report goes out before the
//! response.

#![allow(deprecated)] // MCP logging (SEP-2577 deprecates it; 2025-11-25 clients use it)

use crate::notices::{from_mcp, to_mcp};
use rmcp::model::ProgressToken;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam};
use rmcp::service::{Peer, RoleServer};
use std::sync::Arc;
use tokio::sync::mpsc;
use toolhost_contract::{ContextEvent, ContextSink, LogLevel};

/// The sink side: filters, then queues.
#[derive(Debug)]
pub(crate) struct Relay {
    tx: mpsc::UnboundedSender<ContextEvent>,
    progress: bool,
    level: Option<LogLevel>,
}

/// The sending side, run beside the call.
pub(crate) struct Forward {
    rx: mpsc::UnboundedReceiver<ContextEvent>,
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    tool: String,
}

/// A relay for one call, when its client asked for anything a tool can
/// report; `None` otherwise (the pipeline then relays nothing).
pub(crate) fn for_call(
    peer: &Peer<RoleServer>,
    token: Option<ProgressToken>,
    level: Option<LoggingLevel>,
    tool: &str,
) -> Option<(Arc<dyn ContextSink>, Forward)> {
    if token.is_none() && level.is_none() {
        return None;
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let relay = Relay {
        tx,
        progress: token.is_some(),
        level: level.map(from_mcp),
    };
    let forward = Forward {
        rx,
        peer: peer.clone(),
        token,
        tool: tool.to_owned(),
    };
    Some((Arc::new(relay), forward))
}

impl ContextSink for Relay {
    fn emit(&self, event: &ContextEvent) {
        let wanted = match event {
            ContextEvent::Progress { .. } => self.progress,
            ContextEvent::Log { level, .. } => self.level.is_some_and(|min| *level >= min),
        };
        if wanted {
            // The receiver outlives the call; a closed one means the client
            // went away, and there is no one left to tell.
            let _ = self.tx.send(event.clone());
        }
    }
}

/// Relays what `forward` carries until the call's reports end (nothing,
/// when the client asked for none).
pub(crate) async fn forwarding(forward: Option<Forward>) {
    if let Some(f) = forward {
        f.run().await;
    }
}

impl Forward {
    /// Sends every report, in order, until the relay is dropped.
    pub(crate) async fn run(mut self) {
        while let Some(event) = self.rx.recv().await {
            // A client that went away misses the rest; the call goes on.
            let _ = match event {
                ContextEvent::Progress {
                    done,
                    total,
                    message,
                } => {
                    let Some(token) = self.token.clone() else {
                        continue;
                    };
                    let mut p = ProgressNotificationParam::new(token, done as f64);
                    p.total = total.map(|t| t as f64);
                    p.message = message;
                    self.peer.notify_progress(p).await
                }
                ContextEvent::Log { level, message } => {
                    let mut m = LoggingMessageNotificationParam::new(to_mcp(level), message.into());
                    m.logger = Some(self.tool.clone());
                    self.peer.notify_logging_message(m).await
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relay_filters_by_what_was_asked() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let relay = Relay {
            tx,
            progress: false,
            level: Some(LogLevel::Warning),
        };
        let log = |level| ContextEvent::Log {
            level,
            message: "m".into(),
        };
        relay.emit(&ContextEvent::Progress {
            done: 1,
            total: None,
            message: None,
        });
        relay.emit(&log(LogLevel::Info));
        relay.emit(&log(LogLevel::Error));
        relay.emit(&log(LogLevel::Warning));
        drop(relay);
        let mut got = Vec::new();
        while let Ok(e) = rx.try_recv() {
            got.push(e);
        }
        assert_eq!(got, vec![log(LogLevel::Error), log(LogLevel::Warning)]);
    }
}
