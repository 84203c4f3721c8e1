//! `toolhost serve` driven by MCP clients nobody here wrote, the way their
//! users drive them: the official Python SDK (`mcp` 2.x: its high-level
//! `Client` in each mode, `auto` by default, and its low-level
//! `ClientSession`), the official TypeScript SDK
//! (`@modelcontextprotocol/sdk`), and the agent frameworks pydantic-ai,
//! openai-agents and langchain-mcp-adapters (on the SDK's 1.x), each in its
//! default configuration. They are pinned in `tests/clients/` and installed
//! by `tests/clients/install.sh` (once per run, skipped when already
//! installed) into `$TOOLHOST_CLIENTS_DIR` (default `target/clients`).
//!
//! Each test lays out its own workspace, starts its own server (the client
//! spawns it over stdio, or the test spawns `toolhost serve --http
//! 127.0.0.1:0`), runs one scenario of `tests/clients/py_client.py`,
//! `tests/clients/ts_client.mjs` or `tests/clients/frameworks.py`, which
//! asserts what the client sees and prints one JSON line of facts, and then
//! checks those facts, the disk and the session log. Every server starts
//! cold, as on a machine that never ran toolhost: a fresh `HOME`, so an
//! empty compiled-component cache.
//!
//! Needs python3 (3.10+ with venv) and node 20+ with npm; the first run
//! reaches PyPI and the npm registry.

mod support;

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};
use support::fleet::Replica;
use support::process;
use support::{
    TOOLHOST, clients_dir, install_clients, plain_component, python_client_command, repo_root,
    run_script_once, scenario_facts, search_model, succeeded,
};

/// Longest a client scenario may run (the scripts give up at 90 s themselves).
const CLIENT_DEADLINE: Duration = Duration::from_secs(120);

/// The fixture file every workspace has.
const NOTES: &str = "alpha line\nneedle: the quick brown fox\nomega line\n";

/// Which SDK drives the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    /// `mcp` (Python), its low-level `ClientSession` (the legacy
    /// `initialize` handshake).
    Py,
    /// `mcp` (Python), its high-level `Client` in a mode: `auto` (its
    /// default: `server/discover`, then 2026-07-28), `2026-07-28` or `legacy`.
    PyClient(&'static str),
    /// `@modelcontextprotocol/sdk` (TypeScript).
    Ts,
}

/// The Python `Client`'s default mode.
const AUTO: &str = "auto";
/// The Python `Client` pinned to the stateless revision.
const MODERN: &str = "2026-07-28";
/// The Python `Client` with the `initialize` handshake.
const LEGACY: &str = "legacy";

/// How the client reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    /// The client spawns `toolhost serve` and speaks over its stdin/stdout.
    Stdio,
    /// The test spawns `toolhost serve --http 127.0.0.1:0`.
    Http,
}

/// The Python `table` component (`guest-tools/python/build.sh`, built once
/// per test binary; nothing is rebuilt when its sources are unchanged).
fn python_component() -> PathBuf {
    run_script_once("guest-tools/python/build.sh", &[]);
    repo_root().join("target/python-guests/tool_table.wasm")
}

/// A served directory with the fixture files, and a session log beside it.
struct Workspace {
    tmp: tempfile::TempDir,
    dir: PathBuf,
    /// `--approval-timeout` of the server.
    approval_timeout_s: u32,
    /// More `toolhost serve` arguments.
    serve_args: Vec<String>,
}

impl Workspace {
    fn new() -> Workspace {
        let tmp = tempfile::Builder::new()
            .prefix("toolhost-clients-")
            .tempdir()
            .expect("temp dir");
        let dir = tmp.path().join("ws");
        std::fs::create_dir_all(dir.join("src")).expect("mkdir");
        std::fs::create_dir_all(dir.join("docs")).expect("mkdir");
        std::fs::write(dir.join("notes.txt"), NOTES).expect("write fixture");
        std::fs::write(
            dir.join("src/lib.rs"),
            "pub fn answer() -> u32 {\n    42\n}\n",
        )
        .expect("write fixture");
        std::fs::write(dir.join("docs/guide.md"), "# Guide\n\nNothing to see.\n")
            .expect("write fixture");
        Workspace {
            tmp,
            dir,
            approval_timeout_s: 30,
            serve_args: Vec::new(),
        }
    }

    /// The `HOME` of the client and the server: fresh, so the server's
    /// compiled-component cache (`~/.cache/toolhost`) starts empty.
    fn home(&self) -> PathBuf {
        let home = self.tmp.path().join("home");
        std::fs::create_dir_all(&home).expect("mkdir home");
        home
    }

    /// Serves the built-ins and the Python `table` component (18 MB: tens
    /// of seconds to compile in a test build), with its own policy.
    fn toolbox_with_python(&self) {
        let policy = repo_root().join("guest-tools/python/tools/table/policy.toml");
        self.toolbox(&format!(
            "version = 1\n\
             [[component]]\nsource = \"builtin:read\"\n\
             [[component]]\nsource = \"builtin:list\"\n\
             [[component]]\nsource = '{}'\npolicy = '{}'\n",
            python_component().display(),
            policy.display()
        ));
        self.cities();
    }

    /// A two-row `cities.csv`, for the Python table tool.
    fn cities(&self) {
        std::fs::write(
            self.dir.join("cities.csv"),
            "city,country,population\nLyon,France,522250\nOslo,Norway,717710\n",
        )
        .expect("write cities.csv");
    }

    /// Serves `read` and the recorded tool lists of GitHub, Grafana,
    /// Playwright and Slack (289 tools, `tests/discovery/catalog/`): past
    /// `defer_over`, so deferred. Slack's tools ask, the others are allowed.
    fn toolbox_with_catalog(&self) {
        std::fs::create_dir_all(self.dir.join("catalog")).expect("mkdir catalog");
        let mut toml = String::from("version = 1\n[[component]]\nsource = \"builtin:read\"\n");
        for server in ["github", "grafana", "playwright", "slack"] {
            std::fs::write(
                self.dir.join(format!("catalog/{server}.wasm")),
                toolhost_guests::catalog_guest(server),
            )
            .expect("write a catalog component");
            let decision = if server == "slack" { "ask" } else { "allow" };
            toml.push_str(&format!(
                "[[component]]\nsource = \"catalog/{server}.wasm\"\n[component.policy]\ndecision = \"{decision}\"\n"
            ));
        }
        self.toolbox(&toml);
    }

    /// The JSON Lines session log the server appends to.
    fn log(&self) -> PathBuf {
        self.tmp.path().join("session.jsonl")
    }

    /// Writes `toolhost.toml` in the served directory.
    fn toolbox(&self, text: &str) -> PathBuf {
        let path = self.dir.join("toolhost.toml");
        std::fs::write(&path, text).expect("write toolhost.toml");
        path
    }

    fn file(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.join(rel)).ok()
    }

    /// `toolhost serve ...` for this workspace (without the transport).
    fn serve_command(&self) -> Vec<String> {
        vec![
            TOOLHOST.to_owned(),
            "serve".into(),
            "--log".into(),
            self.log().display().to_string(),
            "--approval-timeout".into(),
            self.approval_timeout_s.to_string(),
        ]
        .into_iter()
        .chain(self.serve_args.iter().cloned())
        .collect()
    }

    /// The session log's events.
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits up to `timeout` for a `tool/result` event of `tool`; returns it
    /// with its `tool/call` event.
    fn wait_for_result(&self, tool: &str, timeout: Duration) -> Option<(Value, Value)> {
        let deadline = Instant::now() + timeout;
        loop {
            let events = self.events();
            let found = events
                .iter()
                .filter(|e| e["type"] == "tool/result" && e["tool"] == tool)
                .find_map(|r| {
                    events
                        .iter()
                        .find(|c| c["type"] == "tool/call" && c["callId"] == r["callId"])
                        .map(|c| (c.clone(), r.clone()))
                });
            if found.is_some() || Instant::now() >= deadline {
                return found;
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `toolhost serve --http 127.0.0.1:0` for `ws`, killed when dropped.
fn http_server(ws: &Workspace) -> Replica {
    let cmd = ws.serve_command();
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..])
        .args(["--http", "127.0.0.1:0"])
        .env("HOME", ws.home())
        .env_remove("XDG_CACHE_HOME")
        .env("TOOLHOST_SEARCH_MODEL", search_model())
        .current_dir(&ws.dir);
    Replica::spawn(c, Duration::from_secs(60))
}

/// A finished scenario: the client's facts, and the HTTP server (still
/// running) when there was one.
struct Ran {
    facts: Value,
    _server: Option<Replica>,
}

/// The strings of the array `facts[key]`, which must be one.
fn strings<'a>(facts: &'a Value, key: &str) -> Vec<&'a str> {
    facts[key]
        .as_array()
        .expect(key)
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

/// Runs one scenario of one client against a server for `ws`.
fn run(ws: &Workspace, lang: Lang, transport: Transport, scenario: &str, args: &[&str]) -> Ran {
    let mut cmd = match lang {
        Lang::Py => python_client_command(),
        Lang::PyClient(mode) => {
            let mut c = python_client_command();
            c.args(["--api", "client", "--mode", mode]);
            c
        }
        Lang::Ts => {
            install_clients();
            let mut c = Command::new("node");
            c.arg(repo_root().join("tests/clients/ts_client.mjs"));
            c
        }
    };
    cmd.env("TOOLHOST_CLIENTS_DIR", clients_dir())
        .env("RUST_BACKTRACE", "1")
        .env("HOME", ws.home())
        .env_remove("XDG_CACHE_HOME")
        // One copy of the search model for every test's fresh HOME.
        .env("TOOLHOST_SEARCH_MODEL", search_model())
        .current_dir(&ws.dir);
    let server = match transport {
        Transport::Stdio => {
            cmd.args(["--transport", "stdio", "--cmd"])
                .arg(json!(ws.serve_command()).to_string())
                .arg("--cwd")
                .arg(&ws.dir);
            None
        }
        Transport::Http => {
            let server = http_server(ws);
            cmd.args(["--transport", "http", "--url", &server.url]);
            Some(server)
        }
    };
    cmd.arg(scenario).args(args);
    let out = process::run(cmd, CLIENT_DEADLINE);
    let server_stderr = server.as_ref().map(Replica::stderr).unwrap_or_default();
    let facts = scenario_facts(
        &out,
        &format!("{lang:?}/{transport:?}/{scenario}"),
        &format!("--- HTTP server stderr ---\n{}", server_stderr.trim_end()),
    );
    Ran {
        facts,
        _server: server,
    }
}

// --- scenarios ---------------------------------------------------------------

/// 1. `tools/list` under the embedded default.
fn tools_list(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let f = run(
        &ws,
        lang,
        transport,
        "list",
        &["expect=edit,grep,list,read,write"],
    )
    .facts;
    assert_eq!(f["tools"], json!(["edit", "grep", "list", "read", "write"]));
    // A Client pinned to 2026-07-28 adopts it without discovery: it knows
    // no capabilities to check.
    let declared = if lang == Lang::PyClient(MODERN) {
        Value::Null
    } else {
        json!(true)
    };
    assert_eq!(
        f["list_changed"], declared,
        "the server declares tools.listChanged"
    );
    assert_eq!(
        f["read_only"],
        json!({"edit": false, "grep": true, "list": true, "read": true, "write": false})
    );
    assert_eq!(f["required"]["read"], json!(["path"]));
    assert_eq!(f["required"]["write"], json!(["path", "content"]));
}

/// 2. The allowed built-ins, values checked through the SDK's validating call path.
fn allowed_calls(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let f = run(&ws, lang, transport, "allowed", &[]).facts;
    assert_eq!(
        f["read"],
        json!({
            "path": "/workspace/notes.txt",
            "lines": ["alpha line", "needle: the quick brown fox", "omega line"],
            "totalLines": 3,
            "nextOffset": null,
        })
    );
    assert_eq!(
        f["window"],
        json!({
            "path": "/workspace/notes.txt",
            "offset": 2,
            "lines": ["needle: the quick brown fox"],
            "nextOffset": 3,
        }),
        "a relative path resolves in /workspace"
    );
    assert_eq!(
        f["list"],
        json!([["docs", "dir"], ["notes.txt", "file"], ["src", "dir"]])
    );
    assert_eq!(
        f["list_recursive"],
        json!(["docs", "docs/guide.md", "notes.txt", "src", "src/lib.rs"])
    );
    assert_eq!(
        f["grep"],
        json!([["/workspace/notes.txt", 2, "needle: the quick brown fox"]])
    );
}

/// 3. Tool errors, invalid arguments, an unknown tool.
fn tool_errors(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let f = run(&ws, lang, transport, "errors", &[]).facts;
    assert_eq!(f["missing"]["code"], "not_found");
    assert_eq!(f["bad_type"]["code"], "invalid_arguments");
    assert_eq!(f["missing_argument"]["code"], "invalid_arguments");
    assert_eq!(f["unknown"]["code"], "unknown_tool");
    let events = ws.events();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool/result" && e["code"] == "not_found"),
        "the session log has the failed read: {events:?}"
    );
}

/// 4. Paths outside the grants.
fn denied_paths(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let f = run(&ws, lang, transport, "denied", &[]).facts;
    for k in ["etc_passwd", "dotdot", "grep_etc"] {
        assert_eq!(f[k]["code"], "path_denied", "{k}: {f}");
    }
}

fn written_by(lang: Lang) -> &'static str {
    match lang {
        Lang::Py | Lang::PyClient(_) => "written by the python client\n",
        Lang::Ts => "written by the typescript client\n",
    }
}

/// 5a. `ask` accepted through the client's elicitation handler (from
///     2026-07-28: an `input_required` result the client answers and sends
///     again).
fn ask_accept(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let f = run(&ws, lang, transport, "ask_accept", &[]).facts;
    assert_eq!(ws.file("created.txt").as_deref(), Some(written_by(lang)));
    assert_eq!(f["write"]["created"], true);
    // Stateless clients edit with the read's baseline handle.
    assert_eq!(
        ws.file("notes.txt").as_deref(),
        Some("ALPHA LINE\nneedle: the quick brown fox\nomega line\n")
    );
    assert_eq!(f["edit"]["replacements"], 1);
    let second = "/workspace/notes.txt";
    let asked = f["asked"].as_array().expect("asked");
    assert_eq!(asked.len(), 2);
    assert!(
        asked[0]
            .as_str()
            .is_some_and(|m| m.contains("/workspace/created.txt"))
    );
    assert!(asked[1].as_str().is_some_and(|m| m.contains(second)));
    if let Lang::PyClient(mode) = lang {
        let expected = if mode == LEGACY {
            "2025-11-25"
        } else {
            "2026-07-28"
        };
        assert_eq!(f["protocol_version"], expected, "{f}");
    }
}

/// 5b. `ask` declined, cancelled, or accepted with `approve` unchecked.
fn ask_decline(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let f = run(&ws, lang, transport, "ask_decline", &[]).facts;
    for k in ["decline", "cancel", "unchecked"] {
        assert_eq!(f[k]["code"], "approval_denied", "{k}: {f}");
    }
    assert_eq!(
        ws.file("notes.txt").as_deref(),
        Some(NOTES),
        "a declined edit changed the file"
    );
    assert_eq!(
        ws.file("declined.txt"),
        None,
        "a cancelled write created the file"
    );
}

/// 5d. Effects-first approval (`write`'s default policy): the form shows
///     the diff of the staged run; decline leaves the file, accept commits
///     exactly the diff shown.
fn effects(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let f = run(&ws, lang, transport, "effects", &[]).facts;
    assert_eq!(f["declined"]["code"], "approval_denied", "{f}");
    assert_eq!(
        ws.file("notes.txt").as_deref(),
        Some("alpha line\nrewritten\n"),
        "{f}"
    );
    let asked = f["asked"].as_array().expect("asked");
    assert_eq!(asked.len(), 2, "{f}");
    let declined = asked[0].as_str().unwrap_or_default();
    assert!(
        declined.contains("-alpha line") && declined.contains("+declined"),
        "the form shows the diff: {declined}"
    );
    // Nothing changed after the decline: the read saw the old lines.
    assert_eq!(f["after_decline"]["lines"][2], "omega line", "{f}");
    // The accepted form's diff is the one committed.
    let accepted = asked[1].as_str().unwrap_or_default();
    let diff = f["diff"].as_str().unwrap_or_default();
    assert!(
        diff.contains("-needle: the quick brown fox") && diff.contains("+rewritten"),
        "{diff}"
    );
    assert!(
        accepted.contains(diff.trim_end()),
        "shown:\n{accepted}\ncommitted:\n{diff}"
    );
    assert_eq!(f["effects"]["count"], 1, "{f}");
    assert_eq!(f["effects"]["effects"][0]["kind"], "modified", "{f}");
}

/// 5c. The user answers only after the approval timeout.
fn ask_timeout(lang: Lang, transport: Transport) {
    let mut ws = Workspace::new();
    ws.approval_timeout_s = 2;
    let f = run(&ws, lang, transport, "ask_timeout", &["delay=5"]).facts;
    assert_eq!(f["write"]["code"], "approval_denied");
    let after = f["denied_after_s"].as_f64().unwrap_or(f64::MAX);
    assert!(
        (1.5..4.5).contains(&after),
        "denied {after} s after the call, with --approval-timeout 2"
    );
    assert_eq!(ws.file("late.txt"), None, "a write approved too late ran");
}

/// 6. A client without the elicitation capability is never asked; `ask` denies.
fn no_elicitation(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let f = run(&ws, lang, transport, "no_elicitation", &[]).facts;
    assert_eq!(f["write"]["code"], "approval_denied");
    assert_eq!(f["edit"]["code"], "approval_denied");
    assert_eq!(f["asked"], 0);
    assert_eq!(ws.file("unasked.txt"), None);
    assert_eq!(ws.file("notes.txt").as_deref(), Some(NOTES));
}

/// 7. Two HTTP sessions keep separate fresh-baseline state.
fn separate_sessions(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let f = run(&ws, lang, transport, "sessions", &[]).facts;
    assert_eq!(f["b_unread"]["code"], "stale_baseline");
    assert_eq!(f["a_stale"]["code"], "stale_baseline");
    assert_eq!(f["asked"], json!({"a": 1, "b": 1}));
    assert_eq!(
        ws.file("notes.txt").as_deref(),
        Some("ALPHA LINE\nneedle: the quick brown fox\nOMEGA LINE\n")
    );
}

/// 7b. Stateless read → edit → edit with baseline handles (2026-07-28 over
///     HTTP, where every request is its own session), with the refusals:
///     no handle, a handle replayed after the file changed, a forged one,
///     and one sealed by a server with another secret (the same directory
///     served by a second process, as a replica with the wrong key would).
fn baseline_handles(lang: Lang, transport: Transport) {
    let mut ws = Workspace::new();
    let secret = |name: &str, byte: char| {
        let path = ws.tmp.path().join(name);
        std::fs::write(&path, byte.to_string().repeat(40)).expect("write secret");
        path.display().to_string()
    };
    let (ours, theirs) = (secret("ours.key", 'a'), secret("theirs.key", 'b'));
    ws.serve_args = vec!["--state-secret-file".into(), theirs];
    let other = http_server(&ws);
    ws.serve_args = vec!["--state-secret-file".into(), ours];
    let foreign_url = format!("foreign_url={}", other.url);
    let f = run(&ws, lang, transport, "handles", &[&foreign_url]).facts;
    assert_eq!(
        ws.file("notes.txt").as_deref(),
        Some("ALPHA LINE\nneedle: the quick brown fox\nOMEGA LINE\n"),
        "{f}"
    );
    for case in ["replayed", "forged", "unread", "foreign"] {
        assert_eq!(f[case]["code"], "stale_baseline", "{case}: {f}");
    }
    // The two edits were asked about, none of the refused ones.
    assert_eq!(f["asked"], 2, "{f}");
    // The principal is in the session log.
    let principals: Vec<Value> = ws
        .events()
        .iter()
        .filter(|e| e["type"] == "tool/call")
        .map(|e| e["principal"].clone())
        .collect();
    assert!(
        !principals.is_empty() && principals.iter().all(|p| p == "http:anonymous"),
        "{principals:?}"
    );
}

/// 8. Cancelling a call that spins interrupts the guest.
fn cancel_spin(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    ws.toolbox(&format!(
        "version = 1\n\
         [[component]]\n\
         source = \"builtin:read\"\n\
         [[component]]\n\
         source = '{}'\n\
         [component.policy]\n\
         decision = \"allow\"\n\
         [component.policy.limits]\n\
         timeout_ms = 30000\n\
         fuel = 1000000000000000\n",
        toolhost_guests::GUEST_HOSTILE
    ));
    let ran = run(&ws, lang, transport, "cancel", &["after=1.0"]);
    let (call, result) = ws
        .wait_for_result("spin", Duration::from_secs(15))
        .unwrap_or_else(|| {
            panic!(
                "no tool/result for spin in the session log within 15 s of the client's end: {:?}",
                ws.events()
            )
        });
    assert_eq!(
        result["code"], "cancelled",
        "the spin call's result: {result}"
    );
    let took_ms = result["tsMs"]
        .as_u64()
        .unwrap_or(u64::MAX)
        .saturating_sub(call["tsMs"].as_u64().unwrap_or(0));
    assert!(
        took_ms < 10_000,
        "the spin call ended {took_ms} ms after it started, not soon after the cancel (deadline 30 s)"
    );
    eprintln!(
        "cancel: spin ended {took_ms} ms after it started (client cancelled after {} s)",
        ran.facts["cancelled_after_s"]
    );
}

/// 9. Hot reload while a client is connected.
fn hot_reload(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let toolbox = ws.toolbox("version = 1\n[[component]]\nsource = \"builtin:read\"\n");
    let arg = format!("toolbox={}", toolbox.display());
    let f = run(&ws, lang, transport, "reload", &[&arg]).facts;
    assert_eq!(f["before"], json!(["read"]));
    // Appended: the list before is a prefix of the list after.
    assert_eq!(f["after"], json!(["read", "list"]));
    assert_eq!(f["after_broken"], json!(["read", "list"]));
    assert!(f["notified_after_s"].as_f64().is_some_and(|s| s < 10.0));
}

/// A one-page HTTP server on 127.0.0.1 counting its requests.
fn page_server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("local addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, hits)
}

/// 10. fetch under a network allow-list of exactly one host:port.
fn fetch_allow_list(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let (ok_port, ok_hits) = page_server(
        "<html><head><title>Fixture</title></head>\
         <body><h1>Fixture page</h1><p>token-7f3a served on loopback</p></body></html>",
    );
    let (other_port, other_hits) = page_server("<html><body>must not be reached</body></html>");
    ws.toolbox(&format!(
        "version = 1\n\
         [[component]]\n\
         source = \"builtin:fetch\"\n\
         [component.policy]\n\
         decision = \"allow\"\n\
         [component.policy.network]\n\
         allow = [\"127.0.0.1:{ok_port}\"]\n"
    ));
    let ok = format!("ok=http://127.0.0.1:{ok_port}/page.html");
    let denied = format!("denied=http://127.0.0.1:{other_port}/page.html");
    let f = run(
        &ws,
        lang,
        transport,
        "fetch",
        &[&ok, &denied, "token=token-7f3a"],
    )
    .facts;
    assert_eq!(f["page"]["status"], 200);
    assert!(
        f["page"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Fixture page") && !t.contains("<h1>")),
        "the page as text: {}",
        f["page"]
    );
    assert_eq!(f["denied"]["code"], "network_denied");
    assert!(ok_hits.load(Ordering::SeqCst) >= 1);
    assert_eq!(
        other_hits.load(Ordering::SeqCst),
        0,
        "the denied request reached the other port"
    );
}

/// 11. A harness tests an agent against recorded tools: the session
///     recorded with `--seed --record` plays back with `--replay` after the
///     files are gone, and the client sees the same values.
fn record_replay(lang: Lang, transport: Transport) {
    let mut ws = Workspace::new();
    let cassette = ws.tmp.path().join("session.cassette.jsonl");
    let path = cassette.display().to_string();
    ws.serve_args = vec!["--seed".into(), "5".into(), "--record".into(), path.clone()];
    let recorded = run(&ws, lang, transport, "allowed", &[]).facts;
    let lines = std::fs::read_to_string(&cassette).expect("the cassette was written");
    assert!(lines.lines().count() > 5, "header and calls: {lines}");
    for entry in ["notes.txt", "src", "docs"] {
        let p = ws.dir.join(entry);
        let _ = std::fs::remove_file(&p).or_else(|_| std::fs::remove_dir_all(&p));
    }
    ws.serve_args = vec!["--replay".into(), path];
    let replayed = run(&ws, lang, transport, "allowed", &[]).facts;
    assert_eq!(recorded["read"], replayed["read"]);
    assert_eq!(recorded["list_recursive"], replayed["list_recursive"]);
    assert_eq!(recorded["grep"], replayed["grep"]);
}

/// 12. Every result of the 2026-07-28 revision, sent raw, is valid against
///     the revision's schema (the Python SDK's generated wire models): the
///     discovery, lists, calls, errors, an artifact page, and an approval's
///     `input_required` result and its answered retry.
fn wire(transport: Transport) {
    let ws = Workspace::new();
    let f = run(&ws, Lang::Py, transport, "wire", &[]).facts;
    let validated = strings(&f, "validated");
    for expected in [
        "server/discover:DiscoverResult",
        "tools/list:ListToolsResult",
        "resources/list:ListResourcesResult",
        "tools/call:CallToolResult",
        "resources/read:ReadResourceResult",
        "tools/call:InputRequiredResult",
    ] {
        assert!(validated.contains(&expected), "{expected} in {validated:?}");
    }
    assert_eq!(
        ws.file("wire.txt").as_deref(),
        Some("written on the wire\n")
    );
}

/// 13. An approval's `requestState` opens once, for its own call and
///     caller, within its lifetime: tampered, moved, replayed and expired
///     states are refused (`approval_denied`), and the session log shows
///     each attempt and the one approved run.
fn mrtr(transport: Transport) {
    let mut ws = Workspace::new();
    ws.approval_timeout_s = 2;
    let f = run(
        &ws,
        Lang::PyClient(MODERN),
        transport,
        "mrtr",
        &["expire_after=3.5"],
    )
    .facts;
    for (k, why) in [
        ("tampered", "not one this server sealed"),
        ("other_call", "not one this server sealed"),
        ("replayed", "already used"),
        ("expired", "expired"),
    ] {
        assert_eq!(f[k]["code"], "approval_denied", "{k}: {f}");
        assert!(
            f[k]["message"].as_str().is_some_and(|m| m.contains(why)),
            "{k}: {f}"
        );
    }
    assert_eq!(ws.file("mrtr.txt"), None, "a refused state wrote");
    let events = ws.events();
    let results: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool/result" && e["tool"] == "write")
        .map(|e| e["code"].as_str().unwrap_or("ok"))
        .collect();
    assert_eq!(
        results,
        [
            "approval_pending",
            "approval_denied",
            "approval_denied",
            "ok",
            "approval_denied",
            "approval_pending",
            "approval_denied"
        ],
        "{events:?}"
    );
}

/// 14b. A search during a first start: once `search_tools` is listed (a
///     small catalog component deferred and loaded), a search while the
///     slow Python component still compiles either finds its tool or names
///     the component as still loading, never a silent miss; searched again
///     until nothing loads, it finds the tool, which answers; and a search
///     in other words than a tool's own finds it by meaning.
fn cold_search(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    let policy = repo_root().join("guest-tools/python/tools/table/policy.toml");
    std::fs::create_dir_all(ws.dir.join("catalog")).expect("mkdir catalog");
    for server in ["grafana", "google_maps"] {
        std::fs::write(
            ws.dir.join(format!("catalog/{server}.wasm")),
            toolhost_guests::catalog_guest(server),
        )
        .expect("write a catalog component");
    }
    ws.toolbox(&format!(
        "version = 1
         [[component]]
source = \"builtin:read\"
         [[component]]
source = \"catalog/grafana.wasm\"
advertise = \"deferred\"
         [component.policy]
decision = \"allow\"
         [[component]]
source = \"catalog/google_maps.wasm\"
advertise = \"deferred\"
         [component.policy]
decision = \"allow\"
         [[component]]
source = '{}'
policy = '{}'
advertise = \"deferred\"
",
        python_component().display(),
        policy.display()
    ));
    ws.cities();
    let f = run(
        &ws,
        lang,
        transport,
        "cold_search",
        &[
            "query=the columns and types of a CSV table file",
            "slow=table_schema",
            r#"args={"path": "cities.csv"}"#,
            "paraphrase=how high above sea level is Denver",
        ],
    )
    .facts;
    // No word in common with the tool's name or description: found by
    // the search model's ranking.
    let meant = f["paraphrase_found"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(meant.iter().any(|n| n == "maps_elevation"), "{f}");
    let has = |key: &str| {
        f[key]
            .as_array()
            .is_some_and(|t| t.iter().any(|n| n == "table_schema"))
    };
    let loading = f["first_loading"]["components"]
        .as_array()
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.as_str().is_some_and(|c| c.ends_with("tool_table.wasm")))
        });
    // Found, or said to be loading: exactly one of the two.
    assert!(has("first_found") != loading, "{f}");
    assert!(has("settled_found"), "{f}");
    assert_eq!(f["slow_value"]["rows"], 2, "{f}");
}

/// 14. A first start with a slow component: the client connects and lists
///     at once (the built-ins are precompiled), is told what is still
///     compiling, and gets the slow component's tools with
///     `tools/list_changed` when they are ready.
fn cold_start(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    ws.toolbox_with_python();
    let f = run(
        &ws,
        lang,
        transport,
        "cold",
        &["slow=table_schema", r#"args={"path": "cities.csv"}"#],
    )
    .facts;
    let connect = f["connect_s"].as_f64().unwrap_or(f64::MAX);
    assert!(connect < 5.0, "connected after {connect} s: {f}");
    let first = f["first_list_s"].as_f64().unwrap_or(f64::MAX);
    assert!(first < 5.0, "first tools/list after {first} s: {f}");
    let first_tools = f["first_tools"].as_array().expect("first tools");
    assert!(
        first_tools.iter().any(|t| t == "read"),
        "the precompiled built-ins are listed at once: {f}"
    );
    if !first_tools.iter().any(|t| t == "table_schema") {
        // Listed before the Python component was ready: the result says so.
        let loading = f["first_meta"]["loading"].as_array().expect("loading");
        assert!(
            loading
                .iter()
                .any(|c| c.as_str().is_some_and(|c| c.ends_with("tool_table.wasm"))),
            "{f}"
        );
        assert!(f["changes"].as_u64().unwrap_or(0) >= 1, "{f}");
    }
    assert_eq!(f["slow_value"]["rows"], 2, "{f}");
    assert!(
        f["logs"]
            .as_array()
            .expect("logs")
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.contains("tool_table.wasm"))),
        "the client that asked for log messages heard about the compile: {f}"
    );
}

/// 14. Code mode (`--mode code`): the model is offered `run_code` alone, its
///     description declaring the tools; scripts read and grep, catch a
///     denied path, write through asking tools (every inner `ask` reaches
///     the person: over 2026-07-28 as `input_required` round trips, the
///     script going on from its checkpoint), throw after two writes leaving
///     the tree as it was, and spin until stopped with nothing committed.
fn code_mode(lang: Lang, transport: Transport) {
    code_mode_in(lang, transport, "javascript");
}

/// [`code_mode`] with scripts in `language` (the server's `--language`;
/// the scripts `tests/clients/scripts/*.js` or `*.py`).
fn code_mode_in(lang: Lang, transport: Transport, language: &str) {
    let mut ws = Workspace::new();
    ws.serve_args = ["--mode", "code", "--language", language]
        .map(String::from)
        .to_vec();
    let f = run(
        &ws,
        lang,
        transport,
        "code",
        &[&format!("language={language}")],
    )
    .facts;
    assert_eq!(f["tools"], json!(["run_code"]), "{f}");
    let bytes = f["description_bytes"].as_u64().unwrap_or(0);
    assert!((1_000..16_384).contains(&bytes), "{f}");
    assert_eq!(
        f["summary"],
        json!({
            "files": ["/workspace/notes.txt"],
            "lines": 3,
            "last": "omega line"
        }),
        "{f}"
    );
    assert_eq!(f["denied"]["name"], "ToolError", "{f}");
    assert_eq!(f["denied"]["code"], "path_denied", "{f}");
    assert_eq!(f["denied"]["tool"], "read", "{f}");
    // Accepted: the edit and the script's effects, committed together.
    assert_eq!(f["accepted"], json!({"edit": "done"}), "{f}");
    assert_eq!(
        ws.file("from-script-accepted.txt").as_deref(),
        Some(
            "written by a script
"
        )
    );
    assert_eq!(
        ws.file("notes.txt").as_deref(),
        Some(
            "alpha line
needle: the quick brown fox
omega line, edited by a script
"
        )
    );
    let calls: Vec<(&str, Value)> = f["accepted_calls"]["list"]
        .as_array()
        .expect("the script's calls in _meta")
        .iter()
        .map(|c| (c["tool"].as_str().unwrap_or(""), c["code"].clone()))
        .collect();
    assert_eq!(
        calls,
        [
            ("read", Value::Null),
            ("edit", Value::Null),
            ("write", Value::Null)
        ],
        "{f}"
    );
    // Declined: the edit's refusal was caught, the effects' was not.
    assert_eq!(f["declined"]["code"], "approval_denied", "{f}");
    assert_eq!(ws.file("from-script.txt"), None);
    assert_eq!(f["thrown"]["code"], "script_error", "{f}");
    for written in ["thrown-1.txt", "thrown-2.txt", "spun.txt"] {
        assert_eq!(ws.file(written), None, "{written} was committed");
    }
    let spun = f["spun"]["code"].as_str().unwrap_or_default();
    assert!(spun == "fuel_exhausted" || spun == "timeout", "{f}");
    // The person was asked four times: the edit, the first script's
    // effects (with its diff), the edit again, and the second script's
    // effects; never twice about one question.
    let asked = strings(&f, "asked");
    assert_eq!(asked.len(), 4, "{f}");
    assert!(
        asked[0].contains("`edit`") && asked[0].contains("notes.txt"),
        "{f}"
    );
    assert!(
        asked[1].contains("`run_code`") && asked[1].contains("from-script.txt"),
        "{f}"
    );
    // No inner call ran twice, whatever the round trips: one result per
    // call the scripts made (a call that stopped to ask, `approval_pending`,
    // ran nothing; it runs with the answer). The session log names each
    // inner call's parent.
    let events = ws.events();
    let parented: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool/call" && e["parent"].is_string())
        .collect();
    assert!(!parented.is_empty(), "no inner call names its parent");
    let ran = |tool: &str| {
        events
            .iter()
            .filter(|e| {
                e["type"] == "tool/result"
                    && e["tool"] == tool
                    && e["code"].as_str() != Some("approval_pending")
            })
            .count()
    };
    assert_eq!(ran("read"), 4, "summary, denied, accepted, declined: {f}");
    assert_eq!(ran("edit"), 2, "accepted, declined: {f}");
    assert_eq!(
        ran("write"),
        5,
        "accepted, declined, the two that threw, the one before spinning: {f}"
    );
}

/// An agent framework (`tests/clients/frameworks.py`), in its default
/// configuration, spawns `toolhost serve` for `ws` over stdio.
fn framework(ws: &Workspace, name: &str, args: &[&str]) -> Value {
    install_clients();
    let mut cmd = Command::new(clients_dir().join("frameworks/bin/python"));
    cmd.arg(repo_root().join("tests/clients/frameworks.py"))
        .arg(name)
        .arg("--cmd")
        .arg(json!(ws.serve_command()).to_string())
        .arg("--cwd")
        .arg(&ws.dir)
        .args(args)
        .env("HOME", ws.home())
        .env_remove("XDG_CACHE_HOME")
        .env("RUST_BACKTRACE", "1")
        .current_dir(&ws.dir);
    scenario_facts(&process::run(cmd, CLIENT_DEADLINE), name, "")
}

/// pydantic-ai: `TestModel(call_tools="all")` calls every tool with
/// arguments generated from its schema, through `load_mcp_toolsets`; the
/// run ends. With pydantic-ai's default error handling a tool error asks
/// the model to retry, and a model that cannot fix its arguments (this one
/// cannot) ends the run with `UnexpectedModelBehavior` once the retries are
/// spent: that is an end, and every error it saw is toolhost's, readable.
#[test]
fn pydantic_ai_calls_every_tool() {
    let ws = Workspace::new();
    let f = framework(&ws, "pydantic", &[]);
    let connect = f["connect_s"].as_f64().unwrap_or(f64::MAX);
    assert!(connect < 5.0, "{f}");
    assert_eq!(
        f["called"],
        json!([
            "toolhost_edit",
            "toolhost_grep",
            "toolhost_list",
            "toolhost_read",
            "toolhost_write"
        ]),
        "{f}"
    );
    let ended = f["ended"].as_str().unwrap_or_default();
    assert!(
        ended == "result" || ended == "retries spent",
        "the run ended with {ended}: {f}"
    );
    for (tool, outcome) in f["outcomes"].as_object().expect("outcomes") {
        let text = outcome.as_str().unwrap_or_default();
        assert!(
            text.starts_with("return") || text.contains("Error ["),
            "{tool}: {text}"
        );
    }
}

/// openai-agents: `MCPServerStdio` with its default 5 s timeouts connects
/// to a first start, and every tool's schema converts to strict mode.
#[test]
fn openai_agents_converts_every_schema_to_strict() {
    let ws = Workspace::new();
    let f = framework(&ws, "openai", &[]);
    assert_eq!(
        f["strict"],
        json!({"edit": true, "grep": true, "list": true, "read": true, "write": true}),
        "{f}"
    );
    assert_eq!(f["read_error"], false, "{f}");
    assert!(
        f["read_text"]
            .as_str()
            .is_some_and(|t| t.contains("needle"))
    );
}

/// openai-agents against a first start with a Python component: its 5 s
/// timeouts hold (the protocol never waits for the compile), and the
/// component's tools arrive and convert too.
#[test]
fn openai_agents_connects_while_a_python_component_compiles() {
    let ws = Workspace::new();
    ws.toolbox_with_python();
    let f = framework(
        &ws,
        "openai",
        &["expect=list,read,table_filter,table_schema,table_stats"],
    );
    let list = f["list_s"].as_f64().unwrap_or(f64::MAX);
    assert!(list < 5.0, "the first list after {list} s: {f}");
    for tool in [
        "list",
        "read",
        "table_filter",
        "table_schema",
        "table_stats",
    ] {
        assert_eq!(f["strict"][tool], true, "{tool}: {f}");
    }
}

/// langchain-mcp-adapters: the tools load, a read answers, a path outside
/// the workspace reads as an error naming `path_denied`.
#[test]
fn langchain_loads_reads_and_reports_a_denied_path() {
    let ws = Workspace::new();
    let f = framework(&ws, "langchain", &[]);
    assert_eq!(
        f["tools"],
        json!(["edit", "grep", "list", "read", "write"]),
        "{f}"
    );
    assert!(
        f["read"].as_str().is_some_and(|t| t.contains("needle")),
        "{f}"
    );
    assert!(
        f["denied"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("path_denied")),
        "{f}"
    );
}

/// A contract 0.3.0 tool's progress and log messages reach the SDK's own
/// callbacks (the conformance fixtures, under the third-party default
/// policy), in order, and only when the client asked for them.
fn context_reports(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    ws.toolbox(&format!(
        "version = 1\n[[component]]\nsource = {:?}\n[component.policy]\ndecision = \"allow\"\n",
        toolhost_guests::GUEST_CONFORMANCE
    ));
    let f = run(&ws, lang, transport, "context", &[]).facts;
    let progress: Vec<(f64, f64)> = f["progress"]
        .as_array()
        .unwrap_or_else(|| panic!("{f}"))
        .iter()
        .map(|p| {
            (
                p["progress"].as_f64().unwrap_or(-1.0),
                p["total"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    assert_eq!(
        progress,
        [(0.0, 100.0), (50.0, 100.0), (100.0, 100.0)],
        "{f}"
    );
    assert_eq!(
        f["logs"],
        json!([
            {"level": "info", "logger": "test_tool_with_logging", "data": "Tool execution started"},
            {"level": "info", "logger": "test_tool_with_logging", "data": "Tool processing data"},
            {"level": "info", "logger": "test_tool_with_logging", "data": "Tool execution completed"},
        ]),
        "{f}"
    );
}

/// Code mode: what a script's calls report while they run (the conformance
/// fixtures' progress and log) reaches the client live, as the `run_code`
/// call's own, each message naming the call; the progress one growing
/// sequence.
fn code_context_reports(lang: Lang, transport: Transport, language: &str) {
    let ws = Workspace::new();
    ws.toolbox(&format!(
        "version = 1\nmode = \"code\"\nlanguage = \"{language}\"\n[[component]]\nsource = {:?}\n[component.policy]\ndecision = \"allow\"\n",
        toolhost_guests::GUEST_CONFORMANCE
    ));
    let f = run(
        &ws,
        lang,
        transport,
        "code_context",
        &[&format!("language={language}")],
    )
    .facts;
    assert_eq!(f["result"], "done", "{f}");
    assert_eq!(
        f["progress"],
        json!([
            {"progress": 1.0, "message": "tools.test_tool_with_progress#1: 0/100"},
            {"progress": 2.0, "message": "tools.test_tool_with_progress#1: 50/100"},
            {"progress": 3.0, "message": "tools.test_tool_with_progress#1: 100/100"},
        ]),
        "{f}"
    );
    let logs: Vec<&str> = f["logs"]
        .as_array()
        .unwrap_or_else(|| panic!("{f}"))
        .iter()
        .filter_map(|l| l["data"].as_str())
        .collect();
    assert_eq!(
        logs,
        [
            "tools.test_tool_with_logging#2: Tool execution started",
            "tools.test_tool_with_logging#2: Tool processing data",
            "tools.test_tool_with_logging#2: Tool execution completed",
        ],
        "{f}"
    );
}

#[test]
fn pyclient_auto_stdio_code_context_reports() {
    code_context_reports(Lang::PyClient(AUTO), Transport::Stdio, "javascript");
}

#[test]
fn pyclient_auto_http_code_context_reports_python() {
    code_context_reports(Lang::PyClient(AUTO), Transport::Http, "python");
}

/// A plain component (exported functions, no `toolhost:tool`) served over
/// MCP: its tools listed with the descriptions and schemas of its WIT,
/// called, and failing with their codes. Before 2026-07-28 a tool whose
/// value is not an object is listed without an `outputSchema` (the
/// TypeScript SDK refuses the listing otherwise); from 2026-07-28 it keeps
/// it and its value is the `structuredContent`.
fn plain_component_served(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    ws.toolbox(&format!(
        "version = 1\n[[component]]\nsource = '{}'\n[component.policy]\ndecision = \"allow\"\n",
        plain_component().display()
    ));
    let f = run(&ws, lang, transport, "plain", &[]).facts;
    let ints = json!({
        "a": 255, "b": -128, "c": 65535, "d": -32768, "e": 4294967295u32,
        "f": -2147483648i32, "g": "18446744073709551615", "h": "-9223372036854775808",
    });
    assert_eq!(f["integers"], ints, "{f}");
    assert_eq!(f["not_found"]["code"], "not_found", "{f}");
    let modern = f["protocol_version"].as_str() >= Some("2026-07-28");
    if modern {
        assert_eq!(f["greet_output_schema"], json!({"type": "string"}), "{f}");
        assert_eq!(f["greet_structured"], json!("Hello, Ana!"), "{f}");
    } else {
        assert_eq!(f["greet_output_schema"], Value::Null, "{f}");
    }
    if lang == Lang::Ts {
        assert_eq!(f["integers_output_schema_type"], "object", "{f}");
    }
}

macro_rules! tests {
    ($($test:ident => $scenario:ident($lang:ident, $transport:ident);)*) => {
        $(
            #[test]
            fn $test() {
                $scenario(Lang::$lang, Transport::$transport);
            }
        )*
    };
}

tests! {
    py_stdio_tools_list => tools_list(Py, Stdio);
    py_stdio_allowed_calls => allowed_calls(Py, Stdio);
    py_stdio_tool_errors => tool_errors(Py, Stdio);
    py_stdio_denied_paths => denied_paths(Py, Stdio);
    py_stdio_ask_accept => ask_accept(Py, Stdio);
    py_stdio_effects => effects(Py, Stdio);
    py_stdio_ask_decline => ask_decline(Py, Stdio);
    py_stdio_ask_timeout => ask_timeout(Py, Stdio);
    py_stdio_no_elicitation => no_elicitation(Py, Stdio);
    py_stdio_cancel_spin => cancel_spin(Py, Stdio);
    py_stdio_hot_reload => hot_reload(Py, Stdio);
    py_stdio_fetch_allow_list => fetch_allow_list(Py, Stdio);
    py_stdio_record_replay => record_replay(Py, Stdio);
    py_stdio_context_reports => context_reports(Py, Stdio);

    py_http_tools_list => tools_list(Py, Http);
    py_http_allowed_calls => allowed_calls(Py, Http);
    py_http_tool_errors => tool_errors(Py, Http);
    py_http_denied_paths => denied_paths(Py, Http);
    py_http_ask_accept => ask_accept(Py, Http);
    py_http_ask_decline => ask_decline(Py, Http);
    py_http_ask_timeout => ask_timeout(Py, Http);
    py_http_no_elicitation => no_elicitation(Py, Http);
    py_http_separate_sessions => separate_sessions(Py, Http);
    py_http_cancel_spin => cancel_spin(Py, Http);
    py_http_hot_reload => hot_reload(Py, Http);
    py_http_fetch_allow_list => fetch_allow_list(Py, Http);
    py_http_context_reports => context_reports(Py, Http);

    ts_stdio_tools_list => tools_list(Ts, Stdio);
    ts_stdio_allowed_calls => allowed_calls(Ts, Stdio);
    ts_stdio_tool_errors => tool_errors(Ts, Stdio);
    ts_stdio_denied_paths => denied_paths(Ts, Stdio);
    ts_stdio_ask_accept => ask_accept(Ts, Stdio);
    ts_stdio_ask_decline => ask_decline(Ts, Stdio);
    ts_stdio_ask_timeout => ask_timeout(Ts, Stdio);
    ts_stdio_no_elicitation => no_elicitation(Ts, Stdio);
    ts_stdio_cancel_spin => cancel_spin(Ts, Stdio);
    ts_stdio_hot_reload => hot_reload(Ts, Stdio);
    ts_stdio_fetch_allow_list => fetch_allow_list(Ts, Stdio);

    ts_http_tools_list => tools_list(Ts, Http);
    ts_http_allowed_calls => allowed_calls(Ts, Http);
    ts_http_tool_errors => tool_errors(Ts, Http);
    ts_http_denied_paths => denied_paths(Ts, Http);
    ts_http_ask_accept => ask_accept(Ts, Http);
    ts_http_ask_decline => ask_decline(Ts, Http);
    ts_http_ask_timeout => ask_timeout(Ts, Http);
    ts_http_no_elicitation => no_elicitation(Ts, Http);
    ts_http_separate_sessions => separate_sessions(Ts, Http);
    ts_http_cancel_spin => cancel_spin(Ts, Http);
    ts_http_record_replay => record_replay(Ts, Http);

    py_stdio_plain_component => plain_component_served(Py, Stdio);
    ts_stdio_plain_component => plain_component_served(Ts, Stdio);
    ts_http_plain_component => plain_component_served(Ts, Http);

    py_stdio_code_mode => code_mode(Py, Stdio);
    py_http_code_mode => code_mode(Py, Http);
    ts_stdio_code_mode => code_mode(Ts, Stdio);
    ts_http_cold_search => cold_search(Ts, Http);
    ts_http_code_mode => code_mode(Ts, Http);
    ts_http_code_mode_python => code_mode_python(Ts, Http);
}

/// [`code_mode`], the scripts in Python.
fn code_mode_python(lang: Lang, transport: Transport) {
    code_mode_in(lang, transport, "python");
}

/// The Python SDK's high-level `Client`, as its README shows it.
macro_rules! client_tests {
    ($($test:ident => $scenario:ident($mode:ident, $transport:ident);)*) => {
        $(
            #[test]
            fn $test() {
                $scenario(Lang::PyClient($mode), Transport::$transport);
            }
        )*
    };
}

client_tests! {
    pyclient_auto_stdio_tools_list => tools_list(AUTO, Stdio);
    pyclient_auto_stdio_allowed_calls => allowed_calls(AUTO, Stdio);
    pyclient_auto_stdio_tool_errors => tool_errors(AUTO, Stdio);
    pyclient_auto_stdio_denied_paths => denied_paths(AUTO, Stdio);
    pyclient_auto_stdio_ask_accept => ask_accept(AUTO, Stdio);
    pyclient_auto_stdio_effects => effects(AUTO, Stdio);
    pyclient_auto_stdio_ask_decline => ask_decline(AUTO, Stdio);
    pyclient_auto_stdio_no_elicitation => no_elicitation(AUTO, Stdio);
    pyclient_auto_stdio_cancel_spin => cancel_spin(AUTO, Stdio);
    pyclient_auto_stdio_hot_reload => hot_reload(AUTO, Stdio);
    pyclient_auto_stdio_cold_start => cold_start(AUTO, Stdio);
    pyclient_auto_stdio_cold_search => cold_search(AUTO, Stdio);
    pyclient_auto_stdio_context_reports => context_reports(AUTO, Stdio);

    pyclient_auto_http_tools_list => tools_list(AUTO, Http);
    pyclient_auto_http_allowed_calls => allowed_calls(AUTO, Http);
    pyclient_auto_http_tool_errors => tool_errors(AUTO, Http);
    pyclient_auto_http_ask_accept => ask_accept(AUTO, Http);
    pyclient_auto_http_ask_decline => ask_decline(AUTO, Http);
    pyclient_auto_http_no_elicitation => no_elicitation(AUTO, Http);
    pyclient_auto_http_hot_reload => hot_reload(AUTO, Http);
    pyclient_auto_http_cold_start => cold_start(AUTO, Http);
    pyclient_auto_http_context_reports => context_reports(AUTO, Http);

    pyclient_modern_stdio_tools_list => tools_list(MODERN, Stdio);
    pyclient_modern_stdio_ask_accept => ask_accept(MODERN, Stdio);
    pyclient_modern_http_tools_list => tools_list(MODERN, Http);
    pyclient_modern_http_ask_accept => ask_accept(MODERN, Http);
    pyclient_modern_http_baseline_handles => baseline_handles(MODERN, Http);
    pyclient_auto_http_baseline_handles => baseline_handles(AUTO, Http);

    pyclient_legacy_stdio_tools_list => tools_list(LEGACY, Stdio);
    pyclient_legacy_stdio_ask_accept => ask_accept(LEGACY, Stdio);
    pyclient_legacy_http_tools_list => tools_list(LEGACY, Http);
    pyclient_legacy_http_ask_accept => ask_accept(LEGACY, Http);
    pyclient_legacy_stdio_cold_start => cold_start(LEGACY, Stdio);
    pyclient_legacy_http_context_reports => context_reports(LEGACY, Http);

    pyclient_auto_stdio_plain_component => plain_component_served(AUTO, Stdio);
    pyclient_auto_http_plain_component => plain_component_served(AUTO, Http);

    pyclient_auto_stdio_code_mode => code_mode(AUTO, Stdio);
    pyclient_auto_http_code_mode => code_mode(AUTO, Http);
    pyclient_legacy_stdio_code_mode => code_mode(LEGACY, Stdio);
    pyclient_legacy_http_code_mode => code_mode(LEGACY, Http);
    pyclient_auto_stdio_code_mode_python => code_mode_python(AUTO, Stdio);
    pyclient_auto_http_code_mode_python => code_mode_python(AUTO, Http);
}

/// Progressive discovery: the recorded tool lists of four public servers
/// (GitHub, Grafana, Playwright and Slack: 289 tools, from
/// `tests/discovery/catalog/`) are past `defer_over`, so the client lists
/// `read` and `search_tools` only, twice the same; its search finds
/// Slack's tool with the schema `tools/list` would have shown; called by
/// name, the tool asks as its policy says (accepted, then declined).
fn discovery(lang: Lang, transport: Transport) {
    let ws = Workspace::new();
    ws.toolbox_with_catalog();
    let f = run(
        &ws,
        lang,
        transport,
        "discovery",
        &[
            "query=post a message to a Slack channel",
            "tool=slack_post_message",
            r#"args={"channel_id":"C123","text":"hello"}"#,
        ],
    )
    .facts;
    assert_eq!(f["tools"], json!(["read", "search_tools"]), "{f}");
    assert_eq!(f["next_cursor"], Value::Null, "{f}");
    assert_eq!(f["list_stable"], true, "{f}");
    assert!(strings(&f, "found").contains(&"slack_post_message"), "{f}");
    assert_eq!(
        f["found_tool"]["inputSchema"]["required"],
        json!(["channel_id", "text"]),
        "{f}"
    );
    assert_eq!(f["accepted"]["tool"], "slack_post_message", "{f}");
    assert_eq!(f["declined"]["code"], "approval_denied", "{f}");
    let asked = strings(&f, "asked");
    assert_eq!(asked.len(), 2, "{f}");
    assert!(asked[0].contains("`slack_post_message`"), "{f}");
}

/// `toolhost tools --format anthropic` of a deferring toolbox, judged by
/// the Anthropic SDK's own types for the Messages API's `tools`
/// (`tests/clients/anthropic_tools.py`): every entry a `ToolParam` or the
/// BM25 tool search, no undeclared key, the deferred tools marked.
#[test]
fn the_anthropic_projection_validates_against_the_anthropic_sdk() {
    install_clients();
    let ws = Workspace::new();
    ws.toolbox_with_catalog();
    let out = Command::new(TOOLHOST)
        .args(["tools", "--format", "anthropic"])
        .env("HOME", ws.home())
        .current_dir(&ws.dir)
        .output()
        .expect("toolhost tools");
    succeeded(&out, "toolhost tools --format anthropic");
    let listing = ws.tmp.path().join("anthropic.json");
    std::fs::write(&listing, &out.stdout).expect("write the listing");
    let out = Command::new(clients_dir().join("venv/bin/python"))
        .arg(repo_root().join("tests/clients/anthropic_tools.py"))
        .arg(&listing)
        .output()
        .expect("anthropic_tools.py");
    succeeded(&out, "anthropic_tools.py");
    let facts: Value = serde_json::from_slice(&out.stdout).expect("facts");
    assert_eq!(facts["tools"], 290, "{facts}");
    assert_eq!(facts["deferred"], 289, "{facts}");
    assert_eq!(
        facts["search"],
        json!([{"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}])
    );
}

client_tests! {
    pyclient_auto_stdio_discovery => discovery(AUTO, Stdio);
    pyclient_auto_http_discovery => discovery(AUTO, Http);
    pyclient_legacy_stdio_discovery => discovery(LEGACY, Stdio);
}

/// An agent framework's facts against a server in code mode (`--mode code`).
fn framework_in_code_mode(name: &str) -> Value {
    let mut ws = Workspace::new();
    ws.serve_args = vec!["--mode".into(), "code".into()];
    framework(&ws, name, &[])
}

#[test]
fn pydantic_ai_runs_a_python_script() {
    let mut ws = Workspace::new();
    ws.serve_args = ["--mode", "code", "--language", "python"]
        .map(String::from)
        .to_vec();
    let f = framework(&ws, "pydantic_code", &["language=python"]);
    assert_eq!(f["tools"], json!(["toolhost_run_code"]), "{f}");
    assert_eq!(
        f["returned"]["result"],
        json!({"lines": 3, "needle": "needle: the quick brown fox"}),
        "{f}"
    );
}

#[test]
fn pydantic_ai_lists_run_code_and_calls_it() {
    let f = framework_in_code_mode("pydantic_code");
    assert_eq!(f["tools"], json!(["toolhost_run_code"]), "{f}");
    assert_eq!(
        f["returned"]["result"],
        json!({"lines": 3, "needle": "needle: the quick brown fox"}),
        "{f}"
    );
}

#[test]
fn openai_agents_lists_run_code_and_calls_it() {
    let f = framework_in_code_mode("openai_code");
    assert_eq!(f["tools"], json!(["run_code"]), "{f}");
    assert_eq!(f["strict"], json!({"run_code": true}), "{f}");
    assert_eq!(f["error"], false, "{f}");
    assert!(
        f["text"]
            .as_str()
            .is_some_and(|t| t.contains("needle: the quick brown fox")),
        "{f}"
    );
}

#[test]
fn langchain_loads_run_code_and_calls_it() {
    let f = framework_in_code_mode("langchain_code");
    assert_eq!(f["tools"], json!(["run_code"]), "{f}");
    assert!(
        f["text"]
            .as_str()
            .is_some_and(|t| t.contains("needle: the quick brown fox")),
        "{f}"
    );
}

#[test]
fn wire_stdio_every_2026_07_28_result_validates() {
    wire(Transport::Stdio);
}

#[test]
fn wire_http_every_2026_07_28_result_validates() {
    wire(Transport::Http);
}

#[test]
fn pyclient_modern_stdio_request_states_open_once() {
    mrtr(Transport::Stdio);
}

#[test]
fn pyclient_modern_http_request_states_open_once() {
    mrtr(Transport::Http);
}
