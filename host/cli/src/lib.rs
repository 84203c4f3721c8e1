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

pub mod author;
pub mod script;
pub mod telemetry;
pub mod version;

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

/// Shows components compiling on the terminal (stderr): one line that
/// names every component compiling at once with the seconds going by, and
/// a line for each when it is done. Off a terminal it only logs.
#[derive(Debug, Default)]
pub struct TerminalProgress {
    compiling: std::sync::Arc<std::sync::Mutex<Compiling>>,
}

/// What is compiling now, and whether a ticker shows it.
#[derive(Debug, Default)]
struct Compiling {
    /// Each compile: a number, its name and size, when it started.
    now: Vec<(u64, String, std::time::Instant)>,
    next: u64,
    ticking: bool,
}

impl Compiling {
    /// The status line: `compiling a.wasm (18.0 MiB), b.wasm (0.2 MiB) … 3 s`.
    fn line(&self) -> String {
        let names: Vec<&str> = self.now.iter().map(|(_, n, _)| n.as_str()).collect();
        let oldest = self
            .now
            .iter()
            .map(|(_, _, t)| t.elapsed().as_secs())
            .max()
            .unwrap_or(0);
        format!(
            "compiling {}, once (then cached) … {oldest} s",
            names.join(", ")
        )
    }
}

impl toolhost_runtime::CompileProgress for TerminalProgress {
    fn compiling(&self, origin: &std::path::Path, bytes: usize) -> Box<dyn Send> {
        use std::io::{IsTerminal, Write};
        use std::sync::Arc;
        let name = origin.file_name().map_or_else(
            || origin.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let label = format!("{name} ({:.1} MiB)", bytes as f64 / (1 << 20) as f64);
        tracing::info!("compiling {label}");
        if !std::io::stderr().is_terminal() {
            return Box::new(());
        }
        let id = {
            let mut c = self
                .compiling
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            c.next += 1;
            let id = c.next;
            c.now.push((id, label, std::time::Instant::now()));
            if !c.ticking {
                c.ticking = true;
                let shared = self.compiling.clone();
                std::thread::spawn(move || {
                    loop {
                        let mut c = shared
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        if c.now.is_empty() {
                            c.ticking = false;
                            return;
                        }
                        let mut err = std::io::stderr().lock();
                        // Clear the line first: the list may have shrunk.
                        let _ = write!(err, "\r\x1b[2K{}", c.line());
                        let _ = err.flush();
                        drop(err);
                        drop(c);
                        std::thread::sleep(std::time::Duration::from_millis(250));
                    }
                });
            }
            id
        };
        struct Done(Arc<std::sync::Mutex<Compiling>>, u64);
        impl Drop for Done {
            fn drop(&mut self) {
                let mut c = self
                    .0
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(i) = c.now.iter().position(|(id, _, _)| *id == self.1) {
                    let (_, label, started) = c.now.remove(i);
                    eprint!(
                        "\r\x1b[2Kcompiled {label} in {:.1} s\n",
                        started.elapsed().as_secs_f64()
                    );
                    if !c.now.is_empty() {
                        eprint!("{}", c.line());
                    }
                }
            }
        }
        Box::new(Done(self.compiling.clone(), id))
    }
}
