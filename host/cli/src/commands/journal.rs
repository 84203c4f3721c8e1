//! `toolhost history`, `undo` and `redo`: the journal of committed file
//! changes, read and walked back and forth.

use super::Context;
use clap::Args;
use std::path::Path;
use toolhost_effects::Journal;

/// `toolhost history`'s options.
#[derive(Args)]
pub struct HistoryArgs {
    /// Only this session's calls.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Print the journal entries as JSON.
    #[arg(long)]
    json: bool,
}

/// `toolhost undo`'s options.
#[derive(Args)]
pub struct UndoArgs {
    /// The call id (or journal entry) to undo.
    call: Option<String>,
    /// The newest call of this session.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
}

/// `toolhost redo`'s options.
#[derive(Args)]
pub struct RedoArgs {
    /// The call id (or journal entry) to redo.
    call: Option<String>,
    /// The newest undone call of this session.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
}

/// Lists the committed calls, oldest first.
pub fn history(ctx: &Context, a: HistoryArgs) -> anyhow::Result<()> {
    let (journal, recovery) = open_journal(ctx)?;
    let entries: Vec<_> = journal
        .entries()?
        .into_iter()
        .filter(|r| a.session.as_deref().is_none_or(|s| r.session == s))
        .collect();
    if a.json {
        out!("{}", serde_json::to_string_pretty(&entries)?);
    } else if entries.is_empty() {
        out!("no committed calls in {}", ctx.journal_named()?.display());
    } else {
        for r in &entries {
            let state = match (r.state, &r.undoes) {
                (_, Some(of)) => format!("undo of {of}"),
                (toolhost_effects::State::Undone, _) => "undone".to_owned(),
                _ => "committed".to_owned(),
            };
            out!(
                "{}  {}  {} {}  [{state}]\n    {}",
                utc(r.time_ms),
                r.id,
                r.tool,
                r.call_id,
                r.headline
            );
        }
    }
    if let Some(s) = recovery.staging.summary() {
        // (Beside the JSON, not in it.)
        eprintln!("staging: {s}");
    }
    Ok(())
}

/// Reverts a committed call's file changes.
pub fn undo(ctx: &Context, a: UndoArgs) -> anyhow::Result<()> {
    let (journal, _) = open_journal(ctx)?;
    let r = journal.undo(a.call.as_deref(), a.session.as_deref())?;
    out!("undone: {}", r.headline);
    Ok(())
}

/// Re-applies what `undo` reverted.
pub fn redo(ctx: &Context, a: RedoArgs) -> anyhow::Result<()> {
    let (journal, _) = open_journal(ctx)?;
    let r = journal.redo(a.call.as_deref(), a.session.as_deref())?;
    out!("redone: {}", r.headline);
    Ok(())
}

/// The journal, with what the last host left recovered: a commit it left
/// halfway finished or rolled back, and what it staged removed (from the
/// staging directory a host with this cache directory uses).
fn open_journal(ctx: &Context) -> anyhow::Result<(Journal, toolhost_effects::Recovery)> {
    let staging = toolhost_runtime::RuntimeConfig {
        cache_dir: ctx.cache.as_deref().map(Path::to_path_buf),
        ..Default::default()
    }
    .staging_dir();
    Ok(toolhost_effects::recover(ctx.journal_named()?, &staging)?)
}

/// `ms` since the epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
