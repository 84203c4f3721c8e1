//! Hot reload: when the toolbox file, a component file or a policy file
//! changes, the toolbox is loaded again and swapped in atomically, and every
//! session is told `notifications/tools/list_changed`. A broken new version
//! (a file that does not parse, a component that does not load) keeps the
//! old tools serving; the reason goes to the log.

use crate::Server;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;
use toolhost_toolbox::{HostError, find_toolbox};

/// How often files are checked for changes by default.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(500);

/// Where the served toolbox comes from, so it can be found again.
#[derive(Debug, Clone)]
pub struct ToolboxSource {
    /// `--config FILE`, if given.
    pub explicit: Option<PathBuf>,
    /// The directory served (where `toolhost.toml` is looked for).
    pub dir: PathBuf,
    /// `--mode`, if given: it overrides the toolbox file's, at every load.
    pub mode: Option<toolhost_toolbox::file::Mode>,
    /// `--language`, if given: it overrides the toolbox file's, at every load.
    pub language: Option<toolhost_toolbox::file::Language>,
}

impl ToolboxSource {
    /// The files whose change triggers a reload: what the last load reported,
    /// plus the toolbox file itself (watched even while absent, so creating
    /// it takes effect).
    fn watched(&self, reported: &[PathBuf]) -> Vec<PathBuf> {
        let mut files = reported.to_vec();
        files.push(
            self.explicit
                .clone()
                .unwrap_or_else(|| self.dir.join(toolhost_toolbox::file::DEFAULT_FILE_NAME)),
        );
        files.sort();
        files.dedup();
        files
    }
}

/// What identifies a file's version: modification time and length, or
/// absence.
type Stamp = Vec<(PathBuf, Option<(SystemTime, u64)>)>;

/// The watched files as they were when serving started: a change made
/// while the first load still runs (components compile in the background)
/// is a change to reload for, not the state to compare with.
#[derive(Debug, Clone)]
pub struct Baseline {
    files: Vec<PathBuf>,
    stamp: Stamp,
}

impl ToolboxSource {
    /// The state of the toolbox file and `files` (those the toolbox names) now.
    pub fn baseline(&self, files: &[PathBuf]) -> Baseline {
        let files = self.watched(files);
        let stamp = stamp(&files);
        Baseline { files, stamp }
    }
}

fn stamp(files: &[PathBuf]) -> Stamp {
    files
        .iter()
        .map(|f| {
            let m = std::fs::metadata(f)
                .ok()
                .and_then(|m| m.modified().ok().map(|t| (t, m.len())));
            (f.clone(), m)
        })
        .collect()
}

/// Reloads the toolbox now and tells the sessions; on error nothing changed.
pub async fn reload_now(server: &Server, source: &ToolboxSource) -> Result<(), HostError> {
    let mut toolbox = find_toolbox(source.explicit.as_deref(), &source.dir)?;
    if let Some(language) = source.language {
        toolbox.language = language;
    }
    if let Some(mode) = source.mode {
        toolbox.mode = mode;
    }
    let report = server.host().load(&toolbox).await?;
    // Descriptors changed since the previous load, and escapes and
    // shadowing in the new tools.
    for w in &report.warnings {
        tracing::warn!("{w}");
    }
    server.tools_changed();
    Ok(())
}

/// Watches the toolbox's files every `interval` until `stop` is cancelled,
/// from their state in `since`.
pub async fn watch(
    server: Server,
    source: ToolboxSource,
    since: Baseline,
    interval: Duration,
    stop: CancellationToken,
) {
    let Baseline {
        mut files,
        stamp: mut last,
    } = since;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
        let now = stamp(&files);
        if now == last {
            continue;
        }
        // Let a writer finish (editors write in several steps).
        tokio::time::sleep(interval / 2).await;
        let now = stamp(&files);
        match reload_now(&server, &source).await {
            Ok(()) => {
                let report = server.host().report();
                tracing::info!(
                    tools = report.served.len(),
                    "toolbox reloaded; clients told the tool list changed"
                );
                files = source.watched(&report.watch);
                last = stamp(&files);
            }
            Err(why) => {
                tracing::warn!("reload failed; the previous tools keep serving: {why}");
                // Wait for the next change rather than retrying the broken one.
                last = now;
            }
        }
    }
}
