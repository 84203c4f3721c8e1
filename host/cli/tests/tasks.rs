//! MCP tasks (SEP-2663) through `toolhost serve --http`: FastMCP's client
//! with its tasks extension in its default configuration (a client nobody
//! here wrote), every message and bad input over the raw protocol, and a
//! task started on one replica and polled, answered and cancelled on
//! another behind a real HAProxy.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::fleet::{Haproxy, Replica, Stateless, Transport, result_of};
use support::{clients_dir, install_clients, process, repo_root, scenario_facts};

/// Capabilities of a client that speaks tasks and can ask its user.
fn tasks_and_forms() -> Value {
    json!({
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    })
}

/// The code runner's own policy, but a task only when it runs long.
const RUNNER_AUTO: &str = "version = 1\ndecision = \"allow\"\ncallers = \"model\"\n\
call_tools = true\nrender = \"same-instance\"\ntask = \"auto\"\n\
[limits]\nfuel = 20_000_000_000\ntimeout_ms = 60_000\nmemory_bytes = 268_435_456\n";

/// A script that spins a while (some 8 million turns: half a second or
/// more), then answers.
const SPIN: &str = "let n = 0; for (let i = 0; i < 8000000; i++) { n += i % 7; } return n;";

/// A script that writes three files: its changes are approved at its end.
const WRITES: &str = "for (const name of [\"one\", \"two\", \"three\"]) {\n\
  await tools.write({path: `/workspace/${name}.txt`, content: `${name}\\n`});\n}\nreturn \"done\";";

/// A script that writes a file (staged), then spins until it is stopped.
const WRITE_THEN_SPIN: &str = "await tools.write({path: \"/workspace/cancelled.txt\", content: \"no\\n\"});\n\
let n = 0; for (;;) { n += 1; }";

/// A workspace whose toolbox serves `read`, `write` and `run_code`, the
/// runner's policy making a task only past `after_ms`.
struct Workspace {
    tmp: tempfile::TempDir,
}

impl Workspace {
    /// `auto_runner`: the runner's policy makes a task only past
    /// `after_ms` (else its default: always).
    fn new(after_ms: u64, keep_secs: u64, auto_runner: bool) -> Workspace {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("notes.txt"), "alpha line\nomega line\n").unwrap();
        std::fs::write(ws.join("runner.toml"), RUNNER_AUTO).unwrap();
        let runner = if auto_runner {
            "[[component]]\nsource = \"builtin:code\"\npolicy = \"runner.toml\"\n"
        } else {
            ""
        };
        std::fs::write(
            ws.join("toolhost.toml"),
            format!(
                "version = 1\nmode = \"both\"\n\n[tasks]\nafter_ms = {after_ms}\nkeep_secs = {keep_secs}\n\n\
                 [[component]]\nsource = \"builtin:read\"\n[[component]]\nsource = \"builtin:write\"\n{runner}"
            ),
        )
        .unwrap();
        std::fs::write(tmp.path().join("state.key"), "tasks-secret-".repeat(4)).unwrap();
        Workspace { tmp }
    }

    fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.ws().join(name)).ok()
    }

    fn shared(&self, name: &str) -> String {
        self.tmp.path().join(name).display().to_string()
    }

    /// Starts replica `i`, sharing the artifacts (and tasks) and the
    /// state secret with the others.
    fn replica(&self, i: usize) -> Replica {
        let home = self.tmp.path().join(format!("home{i}"));
        std::fs::create_dir_all(&home).unwrap();
        Replica::start(
            &self.ws(),
            &home,
            &[
                "--state-secret-file".into(),
                self.shared("state.key"),
                "--artifacts-dir".into(),
                self.shared("artifacts"),
                "--log".into(),
                self.shared("session.jsonl"),
                "--approval-timeout".into(),
                "30".into(),
                "--no-reload".into(),
            ],
        )
    }

    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.tmp.path().join("session.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// A raw 2026-07-28 client declaring `capabilities`.
fn client(port: u16, capabilities: Value) -> Stateless {
    let mut c = Stateless::new(port);
    c.capabilities = capabilities;
    c
}

/// The id of the task `response` (a `tools/call`'s) made.
fn task_of(response: &Value) -> String {
    let created = result_of(response);
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

/// Cancels `task` through `c` (request `id`): acknowledged.
fn cancel(c: &mut Stateless, id: &str, task: &str) {
    let ack = rpc(c, id, "tasks/cancel", task, json!({"taskId": task}));
    assert_eq!(result_of(&ack)["resultType"], "complete", "{ack}");
}

fn run_code(c: &mut Stateless, id: &str, code: &str) -> Value {
    c.call(id, "run_code", json!({"code": code})).unwrap()
}

/// Sends `method` with `params` (naming `task` in `Mcp-Name`): the
/// JSON-RPC response, whatever the HTTP status that carried it.
fn rpc(c: &mut Stateless, id: &str, method: &str, task: &str, params: Value) -> Value {
    match c.request(id, method, task, params) {
        Ok(v) => v,
        Err(Transport::Status(_, body)) => {
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
        }
        Err(e) => panic!("{method}: {e:?}"),
    }
}

fn get(c: &mut Stateless, id: &str, task: &str) -> Value {
    rpc(c, id, "tasks/get", task, json!({"taskId": task}))
}

/// Polls `task` until its status is not `working`; the last answer.
fn settle(c: &mut Stateless, task: &str) -> Value {
    settle_past(c, task, &["working"])
}

/// Polls `task` until its status is none of `past` (an answer or a
/// cancel is taken up a moment after it is acknowledged); the last answer.
fn settle_past(c: &mut Stateless, task: &str, past: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    for n in 0.. {
        let r = get(c, &format!("poll-{n}"), task);
        let status = r["result"]["status"].as_str().unwrap_or("").to_owned();
        if !past.contains(&status.as_str()) || Instant::now() > deadline {
            return r;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    unreachable!()
}

fn error_of(response: &Value) -> (i64, String) {
    let e = response
        .get("error")
        .unwrap_or_else(|| panic!("not an error: {response}"));
    (
        e["code"].as_i64().unwrap(),
        e["message"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn every_task_message_and_bad_input_over_the_raw_protocol() {
    let w = Workspace::new(200, 3, true);
    let r = w.replica(0);
    let mut plain = client(r.port, json!({"elicitation": {"form": {}}}));
    let mut tasks = client(r.port, tasks_and_forms());

    // A client without the extension: today's answer, however long.
    let res = result_of(&run_code(&mut plain, "1", SPIN)).clone();
    assert!(res.get("taskId").is_none(), "{res}");
    assert_ne!(res["resultType"], "task", "{res}");
    assert_ne!(res["isError"], true, "{res}");
    // Nor may it ask about tasks.
    let (code, _) = error_of(&get(&mut plain, "2", "0123456789abcdef0123456789abcdef"));
    assert_eq!(code, -32021, "missing required client capability");

    // With it, a quick call is answered at once, no task made.
    let res = result_of(&run_code(&mut tasks, "3", "6 * 7")).clone();
    assert!(res.get("taskId").is_none(), "{res}");

    // A long one becomes a task past `after_ms`.
    let started = Instant::now();
    let created = result_of(&run_code(&mut tasks, "4", SPIN)).clone();
    let became = started.elapsed();
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "{created}");
    assert!(
        created["ttlMs"].as_u64().is_some_and(|t| t >= 3000),
        "{created}"
    );
    assert!(created["pollIntervalMs"].as_u64().is_some(), "{created}");
    assert!(became >= Duration::from_millis(200), "{became:?}");
    let asked = Instant::now();
    let first = get(&mut tasks, "5", &id);
    eprintln!(
        "became a task after {} ms; its first tasks/get answered in {} µs",
        became.as_millis(),
        asked.elapsed().as_micros()
    );
    assert_eq!(result_of(&first)["resultType"], "complete", "{first}");
    let done = settle(&mut tasks, &id);
    let done = result_of(&done);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["result"],
        json!(23999997),
        "{done}"
    );

    // Bad input: a clear error, and nothing lost.
    for bad in ["0123456789abcdef0123456789abcdef", "../../etc/passwd", ""] {
        let (code, message) = error_of(&get(&mut tasks, "6", bad));
        assert_eq!(code, -32602, "{bad}");
        assert!(message.contains("no task"), "{message}");
    }
    let (code, message) = error_of(&rpc(
        &mut tasks,
        "7",
        "tasks/cancel",
        &id,
        json!({"taskId": id}),
    ));
    assert_eq!(code, -32602);
    assert!(message.contains("nothing to cancel"), "{message}");
    let (code, message) = error_of(&rpc(
        &mut tasks,
        "8",
        "tasks/update",
        &id,
        json!({"taskId": id, "inputResponses": {"approval-1": {"action": "accept"}}}),
    ));
    assert_eq!(code, -32602);
    assert!(message.contains("has ended"), "{message}");
    assert_eq!(result_of(&get(&mut tasks, "9", &id))["status"], "completed");

    // Kept `keep_secs` after it ended, then gone.
    std::thread::sleep(Duration::from_millis(3500));
    let (code, _) = error_of(&get(&mut tasks, "10", &id));
    assert_eq!(code, -32602);

    // Counted: one task made, and it completed.
    let (_, metrics) = support::fleet::get(r.port, "/metrics").unwrap();
    assert!(
        metrics.contains("toolhost_tasks_total{event=\"created\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("toolhost_tasks_total{event=\"completed\"} 1\n"),
        "{metrics}"
    );

    // The call is in the session log as any call is.
    let events = w.events();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool/result" && e["tool"] == "run_code"),
        "{events:?}"
    );
}

#[test]
fn an_approval_is_the_tasks_question_and_a_cancel_drops_what_it_staged() {
    let w = Workspace::new(200, 60, true);
    let r = w.replica(0);
    let mut c = client(r.port, tasks_and_forms());

    // The script's approval makes it a task, and asks through it.
    let id = task_of(&run_code(&mut c, "1", WRITES));
    let asking = settle(&mut c, &id);
    let asking = result_of(&asking);
    assert_eq!(asking["status"], "input_required", "{asking}");
    let request = &asking["inputRequests"]["approval-1"];
    assert_eq!(request["method"], "elicitation/create", "{asking}");
    let message = request["params"]["message"].as_str().unwrap();
    assert!(message.contains("/workspace/two.txt"), "{message}");

    // An answer to a question not asked: refused, the question stays.
    let update = |c: &mut Stateless, rid: &str, responses: Value| {
        rpc(
            c,
            rid,
            "tasks/update",
            &id,
            json!({"taskId": id, "inputResponses": responses}),
        )
    };
    let (code, message) = error_of(&update(
        &mut c,
        "2",
        json!({"approval-7": {"action": "accept"}}),
    ));
    assert_eq!(code, -32602);
    assert!(message.contains("did not ask `approval-7`"), "{message}");
    let (code, _) = error_of(&update(&mut c, "3", json!({"approval-1": "yes"})));
    assert_eq!(code, -32602, "an answer must be an object");
    assert_eq!(
        result_of(&get(&mut c, "4", &id))["status"],
        "input_required"
    );
    assert_eq!(w.file("one.txt"), None, "nothing lands before the answer");

    // Accepted: the three files land.
    let ack = update(&mut c, "5", json!({"approval-1": {"action": "accept"}}));
    assert_eq!(result_of(&ack)["resultType"], "complete", "{ack}");
    let done = settle_past(&mut c, &id, &["working", "input_required"]);
    assert_eq!(result_of(&done)["status"], "completed", "{done}");
    assert_eq!(result_of(&done)["result"]["isError"], false, "{done}");
    for name in ["one", "two", "three"] {
        assert_eq!(w.file(&format!("{name}.txt")), Some(format!("{name}\n")));
    }

    // A direct call that asks (`write` asks first) becomes a task when it
    // asks; cancelled while it waits for the answer, it ends cancelled and
    // writes nothing.
    let id = task_of(
        &c.call(
            "8",
            "write",
            json!({"path": "direct.txt", "content": "direct\n"}),
        )
        .unwrap(),
    );
    let asking = settle(&mut c, &id);
    let message = result_of(&asking)["inputRequests"]["approval-1"]["params"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("/workspace/direct.txt"), "{asking}");
    cancel(&mut c, "9", &id);
    let ended = settle_past(&mut c, &id, &["working", "input_required"]);
    assert_eq!(result_of(&ended)["status"], "cancelled", "{ended}");
    assert_eq!(w.file("direct.txt"), None);

    // Cancelled while it runs: what it staged never lands.
    let id = task_of(&run_code(&mut c, "6", WRITE_THEN_SPIN));
    cancel(&mut c, "7", &id);
    let ended = settle(&mut c, &id);
    assert_eq!(result_of(&ended)["status"], "cancelled", "{ended}");
    assert_eq!(w.file("cancelled.txt"), None);
}

#[test]
fn a_task_started_on_one_replica_is_polled_answered_and_cancelled_on_another() {
    let w = Workspace::new(200, 60, true);
    let replicas = [w.replica(0), w.replica(1)];
    let lb = Haproxy::start(&replicas.iter().map(|r| r.port).collect::<Vec<_>>());
    let mut on_a = client(replicas[0].port, tasks_and_forms());
    let mut on_b = client(replicas[1].port, tasks_and_forms());
    let mut through_lb = client(lb.port, tasks_and_forms());

    let id = task_of(&run_code(&mut on_a, "1", WRITES));
    // Readable on B at once: written before the handle was returned.
    assert!(get(&mut on_b, "2", &id).get("result").is_some());
    let asking = settle(&mut on_b, &id);
    assert_eq!(result_of(&asking)["status"], "input_required", "{asking}");
    let ack = rpc(
        &mut on_b,
        "3",
        "tasks/update",
        &id,
        json!({"taskId": id, "inputResponses": {"approval-1": {"action": "accept"}}}),
    );
    assert_eq!(result_of(&ack)["resultType"], "complete", "{ack}");
    let done = settle_past(&mut through_lb, &id, &["working", "input_required"]);
    assert_eq!(result_of(&done)["status"], "completed", "{done}");
    assert_eq!(w.file("two.txt").as_deref(), Some("two\n"));

    // Started through the balancer, cancelled on B, wherever it runs.
    let id = task_of(&run_code(&mut through_lb, "4", WRITE_THEN_SPIN));
    cancel(&mut on_b, "5", &id);
    let ended = settle(&mut on_a, &id);
    assert_eq!(result_of(&ended)["status"], "cancelled", "{ended}");
    assert_eq!(w.file("cancelled.txt"), None);
}

/// The replica running a task dies: after 30 s without a sign of it, the
/// others report the task failed instead of working forever.
#[test]
fn a_task_whose_replica_died_is_reported_failed_by_another() {
    let w = Workspace::new(200, 60, false);
    let mut a = w.replica(0);
    let b = w.replica(1);
    let mut on_a = client(a.port, tasks_and_forms());
    let mut on_b = client(b.port, tasks_and_forms());
    let id = task_of(&run_code(&mut on_a, "1", WRITE_THEN_SPIN));
    assert_eq!(result_of(&get(&mut on_b, "2", &id))["status"], "working");
    a.kill();
    let died = Instant::now();
    let ended = settle(&mut on_b, &id);
    let ended = result_of(&ended);
    assert_eq!(ended["status"], "failed", "{ended}");
    assert!(
        died.elapsed() < Duration::from_secs(45),
        "{:?}",
        died.elapsed()
    );
    assert!(
        ended["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("replica running the task stopped")),
        "{ended}"
    );
    assert_eq!(w.file("cancelled.txt"), None);
}

/// While a script is a task, what its calls report is its status message
/// (a task's client hears nothing outside its polls).
#[test]
fn a_tasks_status_message_is_what_its_calls_report() {
    let w = Workspace::new(200, 60, false);
    std::fs::write(
        w.ws().join("toolhost.toml"),
        format!(
            "version = 1\nmode = \"both\"\n[[component]]\nsource = {:?}\n[component.policy]\ndecision = \"allow\"\n",
            toolhost_guests::GUEST_CONFORMANCE
        ),
    )
    .unwrap();
    let r = w.replica(0);
    let mut c = client(r.port, tasks_and_forms());
    let script = format!(
        "await tools.test_tool_with_progress({{}});\n{}",
        SPIN.replace("8000000", "40000000")
    );
    let id = task_of(&run_code(&mut c, "1", &script));
    let deadline = Instant::now() + Duration::from_secs(30);
    let seen = loop {
        let t = get(&mut c, "2", &id);
        let t = result_of(&t);
        let message = t["statusMessage"].as_str().unwrap_or("").to_owned();
        if message.contains("100/100") || t["status"] != "working" || Instant::now() > deadline {
            break (t["status"].clone(), message);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(seen.0, "working", "{seen:?}");
    assert_eq!(
        seen.1, "tools.test_tool_with_progress#1: 100/100",
        "{seen:?}"
    );
    let done = settle(&mut c, &id);
    assert_eq!(result_of(&done)["status"], "completed", "{done}");
}

/// FastMCP's client (`fastmcp-tasks`), as its README shows it: the caller
/// of `call_tool` never learns the call was a task. Over HTTP.
#[test]
fn fastmcp_drives_tasks_with_approvals_and_a_cancel() {
    let w = Workspace::new(2_000, 60, false);
    let r = w.replica(0);
    let f = fastmcp(&w, &["--url", &r.url], &r.stderr());
    check_fastmcp(&w, &f);
}

/// The same over stdio: FastMCP spawns `toolhost serve`.
#[test]
fn fastmcp_drives_tasks_over_stdio() {
    let w = Workspace::new(2_000, 60, false);
    let cmd = json!([
        support::TOOLHOST,
        "serve",
        "--approval-timeout",
        "30",
        "--no-reload"
    ]);
    let ws = w.ws();
    let f = fastmcp(
        &w,
        &["--cmd", &cmd.to_string(), "--cwd", ws.to_str().unwrap()],
        "",
    );
    check_fastmcp(&w, &f);
}

/// Runs `tests/clients/fastmcp_client.py ARGS`: its facts.
fn fastmcp(w: &Workspace, args: &[&str], server_stderr: &str) -> Value {
    install_clients();
    std::fs::create_dir_all(w.tmp.path().join("home-stdio")).unwrap();
    let python: &Path = &clients_dir().join("venv/bin/python");
    let mut cmd = Command::new(python);
    cmd.arg(repo_root().join("tests/clients/fastmcp_client.py"))
        .args(args)
        .env("HOME", w.tmp.path().join("home-stdio"))
        .current_dir(w.ws());
    let out = process::run(cmd, Duration::from_secs(120));
    scenario_facts(&out, "fastmcp_client", server_stderr)
}

fn check_fastmcp(w: &Workspace, f: &Value) {
    assert_eq!(f["protocol_version"], "2026-07-28", "{f}");
    assert_eq!(f["accepted"]["is_error"], false, "{f}");
    assert_eq!(f["accepted"]["text"], "done", "{f}");
    assert_eq!(
        f["accepted"]["asked"].as_array().map(Vec::len),
        Some(1),
        "{f}"
    );
    assert!(
        f["accepted"]["asked"][0]
            .as_str()
            .is_some_and(|m| m.contains("/workspace/accepted-two.txt")),
        "{f}"
    );
    for name in ["one", "two", "three"] {
        assert_eq!(
            w.file(&format!("accepted-{name}.txt")),
            Some(format!("{name} from a task\n"))
        );
        assert_eq!(w.file(&format!("declined-{name}.txt")), None);
    }
    assert_eq!(f["declined"]["is_error"], true, "{f}");
    assert!(
        f["declined"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("approval_denied")),
        "{f}"
    );
    assert_eq!(f["read_tasked"], false, "{f}");
    assert!(
        f["read"].as_str().is_some_and(|t| t.contains("alpha line")),
        "{f}"
    );
    assert_eq!(f["first_status"], "working", "{f}");
    assert_eq!(f["cancelled_status"], "cancelled", "{f}");
    assert_eq!(w.file("cancelled.txt"), None);
}
