//! The contract pipeline end to end: order, authority, every failure path.
#![allow(clippy::unwrap_used, missing_docs)]

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::{
    Annotations, ContentBlock, FailureCode, SessionEvent, Stage, ToolCall, ToolDescriptor,
    ToolFailure, ToolResult,
};
use toolhost_pipeline::advertise::{self, Format};
use toolhost_pipeline::wrappers::{DispatchCtx, Next, Wrapper};
use toolhost_pipeline::{
    Approval, ApprovalRequest, ApproveAll, Approver, FrozenCall, Guard, GuardDenial, Invocation,
    ListenerError, Pipeline, PostAction, PostExecute, PreDecision, PreExecute, Registration,
    Registry, ResultListener, Scope, SessionLog, StageObserver, ToolBody, ToolSpec, read_log,
};
use toolhost_policy::{Decision, FsMode, PolicyBuilder, ToolPolicy};
use toolhost_runtime::{Execution, ExecutionReport};
use toolhost_tests::{Workspace, allow_in, build, rendered_by};

type Events = Arc<Mutex<Vec<String>>>;

fn push(ev: &Events, s: impl Into<String>) {
    ev.lock().unwrap().push(s.into());
}

/// A fake tool body: checks the session log holds the call before it runs.
struct FakeBody {
    events: Events,
    log: Option<std::path::PathBuf>,
}

#[async_trait::async_trait]
impl ToolBody for FakeBody {
    async fn execute(&self, input: Invocation<'_>) -> Execution {
        let on_disk = self.log.as_ref().is_some_and(|p| {
            read_log(p)
                .unwrap()
                .events
                .iter()
                .any(|e| matches!(e, SessionEvent::ToolCall(c) if c.tool == input.tool))
        });
        push(&self.events, format!("body(call_on_disk={on_disk})"));
        let args: Value = serde_json::from_str(input.arguments).unwrap();
        Execution::new(
            Ok(json!({"x": args["x"]}).to_string()),
            ExecutionReport::default(),
        )
    }
    async fn render(
        &self,
        _: &str,
        _: &str,
        value: &str,
        _: &ToolPolicy,
        _: CancellationToken,
    ) -> Result<Option<Vec<ContentBlock>>, ToolFailure> {
        push(&self.events, "render");
        Ok(Some(vec![ContentBlock::text(format!("value {value}"))]))
    }
}

fn fake_descriptor(name: &str) -> ToolDescriptor {
    ToolDescriptor::from_raw(
        name.into(),
        format!("the {name} tool"),
        r#"{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}"#,
        r#"{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}"#,
        Annotations::default(),
        vec![],
    )
    .unwrap()
}

fn fake(
    name: &str,
    decision: Decision,
    events: &Events,
    log: Option<std::path::PathBuf>,
) -> ToolSpec {
    ToolSpec {
        descriptor: fake_descriptor(name),
        policy: build(PolicyBuilder::new().decision(decision)).component(),
        body: Arc::new(FakeBody {
            events: events.clone(),
            log,
        }),
        source: "fake".into(),
        deferred: false,
        listed_with_handles: None,
    }
}

struct Recorder(Events);
impl StageObserver for Recorder {
    fn on_stage(&self, _: &FrozenCall, stage: Stage) {
        push(&self.0, format!("{stage:?}"));
    }
}
impl PreExecute for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn decide(
        &self,
        _: &FrozenCall,
        _: &ToolDescriptor,
        so_far: &PreDecision,
    ) -> Result<PreDecision, ListenerError> {
        push(&self.0, "pre-listener");
        Ok(so_far.clone())
    }
}
#[async_trait::async_trait]
impl Approver for Recorder {
    async fn approve(&self, r: &ApprovalRequest) -> Approval {
        push(&self.0, format!("approve({})", r.tool));
        Approval::Approved
    }
}
impl Guard for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn check(&self, call: &FrozenCall, _: &ToolDescriptor) -> Option<GuardDenial> {
        push(&self.0, "guard");
        (call.name() == "guarded").then(|| GuardDenial("guarded tools are off limits".into()))
    }
}
#[async_trait::async_trait]
impl Wrapper for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    async fn around(&self, ctx: &mut DispatchCtx<'_>, next: Next<'_>) -> Box<Execution> {
        push(&self.0, "wrapper-in");
        let out = next.run(ctx).await;
        push(&self.0, "wrapper-out");
        out
    }
}
impl PostExecute for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn after(&self, call: &FrozenCall, _: &ToolResult) -> Result<PostAction, ListenerError> {
        push(&self.0, "post-listener");
        match call.name() {
            "post_err" => Err(ListenerError("listener broke".into())),
            "post_panic" => panic!("listener panicked"),
            _ => Ok(PostAction::AddContext("checked".into())),
        }
    }
}
impl ResultListener for Recorder {
    fn on_result(&self, call: &FrozenCall, r: &ToolResult) {
        push(
            &self.0,
            format!("result({},{})", call.call_id(), r.code().unwrap_or("ok")),
        );
    }
}

#[tokio::test]
async fn stages_run_in_order_and_the_call_is_on_disk_before_the_body() {
    let events: Events = Arc::default();
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("session.jsonl");
    let registry = Registry::new();
    let _reg = registry
        .register(
            Scope::Global,
            vec![fake("echo", Decision::Ask, &events, Some(log_path.clone()))],
        )
        .unwrap();
    let rec = Arc::new(Recorder(events.clone()));
    let pipeline = Pipeline::builder(registry)
        .observer(rec.clone())
        .pre_execute(rec.clone())
        .approver(rec.clone())
        .guard(rec.clone())
        .wrapper(rec.clone())
        .post_execute(rec.clone())
        .on_result(rec.clone())
        .session_log(Arc::new(SessionLog::open(&log_path).unwrap()))
        .build();
    let r = pipeline
        .execute(
            ToolCall::new("c1", "echo", r#"{"x": 5}"#),
            CancellationToken::new(),
        )
        .await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.value(), Some(&json!({"x": 5})));
    assert_eq!(r.text(), r#"value {"x":5}"#);
    let got = events.lock().unwrap().clone();
    let want = [
        "Lookup",
        "Parse",
        "Schema",
        "Path",
        "Network",
        "Repeat",
        "PreExecute",
        "pre-listener",
        "Approval",
        "approve(echo)",
        "Guard",
        "guard",
        "Dispatch",
        "wrapper-in",
        "body(call_on_disk=true)",
        "wrapper-out",
        "Output",
        "Commit",
        "Render",
        "render",
        "PostExecute",
        "post-listener",
        "Bound",
        "result(c1,ok)",
    ];
    assert_eq!(got, want);
    let ToolResult::Success(s) = &r else { panic!() };
    assert_eq!(s.additional_context, ["checked"]);
    // The durable record pairs by call id and keeps a hash, not the value.
    let log = read_log(&log_path).unwrap();
    assert_eq!(log.events.len(), 2);
    assert!(log.events.iter().all(|e| e.call_id() == "c1"));
    let line = std::fs::read_to_string(&log_path).unwrap();
    assert!(line.contains("valueSha256"));
    assert!(!line.contains(r#""value""#));
}

#[tokio::test]
async fn every_failure_is_an_error_result_with_a_stable_code() {
    let events: Events = Arc::default();
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("session.jsonl");
    let ws = Workspace::new(&[("src/a.rs", "fn a() {}\n")]);
    let registry = Registry::new();
    let _fakes = registry
        .register(
            Scope::Global,
            vec![
                fake("probe", Decision::Allow, &events, None),
                fake("denied_tool", Decision::Deny, &events, None),
                fake("asking", Decision::Ask, &events, None),
                fake("guarded", Decision::Allow, &events, None),
                fake("post_err", Decision::Allow, &events, None),
                fake("post_panic", Decision::Allow, &events, None),
            ],
        )
        .unwrap();
    let hostile_policy = build(PolicyBuilder::new().decision(Decision::Allow).limits(|l| {
        l.fuel = 100_000_000;
        l.timeout_ms = 300;
    }));
    let _h = registry
        .register_component(
            Scope::Global,
            &toolhost_tests::hostile().await,
            &hostile_policy,
        )
        .unwrap();
    let ws_policy = build(allow_in(ws.path(), FsMode::ReadWrite));
    let _r = registry
        .register_component(Scope::Global, &toolhost_tests::read().await, &ws_policy)
        .unwrap();
    let _e = registry
        .register_component(Scope::Global, &toolhost_tests::edit().await, &ws_policy)
        .unwrap();
    // No network grant: fetch's wasi:http import is refused before it runs.
    let _f = registry
        .register_component(Scope::Global, &toolhost_tests::fetch().await, &ws_policy)
        .unwrap();
    let rec = Arc::new(Recorder(events.clone()));
    let pipeline = Pipeline::builder(registry)
        .guard(rec.clone())
        .post_execute(rec.clone())
        .on_result(rec.clone())
        .session_log(Arc::new(SessionLog::open(&log_path).unwrap()))
        .build();

    let cases: &[(&str, &str, &str, &str)] = &[
        ("deny", "denied_tool", r#"{"x":1}"#, "denied"),
        (
            "ask without approver",
            "asking",
            r#"{"x":1}"#,
            "approval_denied",
        ),
        ("guard denial", "guarded", r#"{"x":1}"#, "denied"),
        ("unknown tool", "no_such_tool", "{}", "unknown_tool"),
        (
            "unparseable args",
            "probe",
            r#"{"x": 1"#,
            "invalid_arguments",
        ),
        (
            "schema-invalid args",
            "probe",
            r#"{"x": "one"}"#,
            "invalid_arguments",
        ),
        (
            "path escape",
            "read",
            r#"{"path": "/workspace/../../etc/passwd"}"#,
            "path_denied",
        ),
        (
            // Refused at the network stage, before the runtime's import
            // check (tests/sandbox.rs covers `import_denied` itself).
            "URL off an empty allow-list",
            "fetch",
            r#"{"url": "https://example.com/"}"#,
            "network_denied",
        ),
        ("tool-reported failure", "fail", "{}", "boom"),
        ("repeated failure", "fail", "{}", "repeated_failure"),
        (
            "stale baseline",
            "edit",
            r#"{"path": "src/a.rs", "old_text": "a", "new_text": "b"}"#,
            "stale_baseline",
        ),
        ("trap", "panic", "{}", "trap"),
        ("timeout", "slow_sleep", r#"{"ms": 60000}"#, "timeout"),
        ("fuel", "spin", "{}", "fuel_exhausted"),
        (
            "output schema violation",
            "bad_output",
            "{}",
            "output_invalid",
        ),
        ("render failure", "render_fail", "{}", "render_failed"),
        (
            "failing post-execute listener",
            "post_err",
            r#"{"x":1}"#,
            "listener_failed",
        ),
        (
            "panicking post-execute listener",
            "post_panic",
            r#"{"x":1}"#,
            "listener_failed",
        ),
    ];
    for (i, (what, tool, args, code)) in cases.iter().enumerate() {
        let id = format!("call-{i}");
        let r = pipeline
            .execute(ToolCall::new(&id, *tool, *args), CancellationToken::new())
            .await;
        assert_eq!(r.code(), Some(*code), "{what}: {r:?}");
        assert!(
            r.text().contains(code),
            "{what}: the model reads the code: {}",
            r.text()
        );
        let denial = r
            .meta()
            .trace
            .denial()
            .unwrap_or_else(|| panic!("{what}: trace names the deciding stage"));
        assert!(!denial.by.is_empty());
        assert!(
            events
                .lock()
                .unwrap()
                .contains(&format!("result({id},{code})")),
            "{what}: reached tools/result"
        );
    }
    // Every call has its call and result events on disk, paired by id.
    let log = read_log(&log_path).unwrap();
    assert_eq!(log.events.len(), cases.len() * 2);
    for (i, (_, _, _, code)) in cases.iter().enumerate() {
        let id = format!("call-{i}");
        let result = log.events.iter().find_map(|e| match e {
            SessionEvent::ToolResult(r) if r.call_id == id => Some(r),
            _ => None,
        });
        assert_eq!(result.unwrap().code.as_deref(), Some(*code));
    }
    // ... and the process carries on.
    let ok = pipeline
        .execute(
            ToolCall::new("after", "probe", r#"{"x": 2}"#),
            CancellationToken::new(),
        )
        .await;
    assert!(!ok.is_error(), "{ok:?}");
}

/// A wrapper that tries to detach the caller's cancellation.
struct Detacher;
#[async_trait::async_trait]
impl Wrapper for Detacher {
    fn name(&self) -> &str {
        "detacher"
    }
    async fn around(&self, ctx: &mut DispatchCtx<'_>, next: Next<'_>) -> Box<Execution> {
        ctx.signal = CancellationToken::new();
        next.run(ctx).await
    }
}

#[tokio::test]
async fn a_wrapper_that_swaps_the_signal_is_still_cancelled_by_the_caller() {
    let registry = Registry::new();
    let policy = build(PolicyBuilder::new().decision(Decision::Allow).limits(|l| {
        l.fuel = u64::MAX;
        l.timeout_ms = 60_000;
    }));
    let _h = registry
        .register_component(Scope::Global, &toolhost_tests::hostile().await, &policy)
        .unwrap();
    let pipeline = Pipeline::builder(registry)
        .wrapper(Arc::new(Detacher))
        .build();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c2.cancel();
    });
    let t = Instant::now();
    let r = pipeline
        .execute(ToolCall::new("c", "spin", "{}"), cancel)
        .await;
    assert_eq!(r.code(), Some("cancelled"), "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn approval_sees_a_bounded_summary_with_the_change_shape() {
    struct Capture(Mutex<Vec<ApprovalRequest>>);
    #[async_trait::async_trait]
    impl Approver for Capture {
        async fn approve(&self, r: &ApprovalRequest) -> Approval {
            self.0.lock().unwrap().push(r.clone());
            Approval::Denied("not today".into())
        }
    }
    let ws = Workspace::new(&[("a.txt", "one\ntwo\nthree\n")]);
    let registry = Registry::new();
    let policy = build(allow_in(ws.path(), FsMode::ReadWrite).decision(Decision::Ask));
    let _r = registry
        .register_component(Scope::Global, &toolhost_tests::read().await, &policy)
        .unwrap();
    let _e = registry
        .register_component(Scope::Global, &toolhost_tests::edit().await, &policy)
        .unwrap();
    let capture = Arc::new(Capture(Mutex::default()));
    let pipeline = Pipeline::builder(registry)
        .approver(capture.clone())
        .build();
    let huge = "new line\n".repeat(10_000);
    // Invalid calls are rejected before anyone is asked.
    let r = pipeline
        .execute(
            ToolCall::new(
                "c0",
                "edit",
                r#"{"path":"/elsewhere/a.txt","old_text":"two","new_text":"x"}"#,
            ),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(r.code(), Some("path_denied"));
    assert!(
        capture.0.lock().unwrap().is_empty(),
        "nobody is asked to approve an invalid call"
    );
    let args = json!({"path": "a.txt", "old_text": "two\n", "new_text": huge}).to_string();
    let r = pipeline
        .execute(ToolCall::new("c1", "edit", args), CancellationToken::new())
        .await;
    assert_eq!(r.code(), Some("stale_baseline"));
    assert!(capture.0.lock().unwrap().is_empty());
    // Approval of the read is denied too: the user said no.
    let r = pipeline
        .execute(
            ToolCall::new("c2", "read", r#"{"path":"a.txt"}"#),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(r.code(), Some("approval_denied"));
    let reqs = capture.0.lock().unwrap().clone();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].summary, "read: read /workspace/a.txt");

    // With a fresh baseline the edit reaches approval, with a bounded summary.
    let registry2 = Registry::new();
    let allow_read =
        build(allow_in(ws.path(), FsMode::ReadWrite).tool("edit", |t| t.decision(Decision::Ask)));
    let _r2 = registry2
        .register_component(Scope::Global, &toolhost_tests::read().await, &allow_read)
        .unwrap();
    let _e2 = registry2
        .register_component(Scope::Global, &toolhost_tests::edit().await, &allow_read)
        .unwrap();
    let pipeline = Pipeline::builder(registry2)
        .approver(capture.clone())
        .build();
    let r = pipeline
        .execute(
            ToolCall::new("c3", "read", r#"{"path":"a.txt"}"#),
            CancellationToken::new(),
        )
        .await;
    assert!(!r.is_error(), "{r:?}");
    let args = json!({"path": "a.txt", "old_text": "two\n", "new_text": huge}).to_string();
    let r = pipeline
        .execute(ToolCall::new("c4", "edit", args), CancellationToken::new())
        .await;
    assert_eq!(r.code(), Some("approval_denied"));
    let last = capture.0.lock().unwrap().last().cloned().unwrap();
    assert!(last.summary.len() <= toolhost_pipeline::summary::MAX_SUMMARY_BYTES);
    assert_eq!(
        last.summary,
        "edit: patch /workspace/a.txt (+10000 −1 lines)"
    );
    assert_eq!(ws.read("a.txt"), "one\ntwo\nthree\n", "nothing changed");
}

#[tokio::test]
async fn fresh_baselines_guard_writes() {
    let ws = Workspace::new(&[("a.txt", "alpha\nbeta\n")]);
    let registry = Registry::new();
    let policy = build(allow_in(ws.path(), FsMode::ReadWrite));
    let mut regs = Vec::new();
    for c in [
        toolhost_tests::read().await,
        toolhost_tests::edit().await,
        toolhost_tests::write().await,
    ] {
        regs.push(
            registry
                .register_component(Scope::Global, &c, &policy)
                .unwrap(),
        );
    }
    let p = Pipeline::builder(registry).build();
    let call = |id: &str, tool: &str, args: Value| ToolCall::new(id, tool, args.to_string());
    let edit = json!({"path": "a.txt", "old_text": "beta", "new_text": "gamma"});
    let r = p
        .execute(call("1", "edit", edit.clone()), Default::default())
        .await;
    assert_eq!(r.code(), Some("stale_baseline"), "never read");
    let r = p
        .execute(
            call("2", "read", json!({"path": "a.txt"})),
            Default::default(),
        )
        .await;
    assert!(!r.is_error());
    let r = p.execute(call("3", "edit", edit), Default::default()).await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(ws.read("a.txt"), "alpha\ngamma\n");
    // The session's own write refreshes the baseline: a second edit is fine.
    let r = p
        .execute(
            call(
                "4",
                "edit",
                json!({"path": "a.txt", "old_text": "alpha", "new_text": "ALPHA"}),
            ),
            Default::default(),
        )
        .await;
    assert!(!r.is_error(), "{r:?}");
    // A change behind the session's back makes the baseline stale.
    std::fs::write(ws.file("a.txt"), "changed outside\n").unwrap();
    let r = p
        .execute(
            call("5", "write", json!({"path": "a.txt", "content": "clobber"})),
            Default::default(),
        )
        .await;
    assert_eq!(r.code(), Some("stale_baseline"));
    assert_eq!(ws.read("a.txt"), "changed outside\n");
    // Creating a new file needs no baseline.
    let r = p
        .execute(
            call(
                "6",
                "write",
                json!({"path": "new.txt", "content": "fresh\n"}),
            ),
            Default::default(),
        )
        .await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.value().unwrap()["created"], true);
}

#[tokio::test]
async fn big_results_are_bounded_and_kept_as_artifacts() {
    let body: String = (1..=2000).map(|i| format!("line number {i}\n")).collect();
    let ws = Workspace::new(&[("big.txt", &body)]);
    let registry = Registry::new();
    let policy = build(allow_in(ws.path(), FsMode::ReadOnly).limits(|l| l.max_result_bytes = 2000));
    let _r = registry
        .register_component(Scope::Global, &toolhost_tests::read().await, &policy)
        .unwrap();
    let p = Pipeline::builder(registry).build();
    let r = p
        .execute(
            ToolCall::new("big", "read", r#"{"path":"big.txt"}"#),
            Default::default(),
        )
        .await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.value().unwrap()["totalLines"], 2000, "the value is whole");
    let text = r.text();
    assert!(text.contains("[truncated: showing"), "{text}");
    let uri = r
        .content()
        .iter()
        .find_map(|b| match b {
            ContentBlock::ResourceLink { uri, .. } => Some(uri.clone()),
            _ => None,
        })
        .unwrap();
    let (page, total) = p.artifacts().page(&uri, 0, 100_000).unwrap();
    assert!(total > 2000);
    assert!(page.contains("line number 2000"));
}

#[tokio::test]
async fn projections_are_allow_listed_sorted_and_stable() {
    async fn serialize(order_reversed: bool) -> Vec<String> {
        let registry = Registry::new();
        let mut comps = [
            toolhost_tests::read().await,
            toolhost_tests::edit().await,
            toolhost_tests::fetch().await,
        ];
        if order_reversed {
            comps.reverse();
        }
        let policy = build(
            PolicyBuilder::new()
                .decision(Decision::Ask)
                .limits(|l| l.fuel = 12345),
        );
        let _regs: Vec<_> = comps
            .iter()
            .map(|c| {
                registry
                    .register_component(Scope::Global, c, &policy)
                    .unwrap()
            })
            .collect();
        [Format::Mcp, Format::OpenAi, Format::Anthropic]
            .into_iter()
            .map(|f| {
                let all = advertise::schemas(&registry, None, f);
                for tool in &all {
                    let keys: Vec<&String> = tool.as_object().unwrap().keys().collect();
                    for k in &keys {
                        assert!(
                            advertise::allowed_keys(f).contains(&k.as_str()),
                            "{f:?} leaks `{k}`"
                        );
                    }
                    if f == Format::OpenAi {
                        let inner: Vec<&String> =
                            tool["function"].as_object().unwrap().keys().collect();
                        assert_eq!(inner, ["name", "description", "parameters"]);
                    }
                }
                serde_json::to_string(&all).unwrap()
            })
            .collect()
    }
    let a = serialize(false).await;
    let b = serialize(true).await;
    assert_eq!(a, b, "byte-identical whatever the registration order");
    for s in &a {
        for secret in [
            "12345",
            "\"fuel\"",
            "timeout_ms",
            "\"decision\"",
            "\"limits\"",
            "tool_read.wasm",
            "\"source\"",
        ] {
            assert!(!s.contains(secret), "host-only `{secret}` leaked: {s}");
        }
    }
    let mcp: Value = serde_json::from_str(&a[0]).unwrap();
    let names: Vec<&str> = mcp
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["edit", "fetch", "read"]);
}

#[tokio::test]
async fn registrations_unregister_on_drop_and_agents_shadow_globals() {
    let events: Events = Arc::default();
    let registry = Registry::new();
    let global = registry
        .register(
            Scope::Global,
            vec![fake("echo", Decision::Allow, &events, None)],
        )
        .unwrap();
    let mut mine = fake("echo", Decision::Deny, &events, None);
    mine.source = "agent".into();
    let agent = registry
        .register(Scope::Agent("a1".into()), vec![mine])
        .unwrap();
    assert_eq!(
        registry.resolve("echo", Some("a1")).unwrap().source,
        "agent"
    );
    assert_eq!(registry.resolve("echo", Some("a2")).unwrap().source, "fake");
    assert_eq!(registry.resolve("echo", None).unwrap().source, "fake");
    assert!(
        registry
            .register(
                Scope::Global,
                vec![fake("echo", Decision::Allow, &events, None)]
            )
            .is_err()
    );
    let twice = vec![
        fake("twin", Decision::Allow, &events, None),
        fake("twin", Decision::Allow, &events, None),
    ];
    assert!(registry.register(Scope::Global, twice).is_err());
    assert!(registry.resolve("twin", None).is_none(), "all or nothing");
    drop(agent);
    assert_eq!(registry.resolve("echo", Some("a1")).unwrap().source, "fake");
    global.dispose();
    assert!(registry.resolve("echo", None).is_none());
    let p = Pipeline::builder(registry)
        .approver(Arc::new(ApproveAll))
        .build();
    let r = p
        .execute(ToolCall::new("c", "echo", r#"{"x":1}"#), Default::default())
        .await;
    assert_eq!(r.code(), Some("unknown_tool"));
}

#[test]
fn a_torn_log_tail_is_skipped_on_read_and_set_aside_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let good =
        r#"{"type":"tool/call","tsMs":1,"callId":"a","token":"t","tool":"read","arguments":"{}"}"#;
    std::fs::write(&path, format!("{good}\n{{\"type\":\"tool/res")).unwrap();
    let c = read_log(&path).unwrap();
    assert_eq!(c.events.len(), 1);
    assert_eq!(c.torn_tail.as_deref(), Some(r#"{"type":"tool/res"#));
    let _log = SessionLog::open(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{good}\n"));
    let side: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .collect();
    assert_eq!(side.len(), 2, "the torn fragment is kept beside the log");
    // A malformed line in the middle is an error naming it.
    std::fs::write(&path, format!("{good}\nnot json\n{good}\n")).unwrap();
    let err = read_log(&path).unwrap_err().to_string();
    assert!(err.contains(":2:"), "{err}");
}

#[test]
fn failure_codes_round_trip() {
    for c in FailureCode::ALL {
        let r = ToolResult::failure(*c, "x");
        let back: ToolResult = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.code(), Some(c.as_str()));
    }
}

#[tokio::test]
async fn replace_swaps_a_registration_atomically_and_keeps_the_old_on_error() {
    let events: Events = Arc::default();
    let registry = Registry::new();
    let other = registry
        .register(
            Scope::Global,
            vec![fake("other", Decision::Allow, &events, None)],
        )
        .unwrap();
    let old = registry
        .register(
            Scope::Global,
            vec![
                fake("a", Decision::Allow, &events, None),
                fake("b", Decision::Allow, &events, None),
            ],
        )
        .unwrap();
    // A clash with a tool `old` does not own: refused, nothing changed.
    let clash = registry.replace(
        &old,
        Scope::Global,
        vec![
            fake("a", Decision::Allow, &events, None),
            fake("other", Decision::Allow, &events, None),
        ],
    );
    assert!(clash.is_err());
    let names = |r: &Registry| -> Vec<String> {
        r.visible(None)
            .iter()
            .map(|t| t.descriptor.name.clone())
            .collect()
    };
    assert_eq!(names(&registry), ["a", "b", "other"]);
    // The swap: `b` goes, `c` comes, `a` is the new one.
    let mut a2 = fake("a", Decision::Deny, &events, None);
    a2.source = "v2".into();
    let new = registry
        .replace(
            &old,
            Scope::Global,
            vec![a2, fake("c", Decision::Allow, &events, None)],
        )
        .unwrap();
    assert_eq!(names(&registry), ["a", "c", "other"]);
    assert_eq!(registry.resolve("a", None).unwrap().source, "v2");
    // Dropping the old handle no longer removes anything.
    drop(old);
    assert_eq!(names(&registry), ["a", "c", "other"]);
    drop(new);
    assert_eq!(names(&registry), ["other"]);
    drop(other);
}

/// A URL-taking tool (like `fetch`): the network stage refuses a host that
/// is not on the allow-list before approval, so nobody is asked.
#[tokio::test]
async fn urls_off_the_allow_list_are_refused_before_approval() {
    let events: Events = Arc::default();
    let registry = Registry::new();
    let mut spec = fake("getter", Decision::Ask, &events, None);
    spec.descriptor = ToolDescriptor::from_raw(
        "getter".into(),
        "gets a URL".into(),
        r#"{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}"#,
        r#"{"type":"object"}"#,
        Annotations::default(),
        vec![],
    )
    .and_then(|d| d.with_v2(None, vec!["/url".into()]))
    .unwrap();
    spec.policy = build(
        PolicyBuilder::new()
            .decision(Decision::Ask)
            .network("docs.rs:443"),
    )
    .component();
    let _reg = registry.register(Scope::Global, vec![spec]).unwrap();
    let rec = Arc::new(Recorder(events.clone()));
    let pipeline = Pipeline::builder(registry).approver(rec).build();
    let r = pipeline
        .execute(
            ToolCall::new("n1", "getter", r#"{"url":"https://evil.example.net/x"}"#),
            CancellationToken::new(),
        )
        .await;
    assert!(r.failed_with(FailureCode::NetworkDenied), "{r:?}");
    assert!(r.text().contains("evil.example.net:443"), "{}", r.text());
    assert!(r.text().contains("docs.rs:443"), "{}", r.text());
    let d = r.meta().trace.denial().unwrap();
    assert_eq!((d.stage, d.by.as_ref()), (Stage::Network, "network"));
    assert!(
        !events
            .lock()
            .unwrap()
            .iter()
            .any(|e| e.starts_with("approve(")),
        "the approver was asked about a call the host refuses anyway"
    );
    // An allowed URL goes on to approval.
    let r = pipeline
        .execute(
            ToolCall::new("n2", "getter", r#"{"url":"https://docs.rs/serde"}"#),
            CancellationToken::new(),
        )
        .await;
    assert!(
        events
            .lock()
            .unwrap()
            .iter()
            .any(|e| e == "approve(getter)")
    );
    assert!(
        r.meta()
            .trace
            .entries
            .iter()
            .any(|e| e.stage == Stage::Network && e.by == "network"),
        "{r:?}"
    );
}

/// A pipeline of the `read` tool and the hostile guest, read-only in `ws`,
/// with `render` as given (keep the registrations: they hold the tools).
async fn read_and_hostile(
    ws: &Workspace,
    render: toolhost_policy::RenderMode,
) -> (Pipeline, [Registration; 2]) {
    let registry = Registry::new();
    let policy = build(allow_in(ws.path(), FsMode::ReadOnly).render(render));
    let r = registry
        .register_component(Scope::Global, &toolhost_tests::read().await, &policy)
        .unwrap();
    let h = registry
        .register_component(Scope::Global, &toolhost_tests::hostile().await, &policy)
        .unwrap();
    (Pipeline::builder(registry).build(), [r, h])
}

/// `render = "host"`: the tool's render is never called. A render that
/// would panic cannot fail the call, a tool with its own rendering (`read`
/// numbers its lines) gets the host's rendering of its value instead, and
/// the value is the one the other modes give.
#[tokio::test]
async fn host_render_never_calls_the_tools_render() {
    use toolhost_policy::RenderMode;
    let ws = Workspace::new(&[("a.txt", "one\ntwo\n")]);
    let (host, _keep) = read_and_hostile(&ws, RenderMode::Host).await;
    let (isolated, _keep_too) = read_and_hostile(&ws, RenderMode::Isolated).await;
    let call = |id| ToolCall::new(id, "read", r#"{"path":"a.txt"}"#);

    let broken = host
        .execute(
            ToolCall::new("b", "render_fail", "{}"),
            CancellationToken::new(),
        )
        .await;
    assert!(!broken.is_error(), "{broken:?}");
    assert_eq!(broken.text(), "{\n  \"ok\": true\n}");
    assert_eq!(rendered_by(&broken), Some("host"), "{broken:?}");

    let by_host = host.execute(call("h"), CancellationToken::new()).await;
    let by_tool = isolated.execute(call("i"), CancellationToken::new()).await;
    assert!(
        !by_host.is_error() && !by_tool.is_error(),
        "{by_host:?} {by_tool:?}"
    );
    assert_eq!(by_host.value(), by_tool.value(), "the same value");
    assert!(by_tool.text().contains("     1\tone"), "{}", by_tool.text());
    let value = by_host.value().expect("a value");
    assert_eq!(
        by_host.content(),
        toolhost_pipeline::pipeline::default_render(value)
    );
    assert_eq!(rendered_by(&by_tool), Some("render"));
}

/// `render = "same-instance"`: render runs right after execute in its
/// instance (one instantiation), with the same result as an isolated
/// render; a render that panics there is still `render_failed`, and the
/// execute value is not lost to it.
#[tokio::test]
async fn same_instance_render_matches_isolated_render() {
    use toolhost_policy::RenderMode;
    let ws = Workspace::new(&[("a.txt", "one\ntwo\n")]);
    let mut results = Vec::new();
    for mode in [RenderMode::Isolated, RenderMode::SameInstance] {
        let (p, _keep) = read_and_hostile(&ws, mode).await;
        let read = p
            .execute(
                ToolCall::new("r", "read", r#"{"path":"a.txt"}"#),
                CancellationToken::new(),
            )
            .await;
        assert!(!read.is_error(), "{mode:?}: {read:?}");
        let broken = p
            .execute(
                ToolCall::new("b", "render_fail", "{}"),
                CancellationToken::new(),
            )
            .await;
        assert!(
            broken.failed_with(FailureCode::RenderFailed),
            "{mode:?}: {broken:?}"
        );
        assert!(
            broken.text().contains("hostile render panic"),
            "{}",
            broken.text()
        );
        let d = broken.meta().trace.denial().unwrap();
        assert_eq!(d.stage, Stage::Render, "{mode:?}");
        results.push((read.content().to_vec(), read.value().cloned()));
    }
    assert_eq!(results[0].0, results[1].0, "the same content either way");
    assert_eq!(results[0].1, results[1].1, "the same value either way");
    assert!(
        results[0]
            .0
            .iter()
            .any(|b| matches!(b, ContentBlock::Text { text } if text.contains("     1\tone")))
    );
}
