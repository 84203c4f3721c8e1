//! Shared pieces of the toolhost front ends: the host assembly they all use
//! (re-exported from `toolhost-toolbox`) and an approver for a terminal.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use toolhost::{Host, HostConfig, find_toolbox};
//! let host = Host::new(HostConfig::default())?;
//! let dir = std::env::current_dir()?;
//! let report = host.load(&find_toolbox(None, &dir)?).await?;
//! println!("{} tools served", report.served.len());
//! # Ok(()) }
//! ```

use toolhost_pipeline::{Approval, ApprovalRequest, Approver};

pub mod script;

pub use toolhost_toolbox::{
    Host, HostConfig, LoadReport, default_cache_dir, embedded_default, find_toolbox,
};

/// Asks on the terminal (stdin/stderr); anything but `y` denies.
#[derive(Debug, Default)]
pub struct TerminalApprover;

#[async_trait::async_trait]
impl Approver for TerminalApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let prompt = format!(
            "approve {}? {}\n  {}\n[y/N] ",
            request.tool, request.reason, request.summary
        );
        let answer = tokio::task::spawn_blocking(move || {
            use std::io::Write;
            eprint!("{prompt}");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|_| line)
        })
        .await;
        match answer {
            Ok(Ok(line)) if line.trim().eq_ignore_ascii_case("y") => Approval::Approved,
            _ => Approval::Denied("not approved at the terminal".into()),
        }
    }
}
