//! The sandbox holds against hostile guests, and the host survives them all.
#![allow(clippy::unwrap_used, missing_docs)]

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::FailureCode;
use toolhost_policy::{FsMode, Policy, PolicyBuilder, ToolPolicy};
use toolhost_runtime::{Budget, Entropy, Execution, Invocation};
use toolhost_tests::{Workspace, allow_in, build, fetch, hostile, legacy};

const GENEROUS: Budget = Budget {
    fuel: 50_000_000_000,
    deadline: Duration::from_secs(20),
};

async fn run(tool: &str, args: Value, policy: &ToolPolicy, budget: Budget) -> Execution {
    let c = hostile().await;
    let args = args.to_string();
    let mut inv = Invocation::new(tool, &args, policy);
    inv.budget = budget;
    c.execute(inv).await
}

fn code(e: &Execution) -> String {
    match &e.outcome {
        Ok(v) => format!("ok: {v}"),
        Err(f) => f.code.as_str().to_owned(),
    }
}

fn value(e: &Execution) -> Value {
    serde_json::from_str(e.outcome.as_ref().expect("success")).unwrap()
}

fn plain() -> ToolPolicy {
    Policy::deny_all().component()
}

#[tokio::test]
async fn infinite_loop_times_out_within_the_deadline() {
    let deadline = Duration::from_millis(300);
    let t = Instant::now();
    let e = run(
        "spin",
        json!({}),
        &plain(),
        Budget {
            fuel: u64::MAX,
            deadline,
        },
    )
    .await;
    let took = t.elapsed();
    assert_eq!(code(&e), "timeout");
    assert!(took >= deadline, "ended early: {took:?}");
    assert!(
        took < deadline + Duration::from_secs(2),
        "ended late: {took:?}"
    );
}

#[tokio::test]
async fn fuel_bomb_runs_out_of_fuel() {
    let e = run(
        "spin",
        json!({}),
        &plain(),
        Budget {
            fuel: 50_000_000,
            ..GENEROUS
        },
    )
    .await;
    assert_eq!(code(&e), "fuel_exhausted");
    assert!(e.report.fuel_consumed >= 50_000_000 - 1000);
}

#[tokio::test]
async fn memory_bomb_hits_the_memory_limit() {
    let policy = build(PolicyBuilder::new().limits(|l| l.memory_bytes = 32 << 20)).component();
    let e = run("memory_bomb", json!({}), &policy, GENEROUS).await;
    assert_eq!(code(&e), "memory_limit");
    assert!(
        e.outcome
            .unwrap_err()
            .message
            .contains(&(32u64 << 20).to_string())
    );
}

#[tokio::test]
async fn deep_recursion_overflows_the_stack() {
    let e = run("recurse", json!({}), &plain(), GENEROUS).await;
    assert_eq!(code(&e), "stack_overflow");
}

#[tokio::test]
async fn stdout_flood_hits_the_output_limit() {
    let policy = build(PolicyBuilder::new().limits(|l| l.max_stdout_bytes = 100_000)).component();
    let e = run("flood_stdout", json!({}), &policy, GENEROUS).await;
    assert_eq!(code(&e), "output_limit");
    assert_eq!(
        e.report.stdout.len(),
        100_000,
        "kept exactly up to the limit"
    );
}

#[tokio::test]
async fn a_panic_is_a_trap_with_the_panic_message() {
    let e = run("panic", json!({}), &plain(), GENEROUS).await;
    assert_eq!(code(&e), "trap");
    let msg = e.outcome.unwrap_err().message;
    assert!(msg.contains("stderr:"), "{msg}");
}

#[tokio::test]
async fn a_guest_blocked_in_a_host_call_is_stopped_by_the_backstop() {
    let deadline = Duration::from_millis(200);
    let t = Instant::now();
    let e = run(
        "slow_sleep",
        json!({"ms": 60_000}),
        &plain(),
        Budget {
            deadline,
            ..GENEROUS
        },
    )
    .await;
    assert_eq!(code(&e), "timeout");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[tokio::test]
async fn cancellation_stops_a_spinning_guest() {
    let policy = plain();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        c2.cancel();
    });
    let c = hostile().await;
    let mut inv = Invocation::new("spin", "{}", &policy);
    inv.budget = Budget {
        fuel: u64::MAX,
        deadline: Duration::from_secs(30),
    };
    inv.cancel = cancel;
    let t = Instant::now();
    let e = c.execute(inv).await;
    assert_eq!(code(&e), "cancelled");
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_empty_budget_runs_nothing() {
    let e = run("counter", json!({}), &plain(), Budget::default()).await;
    assert_eq!(code(&e), "fuel_exhausted");
    let e = run(
        "counter",
        json!({}),
        &plain(),
        Budget {
            fuel: 1_000_000,
            deadline: Duration::ZERO,
        },
    )
    .await;
    assert_eq!(code(&e), "timeout");
}

#[tokio::test]
async fn wasi_refuses_escapes_from_a_preopen() {
    let outside = Workspace::new(&[("secret.txt", "top secret")]);
    let ws = Workspace::new(&[("inside.txt", "hello")]);
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.file("secret.txt"), ws.file("link.txt")).unwrap();
    let policy = build(allow_in(ws.path(), FsMode::ReadOnly)).component();

    let ok = run(
        "read_file",
        json!({"path": "/workspace/inside.txt"}),
        &policy,
        GENEROUS,
    )
    .await;
    assert_eq!(value(&ok)["content"], "hello");
    let relative = run(
        "read_file",
        json!({"path": "inside.txt"}),
        &policy,
        GENEROUS,
    )
    .await;
    assert_eq!(
        value(&relative)["content"],
        "hello",
        "relative paths resolve against /workspace"
    );

    let secret = format!(
        "/workspace/../{}/secret.txt",
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    for path in [
        "/workspace/../secret.txt",
        secret.as_str(),
        "/workspace/link.txt",
        "/etc/passwd",
    ] {
        let e = run("read_file", json!({"path": path}), &policy, GENEROUS).await;
        assert_eq!(code(&e), "io_error", "{path} must not be readable: {e:?}");
    }
}

#[tokio::test]
async fn a_read_only_preopen_refuses_writes() {
    let ws = Workspace::new(&[("a.txt", "original")]);
    let ro = build(allow_in(ws.path(), FsMode::ReadOnly)).component();
    let e = run(
        "write_file",
        json!({"path": "/workspace/a.txt", "content": "changed"}),
        &ro,
        GENEROUS,
    )
    .await;
    assert_eq!(code(&e), "io_error");
    let e = run(
        "write_file",
        json!({"path": "/workspace/new.txt", "content": "x"}),
        &ro,
        GENEROUS,
    )
    .await;
    assert_eq!(code(&e), "io_error");
    assert_eq!(ws.read("a.txt"), "original");
    assert!(!ws.file("new.txt").exists());

    let rw = build(allow_in(ws.path(), FsMode::ReadWrite)).component();
    let e = run(
        "write_file",
        json!({"path": "/workspace/a.txt", "content": "changed"}),
        &rw,
        GENEROUS,
    )
    .await;
    assert!(e.outcome.is_ok(), "{e:?}");
    assert_eq!(ws.read("a.txt"), "changed");
}

#[tokio::test]
async fn only_allow_listed_env_vars_are_visible() {
    let policy = build(
        PolicyBuilder::new()
            .env_allow("PATH")
            .env_set("TOOL_MODE", "ci"),
    )
    .component();
    let get = |name: &'static str| {
        let policy = policy.clone();
        async move {
            value(&run("env", json!({"name": name}), &policy, GENEROUS).await)["value"].clone()
        }
    };
    assert_eq!(get("TOOL_MODE").await, "ci");
    assert_eq!(get("PATH").await, json!(std::env::var("PATH").unwrap()));
    assert_eq!(
        get("HOME").await,
        Value::Null,
        "HOME is set on the host but not allow-listed"
    );
    let none = value(&run("env", json!({"name": "PATH"}), &plain(), GENEROUS).await);
    assert_eq!(none["value"], Value::Null);
}

#[tokio::test]
async fn calls_share_no_state() {
    for _ in 0..3 {
        let e = run("counter", json!({}), &plain(), GENEROUS).await;
        assert_eq!(value(&e)["count"], 1);
    }
}

#[tokio::test]
async fn seeded_entropy_is_deterministic() {
    let policy = plain();
    let c = hostile().await;
    let mut outs = Vec::new();
    for seed in [7, 7, 8] {
        let mut inv = Invocation::new("random", "{}", &policy);
        inv.budget = GENEROUS;
        inv.entropy = Entropy::Seeded(seed);
        outs.push(value(&c.execute(inv).await)["hex"].clone());
    }
    assert_eq!(outs[0], outs[1]);
    assert_ne!(outs[0], outs[2]);
}

#[tokio::test]
async fn network_imports_need_a_network_grant() {
    let fetch = toolhost_tests::fetch().await;
    let denial = fetch
        .import_denial(&plain().sandbox)
        .expect("fetch needs a grant");
    assert!(denial.contains("wasi:http/"), "{denial}");
    let granted = build(PolicyBuilder::new().network("127.0.0.1:*")).component();
    assert_eq!(fetch.import_denial(&granted.sandbox), None);
    let none = plain();
    let mut inv = Invocation::new("fetch", r#"{"url":"http://127.0.0.1:9/"}"#, &none);
    inv.budget = GENEROUS;
    let e = fetch.execute(inv).await;
    assert_eq!(code(&e), FailureCode::ImportDenied.as_str());
}

#[tokio::test]
async fn the_host_survives_every_hostile_guest_in_a_row() {
    let policy = build(PolicyBuilder::new().limits(|l| {
        l.memory_bytes = 16 << 20;
        l.max_stdout_bytes = 10_000;
    }))
    .component();
    let small = Budget {
        fuel: 200_000_000,
        deadline: Duration::from_secs(5),
    };
    for (tool, want) in [
        ("spin", "fuel_exhausted"),
        ("memory_bomb", "memory_limit"),
        ("recurse", "stack_overflow"),
        ("flood_stdout", "output_limit"),
        ("panic", "trap"),
        ("fail", "boom"),
    ] {
        assert_eq!(
            code(&run(tool, json!({}), &policy, small).await),
            want,
            "{tool}"
        );
    }
    assert_eq!(
        value(&run("counter", json!({}), &policy, small).await)["count"],
        1
    );
}

#[tokio::test]
async fn components_of_the_released_0_1_0_contract_still_load_and_run() {
    let old = legacy().await;
    assert_eq!(old.contract_version(), "0.1.0");
    let echo = old.tool("echo_v1").expect("declared");
    assert_eq!((echo.title.as_deref(), echo.urls.len()), (None, 0));
    let policy = plain();
    let mut inv = Invocation::new("echo_v1", r#"{"text":"hi"}"#, &policy);
    inv.budget = GENEROUS;
    let e = old.execute(inv).await;
    assert_eq!(value(&e), json!({"text": "hi"}));
    let rendered = old
        .render(
            "echo_v1",
            "{}",
            r#"{"text":"hi"}"#,
            &policy,
            CancellationToken::new(),
        )
        .await
        .expect("renders");
    assert_eq!(
        rendered,
        Some(vec![toolhost_contract::ContentBlock::text(
            r#"echo: {"text":"hi"}"#
        )])
    );
    // The current contract's extras come through for 0.2.0 components.
    let f = fetch().await;
    assert_eq!(f.contract_version(), "0.2.0");
    let d = f.tool("fetch").expect("declared");
    assert_eq!(d.urls, ["/url"]);
    assert_eq!(d.title.as_deref(), Some("Fetch a web page"));
}

#[tokio::test]
async fn calls_beyond_the_pool_queue_instead_of_failing() {
    // A pool of 2 instances and 8 concurrent calls that each hold an
    // instance for 150 ms: every call succeeds, in about 4 waves.
    let rt = toolhost_runtime::Runtime::new(toolhost_runtime::RuntimeConfig {
        max_instances: 2,
        ..Default::default()
    })
    .unwrap();
    let c = rt
        .load(std::path::Path::new(toolhost_tests::guests::GUEST_HOSTILE))
        .await
        .unwrap();
    let policy = plain();
    let t = Instant::now();
    let calls = (0..8).map(|_| {
        let c = c.clone();
        let policy = policy.clone();
        async move {
            let mut inv = Invocation::new("slow_sleep", r#"{"ms":150}"#, &policy);
            inv.budget = GENEROUS;
            c.execute(inv).await
        }
    });
    let mut results = Vec::new();
    for h in calls.map(tokio::spawn).collect::<Vec<_>>() {
        results.push(h.await.unwrap());
    }
    for e in &results {
        assert_eq!(value(e)["ms"], 150, "{:?}", e.outcome);
    }
    assert!(
        t.elapsed() >= Duration::from_millis(550),
        "8 calls of 150 ms through 2 slots took only {:?}",
        t.elapsed()
    );
    // A call waiting for a slot can still be cancelled.
    let cancel = CancellationToken::new();
    let busy = (0..2).map(|_| {
        let c = c.clone();
        let policy = policy.clone();
        async move {
            let mut inv = Invocation::new("slow_sleep", r#"{"ms":400}"#, &policy);
            inv.budget = GENEROUS;
            c.execute(inv).await
        }
    });
    let waiting = {
        let c = c.clone();
        let policy = policy.clone();
        let cancel = cancel.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let mut inv = Invocation::new("slow_sleep", r#"{"ms":1}"#, &policy);
            inv.budget = GENEROUS;
            inv.cancel = cancel.clone();
            let canceller = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                cancel.cancel();
            });
            let e = c.execute(inv).await;
            canceller.await.unwrap();
            e
        }
    };
    let busy: Vec<_> = busy.map(tokio::spawn).collect();
    assert_eq!(code(&waiting.await), "cancelled");
    for h in busy {
        assert!(h.await.unwrap().outcome.is_ok());
    }
}
