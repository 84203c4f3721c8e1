//! Deterministic replay: byte-identical sessions, cassettes played back
//! without running anything, and verify runs that point at the first
//! divergent field.
#![allow(clippy::unwrap_used, missing_docs)]

use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use toolhost_contract::{SessionEvent, ToolCall, ToolResult};
use toolhost_pipeline::replay::{Divergence, Field, Layer, Mode, Replay};
use toolhost_pipeline::{Pipeline, PipelineBuilder, Registration, Registry, Scope, SessionLog};
use toolhost_policy::FsMode;
use toolhost_runtime::LoadedComponent;
use toolhost_tests::{Workspace, allow_in, build};

fn workspace() -> Workspace {
    Workspace::new(&[
        ("a.txt", "alpha beta gamma\nsecond line\n"),
        ("b.txt", "one two three four\n"),
    ])
}

/// A registry serving `note` (from `component`) and the hostile tools,
/// reading `ws`.
async fn registry(
    ws: &Workspace,
    component: Arc<LoadedComponent>,
) -> (Registry, Vec<Registration>) {
    let policy = build(allow_in(ws.path(), FsMode::ReadOnly));
    let registry = Registry::new();
    let regs = vec![
        registry
            .register_component(Scope::Global, &component, &policy)
            .unwrap(),
        registry
            .register_component(Scope::Global, &toolhost_tests::hostile().await, &policy)
            .unwrap(),
    ];
    (registry, regs)
}

fn call(id: &str, tool: &str, args: Value) -> ToolCall {
    ToolCall::new(id, tool, args.to_string())
}

/// A session of sequential and concurrent calls: clocks and randomness
/// read on every call, a failure, a call that is not JSON, and a slow call
/// among concurrent ones (so they finish out of order).
async fn session(p: &Pipeline) -> Vec<ToolResult> {
    let mut out = Vec::new();
    for (i, path) in ["a.txt", "b.txt", "a.txt", "missing.txt"]
        .iter()
        .enumerate()
    {
        out.push(
            p.execute(
                call(&format!("s{i}"), "note", json!({"path": path})),
                Default::default(),
            )
            .await,
        );
    }
    out.push(
        p.execute(
            ToolCall::new("raw", "note", "{not json"),
            Default::default(),
        )
        .await,
    );
    out.push(
        p.execute(call("rnd", "random", json!({})), Default::default())
            .await,
    );
    let (a, b, c, d, e) = tokio::join!(
        p.execute(
            call("k0", "slow_sleep", json!({"ms": 150})),
            Default::default()
        ),
        p.execute(
            call("k1", "note", json!({"path": "a.txt"})),
            Default::default()
        ),
        p.execute(call("k2", "random", json!({})), Default::default()),
        p.execute(
            call("k3", "note", json!({"path": "b.txt"})),
            Default::default()
        ),
        p.execute(call("k4", "random", json!({})), Default::default()),
    );
    out.extend([a, b, c, d, e]);
    out
}

async fn deterministic_run(ws: &Workspace, log: &Path) -> Vec<ToolResult> {
    let (registry, _regs) = registry(ws, toolhost_tests::replay().await).await;
    let p = Pipeline::builder(registry)
        .deterministic(42)
        .session_log(Arc::new(SessionLog::open(log).unwrap()))
        .build();
    session(&p).await
}

#[tokio::test]
async fn a_deterministic_session_run_twice_leaves_byte_identical_logs_and_results() {
    let ws = workspace();
    let logs = tempfile::tempdir().unwrap();
    let (first, second) = (logs.path().join("1.jsonl"), logs.path().join("2.jsonl"));
    let r1 = deterministic_run(&ws, &first).await;
    let r2 = deterministic_run(&ws, &second).await;
    let (l1, l2) = (
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap(),
    );
    assert_eq!(
        String::from_utf8_lossy(&l1),
        String::from_utf8_lossy(&l2),
        "the two session logs differ"
    );
    assert_eq!(
        serde_json::to_string(&r1).unwrap(),
        serde_json::to_string(&r2).unwrap()
    );

    // What the guest saw was virtual, and still moved.
    let v = r1[0].value().expect("note succeeded");
    let wall = v["wallNs"].as_u64().unwrap();
    assert!(wall >= 1_767_225_600_000_000_000, "virtual epoch: {wall}");
    let ticks: Vec<u64> = serde_json::from_value(v["ticks"].clone()).unwrap();
    assert!(
        ticks.windows(2).all(|w| w[0] < w[1]),
        "time moves: {ticks:?}"
    );
    // Different positions see different randomness; every call does.
    let nonces: Vec<&Value> = r1
        .iter()
        .filter_map(|r| r.value())
        .map(|v| &v["nonce"])
        .collect();
    assert_eq!(
        r1[0].value().unwrap()["nonce"],
        r2[0].value().unwrap()["nonce"]
    );
    assert_ne!(
        r1[0].value().unwrap()["nonce"],
        r1[2].value().unwrap()["nonce"]
    );
    assert!(nonces.len() >= 4);
    assert_eq!(r1[3].code(), Some("not_found"), "{:?}", r1[3]);
    assert_eq!(r1[4].code(), Some("invalid_arguments"));

    // Result events are in position order although the slow call at
    // position 7 finished last, and the tokens are positional.
    let events = toolhost_pipeline::read_log(&first).unwrap().events;
    let results: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ToolResult(r) => Some(r.call_id.as_str()),
            SessionEvent::ToolCall(_) => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            "s0", "s1", "s2", "s3", "raw", "rnd", "k0", "k1", "k2", "k3", "k4"
        ]
    );
    let SessionEvent::ToolCall(first_call) = &events[0] else {
        panic!("the log opens with a call")
    };
    assert_eq!(first_call.token, "exec-2a-000001");
    assert_eq!(r1[6].meta().timings, r2[6].meta().timings);
}

/// Records `session` into `cassette` with `component` serving `note`.
async fn record(ws: &Workspace, cassette: &Path) -> Vec<ToolResult> {
    let (registry, _regs) = registry(ws, toolhost_tests::replay().await).await;
    let replay = Replay::open(cassette, Mode::Record, Layer::Cassette).unwrap();
    let p = Pipeline::builder(registry)
        .deterministic(9)
        .cassette(replay.clone())
        .build();
    let out = session(&p).await;
    replay.assert_no_divergence();
    out
}

async fn replayed(
    ws: &Workspace,
    cassette: &Path,
    layer: Layer,
    component: Arc<LoadedComponent>,
) -> (Arc<Replay>, Pipeline, Vec<Registration>) {
    let (registry, regs) = registry(ws, component).await;
    let replay = Replay::open(cassette, Mode::Replay, layer).unwrap();
    let p: PipelineBuilder = Pipeline::builder(registry).cassette(replay.clone());
    (replay, p.build(), regs)
}

/// A session recorded in a fresh workspace, opened again for replay.
struct Replayed {
    _ws: Workspace,
    _dir: tempfile::TempDir,
    replay: Arc<Replay>,
    p: Pipeline,
    _regs: Vec<Registration>,
}

async fn record_then_replay(layer: Layer, component: Arc<LoadedComponent>) -> Replayed {
    let ws = workspace();
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    record(&ws, &cassette).await;
    let (replay, p, regs) = replayed(&ws, &cassette, layer, component).await;
    Replayed {
        _ws: ws,
        _dir: dir,
        replay,
        p,
        _regs: regs,
    }
}

#[tokio::test]
async fn a_cassette_replays_every_result_without_running_anything() {
    let ws = workspace();
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("session.cassette.jsonl");
    let recorded = record(&ws, &cassette).await;
    assert_eq!(recorded.len(), 11);
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert_eq!(text.lines().count(), 12, "a header and one line per call");
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains(r#""format":"toolhost-cassette""#)
    );

    // The files are gone: nothing can run, and nothing needs to.
    let empty = Workspace::new(&[]);
    let (replay, p, _regs) = replayed(
        &empty,
        &cassette,
        Layer::Cassette,
        toolhost_tests::replay().await,
    )
    .await;
    let again = session(&p).await;
    assert_eq!(p.dispatches(), 0, "a cassette replay runs no component");
    replay.assert_no_divergence();
    assert_eq!(
        serde_json::to_string(&again).unwrap(),
        serde_json::to_string(&recorded).unwrap()
    );
}

#[tokio::test]
async fn verify_reruns_each_call_in_its_recorded_environment_and_agrees() {
    let Replayed {
        replay,
        p,
        _ws,
        _dir,
        _regs,
    } = record_then_replay(Layer::Verify, toolhost_tests::replay().await).await;
    session(&p).await;
    assert_eq!(
        p.dispatches(),
        10,
        "every call that reached dispatch when recorded ran again"
    );
    replay.assert_no_divergence();
}

#[tokio::test]
async fn verify_with_a_changed_guest_names_the_component_and_the_field() {
    let Replayed {
        replay,
        p,
        _ws,
        _dir,
        _regs,
    } = record_then_replay(Layer::Verify, toolhost_tests::replay_changed().await).await;
    p.execute(
        call("x", "note", json!({"path": "a.txt"})),
        Default::default(),
    )
    .await;
    let report = replay.report();
    let text = report.to_string();
    assert!(
        matches!(&report.divergences[0], Divergence::Component { tool, .. } if tool == "note"),
        "{text}"
    );
    let mismatch = report
        .divergences
        .iter()
        .find_map(|d| match d {
            Divergence::Mismatch {
                index,
                field,
                expected,
                actual,
                ..
            } => Some((*index, field.clone(), expected.clone(), actual.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no mismatch in: {text}"));
    assert_eq!(
        mismatch,
        (0, Field::Value("/words".into()), "5".into(), "6".into()),
        "{text}"
    );
    assert!(text.contains("call #0 (note#"), "{text}");
    assert!(text.contains("diverged at value /words"), "{text}");
    assert!(text.contains("recorded call(s) never made"), "{text}");
}

#[tokio::test]
async fn strict_replay_refuses_a_call_it_has_not_seen_and_names_the_nearest() {
    let Replayed {
        replay,
        p,
        _ws,
        _dir,
        _regs,
    } = record_then_replay(Layer::Cassette, toolhost_tests::replay().await).await;
    let r = p
        .execute(
            call("x", "note", json!({"path": "a.tx"})),
            Default::default(),
        )
        .await;
    assert_eq!(r.code(), Some("not_recorded"), "{r:?}");
    assert!(
        r.text().contains("nearest recorded call is #0"),
        "{}",
        r.text()
    );
    assert_eq!(p.dispatches(), 0);
    let err = replay.finish().unwrap_err();
    let Divergence::NotRecorded { candidates, .. } = &err.divergences[0] else {
        panic!("{err}")
    };
    assert_eq!(candidates[0].index, 0, "a.txt is closest to a.tx: {err}");
    assert!(err.to_string().contains(r#"{"path":"a.txt"}"#), "{err}");
    // Nothing recorded was used.
    assert!(
        matches!(err.divergences.last(), Some(Divergence::Unused { entries }) if entries.len() == 11)
    );
}

#[tokio::test]
async fn replay_or_record_plays_back_what_it_has_and_appends_the_rest() {
    let ws = workspace();
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    record(&ws, &cassette).await;
    let (registry, _regs) = registry(&ws, toolhost_tests::replay().await).await;
    let replay = Replay::open(&cassette, Mode::ReplayOrRecord, Layer::Cassette).unwrap();
    let p = Pipeline::builder(registry).cassette(replay.clone()).build();
    // Recorded: `note a.txt` (first occurrence) and `random` three times.
    let known = p
        .execute(
            call("s0", "note", json!({"path": "a.txt"})),
            Default::default(),
        )
        .await;
    assert!(!known.is_error(), "{known:?}");
    for i in 0..4 {
        let r = p
            .execute(
                call(&format!("r{i}"), "random", json!({})),
                Default::default(),
            )
            .await;
        assert!(!r.is_error(), "{r:?}");
    }
    assert_eq!(
        p.dispatches(),
        1,
        "only the fourth `random` was not recorded, and ran"
    );
    let lines = std::fs::read_to_string(&cassette).unwrap().lines().count();
    assert_eq!(lines, 13, "the new call was appended");
    let reread = Replay::open(&cassette, Mode::Replay, Layer::Cassette).unwrap();
    assert_eq!(reread.entries().last().unwrap().key.tool, "random");
}

#[test]
fn a_hand_edited_cassette_is_refused_naming_the_line() {
    use toolhost_pipeline::replay::cassette::Recording;
    let header = r#"{"type":"header","format":"toolhost-cassette","version":1,"seed":1,"components":{},"policies":{},"schemas":"x"}"#;
    let entry = r#"{"type":"call","index":0,"position":1,"key":{"tool":"t","args":"h","n":0},"arguments":{},"valueSha256":"0","contentSha256":"0","result":{"isError":false,"value":1,"content":[]}}"#;
    let err = Recording::parse(&format!("{header}\n{entry}\n"), Path::new("c.jsonl")).unwrap_err();
    assert!(err.to_string().contains("c.jsonl:2: the value"), "{err}");
    assert!(err.to_string().contains("valueSha256"), "{err}");
    let v2 = header.replace(r#""version":1"#, r#""version":2"#);
    let err = Recording::parse(&v2, Path::new("c.jsonl"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(":1: format version 2 is not supported"),
        "{err}"
    );
    let extra = header.replace(r#""seed":1"#, r#""seed":1,"sneaky":true"#);
    let err = Recording::parse(&extra, Path::new("c.jsonl"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("sneaky"), "{err}");
}

/// The README demo session, as checked in: its script, its starting
/// workspace and its cassette (`make cassettes` records it again).
mod demo {
    use super::*;
    use std::path::PathBuf;
    use toolhost::script::{copy_workspace, read_script};
    use toolhost::{Host, HostConfig, find_toolbox};
    use toolhost_pipeline::ApproveAll;

    fn root() -> PathBuf {
        PathBuf::from(toolhost_tests::guests::REPO_ROOT)
    }

    /// Replays the demo cassette in `layer` over a fresh copy of the
    /// workspace; returns the pipeline's dispatch count.
    async fn replay(layer: Layer) -> (Arc<Replay>, u64) {
        let demo = root().join("host/cli/examples/demo");
        let ws = tempfile::tempdir().unwrap();
        copy_workspace(&demo.join("workspace"), ws.path()).unwrap();
        let host = Host::new(HostConfig {
            cache_dir: Some(toolhost_tests::shared_cache()),
            ..HostConfig::default()
        })
        .unwrap();
        host.load(&find_toolbox(None, ws.path()).unwrap())
            .await
            .unwrap();
        let cassette = root().join("tests/cassettes/demo.cassette.jsonl");
        let replay = Replay::open(&cassette, Mode::Replay, layer).unwrap();
        let p = host
            .session()
            .cassette(replay.clone())
            .approver(Arc::new(ApproveAll))
            .build();
        for (i, c) in read_script(&demo.join("calls.jsonl"))
            .unwrap()
            .iter()
            .enumerate()
        {
            p.execute(
                ToolCall::new(
                    format!("call_{}", i + 1),
                    c.tool.clone(),
                    c.arguments_text(),
                ),
                Default::default(),
            )
            .await;
        }
        (replay, p.dispatches())
    }

    fn check(replay: &Replay) {
        if let Err(report) = replay.finish() {
            panic!(
                "{report}\n(if the tools changed on purpose, record the demo again: make cassettes)"
            );
        }
    }

    #[tokio::test]
    async fn the_demo_cassette_plays_back_without_running_a_tool() {
        let (replay, ran) = replay(Layer::Cassette).await;
        check(&replay);
        assert_eq!(ran, 0);
        assert_eq!(replay.entries().len(), 9);
    }

    #[tokio::test]
    async fn the_demo_cassette_verifies_by_running_every_tool_again() {
        let (replay, ran) = replay(Layer::Verify).await;
        check(&replay);
        assert!(ran >= 4, "read, edit, write and grep ran again ({ran})");
    }
}
