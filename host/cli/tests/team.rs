//! toolhost run for a team: three `toolhost serve --http` replicas behind a
//! real HAProxy (round-robin, no stickiness), sharing one state secret, one
//! artifacts directory and one log directory, each with its own home (its
//! own compiled-component cache and commit journal).
//!
//! - The official Python SDK's `Client` on the stateless revision reads,
//!   edits twice with baseline handles, and pages an artifact, each request
//!   landing on whichever replica HAProxy picks.
//! - One replica is killed (SIGKILL) while workers edit through HAProxy:
//!   every call is answered or fails at the client with a transport error;
//!   no acknowledged call is missing from the logs; a retried edit is never
//!   applied twice, because its handle is stale once the first one landed.
//!
//! HAProxy, promtool and the rest come from `tests/team/install.sh`.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use support::fleet::{self, Haproxy, Replica, Stateless, Transport, error_code, result_of};
use support::succeeded;

/// A served directory, the shared state of the replicas, and a home each.
struct Team {
    tmp: tempfile::TempDir,
}

impl Team {
    fn new(files: &[(&str, String)]) -> Team {
        fleet::install();
        let tmp = tempfile::Builder::new()
            .prefix("toolhost-team-")
            .tempdir()
            .expect("tmp");
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).expect("mkdir");
        for (name, text) in files {
            std::fs::write(ws.join(name), text).expect("write fixture");
        }
        std::fs::write(
            ws.join("toolhost.toml"),
            "version = 1\n\
             [[component]]\n\
             source = \"builtin:read\"\n\
             [[component]]\n\
             source = \"builtin:write\"\n\
             [[component]]\n\
             source = \"builtin:edit\"\n\
             [component.policy]\n\
             decision = \"allow\"\n\
             render = \"same-instance\"\n\
             [[component.policy.fs]]\n\
             host = \".\"\n\
             guest = \"/workspace\"\n\
             mode = \"rw\"\n",
        )
        .expect("write toolhost.toml");
        std::fs::write(tmp.path().join("state.key"), "team-secret-".repeat(4))
            .expect("write the secret");
        Team { tmp }
    }

    fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    fn logs(&self) -> PathBuf {
        self.tmp.path().join("logs")
    }

    /// Starts replica `i`.
    fn replica(&self, i: usize) -> Replica {
        let home = self.tmp.path().join(format!("home{i}"));
        std::fs::create_dir_all(&home).expect("mkdir home");
        let shared = |name: &str| self.tmp.path().join(name).display().to_string();
        Replica::start(
            &self.ws(),
            &home,
            &[
                "--state-secret-file".into(),
                shared("state.key"),
                "--artifacts-dir".into(),
                shared("artifacts"),
                "--log".into(),
                format!("{}/", shared("logs")),
                "--no-reload".into(),
            ],
        )
    }

    /// Every replica's log events, merged by `toolhost log`'s reader.
    fn events(&self) -> Vec<Value> {
        let mut all = Vec::new();
        for f in std::fs::read_dir(self.logs()).expect("the log directory") {
            let text = std::fs::read_to_string(f.expect("entry").path()).unwrap_or_default();
            all.extend(
                text.lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok()),
            );
        }
        all
    }
}

/// The tool calls each replica's log holds.
fn calls_per_log(dir: &Path) -> Vec<usize> {
    let mut counts: Vec<usize> = std::fs::read_dir(dir)
        .expect("the log directory")
        .map(|f| {
            std::fs::read_to_string(f.expect("entry").path())
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("\"tool/call\""))
                .count()
        })
        .collect();
    counts.sort_unstable();
    counts
}

#[test]
fn three_replicas_behind_haproxy_serve_one_stateless_client() {
    let notes = "alpha line\nneedle: the quick brown fox\nomega line\n".to_owned();
    let big: String = (0..3000)
        .map(|i| format!("{i:05} {}\n", "x".repeat(70)))
        .collect();
    let team = Team::new(&[("notes.txt", notes), ("big.txt", big)]);
    let replicas: Vec<Replica> = (0..3).map(|i| team.replica(i)).collect();
    let lb = Haproxy::start(&replicas.iter().map(|r| r.port).collect::<Vec<_>>());

    // The Python SDK's high-level Client, as its README shows it.
    let out = support::python_client(
        &[
            "--api",
            "client",
            "--mode",
            "2026-07-28",
            "--transport",
            "http",
            "--url",
            &format!("http://127.0.0.1:{}/mcp", lb.port),
            "replicas",
            "big=/workspace/big.txt",
        ]
        .map(str::to_owned),
    );
    let stderrs: Vec<String> = replicas.iter().map(Replica::stderr).collect();
    assert!(
        out.status.success(),
        "{}\n{}\nreplicas:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        stderrs.join("\n---\n")
    );
    let facts = support::facts(&out);
    eprintln!("facts: {facts}");
    assert_eq!(
        std::fs::read_to_string(team.ws().join("notes.txt")).expect("notes"),
        "ALPHA LINE\nneedle: the quick brown fox\nOMEGA LINE\n"
    );

    // The calls were spread over the replicas: each logged some.
    let counts = calls_per_log(&team.logs());
    assert_eq!(counts.len(), 3, "one log per replica: {counts:?}");
    assert!(counts.iter().all(|c| *c >= 1), "{counts:?}");
    // read, edit, edit, write (asked: `input_required`), write (answered), read.
    assert_eq!(counts.iter().sum::<usize>(), 6, "{counts:?}");
    // Every call by the anonymous loopback principal.
    assert!(
        team.events()
            .iter()
            .filter(|e| e["type"] == "tool/call")
            .all(|e| e["principal"] == "http:anonymous")
    );
    // `toolhost log DIR` merges them in time order.
    let merged = Command::new(support::TOOLHOST)
        .arg("log")
        .arg(team.logs())
        .output()
        .expect("toolhost log");
    let text = String::from_utf8_lossy(&merged.stdout);
    succeeded(&merged, "toolhost log");
    let order: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('→'))
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    assert_eq!(
        order,
        ["read", "edit", "edit", "write", "write", "read"],
        "{text}"
    );
    // The approval opened on another replica than the one that asked, and
    // is recorded as used where every replica looks.
    assert_eq!(
        std::fs::read_to_string(team.ws().join("created.txt"))
            .ok()
            .as_deref(),
        Some("approved across replicas\n")
    );
    let used = std::fs::read_dir(team.tmp.path().join("artifacts/.approvals"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(used, 1, "one used approval state recorded");

    // Each replica's metrics pass promtool; together they count every call.
    let mut total = 0u64;
    for r in &replicas {
        let (status, body) = fleet::get(r.port, "/metrics").expect("/metrics");
        assert_eq!(status, 200);
        promtool_accepts(&body);
        total += body
            .lines()
            .filter(|l| l.starts_with("toolhost_calls_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum::<u64>();
    }
    // The asked write counts once: as the call that ran.
    assert_eq!(total, 5);
    drop(lb);
}

/// `promtool check metrics` accepts `text` (problems are printed, and fail).
fn promtool_accepts(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (tests/team/install.sh installs it)");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(text.as_bytes()).expect("write metrics");
    }
    let out = child.wait_with_output().expect("promtool");
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What one worker did.
#[derive(Default, Debug)]
struct Worked {
    /// Request ids of the calls that were answered.
    acknowledged: Vec<String>,
    /// Calls that failed at the client with a transport error.
    transport_errors: usize,
    /// Retried edits refused because the first attempt had landed.
    stale_retries: usize,
    /// The count the file must hold.
    count: u64,
}

/// Edits `/workspace/w{n}.txt` ("count: N" → N+1) through the balancer
/// until `stop`, each edit with the handle of the previous result. A
/// transport error retries the same edit with the same handle: it lands,
/// or is refused `stale_baseline` because the first attempt landed (then
/// a read shows which, and gives a fresh handle).
fn worker(n: usize, port: u16, stop: Arc<AtomicBool>) -> Worked {
    let path = format!("/workspace/w{n}.txt");
    let mut c = Stateless::new(port);
    let mut w = Worked::default();
    let mut seq = 0u64;
    let mut id = |kind: &str| {
        seq += 1;
        format!("w{n}-{kind}-{seq}")
    };
    let handle_of = |r: &Value| -> String {
        r["structuredContent"]["baselines"][&path]
            .as_str()
            .unwrap_or_else(|| panic!("no handle: {r}"))
            .to_owned()
    };
    // Reads until one is answered: the handle and the count.
    let read = |c: &mut Stateless, w: &mut Worked, id: String| -> (String, u64) {
        loop {
            match c.call(&id, "read", json!({"path": path})) {
                Ok(resp) => {
                    let r = result_of(&resp);
                    assert_eq!(error_code(r), None, "{r}");
                    w.acknowledged.push(id);
                    let line = r["structuredContent"]["lines"][0]
                        .as_str()
                        .unwrap_or_default();
                    let count = line
                        .strip_prefix("count: ")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| panic!("{line}"));
                    return (handle_of(r), count);
                }
                Err(_) => w.transport_errors += 1,
            }
        }
    };
    let (mut handle, count) = read(&mut c, &mut w, id("read"));
    w.count = count;
    while !stop.load(Ordering::SeqCst) {
        let args = json!({
            "path": path,
            "old_text": format!("count: {}\n", w.count),
            "new_text": format!("count: {}\n", w.count + 1),
            "baseline": handle,
        });
        let mut retried = false;
        loop {
            let rid = id("edit");
            match c.call(&rid, "edit", args.clone()) {
                Ok(resp) => {
                    let r = result_of(&resp);
                    match error_code(r).as_deref() {
                        None => {
                            w.acknowledged.push(rid);
                            handle = handle_of(r);
                            w.count += 1;
                        }
                        Some("stale_baseline") if retried => {
                            // The first attempt landed: the file says so.
                            w.acknowledged.push(rid);
                            w.stale_retries += 1;
                            let (h, now) = read(&mut c, &mut w, id("reread"));
                            assert_eq!(now, w.count + 1, "the lost attempt landed once");
                            handle = h;
                            w.count = now;
                        }
                        Some(other) => panic!("worker {n}: edit failed with {other}: {r}"),
                    }
                    break;
                }
                Err(Transport::Io(_) | Transport::Status(..)) => {
                    w.transport_errors += 1;
                    retried = true;
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }
    w
}

#[test]
fn a_replica_killed_under_load_loses_no_acknowledged_call_and_applies_no_edit_twice() {
    const WORKERS: usize = 6;
    let files: Vec<(String, String)> = (0..WORKERS)
        .map(|n| (format!("w{n}.txt"), "count: 0\n".to_owned()))
        .collect();
    let refs: Vec<(&str, String)> = files.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    let team = Team::new(&refs);
    let mut replicas: Vec<Replica> = (0..3).map(|i| team.replica(i)).collect();
    let lb = Haproxy::start(&replicas.iter().map(|r| r.port).collect::<Vec<_>>());
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..WORKERS)
        .map(|n| {
            let stop = stop.clone();
            let port = lb.port;
            std::thread::spawn(move || worker(n, port, stop))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    replicas[1].kill();
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::SeqCst);
    let worked: Vec<Worked> = workers
        .into_iter()
        .map(|w| w.join().expect("a worker panicked"))
        .collect();
    eprintln!(
        "killed after 2 s; {:?}",
        worked
            .iter()
            .map(|w| (w.count, w.transport_errors, w.stale_retries))
            .collect::<Vec<_>>()
    );

    // No edit applied twice, none lost: each file holds the count its
    // worker reached, edit by edit.
    for (n, w) in worked.iter().enumerate() {
        let text = std::fs::read_to_string(team.ws().join(format!("w{n}.txt"))).expect("file");
        assert_eq!(text, format!("count: {}\n", w.count), "worker {n}: {w:?}");
        assert!(w.count > 0, "worker {n} made no progress: {w:?}");
    }
    // Every acknowledged call is in the logs, with its result.
    let events = team.events();
    let with_result: std::collections::HashSet<String> = events
        .iter()
        .filter(|e| e["type"] == "tool/result")
        .filter_map(|e| e["callId"].as_str().map(str::to_owned))
        .collect();
    let acknowledged: Vec<&String> = worked.iter().flat_map(|w| &w.acknowledged).collect();
    let missing: Vec<&&String> = acknowledged
        .iter()
        .filter(|id| !with_result.contains(&format!("mcp-{id}")))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged calls are not in the logs: {missing:?}",
        missing.len(),
        acknowledged.len()
    );
    // The survivors served on.
    let counts = calls_per_log(&team.logs());
    assert_eq!(counts.len(), 3, "{counts:?}");
    drop(lb);
}

/// The OAuth test's server: one replica that is an OAuth resource server
/// of a real oidc-provider, with a scope for `edit` and a quota.
struct Protected {
    team: Team,
    oidc: fleet::Oidc,
    replica: Replica,
    resource: String,
}

impl Protected {
    fn start() -> Protected {
        let notes = "alpha line\nneedle: the quick brown fox\nomega line\n".to_owned();
        let big: String = (0..3000)
            .map(|i| format!("{i:05} {}\n", "x".repeat(70)))
            .collect();
        let team = Team::new(&[("notes.txt", notes), ("big.txt", big)]);
        let port = support::free_port();
        let resource = format!("http://127.0.0.1:{port}/mcp");
        let oidc = fleet::Oidc::start(&resource);
        let home = team.tmp.path().join("home");
        std::fs::create_dir_all(&home).expect("mkdir");
        let replica = Replica::start_at(
            &team.ws(),
            &home,
            &format!("127.0.0.1:{port}"),
            &[
                "--oauth-issuer".into(),
                oidc.issuer.clone(),
                "--oauth-scope".into(),
                "mcp:tools".into(),
                "--oauth-tool-scope".into(),
                "mcp:write=edit,write".into(),
                "--quota-per-minute".into(),
                "12".into(),
                "--log".into(),
                team.tmp.path().join("calls.jsonl").display().to_string(),
                "--no-reload".into(),
            ],
        );
        Protected {
            team,
            oidc,
            replica,
            resource,
        }
    }

    fn client(&self, token: &str) -> Stateless {
        let mut c = Stateless::new(self.replica.port);
        c.bearer = Some(token.to_owned());
        c
    }
}

#[test]
fn an_oauth_resource_server_of_a_real_authorization_server() {
    let p = Protected::start();
    let port = p.replica.port;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"/workspace/notes.txt"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let modern = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "read"),
    ];

    // No token: 401 pointing at the metadata, which points at the issuer.
    let (status, challenge, _) = fleet::post_raw(port, &modern, call);
    assert_eq!(status, 401);
    let metadata_url = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    let challenge = challenge.expect("WWW-Authenticate");
    assert!(
        challenge.starts_with(&format!("Bearer resource_metadata=\"{metadata_url}\"")),
        "{challenge}"
    );
    let (status, body) =
        fleet::get(port, "/.well-known/oauth-protected-resource/mcp").expect("metadata");
    assert_eq!(status, 200);
    let metadata: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(metadata["resource"], p.resource);
    assert_eq!(metadata["authorization_servers"], json!([p.oidc.issuer]));

    // A token whose signature does not verify: 401 invalid_token.
    let agent = p
        .oidc
        .token("agent", "agent-secret", "mcp:tools mcp:write", &p.resource);
    let mut forged = agent.clone();
    forged.pop();
    forged.push(if agent.ends_with('A') { 'B' } else { 'A' });
    let bearer = format!("Bearer {forged}");
    let mut headers = modern.to_vec();
    headers.push(("Authorization", &bearer));
    let (status, challenge, _) = fleet::post_raw(port, &headers, call);
    assert_eq!(status, 401);
    assert!(challenge.is_some_and(|c| c.contains("error=\"invalid_token\"")));

    // The reader (mcp:tools only): reads; `edit` is not listed, and
    // calling it is 403 insufficient_scope naming mcp:write.
    let reader = p
        .oidc
        .token("reader", "reader-secret", "mcp:tools", &p.resource);
    let mut r = p.client(&reader);
    let listed = r
        .request("l1", "tools/list", "", json!({}))
        .expect("tools/list");
    let names: Vec<&str> = result_of(&listed)["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["read"], "{listed}");
    let bearer = format!("Bearer {reader}");
    let edit = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"edit","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let (status, challenge, _) = fleet::post_raw(
        port,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "edit"),
            ("Authorization", &bearer),
        ],
        edit,
    );
    assert_eq!(status, 403);
    let challenge = challenge.expect("WWW-Authenticate");
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"mcp:write\""),
        "{challenge}"
    );

    // The agent (both scopes): read → edit with the handle; its big read's
    // artifact is its own: the reader cannot read it.
    let mut a = p.client(&agent);
    let read = a
        .call("a1", "read", json!({"path": "/workspace/notes.txt"}))
        .expect("read");
    let handle = result_of(&read)["structuredContent"]["baselines"]["/workspace/notes.txt"]
        .as_str()
        .expect("a handle")
        .to_owned();
    let edited = a
        .call(
            "a2",
            "edit",
            json!({"path": "/workspace/notes.txt", "old_text": "alpha", "new_text": "ALPHA", "baseline": handle}),
        )
        .expect("edit");
    assert_eq!(error_code(result_of(&edited)), None, "{edited}");
    let big = a
        .call("a3", "read", json!({"path": "/workspace/big.txt"}))
        .expect("big read");
    let uri = result_of(&big)["content"]
        .as_array()
        .expect("content")
        .iter()
        .find_map(|b| {
            (b["type"] == "resource_link")
                .then(|| b["uri"].as_str())
                .flatten()
        })
        .unwrap_or_else(|| panic!("no artifact link: {big}"))
        .to_owned();
    let own = a
        .request("a4", "resources/read", &uri, json!({"uri": uri}))
        .expect("resources/read");
    assert!(own.get("result").is_some(), "{own}");
    let other = r
        .request("r3", "resources/read", &uri, json!({"uri": uri}))
        .expect("resources/read");
    assert!(
        other.get("error").is_some(),
        "another principal read it: {other}"
    );

    // Quota: 12 calls a minute per principal, then quota_exceeded with a wait.
    let mut refused = None;
    for i in 0..14 {
        let resp = r
            .call(
                &format!("q{i}"),
                "read",
                json!({"path": "/workspace/notes.txt"}),
            )
            .expect("read");
        if error_code(result_of(&resp)).as_deref() == Some("quota_exceeded") {
            refused = Some(resp);
            break;
        }
    }
    let refused = refused.expect("the reader's 13th call in a minute was not refused");
    let info = &result_of(&refused)["_meta"]["toolhost"]["error"]["info"];
    assert!(
        info["retryAfterS"]
            .as_u64()
            .is_some_and(|s| (1..=60).contains(&s)),
        "{refused}"
    );
    // The agent has its own quota.
    let own = a
        .call("a5", "read", json!({"path": "/workspace/notes.txt"}))
        .expect("read");
    assert_eq!(error_code(result_of(&own)), None, "{own}");
    let (_, metrics) = fleet::get(port, "/metrics").expect("metrics");
    assert!(
        metrics.contains("toolhost_rejected_total{reason=\"quota\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("toolhost_rejected_total{reason=\"unauthenticated\"} 2"),
        "{metrics}"
    );
    promtool_accepts(&metrics);
    // The principal is in the session log.
    let log = std::fs::read_to_string(p.team.tmp.path().join("calls.jsonl")).expect("log");
    let principals: std::collections::BTreeSet<String> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool/call")
        .filter_map(|e| e["principal"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        principals,
        ["oauth:agent", "oauth:reader"].map(str::to_owned).into()
    );
}

#[test]
fn the_python_sdk_oauth_client_gets_its_token_from_the_metadata() {
    let p = Protected::start();
    let out = support::python_client(&[
        "--api".into(),
        "client".into(),
        "--transport".into(),
        "http".into(),
        "--url".into(),
        p.resource.clone(),
        "oauth".into(),
        format!("issuer={}", p.oidc.issuer),
        "client_id=agent".into(),
        "client_secret=agent-secret".into(),
        "scope=mcp:tools mcp:write".into(),
    ]);
    assert!(
        out.status.success(),
        "{}\n{}\nserver:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        p.replica.stderr()
    );
    let facts = support::facts(&out);
    // The first token has the scope the 401 named (mcp:tools): `edit` is
    // not listed. Calling it is a 403 insufficient_scope naming mcp:write;
    // the SDK steps up, and then `edit` runs and is listed.
    assert_eq!(facts["tools"], json!(["read"]), "{facts}");
    assert_eq!(facts["edited"], 1, "{facts}");
    assert_eq!(
        facts["tools_after"],
        json!(["edit", "read", "write"]),
        "{facts}"
    );
    assert_eq!(facts["protocol_version"], "2026-07-28", "{facts}");
}
