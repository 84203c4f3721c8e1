//! Soak: many sequential calls through the whole pipeline, good and hostile,
//! with a session log, must not grow the host's memory or its open files.
//!
//! `make test` runs the short version (5,000 calls after a 1,000-call
//! warm-up); the long one is `TOOLHOST_SOAK_CALLS=100000 cargo test --test
//! soak -- --nocapture` (`make soak`). The figures are printed either way.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{FailureCode, ToolCall, ToolResult};
use toolhost_pipeline::{Pipeline, Registry, Scope, SessionLog};
use toolhost_policy::{Decision, FsMode};
use toolhost_tests::{Workspace, allow_in, build, hostile, process};

/// Resident memory may grow at most this much over the measured calls: the
/// issue's target for 100,000 calls, held for the short run as well (the
/// pipeline keeps nothing per call but bounded stores: baselines per path,
/// artifacts within their capacity).
const MAX_RSS_GROWTH_KIB: i64 = 2 * 1024;

fn rss_kib() -> i64 {
    let kib = process::resident_kib().expect("VmRSS in /proc/self/status");
    i64::try_from(kib).expect("a resident size in KiB fits i64")
}

fn open_fds() -> usize {
    process::open_fds().expect("/proc/self/fd")
}

/// Call `i` of the mix, and what it must answer.
fn mix(i: usize) -> (&'static str, Value, Result<(), FailureCode>) {
    match i % 8 {
        0 => ("echo", json!({"i": i}), Ok(())),
        1 => ("read_file", json!({"path": "/workspace/notes.txt"}), Ok(())),
        2 => ("panic", json!({}), Err(FailureCode::Trap)),
        3 => ("counter", json!({}), Ok(())),
        4 => (
            "echo",
            json!("not an object"),
            Err(FailureCode::InvalidArguments),
        ),
        5 => ("memory_bomb", json!({}), Err(FailureCode::MemoryLimit)),
        6 => ("no_such_tool", json!({}), Err(FailureCode::UnknownTool)),
        _ => ("exit", json!({"status": 1}), Err(FailureCode::GuestExit)),
    }
}

async fn call(p: &Pipeline, i: usize) {
    let (tool, args, want) = mix(i);
    let r = p
        .execute(
            ToolCall::new(format!("c{i}"), tool, args.to_string()),
            CancellationToken::new(),
        )
        .await;
    match (want, &r) {
        (Ok(()), ToolResult::Success(_)) => {}
        (Err(code), _) if r.failed_with(code) => {}
        _ => panic!("call {i} ({tool}): {r:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_calls_grow_neither_memory_nor_open_files() {
    let calls: usize = std::env::var("TOOLHOST_SOAK_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let warmup = (calls / 5).max(1_000);
    let ws = Workspace::new(&[("notes.txt", "one\ntwo\n")]);
    let policy = build(
        allow_in(ws.path(), FsMode::ReadOnly)
            .decision(Decision::Allow)
            .limits(|l| l.memory_bytes = 16 << 20),
    );
    let registry = Registry::new();
    let _reg = registry
        .register_component(Scope::Global, &hostile().await, &policy)
        .unwrap();
    let log = Arc::new(SessionLog::open(&ws.file("session.jsonl")).unwrap());
    let p = Pipeline::builder(registry).session_log(log).build();

    for i in 0..warmup {
        call(&p, i).await;
    }
    let (rss0, fds0) = (rss_kib(), open_fds());
    let t = Instant::now();
    for i in warmup..warmup + calls {
        call(&p, i).await;
    }
    let took = t.elapsed();
    let (rss1, fds1) = (rss_kib(), open_fds());
    eprintln!(
        "{calls} calls after a {warmup}-call warm-up in {took:?} ({:.0} calls/s): \
         RSS {rss0} → {rss1} KiB ({:+} KiB), open files {fds0} → {fds1}",
        calls as f64 / took.as_secs_f64(),
        rss1 - rss0
    );
    assert!(
        rss1 - rss0 < MAX_RSS_GROWTH_KIB,
        "RSS grew {} KiB over {calls} calls",
        rss1 - rss0
    );
    assert_eq!(fds1, fds0, "open files grew over {calls} calls");
    // Every call was recorded (two events each).
    let read = toolhost_pipeline::read_log(&ws.file("session.jsonl")).unwrap();
    assert_eq!(read.events.len(), 2 * (warmup + calls));
}
