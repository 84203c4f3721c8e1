//! The commit stage: a call's staged file effects, approved first when its
//! policy defers the ask to them (`approve = "effects"`), then committed
//! through the journal all or nothing.

use crate::listeners::{Approval, ApprovalRequest};
use crate::pipeline::{Pipeline, Run, sanitize};
use crate::registry::RegisteredTool;
use crate::summary::clip;
use serde_json::json;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{FailureCode, Stage, StageVerdict, ToolFailure};
use toolhost_effects::{CommitError, CommitInfo, EffectSet, Journal, Staged};

/// Most effects listed in a result's meta (the rest: the diff artifact).
const MAX_EFFECTS_IN_META: usize = 20;

/// Commits at most this many effects and bytes run on the calling task.
const INLINE_COMMIT_EFFECTS: usize = 8;
const INLINE_COMMIT_BYTES: u64 = 1 << 20;

/// Most bytes of diff shown in an effects approval (the rest: its artifact).
const MAX_DIFF_IN_APPROVAL: usize = 4000;

impl Pipeline {
    /// The effect set of `staged`, approved first when the
    /// ask was deferred to the effects, then committed all or nothing.
    pub(crate) async fn commit_effects(
        &self,
        run: &mut Run<'_>,
        tool: &RegisteredTool,
        staged: Staged,
        signal: &CancellationToken,
    ) -> Result<(), ToolFailure> {
        let call = run.call;
        let deferred = run.ask_effects.take();
        if let Some(script) = run.script {
            // A script's call: its changes are the script's, committed (and
            // approved, when a call asks for that) with the script.
            if let Some(reason) = deferred {
                script.defer_ask(reason);
            }
            run.pass(Stage::Commit, "script");
            return Ok(());
        }
        if staged.is_clean() {
            run.pass(Stage::Commit, "no_effects");
            return Ok(());
        }
        let host_error = |what: String| ToolFailure::new(FailureCode::HostError, what);
        let set = staged.effects().map_err(|e| {
            run.deny(
                Stage::Commit,
                "effects",
                host_error(format!(
                    "the tool ran, but its file changes cannot be read back, so none were made: {e}"
                )),
            )
        })?;
        if set.is_empty() {
            run.pass(Stage::Commit, "no_effects");
            return Ok(());
        }
        // The whole diff, for people and for the approval form.
        let diff_id = format!(
            "{}-{}-effects",
            call.token().as_str(),
            sanitize(call.call_id())
        );
        let diff = set.diff();
        let owner = call.principal().unwrap_or_default();
        let diff_uri = match deferred {
            Some(reason) => {
                // Stored first: the approval links it.
                let uri = self.artifacts.put_owned(owner, &diff_id, diff.clone());
                self.approve_effects(run, tool, &set, (&diff, &uri), reason, signal)
                    .await?;
                uri
            }
            None => self.artifacts.put_owned(owner, &diff_id, diff),
        };
        let journal = self
            .journal()
            .map_err(|e| run.deny(Stage::Commit, "journal", host_error(e)))?;
        let info = CommitInfo {
            session: self.session.clone(),
            call_id: call.call_id().to_owned(),
            tool: tool.descriptor.name.clone(),
        };
        // Blocking file I/O: a small commit (the usual one or two files)
        // takes tens of microseconds, less than handing it to another
        // thread; a large one goes off the async workers.
        let bytes: u64 = set
            .effects
            .iter()
            .filter_map(|e| e.after.as_ref().map(|v| v.size))
            .sum();
        let committed =
            if set.effects.len() <= INLINE_COMMIT_EFFECTS && bytes <= INLINE_COMMIT_BYTES {
                journal.commit(&staged, &set, &info)
            } else {
                let set = set.clone();
                tokio::task::spawn_blocking(move || journal.commit(&staged, &set, &info))
                    .await
                    .map_err(|e| CommitError::NotFound(format!("the commit task failed: {e}")))
                    .and_then(|r| r)
            };
        match committed {
            Ok(record) => {
                tracing::debug!(entry = %record.id, "committed");
                // (No journal id here: it is not deterministic, and results
                // are compared in replay. `toolhost undo` takes the call id.)
                let mut summary = set.summary(MAX_EFFECTS_IN_META);
                if let Some(o) = summary.as_object_mut() {
                    o.insert("diff".into(), json!(diff_uri));
                }
                run.extra.insert("effects".into(), summary);
                run.trace.push(
                    Stage::Commit,
                    StageVerdict::Pass,
                    "journal",
                    Some(clip(&set.headline(5), 300)),
                );
                Ok(())
            }
            Err(CommitError::Conflict { path }) => Err(run.deny(
                Stage::Commit,
                "journal",
                ToolFailure::new(
                    FailureCode::Conflict,
                    format!(
                        "the tool ran, but {path} was changed by someone else while it ran, so none \
                         of its changes were made. Read the file again and retry"
                    ),
                )
                .with_info(json!({"path": path})),
            )),
            Err(e) => Err(run.deny(
                Stage::Commit,
                "journal",
                host_error(format!("the tool ran, but its changes could not be committed: {e}")),
            )),
        }
    }

    /// Asks the approver about a staged run's effects.
    async fn approve_effects(
        &self,
        run: &mut Run<'_>,
        tool: &RegisteredTool,
        set: &EffectSet,
        (diff, diff_uri): (&str, &str),
        reason: String,
        signal: &CancellationToken,
    ) -> Result<(), ToolFailure> {
        let call = run.call;
        let Some(approver) = &self.b.approver else {
            return Err(run.deny(
                Stage::Commit,
                "no_approver",
                ToolFailure::new(
                    FailureCode::ApprovalDenied,
                    format!(
                        "{reason}, and no approver is available, so its changes were discarded"
                    ),
                ),
            ));
        };
        let shown = clip(diff, MAX_DIFF_IN_APPROVAL);
        let request = ApprovalRequest {
            call_id: call.call_id().to_owned(),
            tool: tool.descriptor.name.clone(),
            summary: format!(
                "`{}` would make {}\n\n{shown}{}",
                tool.descriptor.name,
                set.headline(10),
                if shown.len() < diff.len() {
                    format!("\n(the whole diff: {diff_uri})")
                } else {
                    String::new()
                }
            ),
            reason,
        };
        let answer = tokio::select! {
            biased;
            a = approver.approve(&request) => a,
            () = signal.cancelled() => Approval::Denied("the call was cancelled".into()),
        };
        match answer {
            Approval::Approved => {
                run.trace.push(
                    Stage::Commit,
                    StageVerdict::Approved,
                    "approver",
                    Some(clip(&set.headline(5), 300)),
                );
                Ok(())
            }
            Approval::Denied(why) => Err(run.deny(
                Stage::Commit,
                "approver",
                ToolFailure::new(
                    FailureCode::ApprovalDenied,
                    format!(
                        "the user did not approve this call's changes, so none were made: {why}"
                    ),
                ),
            )),
            Approval::Pending(what) => Err(run.deny(
                Stage::Commit,
                "approver",
                ToolFailure::new(
                    FailureCode::ApprovalPending,
                    format!("the user was asked to approve this call's changes: {what}"),
                ),
            )),
        }
    }

    /// The journal commits go through.
    fn journal(&self) -> Result<Arc<Journal>, String> {
        if let Some(j) = &self.b.journal {
            return Ok(j.clone());
        }
        static DEFAULT: std::sync::OnceLock<Result<Arc<Journal>, String>> =
            std::sync::OnceLock::new();
        DEFAULT
            .get_or_init(|| {
                let dir = toolhost_effects::private_dir("journal");
                Journal::open(&dir)
                    .map(|(j, _)| Arc::new(j))
                    .map_err(|e| format!("the commit journal cannot be opened: {e}"))
            })
            .clone()
    }
}
