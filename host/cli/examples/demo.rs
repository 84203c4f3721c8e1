//! A scripted agent session through the whole toolhost pipeline:
//! read → edit (approved from its arguments) → write (approved from the
//! diff of its staged run, then committed) → grep → a write outside the
//! workspace (denied)
//! → a fetch to a host not on the allow-list (denied) → an unknown tool →
//! arguments that are not JSON — printed the way a user would want to see
//! it. The workspace and the script are in `examples/demo/`.
//!
//! Run with `make demo` (or `cargo run -p toolhost --example demo`).

use std::sync::Arc;
use toolhost::script::{copy_workspace, read_script};
use toolhost::{Host, HostConfig, TerminalProgress, find_toolbox};
use toolhost_contract::{ToolCall, ToolResult};
use toolhost_pipeline::{Approval, ApprovalRequest, Approver, SessionLog, read_log};

/// Approves after showing the bounded summary, as a human would see it.
struct ShowAndApprove;

#[async_trait::async_trait]
impl Approver for ShowAndApprove {
    async fn approve(&self, r: &ApprovalRequest) -> Approval {
        println!(
            "  ? approval requested: {}",
            r.summary.replace('\n', "\n  ? ")
        );
        println!("    (demo approver says yes)");
        Approval::Approved
    }
}

/// Prints a result; `took` is real time (the session's own timings are
/// virtual, since it runs deterministically).
fn show(result: &ToolResult, took: std::time::Duration) {
    let ms = took.as_secs_f64() * 1000.0;
    match result.error() {
        None => println!("  ✓ ok in {ms:.1} ms"),
        Some(e) => {
            let by = result
                .meta()
                .trace
                .denial()
                .map(|d| format!("{:?}/{}", d.stage, d.by))
                .unwrap_or_default();
            println!("  ✗ {} (decided by {by}) in {ms:.1} ms", e.code);
        }
    }
    for line in result.text().lines().take(14) {
        println!("  │ {line}");
    }
    if let Some(h) = result
        .meta()
        .extra
        .get("effects")
        .and_then(|e| e["headline"].as_str())
    {
        println!("  ✎ committed {h} (toolhost history / undo)");
    }
    println!();
}

/// The demo's files: the workspace it starts from and its script.
fn demo_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // The workspace: a small project, and its toolbox (the built-in tools
    // with their default policies, and fetch allowed to reach one host: it
    // is not served without a network allow-list). The session runs
    // deterministically (seed 0), as recorded in
    // tests/cassettes/demo.cassette.jsonl.
    let workspace = tempfile::tempdir()?;
    let ws = workspace.path();
    copy_workspace(&demo_dir().join("workspace"), ws)?;
    let script = read_script(&demo_dir().join("calls.jsonl"))?;
    let host = Host::new(HostConfig {
        cache_dir: Some(std::env::temp_dir().join("toolhost-demo-cache")),
        journal_dir: Some(std::env::temp_dir().join("toolhost-demo-cache/journal")),
        on_compile: Some(Arc::new(TerminalProgress::default())),
        ..HostConfig::default()
    })?;
    let started = std::time::Instant::now();
    let report = host.load(&find_toolbox(None, ws)?).await?;
    println!(
        "toolbox {}: {} tools served, loaded in {:.1} ms",
        ws.join("toolhost.toml").display(),
        report.served.len(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    for c in host.components() {
        println!(
            "  {:<16} {:>8.1} ms ({:?})",
            c.path().display(),
            c.compile_time().as_secs_f64() * 1000.0,
            c.cache_outcome()
        );
    }
    let logs = tempfile::tempdir()?;
    let log_path = logs.path().join("session.jsonl");
    let pipeline = host
        .session()
        .deterministic(0)
        .approver(Arc::new(ShowAndApprove))
        .session_log(Arc::new(SessionLog::open(&log_path)?))
        .build();

    println!("\nworkspace {} is mounted at /workspace\n", ws.display());
    for (i, call) in script.iter().enumerate() {
        let args = call.arguments_text();
        println!(
            "{}. {}\n  → {} {args}",
            i + 1,
            call.note.as_deref().unwrap_or(""),
            call.tool
        );
        let started = std::time::Instant::now();
        let r = pipeline
            .execute(
                ToolCall::new(format!("call_{}", i + 1), call.tool.clone(), args),
                Default::default(),
            )
            .await;
        show(&r, started.elapsed());
    }
    let log = read_log(&log_path)?;
    println!(
        "session log: {} events in {} (value hashes, never values)",
        log.events.len(),
        log_path.display()
    );
    println!(
        "src/greet.rs is now:\n{}",
        std::fs::read_to_string(ws.join("src/greet.rs"))?
    );
    Ok(())
}
