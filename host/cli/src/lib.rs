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

/// Shows a component's compilation on the terminal (stderr): what is being
/// compiled, the seconds going by, and how long it took. Off a terminal it
/// only logs.
#[derive(Debug, Default)]
pub struct TerminalProgress;

impl toolhost_runtime::CompileProgress for TerminalProgress {
    fn compiling(&self, origin: &std::path::Path, bytes: usize) -> Box<dyn Send> {
        use std::io::{IsTerminal, Write};
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let name = origin.file_name().map_or_else(
            || origin.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let what = format!(
            "compiling {name} ({:.1} MiB)",
            bytes as f64 / (1 << 20) as f64
        );
        tracing::info!("{what}");
        if !std::io::stderr().is_terminal() {
            return Box::new(());
        }
        let started = std::time::Instant::now();
        let done = Arc::new(AtomicBool::new(false));
        let ticker = {
            let done = done.clone();
            std::thread::spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    let mut err = std::io::stderr().lock();
                    let _ = write!(
                        err,
                        "\r{what}, once (then cached) … {} s",
                        started.elapsed().as_secs()
                    );
                    let _ = err.flush();
                    drop(err);
                    std::thread::sleep(std::time::Duration::from_millis(250));
                }
                eprintln!(
                    "\r{what}, once (then cached) … done in {:.1} s",
                    started.elapsed().as_secs_f64()
                );
            })
        };
        struct Done(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>);
        impl Drop for Done {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
                if let Some(t) = self.1.take() {
                    let _ = t.join();
                }
            }
        }
        Box::new(Done(done, Some(ticker)))
    }
}
