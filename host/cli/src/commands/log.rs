//! `toolhost log`: a session log, or a directory of replicas' logs merged in
//! time order, printed for people.

use anyhow::Context as _;
use clap::Args;
use std::path::PathBuf;
use toolhost_contract::SessionEvent;
use toolhost_pipeline::read_log;

/// `toolhost log`'s options.
#[derive(Args)]
pub struct LogArgs {
    /// The log file, or a directory of logs (`serve --log DIR/`).
    file: PathBuf,
}

/// Prints every call and result in the log.
pub fn run(a: LogArgs) -> anyhow::Result<()> {
    let file = a.file;
    let contents = if file.is_dir() {
        toolhost_pipeline::session_log::read_log_dir(&file)
    } else {
        read_log(&file)
    }
    .with_context(|| format!("reading {}", file.display()))?;
    for ev in &contents.events {
        match ev {
            SessionEvent::ToolCall(c) => match &c.principal {
                Some(p) => out!("→ {} {} {} (by {p})", c.call_id, c.tool, c.arguments),
                None => out!("→ {} {} {}", c.call_id, c.tool, c.arguments),
            },
            SessionEvent::ToolResult(r) => {
                let status = r
                    .code
                    .as_deref()
                    .map_or("ok".to_owned(), |c| format!("error [{c}]"));
                out!(
                    "← {} {} {} ({} µs)",
                    r.call_id,
                    r.tool,
                    status,
                    r.timings.total_us
                );
                if let Some(h) = r.effects.as_ref().and_then(|e| e["headline"].as_str()) {
                    out!("    changed {h}");
                }
                if let Some(d) = r.trace.denial() {
                    out!(
                        "    decided by {:?}/{}: {}",
                        d.stage,
                        d.by,
                        d.note.as_deref().unwrap_or("")
                    );
                }
                for b in &r.content {
                    if let toolhost_contract::ContentBlock::Text { text } = b {
                        for line in text.lines().take(20) {
                            out!("    {line}");
                        }
                    }
                }
            }
        }
    }
    if let Some(t) = contents.torn_tail {
        out!("(a torn last line of {} bytes was skipped)", t.len());
    }
    Ok(())
}
