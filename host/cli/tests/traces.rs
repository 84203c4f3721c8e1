//! Trace context (SEP-414) through `toolhost serve --http`: the MCP Python
//! SDK's `Client` under an OpenTelemetry SDK sends W3C trace context in
//! `_meta`; toolhost exports its spans by OTLP to a small receiver that
//! decodes them with the official protobuf definitions
//! (`tests/clients/otlp_receiver.py`, PyPI `opentelemetry-proto`); the test
//! joins the two and checks the parent chain from the client's span through
//! the script, its calls and the workers. Without an endpoint nothing is
//! exported, and the session log still names the client's trace.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::fleet::Replica;
use support::{clients_dir, free_port, install_clients, process, repo_root, scenario_facts};

/// The receiver, killed when dropped.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Receiver {
    fn start(dir: &Path) -> Receiver {
        Receiver::start_at(dir, free_port())
    }

    fn start_at(dir: &Path, port: u16) -> Receiver {
        let out = dir.join("spans.jsonl");
        let mut child = Command::new(python())
            .arg(repo_root().join("tests/clients/otlp_receiver.py"))
            .args(["--port", &port.to_string(), "--out"])
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "listening", "the receiver did not start");
        Receiver { child, port, out }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/v1/traces", self.port)
    }

    fn spans(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The spans of `trace`, once `done` holds of them (within 30 s).
    fn wait_for(&self, trace: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let spans: Vec<Value> = self
                .spans()
                .into_iter()
                .filter(|s| s["trace_id"] == trace)
                .collect();
            if done(&spans) {
                return spans;
            }
            assert!(Instant::now() < deadline, "spans of {trace}: {spans:#?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn python() -> PathBuf {
    install_clients();
    clients_dir().join("venv/bin/python")
}

/// A workspace whose `read` runs in worker processes, served in both
/// modes (its tools and `run_code`).
fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(ws.join("more.txt"), "one\n").unwrap();
    let read = std::fs::read_to_string(repo_root().join("policies/read.toml")).unwrap();
    std::fs::write(
        ws.join("read-walled.toml"),
        read.replacen("version = 1\n", "version = 1\nisolation = \"process\"\n", 1),
    )
    .unwrap();
    std::fs::write(
        ws.join("toolhost.toml"),
        "version = 1\nmode = \"both\"\n[[component]]\nsource = \"builtin:read\"\npolicy = \"read-walled.toml\"\n",
    )
    .unwrap();
    tmp
}

fn serve(tmp: &Path, name: &str, endpoint: Option<&str>) -> Replica {
    let home = tmp.join(format!("home-{name}"));
    std::fs::create_dir_all(&home).unwrap();
    let mut args = vec![
        "--no-reload".to_owned(),
        "--log".into(),
        tmp.join(format!("{name}.jsonl")).display().to_string(),
    ];
    if let Some(e) = endpoint {
        args.extend(["--otlp-endpoint".into(), e.to_owned()]);
    }
    // Batches go out every 100 ms instead of 5 s.
    Replica::start_with(
        &tmp.join("ws"),
        &home,
        "127.0.0.1:0",
        &args,
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
    )
}

/// Runs `tests/clients/traced_client.py` against `server`: its facts.
fn traced_call(server: &Replica) -> Value {
    let mut cmd = Command::new(python());
    cmd.arg(repo_root().join("tests/clients/traced_client.py"))
        .args(["--url", &server.url]);
    let out = process::run(cmd, Duration::from_secs(120));
    let f = scenario_facts(&out, "traced_client", &server.stderr());
    assert_eq!(f["is_error"], false, "{f}");
    assert_eq!(f["value"]["result"], serde_json::json!([2, 1]), "{f}");
    f
}

/// The client's span `name`, from its facts.
fn client_span<'a>(facts: &'a Value, name: &str) -> &'a Value {
    facts["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("the client's span {name:?}: {facts}"))
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn children<'a>(spans: &'a [Value], parent: &Value) -> Vec<&'a Value> {
    let mut kids: Vec<&Value> = spans
        .iter()
        .filter(|s| s["parent_span_id"] == parent["span_id"])
        .collect();
    kids.sort_by_key(|s| s["start"].as_u64());
    kids
}

fn names(spans: &[&Value]) -> Vec<String> {
    spans
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The trace id the session log `log` records for the call of `tool`.
fn logged_trace(log: &Path, tool: &str) -> Option<String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool/call" && e["tool"] == tool)
        .and_then(|e| e["traceId"].as_str().map(str::to_owned))
}

const STAGES: [&str; 15] = [
    "lookup",
    "parse",
    "schema",
    "path",
    "network",
    "repeat",
    "pre_execute",
    "approval",
    "guard",
    "dispatch",
    "output",
    "commit",
    "render",
    "post_execute",
    "bound",
];

#[test]
fn the_clients_trace_runs_through_the_script_its_calls_and_the_workers() {
    let tmp = workspace();
    let receiver = Receiver::start(tmp.path());
    let server = serve(tmp.path(), "traced", Some(&receiver.endpoint()));
    let f = traced_call(&server);
    let trace = f["trace_id"].as_str().unwrap();
    let sent = client_span(&f, "MCP send tools/call run_code");

    // Everything ends: two reads, each with its worker, and the script's.
    let spans = receiver.wait_for(trace, |s| {
        named(s, "worker").len() == 3
            && named(s, "tools/call run_code").len() == 1
            && named(s, "tools/list").len() == 1
    });
    assert!(spans.iter().all(|s| s["service"] == "toolhost"));

    // The SDK lists the tools (for their output schemas) in the same trace.
    let listed = client_span(&f, "MCP send tools/list");
    assert_eq!(
        named(&spans, "tools/list")[0]["parent_span_id"],
        listed["span_id"]
    );

    // The client's span → the request → admission and the call.
    let request = named(&spans, "tools/call run_code")[0];
    assert_eq!(request["parent_span_id"], sent["span_id"], "{request}");
    assert_eq!(request["kind"], 2, "a server span");
    let under_request = children(&spans, request);
    assert_eq!(names(&under_request), ["admission", "run_code"]);
    let script = under_request[1];

    // The script's stages, in the pipeline's order.
    let stages = children(&spans, script);
    assert_eq!(names(&stages), STAGES);
    let dispatch = stages[9];

    // Its body in a worker, and its two calls beside it; each call's own
    // stages, and its body in a worker too.
    let under_dispatch = children(&spans, dispatch);
    let mut kinds = names(&under_dispatch);
    kinds.sort();
    assert_eq!(kinds, ["read", "read", "worker"], "{under_dispatch:#?}");
    for call in under_dispatch.iter().filter(|s| s["name"] == "read") {
        assert_eq!(
            call["attributes"]["toolhost.parent"],
            script["attributes"]["toolhost.call_id"]
        );
        let stages = children(&spans, call);
        assert_eq!(names(&stages), STAGES);
        let worker = children(&spans, stages[9]);
        assert_eq!(names(&worker), ["worker"]);
        let pid = &worker[0]["attributes"]["toolhost.worker.pid"];
        let pid = pid.as_i64().or_else(|| pid.as_str()?.parse().ok());
        assert!(pid.is_some_and(|p| p > 0), "{worker:?}");
    }

    // No argument's value in any span: a digest instead.
    for s in &spans {
        let text = s["attributes"].to_string();
        assert!(
            !text.contains("notes.txt") && !text.contains("Promise"),
            "{s}"
        );
    }
    let digest = script["attributes"]["toolhost.arguments.sha256"]
        .as_str()
        .unwrap();
    assert_eq!(digest.len(), 64);

    // The session log names the trace.
    assert_eq!(
        logged_trace(&tmp.path().join("traced.jsonl"), "run_code").as_deref(),
        Some(trace)
    );
}

#[test]
fn without_an_endpoint_nothing_is_exported_and_the_log_still_names_the_trace() {
    let tmp = workspace();
    // Where an exporter sends when it was not told where (OTLP/HTTP's
    // default port): nothing may come.
    let receiver = Receiver::start_at(tmp.path(), 4318);
    let server = serve(tmp.path(), "quiet", None);
    let f = traced_call(&server);
    let trace = f["trace_id"].as_str().unwrap();
    assert_eq!(
        logged_trace(&tmp.path().join("quiet.jsonl"), "run_code").as_deref(),
        Some(trace)
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(receiver.spans().is_empty(), "{:?}", receiver.spans());
}
