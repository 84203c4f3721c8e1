//! What the serving process accepts of a worker's answer. A worker may be
//! compromised: its answer is bounded before it is read, and what it
//! claims is checked against the call's policy before anything of it is
//! used. What no honest worker sends is a forgery ([`is_forgery`]): the
//! call is refused and the worker stopped.

use crate::carried::ExecutionReport;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_contract::{ContextEvent, FailureCode, ToolFailure};
use toolhost_effects::{Overlay, OverlaySnapshot, Staged, StagingArea, Transaction, TxSnapshot};
use toolhost_policy::{FsMode, ToolPolicy};

/// The largest answer an honest worker sends for a call under `policy`
/// (a script's call with the transaction `sent`): its value and rendering,
/// its stdout and stderr, what it reported and what it staged, each at
/// the most its policy lets through and as JSON may spell it (a string's
/// byte as six, a staged file's as base64), with room for the rest. A
/// frame past it is refused before it is read.
pub fn answer_bound(policy: &ToolPolicy, sent: Option<&TxSnapshot>) -> usize {
    let l = &policy.limits;
    let six = |n: u64| n.saturating_mul(6);
    let bytes = six(l.max_value_bytes)
        .saturating_mul(2)
        .saturating_add(six(l.max_stdout_bytes).saturating_mul(2))
        .saturating_add(six(l.max_context_bytes))
        .saturating_add(l.max_write_bytes.saturating_mul(2))
        .saturating_add(l.max_files_created.saturating_mul(4096))
        .saturating_add(sent.map_or(0, |t| {
            let (b, e) = t.staged_size();
            b.saturating_mul(2).saturating_add(e.saturating_mul(4096))
        }))
        .saturating_add(1 << 20);
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

/// What a call may report as it runs (context events, as they come over
/// the channel), in bytes of their JSON.
pub fn reports_bound(policy: &ToolPolicy) -> usize {
    usize::try_from(policy.limits.max_context_bytes.saturating_mul(8))
        .unwrap_or(usize::MAX)
        .saturating_add(64 * 1024)
}

/// One reported event's size, as it counts against [`reports_bound`].
pub fn event_size(event: &ContextEvent) -> usize {
    serde_json::to_vec(event).map_or(usize::MAX, |v| v.len())
}

/// Whether what a worker observed fits what its policy lets a sandbox
/// keep (its stdout and stderr bounded, decoded lossily; what the tool
/// reported); else what it claims is a forgery.
pub fn check_report(report: &ExecutionReport, policy: &ToolPolicy) -> Result<(), String> {
    let l = &policy.limits;
    // Lossy decoding may spell a byte as U+FFFD (three bytes).
    let stream = usize::try_from(l.max_stdout_bytes.saturating_mul(3))
        .unwrap_or(usize::MAX)
        .saturating_add(1024);
    if report.stdout.len() > stream || report.stderr.len() > stream {
        return Err(format!(
            "it sent more output than its policy keeps (max_stdout_bytes = {})",
            l.max_stdout_bytes
        ));
    }
    let reported: usize = report.context.iter().map(event_size).sum();
    if reported > reports_bound(policy) {
        return Err(format!(
            "it recorded more reports than its policy keeps (max_context_bytes = {})",
            l.max_context_bytes
        ));
    }
    Ok(())
}

/// A failure whose cause is a worker's forgery (see [`is_forgery`]).
pub fn forged(why: String) -> ToolFailure {
    ToolFailure::new(FailureCode::WorkerRefused, why)
}

/// Whether `f` says the worker sent what no honest worker sends: staged
/// writes outside its grants or past its budget (it enforces both itself).
pub fn is_forgery(f: &ToolFailure) -> bool {
    [FailureCode::WorkerRefused, FailureCode::WriteBudgetExceeded]
        .iter()
        .any(|c| f.code.as_str() == c.as_str())
}

/// A worker's staged writes staged again in this process's staging area
/// (under `staging`): only in the call's read-write grants, and only
/// within its write budget.
pub fn restage(
    staging: &Path,
    staged: Vec<(String, PathBuf, OverlaySnapshot)>,
    policy: &ToolPolicy,
) -> Result<Staged, ToolFailure> {
    if staged.is_empty() {
        return Ok(Staged::default());
    }
    let refuse = |why: String| ToolFailure::new(FailureCode::HostError, why);
    let (mut bytes, mut entries) = (0u64, 0u64);
    for (_, _, s) in &staged {
        let (b, e) = s.staged_size();
        bytes = bytes.saturating_add(b);
        entries = entries.saturating_add(e);
    }
    check_budget(bytes, entries, policy)?;
    let area = StagingArea::of(staging)
        .map_err(|e| refuse(format!("the staging area cannot be opened: {e}")))?;
    let call = area.fresh("call");
    let mut grants = Vec::with_capacity(staged.len());
    for (i, (guest, root, snapshot)) in staged.into_iter().enumerate() {
        let granted = policy
            .sandbox
            .fs
            .iter()
            .any(|g| g.mode == FsMode::ReadWrite && g.host == root && g.guest == guest);
        if !granted {
            return Err(forged(format!(
                "it staged writes in {} ({guest}), which the call was not granted",
                root.display()
            )));
        }
        let overlay = Overlay::new(&root, call.with_extension(i.to_string()))
            .map_err(|e| refuse(format!("{}: {e}", root.display())))?;
        overlay.restore(snapshot).map_err(|e| {
            forged(format!(
                "its staged files in {} cannot be taken: {e}",
                root.display()
            ))
        })?;
        grants.push((guest, Arc::new(overlay)));
    }
    Ok(Staged::new(grants))
}

/// The directories a call's policy grants, canonical (as a transaction
/// keeps them): what of a script's transaction a worker's call sees, and
/// what of it the call may change.
#[derive(Debug, Clone)]
pub struct Granted {
    any: Vec<PathBuf>,
    /// The read-write grants: directory and guest path.
    rw: Vec<(PathBuf, String)>,
}

impl Granted {
    /// The grants of `policy`.
    pub fn of(policy: &ToolPolicy) -> Granted {
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        Granted {
            any: policy.sandbox.fs.iter().map(|g| canon(&g.host)).collect(),
            rw: policy
                .sandbox
                .fs
                .iter()
                .filter(|g| g.mode == FsMode::ReadWrite)
                .map(|g| (canon(&g.host), g.guest.clone()))
                .collect(),
        }
    }

    /// What of the script's transaction the call is sent: its granted
    /// directories'.
    pub fn seen(&self, tx: &TxSnapshot) -> TxSnapshot {
        tx.only(|root| self.any.iter().any(|g| g == root))
    }

    /// A script's call's changes to its transaction, as the worker sent
    /// them back (`after`, against what it was sent, `before`), staged in
    /// the serving process's transaction: only in the call's read-write
    /// grants (the rest is dropped), each under the guest path it was sent
    /// as or the call's grant names it (the transaction keeps a new
    /// directory's, which approvals show), and within its write budget.
    pub fn take_changes(
        &self,
        tx: &Transaction,
        before: &TxSnapshot,
        after: TxSnapshot,
        policy: &ToolPolicy,
    ) -> Result<(), ToolFailure> {
        let after = after.only(|root| self.rw.iter().any(|(r, _)| r == root));
        for (root, guest) in after.grants() {
            let granted = self.rw.iter().any(|(r, g)| r == root && g == guest)
                || before.grants().any(|(r, g)| r == root && g == guest);
            if !granted {
                return Err(forged(format!(
                    "it staged writes in {} as {guest}, which the call was not granted",
                    root.display()
                )));
            }
        }
        check_growth(before, &after, policy)?;
        tx.apply_changes(before, after)
            .map_err(|e| forged(format!("its staged files cannot be taken: {e}")))
    }
}

/// A script's call may add to the transaction at most its own write
/// budget (what the worker enforced, checked again here).
fn check_growth(
    before: &TxSnapshot,
    after: &TxSnapshot,
    policy: &ToolPolicy,
) -> Result<(), ToolFailure> {
    let (b0, e0) = before.staged_size();
    let (b1, e1) = after.staged_size();
    check_budget(b1.saturating_sub(b0), e1.saturating_sub(e0), policy)
}

fn check_budget(bytes: u64, entries: u64, policy: &ToolPolicy) -> Result<(), ToolFailure> {
    let l = &policy.limits;
    if bytes > l.max_write_bytes || entries > l.max_files_created {
        return Err(ToolFailure::new(
            FailureCode::WriteBudgetExceeded,
            format!(
                "the worker staged {bytes} bytes in {entries} entries, over the policy's \
                 max_write_bytes = {}, max_files_created = {}",
                l.max_write_bytes, l.max_files_created
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_worker_staged_past_the_budget_is_refused() {
        let mut policy = ToolPolicy::default();
        policy.limits.max_write_bytes = 10;
        policy.limits.max_files_created = 2;
        assert!(check_budget(10, 2, &policy).is_ok());
        let f = check_budget(11, 1, &policy).err();
        assert_eq!(
            f.map(|f| f.code.as_str().to_owned()).as_deref(),
            Some("write_budget_exceeded")
        );
        assert!(check_budget(1, 3, &policy).is_err());
    }
}
