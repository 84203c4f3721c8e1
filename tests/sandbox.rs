//! The sandbox holds against hostile guests, and the host survives them all.
#![allow(clippy::unwrap_used, missing_docs)]

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::{FailureCode, ToolResult};
use toolhost_policy::{FsMode, Policy, PolicyBuilder, ToolPolicy};
use toolhost_runtime::{Budget, Entropy, Execution, Invocation};
use toolhost_tests::{Workspace, allow_in, build, fetch, hostile, legacy, runtime};

const GENEROUS: Budget = Budget {
    fuel: 50_000_000_000,
    deadline: Duration::from_secs(20),
};

async fn run(tool: &str, args: Value, policy: &ToolPolicy, budget: Budget) -> Execution {
    let c = hostile().await;
    let args = args.to_string();
    let mut inv = Invocation::new(tool, &args, policy);
    inv.budget = budget;
    let mut e = c.execute(inv).await;
    commit(&mut e);
    e
}

/// Commits a successful call's staged file effects, as the pipeline does
/// (a failed call has none: they were discarded).
fn commit(e: &mut Execution) {
    static JOURNAL: std::sync::OnceLock<(tempfile::TempDir, toolhost_effects::Journal)> =
        std::sync::OnceLock::new();
    let staged = std::mem::take(&mut e.staged);
    if e.outcome.is_err() {
        assert!(staged.is_clean(), "a failed call keeps no staged effects");
        return;
    }
    if staged.is_clean() {
        return;
    }
    let (_, journal) = JOURNAL.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (j, _) = toolhost_effects::Journal::open(dir.path()).unwrap();
        (dir, j)
    });
    let set = staged.effects().unwrap();
    journal
        .commit(&staged, &set, &toolhost_effects::CommitInfo::default())
        .unwrap();
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
    let f = e.outcome.unwrap_err();
    assert!(f.message.contains("stderr:"), "{}", f.message);
    // The guest's frames, innermost first; the Rust guests are stripped,
    // so they are function indexes (a Go guest's are names: see
    // guest-tools/go/README.md).
    let frames: Vec<String> = f.info.as_ref().expect("info")["backtrace"]
        .as_array()
        .expect("a backtrace")
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert!(!frames.is_empty() && frames.len() <= 25, "{frames:?}");
    assert!(
        frames
            .iter()
            .all(|f| f.starts_with("func[") && f.ends_with(']')),
        "{frames:?}"
    );
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

/// What a call wrote to its memory is gone for the next call: the pool's
/// slots are reset (by memset of the dirty pages the kernel reports, up to
/// the keep-resident size, and by decommitting the rest), whichever way a
/// slot is reset. Small and large writes alternate so both ways run on
/// slots an earlier call dirtied.
#[tokio::test]
async fn memory_a_call_wrote_is_zero_for_the_next_call() {
    for (i, pages) in [64, 2, 64, 0, 160, 2, 64].into_iter().enumerate() {
        let e = run(
            "residue",
            json!({ "grow_pages": pages }),
            &plain(),
            GENEROUS,
        )
        .await;
        assert_eq!(
            value(&e),
            json!({"nonzero_static": 0, "nonzero_grown": 0}),
            "call {i} (grows {pages} pages) found an earlier call's bytes"
        );
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
async fn components_of_the_released_0_1_0_and_0_2_0_contracts_still_load_and_run() {
    let old = legacy().await;
    assert_eq!(old.contract_version(), Some("0.1.0"));
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
    // 0.2.0 components (the descriptors test guest is one) load and run,
    // and 0.3.0's flag is off for them.
    let v2 = runtime()
        .load_bytes(
            std::path::Path::new("descriptors.wasm"),
            toolhost_tests::guests::descriptor_guest("normal"),
        )
        .await
        .expect("loads");
    assert_eq!(v2.contract_version(), Some("0.2.0"));
    let notes = v2.tool("notes").expect("declared");
    assert_eq!(notes.description, "Keeps a note.");
    assert!(!notes.host_renders);
    let e = v2
        .execute(Invocation {
            budget: Budget {
                fuel: 1_000_000_000,
                deadline: Duration::from_secs(10),
            },
            ..Invocation::new("notes", "{}", &policy)
        })
        .await;
    assert_eq!(e.outcome.ok().as_deref(), Some(r#"{"tool":"notes"}"#));
    // The current contract (the built-ins are built with it).
    let f = fetch().await;
    assert_eq!(f.contract_version(), Some("0.3.0"));
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

// ── The attack suite, continued ─────────────────────────────────────────
//
// Each attack: the exact outcome, what must not have happened on the host,
// and that the host keeps serving afterwards.

/// The host still runs an honest call, in a fresh instance.
async fn still_serving() {
    let e = run("counter", json!({}), &plain(), GENEROUS).await;
    assert_eq!(value(&e)["count"], 1, "the host stopped serving: {e:?}");
}

fn failure(e: &Execution) -> toolhost_contract::ToolFailure {
    e.outcome.clone().expect_err("a failure")
}

/// A pipeline serving the hostile guest (and `extra` components) under `policy`.
async fn hostile_pipeline(
    policy: &Policy,
    extra: &[std::sync::Arc<toolhost_runtime::LoadedComponent>],
) -> (
    toolhost_pipeline::Pipeline,
    Vec<toolhost_pipeline::Registration>,
) {
    use toolhost_pipeline::{Pipeline, Registry, Scope};
    let registry = Registry::new();
    let mut regs = vec![
        registry
            .register_component(Scope::Global, &hostile().await, policy)
            .unwrap(),
    ];
    for c in extra {
        regs.push(
            registry
                .register_component(Scope::Global, c, policy)
                .unwrap(),
        );
    }
    (Pipeline::builder(registry).build(), regs)
}

async fn call(p: &toolhost_pipeline::Pipeline, tool: &str, args: Value) -> ToolResult {
    p.execute(
        toolhost_contract::ToolCall::new("c", tool, args.to_string()),
        CancellationToken::new(),
    )
    .await
}

#[tokio::test]
async fn a_guest_exit_is_the_guests_failure_with_its_status() {
    for status in [1, 0] {
        let e = run("exit", json!({"status": status}), &plain(), GENEROUS).await;
        assert_eq!(code(&e), "guest_exit", "exit({status}): {e:?}");
        let f = failure(&e);
        assert_eq!(f.info.as_ref().unwrap()["exitStatus"], status, "{f:?}");
        assert!(
            f.message
                .contains(&format!("exited with status {status} instead of returning")),
            "{}",
            f.message
        );
        assert!(
            f.message.contains(&format!("hostile exit {status}")),
            "stderr quoted: {}",
            f.message
        );
    }
    // WASI preview 2's `exit` carries success or failure only: any non-zero
    // status arrives as 1.
    let e = run("exit", json!({"status": 42}), &plain(), GENEROUS).await;
    assert_eq!(code(&e), "guest_exit");
    assert_ne!(failure(&e).info.unwrap()["exitStatus"], 0);
    still_serving().await;
}

#[tokio::test]
async fn abort_is_a_trap_of_the_guest_not_a_host_error() {
    let e = run("abort", json!({}), &plain(), GENEROUS).await;
    assert_eq!(code(&e), "trap", "{e:?}");
    let msg = failure(&e).message;
    assert!(msg.contains("hostile abort"), "stderr quoted: {msg}");
    still_serving().await;
}

/// Two grants: `ro` read-only at `/ro`, `rw` read-write at `/workspace`.
fn two_grants(ro: &Workspace, rw: &Workspace) -> ToolPolicy {
    build(allow_in(rw.path(), FsMode::ReadWrite).grant(ro.path(), "/ro", FsMode::ReadOnly))
        .component()
}

#[tokio::test]
async fn links_and_renames_cannot_carry_files_across_grants() {
    let ro = Workspace::new(&[("secret.txt", "read only")]);
    let rw = Workspace::new(&[("mine.txt", "mine")]);
    let policy = two_grants(&ro, &rw);
    for tool in ["hard_link", "rename"] {
        // Out of the read-only grant into the read-write one (a hard link
        // there would make the read-only file writable).
        let e = run(
            tool,
            json!({"from": "/ro/secret.txt", "to": "/workspace/stolen.txt"}),
            &policy,
            GENEROUS,
        )
        .await;
        assert_eq!(code(&e), "io_error", "{tool}: {e:?}");
        assert!(!rw.file("stolen.txt").exists(), "{tool}");
        assert_eq!(ro.read("secret.txt"), "read only", "{tool}");
        // From the read-write grant into the read-only one.
        let e = run(
            tool,
            json!({"from": "/workspace/mine.txt", "to": "/ro/mine.txt"}),
            &policy,
            GENEROUS,
        )
        .await;
        assert_eq!(code(&e), "io_error", "{tool}: {e:?}");
        assert!(!ro.file("mine.txt").exists(), "{tool}");
        assert_eq!(rw.read("mine.txt"), "mine", "{tool}");
    }
    // The tools do work inside one read-write grant (the refusals above are
    // the grants', not broken tools).
    let e = run(
        "hard_link",
        json!({"from": "mine.txt", "to": "linked.txt"}),
        &policy,
        GENEROUS,
    )
    .await;
    assert!(e.outcome.is_ok(), "{e:?}");
    assert_eq!(rw.read("linked.txt"), "mine");
    let e = run(
        "rename",
        json!({"from": "linked.txt", "to": "renamed.txt"}),
        &policy,
        GENEROUS,
    )
    .await;
    assert!(e.outcome.is_ok(), "{e:?}");
    assert_eq!(rw.read("renamed.txt"), "mine");
    still_serving().await;
}

#[tokio::test]
async fn a_read_only_file_cannot_be_truncated_or_opened_for_writing() {
    let ro = Workspace::new(&[("keep.txt", "keep me")]);
    let rw = Workspace::new(&[]);
    let policy = two_grants(&ro, &rw);
    let e = run(
        "truncate",
        json!({"path": "/ro/keep.txt"}),
        &policy,
        GENEROUS,
    )
    .await;
    assert_eq!(code(&e), "io_error", "{e:?}");
    for path in ["keep.txt", "new.txt"] {
        let e = run(
            "raw_open",
            json!({"path": path, "write": true}),
            &build(allow_in(ro.path(), FsMode::ReadOnly)).component(),
            GENEROUS,
        )
        .await;
        assert_eq!(code(&e), "io_error", "{path}: {e:?}");
    }
    assert_eq!(ro.read("keep.txt"), "keep me");
    assert!(!ro.file("new.txt").exists());
    // The same truncation in the read-write grant works.
    std::fs::write(rw.file("t.txt"), "12345").unwrap();
    let e = run("truncate", json!({"path": "t.txt"}), &policy, GENEROUS).await;
    assert!(e.outcome.is_ok(), "{e:?}");
    assert_eq!(rw.read("t.txt"), "");
    still_serving().await;
}

#[tokio::test]
async fn proc_dev_and_absolute_paths_outside_every_grant_are_unreachable() {
    let outside = Workspace::new(&[("secret.txt", "top secret")]);
    let ws = Workspace::new(&[("inside.txt", "hello")]);
    let rw = build(allow_in(ws.path(), FsMode::ReadWrite)).component();
    let host_secret = outside.file("secret.txt").display().to_string();
    for path in [
        "/proc/self/environ",
        "/proc/self/maps",
        "/proc/1/cmdline",
        "/dev/zero",
        "/dev/null",
        "/dev/urandom",
        "/etc/passwd",
        "/",
        host_secret.as_str(),
    ] {
        let e = run("read_file", json!({"path": path}), &rw, GENEROUS).await;
        assert_eq!(code(&e), "io_error", "{path} must not be readable: {e:?}");
    }
    for path in ["/", "/proc", "/dev", "/etc"] {
        let e = run("list_dir", json!({"path": path}), &rw, GENEROUS).await;
        assert_eq!(code(&e), "io_error", "{path} must not be listable: {e:?}");
    }
    // Raw open-at on the preopen with absolute and climbing paths, for
    // reading and for writing.
    let climb = format!(
        "../{}/secret.txt",
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    for path in [
        host_secret.as_str(),
        climb.as_str(),
        "/etc/passwd",
        "/proc/self/environ",
    ] {
        for write in [false, true] {
            let e = run(
                "raw_open",
                json!({"path": path, "write": write}),
                &rw,
                GENEROUS,
            )
            .await;
            assert_eq!(code(&e), "io_error", "{path} (write {write}): {e:?}");
        }
    }
    assert_eq!(outside.read("secret.txt"), "top secret");
    // Writing to absolute host paths creates nothing there.
    let planted = outside.file("planted.txt").display().to_string();
    let e = run(
        "write_file",
        json!({"path": planted, "content": "x"}),
        &rw,
        GENEROUS,
    )
    .await;
    assert_eq!(code(&e), "io_error", "{e:?}");
    assert!(!outside.file("planted.txt").exists());
    // Under no grant at all, even the working directory is nothing.
    let e = run("list_dir", json!({"path": "."}), &plain(), GENEROUS).await;
    assert_eq!(code(&e), "io_error", "{e:?}");
    still_serving().await;
}

#[tokio::test]
async fn a_path_with_nul_is_refused_by_guest_runtime_and_host() {
    let ws = Workspace::new(&[("a.txt", "alpha")]);
    let rw = build(allow_in(ws.path(), FsMode::ReadWrite)).component();
    // Raw WASI hands the NUL to the host, which must refuse it, not panic.
    for write in [false, true] {
        let e = run(
            "raw_open",
            json!({"path": "a.txt\u{0}../../etc/passwd", "write": write}),
            &rw,
            GENEROUS,
        )
        .await;
        assert_eq!(code(&e), "io_error", "write {write}: {e:?}");
    }
    let e = run(
        "read_file",
        json!({"path": "a.txt\u{0}.bak"}),
        &rw,
        GENEROUS,
    )
    .await;
    assert_eq!(code(&e), "io_error", "{e:?}");
    assert_eq!(ws.read("a.txt"), "alpha");
    assert_eq!(
        std::fs::read_dir(ws.path()).unwrap().count(),
        1,
        "nothing created"
    );
    // The host's own path stage refuses it before anything runs.
    let policy = build(allow_in(ws.path(), FsMode::ReadWrite));
    let (p, _regs) = hostile_pipeline(&policy, &[toolhost_tests::read().await]).await;
    let r = call(&p, "read", json!({"path": "a.txt\u{0}../../etc/passwd"})).await;
    assert!(r.failed_with(FailureCode::PathDenied), "{r:?}");
    assert!(r.text().contains("NUL"), "{}", r.text());
    still_serving().await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_made_by_the_guest_is_followed_by_neither_guest_nor_host() {
    use toolhost_contract::PathAccess;
    use toolhost_pipeline::baseline::Baselines;
    use toolhost_pipeline::paths::ResolvedPath;
    let outside = Workspace::new(&[("secret.txt", "top secret")]);
    let ws = Workspace::new(&[("a.txt", "top secret")]);
    let rw_policy = build(allow_in(ws.path(), FsMode::ReadWrite));
    let rw = rw_policy.component();
    let out_name = outside.path().file_name().unwrap().to_str().unwrap();
    // An absolute target is refused at creation (cap-std: a link inside a
    // preopen may not name the host's root).
    let abs = outside.file("secret.txt").display().to_string();
    let e = run(
        "symlink",
        json!({"target": abs, "link": "abs-link"}),
        &rw,
        GENEROUS,
    )
    .await;
    assert_eq!(code(&e), "io_error", "{e:?}");
    assert!(failure(&e).message.contains("not-permitted"), "{e:?}");
    assert!(std::fs::symlink_metadata(ws.file("abs-link")).is_err());
    // Relative targets that climb out are created, and then never followed.
    let links = [
        ("rel-link", format!("../{out_name}/secret.txt")),
        ("dir-link", format!("../{out_name}")),
        ("dangling", format!("../{out_name}/planted.txt")),
    ];
    for (link, target) in &links {
        let e = run(
            "symlink",
            json!({"target": target, "link": link}),
            &rw,
            GENEROUS,
        )
        .await;
        assert!(e.outcome.is_ok(), "creating {link} → {target}: {e:?}");
        assert!(
            std::fs::symlink_metadata(ws.file(link))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
    // The guest cannot read or write through them.
    for (link, _) in &links {
        for path in [format!("/workspace/{link}"), format!("{link}/secret.txt")] {
            let e = run("read_file", json!({"path": path}), &rw, GENEROUS).await;
            assert_eq!(code(&e), "io_error", "{path}: {e:?}");
            let e = run(
                "raw_open",
                json!({"path": path, "write": false}),
                &rw,
                GENEROUS,
            )
            .await;
            assert_eq!(code(&e), "io_error", "{path}: {e:?}");
        }
        let e = run(
            "write_file",
            json!({"path": link, "content": "pwned"}),
            &rw,
            GENEROUS,
        )
        .await;
        assert_eq!(code(&e), "io_error", "{link}: {e:?}");
    }
    let e = run("list_dir", json!({"path": "dir-link"}), &rw, GENEROUS).await;
    assert_eq!(code(&e), "io_error", "{e:?}");
    assert_eq!(outside.read("secret.txt"), "top secret");
    assert!(!outside.file("planted.txt").exists());

    // The host's own path stage does not follow them either: reading is
    // refused, and so is creating through the dangling one.
    let (p, _regs) = hostile_pipeline(
        &rw_policy,
        &[toolhost_tests::read().await, toolhost_tests::write().await],
    )
    .await;
    for (link, _) in &links {
        let r = call(&p, "read", json!({"path": link})).await;
        assert!(r.failed_with(FailureCode::PathDenied), "read {link}: {r:?}");
        assert!(!r.text().contains("top secret"));
    }
    let r = call(&p, "read", json!({"path": "dir-link/secret.txt"})).await;
    assert!(r.failed_with(FailureCode::PathDenied), "{r:?}");
    let r = call(
        &p,
        "write",
        json!({"path": "dir-link/new.txt", "content": "x"}),
    )
    .await;
    assert!(r.failed_with(FailureCode::PathDenied), "{r:?}");
    let r = call(&p, "write", json!({"path": "dangling", "content": "x"})).await;
    assert!(r.is_error(), "{r:?}");
    assert!(!outside.file("planted.txt").exists());
    assert!(!outside.file("new.txt").exists());

    // Baselines: a file read by the session, then swapped by the guest for a
    // link to an outside file with the very same content, is stale: the
    // host hashes what is inside the grant, never the link's target.
    let baselines = Baselines::default();
    let grant = rw.sandbox.fs[0].clone();
    let resolved = |rel: &str| ResolvedPath {
        pointer: "/path".into(),
        guest: format!("/workspace/{rel}"),
        grant: grant.clone(),
        relative: rel.into(),
        access: PathAccess::Overwrite,
        exists: true,
    };
    baselines.record(&[resolved("a.txt")]);
    assert_eq!(baselines.check(&[resolved("a.txt")]), Ok(()));
    std::fs::remove_file(ws.file("a.txt")).unwrap();
    let e = run(
        "symlink",
        json!({"target": format!("../{out_name}/secret.txt"), "link": "a.txt"}),
        &rw,
        GENEROUS,
    )
    .await;
    assert!(e.outcome.is_ok(), "{e:?}");
    let stale = baselines.check(&[resolved("a.txt")]).unwrap_err();
    assert_eq!(stale.code.as_str(), "stale_baseline");
    // Recording through a link keeps no baseline at all.
    baselines.record(&[resolved("rel-link")]);
    let never = baselines.check(&[resolved("rel-link")]).unwrap_err();
    assert!(never.message.contains("has not been read"), "{never:?}");
    still_serving().await;
}

#[tokio::test]
async fn raw_sockets_and_name_lookup_stay_off_with_or_without_a_network_grant() {
    let net = toolhost_tests::hostile_net().await;
    // Raw sockets are linked inert under any policy (a componentize-py
    // component's libc imports them): every attempt fails in the guest,
    // and nothing reaches the host, with a network grant (HTTP through the
    // allow-list) or without one.
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let none = plain();
    assert_eq!(net.import_denial(&none.sandbox), None);
    let granted = build(PolicyBuilder::new().network("127.0.0.1:*")).component();
    assert_eq!(net.import_denial(&granted.sandbox), None);
    for (tool, args) in [
        (
            "tcp_connect",
            json!({"addr": tcp.local_addr().unwrap().to_string()}),
        ),
        (
            "udp_send",
            json!({"addr": udp.local_addr().unwrap().to_string()}),
        ),
        ("dns_lookup", json!({"name": "localhost"})),
    ] {
        let args = args.to_string();
        for policy in [&none, &granted] {
            let mut inv = Invocation::new(tool, &args, policy);
            inv.budget = GENEROUS;
            let e = net.execute(inv).await;
            assert_eq!(code(&e), "io_error", "{tool}: {e:?}");
        }
    }
    assert_eq!(
        tcp.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "no TCP connection reached the host"
    );
    let mut buf = [0u8; 16];
    assert_eq!(
        udp.recv_from(&mut buf).map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "no datagram reached the host"
    );
    still_serving().await;
}

#[tokio::test]
async fn invalid_deep_and_huge_values_are_refused_or_bounded() {
    let policy = build(
        PolicyBuilder::new()
            .decision(toolhost_policy::Decision::Allow)
            .limits(|l| l.memory_bytes = 512 << 20),
    );
    let (p, _regs) = hostile_pipeline(&policy, &[]).await;
    let r = call(&p, "invalid_json", json!({})).await;
    assert!(r.failed_with(FailureCode::OutputInvalid), "{r:?}");
    assert!(r.text().contains("not JSON"), "{}", r.text());
    // 100k levels: refused by the parser's depth limit, no host stack overflow.
    let r = call(&p, "deep_value", json!({"depth": 100_000})).await;
    assert!(r.failed_with(FailureCode::OutputInvalid), "{r:?}");
    assert!(r.text().contains("recursion limit"), "{}", r.text());
    // 40 MiB: over the default value bound (16 MiB), so no program is
    // handed it either; the failure names both sizes.
    let r = call(&p, "huge_value", json!({"mb": 40})).await;
    assert!(r.failed_with(FailureCode::ValueTooLarge), "{r:?}");
    let ToolResult::Failure { error, .. } = &r else {
        unreachable!()
    };
    let info = error.info.as_ref().expect("sizes in info");
    assert!(info["valueBytes"].as_u64().unwrap() >= 40 << 20, "{info}");
    assert_eq!(
        info["maxValueBytes"],
        toolhost_policy::DEFAULT_MAX_VALUE_BYTES,
        "{info}"
    );
    assert!(r.text().contains("max_value_bytes"), "{}", r.text());
    // And the pipeline goes on.
    let r = call(&p, "counter", json!({})).await;
    assert_eq!(r.value().unwrap()["count"], 1);

    // Under a policy that allows it, the value is kept whole and what the
    // model reads is cut to the result budget.
    let policy = build(
        PolicyBuilder::new()
            .decision(toolhost_policy::Decision::Allow)
            .limits(|l| {
                l.memory_bytes = 512 << 20;
                l.max_value_bytes = 64 << 20;
            }),
    );
    let (p, _regs) = hostile_pipeline(&policy, &[]).await;
    let r = call(&p, "huge_value", json!({"mb": 40})).await;
    assert!(!r.is_error(), "{}", r.text());
    let budget = toolhost_policy::DEFAULT_MAX_RESULT_BYTES as usize;
    let read: usize = r.content().iter().map(|b| b.byte_len()).sum();
    assert!(read <= budget + 1024, "the model reads {read} bytes");
    let total = r.meta().extra["truncated"]["totalBytes"].as_u64().unwrap();
    assert!(total >= 40 << 20, "{total}");
}

#[tokio::test]
async fn a_trap_a_spin_and_a_flood_inside_render_are_contained() {
    let policy = build(
        PolicyBuilder::new()
            .decision(toolhost_policy::Decision::Allow)
            .limits(|l| {
                l.fuel = 300_000_000;
                l.timeout_ms = 3_000;
                l.memory_bytes = 256 << 20;
            }),
    );
    let (p, _regs) = hostile_pipeline(&policy, &[]).await;
    let r = call(&p, "render_fail", json!({})).await;
    assert!(r.failed_with(FailureCode::RenderFailed), "{r:?}");
    assert!(r.text().contains("[trap]"), "{}", r.text());
    let t = Instant::now();
    let r = call(&p, "render_spin", json!({})).await;
    assert!(r.failed_with(FailureCode::RenderFailed), "{r:?}");
    assert!(
        r.text().contains("[fuel_exhausted]") || r.text().contains("[timeout]"),
        "{}",
        r.text()
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let r = call(&p, "render_huge", json!({"mb": 20})).await;
    assert!(!r.is_error(), "{}", r.text());
    let read: usize = r.content().iter().map(|b| b.byte_len()).sum();
    let budget = toolhost_policy::DEFAULT_MAX_RESULT_BYTES as usize;
    assert!(read <= budget + 1024, "the model reads {read} bytes");
    let r = call(&p, "counter", json!({})).await;
    assert_eq!(r.value().unwrap()["count"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_loop_does_not_starve_concurrent_calls() {
    // More spinning guests than worker threads, each never calling the host,
    // and honest calls started while they spin.
    let spin_deadline = Duration::from_secs(8);
    hostile().await; // loaded before anything is timed
    let spinners: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn(async move {
                let t = Instant::now();
                let e = run(
                    "spin",
                    json!({}),
                    &plain(),
                    Budget {
                        fuel: u64::MAX,
                        deadline: spin_deadline,
                    },
                )
                .await;
                (code(&e), t.elapsed())
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let honest: Vec<_> = (0..16)
        .map(|_| {
            tokio::spawn(async move {
                let t = Instant::now();
                let e = run("counter", json!({}), &plain(), GENEROUS).await;
                (value(&e)["count"].clone(), t.elapsed())
            })
        })
        .collect();
    let mut slowest = Duration::ZERO;
    for h in honest {
        let (count, took) = h.await.unwrap();
        assert_eq!(count, 1);
        slowest = slowest.max(took);
    }
    eprintln!("slowest of 16 honest calls next to 4 spinning guests: {slowest:?}");
    // Finished while the spinners still spin (a generous bound, not a timing).
    assert!(
        slowest < spin_deadline / 2,
        "an honest call took {slowest:?} next to spinning guests"
    );
    for h in spinners {
        let (code, took) = h.await.unwrap();
        assert_eq!(code, "timeout");
        eprintln!("a spinner with an {spin_deadline:?} deadline ended after {took:?}");
        assert!(took < spin_deadline + Duration::from_secs(2), "{took:?}");
    }
}

/// How late a spinning call may end after its deadline: the deadline is
/// checked on the wall clock at every epoch tick (5 ms), where the guest
/// also yields, so other calls cannot starve it of the check; the rest is
/// scheduling on 2 busy cores.
const DEADLINE_MARGIN: Duration = Duration::from_millis(250);
/// A guest blocked in a host call runs no wasm, so no epoch check: a tokio
/// timer stops it, `BACKSTOP` after its deadline.
const BACKSTOP: Duration = Duration::from_millis(200);
/// How late that timer may fire on 2 workers saturated with spinning guests:
/// tokio looks at its timers every 61 task polls, and one poll of a spinning
/// guest lasts up to an epoch tick (5 ms), so about 300 ms (measured: up to
/// 330 ms in this test).
const BACKSTOP_MARGIN: Duration = Duration::from_millis(750);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_calls_mixing_good_and_hostile_tools_all_get_results() {
    let policy = build(PolicyBuilder::new().limits(|l| l.memory_bytes = 16 << 20)).component();
    let budget = Budget {
        fuel: 20_000_000,
        deadline: Duration::from_secs(60),
    };
    // Calls that only their deadline stops: fuel for minutes of spinning.
    let deadline = Duration::from_millis(300);
    let on_time = Budget {
        fuel: u64::MAX / 2,
        deadline,
    };
    let mix: [(&str, Value, &str); 12] = [
        ("spin", json!({}), "fuel_exhausted"),
        ("memory_bomb", json!({}), "memory_limit"),
        ("panic", json!({}), "trap"),
        ("exit", json!({"status": 1}), "guest_exit"),
        ("fail", json!({}), "boom"),
        ("counter", json!({}), "count"),
        ("echo", json!({"i": 0}), "echo"),
        ("spin", json!({}), "timeout"),
        ("counter", json!({}), "count"),
        ("slow_sleep", json!({"ms": 60_000}), "timeout"),
        ("echo", json!({"i": 0}), "echo"),
        ("counter", json!({}), "count"),
    ];
    let t = Instant::now();
    let calls: Vec<_> = (0..1000)
        .map(|i| {
            let (tool, mut args, want) = mix[i % mix.len()].clone();
            if tool == "echo" {
                args["i"] = json!(i);
            }
            let budget = if want == "timeout" { on_time } else { budget };
            let policy = policy.clone();
            tokio::spawn(async move {
                let t = Instant::now();
                let e = run(tool, args.clone(), &policy, budget).await;
                (i, tool, args, want, e, t.elapsed())
            })
        })
        .collect();
    let mut took = Vec::new();
    let (mut spinning, mut blocked) = (Vec::new(), Vec::new());
    for h in calls {
        let (i, tool, args, want, e, elapsed) = h.await.unwrap();
        took.push(elapsed);
        match want {
            "count" => assert_eq!(value(&e)["count"], 1, "call {i}"),
            "echo" => assert_eq!(value(&e)["args"], args, "call {i}"),
            code_ => assert_eq!(code(&e), code_, "call {i} ({tool})"),
        }
        if want == "timeout" {
            // In the sandbox (the wait for a slot does not count).
            let (allowed, margin, class) = if tool == "slow_sleep" {
                (deadline + BACKSTOP, BACKSTOP_MARGIN, &mut blocked)
            } else {
                (deadline, DEADLINE_MARGIN, &mut spinning)
            };
            let over = e.report.elapsed.saturating_sub(allowed);
            assert!(
                over <= margin,
                "call {i} ({tool}) ended {over:?} after its {allowed:?}"
            );
            class.push(over);
        }
    }
    assert_eq!(took.len(), 1000);
    took.sort();
    spinning.sort();
    blocked.sort();
    eprintln!(
        "1000 mixed calls in {:?}: p50 {:?}, p99 {:?} (queueing included); {} spinning past \
         their deadline: overrun p50 {:?}, max {:?}; {} blocked in a host call: overrun past \
         the backstop p50 {:?}, max {:?}",
        t.elapsed(),
        took[500],
        took[990],
        spinning.len(),
        spinning[spinning.len() / 2],
        spinning[spinning.len() - 1],
        blocked.len(),
        blocked[blocked.len() / 2],
        blocked[blocked.len() - 1],
    );
    still_serving().await;
}

#[tokio::test]
async fn a_guest_filling_a_read_write_grant_is_stopped_by_the_write_budget() {
    let ws = Workspace::new(&[]);
    let policy = build(allow_in(ws.path(), FsMode::ReadWrite).limits(|l| {
        l.max_write_bytes = 1 << 20;
        l.max_files_created = 50;
    }))
    .component();
    // Within the budget: fine, and reported.
    let e = run(
        "fill",
        json!({"path": "ok.bin", "bytes": 512 << 10}),
        &policy,
        GENEROUS,
    )
    .await;
    assert_eq!(value(&e)["done"], 512 << 10);
    assert_eq!(e.report.bytes_written, 512 << 10);
    assert_eq!(e.report.entries_created, 1);
    // Bytes.
    let e = run(
        "fill",
        json!({"path": "big.bin", "bytes": 100u64 << 20}),
        &policy,
        GENEROUS,
    )
    .await;
    assert_eq!(code(&e), "write_budget_exceeded", "{e:?}");
    let msg = failure(&e).message;
    assert!(msg.contains("1048576 bytes"), "{msg}");
    // The failed call's writes were staged and are gone: nothing landed.
    assert!(!ws.file("big.bin").exists());
    // Growing a file with set-size counts as writing.
    let e = run(
        "grow",
        json!({"path": "sparse.bin", "size": 1u64 << 40}),
        &policy,
        GENEROUS,
    )
    .await;
    assert_eq!(code(&e), "write_budget_exceeded", "{e:?}");
    assert!(!ws.file("sparse.bin").exists());
    // Files and directories.
    for dirs in [false, true] {
        let sub = Workspace::new(&[]);
        let policy = build(allow_in(sub.path(), FsMode::ReadWrite).limits(|l| {
            l.max_files_created = 50;
        }))
        .component();
        let e = run(
            "spawn_files",
            json!({"count": 100_000, "dirs": dirs}),
            &policy,
            GENEROUS,
        )
        .await;
        assert_eq!(code(&e), "write_budget_exceeded", "dirs {dirs}: {e:?}");
        assert!(failure(&e).message.contains("50 files"), "{e:?}");
        let made = std::fs::read_dir(sub.path()).unwrap().count();
        assert_eq!(
            made, 0,
            "dirs {dirs}: the 50 made before the refusal were discarded"
        );
    }
    // The defaults bound a call that sets no limit.
    let sub = Workspace::new(&[]);
    let default = build(allow_in(sub.path(), FsMode::ReadWrite)).component();
    let e = run(
        "fill",
        json!({"path": "big.bin", "bytes": 100u64 << 20}),
        &default,
        GENEROUS,
    )
    .await;
    assert_eq!(code(&e), "write_budget_exceeded", "{e:?}");
    assert!(!sub.file("big.bin").exists());
    still_serving().await;
}

/// An HTTP server on 127.0.0.1 for the egress attacks: `/redirect` sends the
/// client to `to`, `/huge` answers 2 MiB. Counts the connections it accepts.
async fn http_server(to: String) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let to = to.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let resp = if head.starts_with("GET /redirect ") {
                    format!(
                        "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    )
                } else {
                    let body = "z".repeat(2 << 20);
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    (port, hits)
}

#[tokio::test]
async fn http_redirects_off_the_allow_list_and_oversized_responses_are_stopped_on_the_host() {
    // Not allowed: a second server, which must never see a connection.
    let (forbidden, forbidden_hits) = http_server(String::new()).await;
    let (allowed, _) = http_server(format!("http://127.0.0.1:{forbidden}/secret")).await;
    let policy = build(
        PolicyBuilder::new()
            .network(format!("127.0.0.1:{allowed}"))
            .limits(|l| l.max_http_response_bytes = 10_000),
    )
    .component();
    let fetch = toolhost_tests::fetch().await;
    let exec = |url: String| {
        let fetch = fetch.clone();
        let policy = policy.clone();
        async move {
            // Straight to the sandbox: no host pre-check of the URL argument,
            // so the egress hook on the host is what decides.
            let args = json!({"url": url, "max_bytes": 5_000_000}).to_string();
            let mut inv = Invocation::new("fetch", &args, &policy);
            inv.budget = GENEROUS;
            fetch.execute(inv).await
        }
    };
    let e = exec(format!("http://127.0.0.1:{allowed}/redirect")).await;
    assert_eq!(code(&e), "network_denied", "{e:?}");
    assert_eq!(
        e.report.network_denied,
        [format!("127.0.0.1:{forbidden}")],
        "the redirect target was refused on the host"
    );
    assert_eq!(
        forbidden_hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing reached the host that is not on the allow-list"
    );
    // 2 MiB against a 10,000-byte cap: the host stops reading at the cap.
    let e = exec(format!("http://127.0.0.1:{allowed}/huge")).await;
    assert_eq!(code(&e), "network_error", "{e:?}");
    let msg = failure(&e).message;
    assert!(
        msg.contains("response body size exceeds limit: 10000 bytes"),
        "{msg}"
    );
    still_serving().await;
}
