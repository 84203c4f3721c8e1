//! The second wall, proven with a simulated escape: a test guest calls the
//! test-only `toolhost:escape/hatch` import, which runs native operations
//! in the process that runs it, as a guest that broke out of wasmtime
//! would. In a worker (the default for a component that is not built in)
//! every attempt on what its policy did not grant fails, and its grants
//! still work; the same guest in-process succeeds, so the test can fail.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use serde_json::{Value, json};
use std::path::Path;
use support::fleet::{Replica, Stateless, error_code, result_of};
use support::process::children;

/// A served toolbox and the secrets around it.
struct Scene {
    _tmp: tempfile::TempDir,
    server: Replica,
    client: Stateless,
    root: std::path::PathBuf,
    journal: std::path::PathBuf,
    n: u32,
}

const SECRET: &str = "STATE-SECRET-0123456789abcdef-0123456789abcdef";

fn scene(isolation: &str) -> Scene {
    scene_with(isolation, &[])
}

fn scene_with(isolation: &str, env: &[(&str, &str)]) -> Scene {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "SSH-PRIVATE-KEY").unwrap();
    std::fs::create_dir_all(root.join("ws")).unwrap();
    std::fs::write(root.join("ws/a.txt"), "hello").unwrap();
    std::fs::create_dir_all(root.join("other")).unwrap();
    std::fs::write(root.join("other/o.txt"), "OTHER-GRANT").unwrap();
    std::fs::write(root.join("secret"), SECRET).unwrap();
    let journal = root.join("journal");
    std::fs::write(
        root.join("toolhost.toml"),
        format!(
            r#"version = 1

[[component]]
source = {escape:?}
[component.policy]
decision = "allow"
{isolation}
[[component.policy.fs]]
host = "ws"
guest = "/workspace"
mode = "rw"

[[component]]
source = {escape:?}
prefix = "strict_"
[component.policy]
decision = "allow"
walls = "required"

[[component]]
source = "builtin:read"
prefix = "other_"
[component.policy]
decision = "allow"
[[component.policy.fs]]
host = "other"
guest = "/workspace"
"#,
            escape = toolhost_guests::GUEST_ESCAPE,
        ),
    )
    .unwrap();
    let server = Replica::start_with(
        &root,
        &home,
        "127.0.0.1:0",
        &[
            "--cache-dir".into(),
            toolhost_guests::test_cache_dir().display().to_string(),
            "--journal".into(),
            journal.display().to_string(),
            "--state-secret-file".into(),
            root.join("secret").display().to_string(),
        ],
        &[
            &[
                ("TOOLHOST_TEST_ESCAPE_HATCH", "1"),
                ("TOOLHOST_LOG", "info"),
            ],
            env,
        ]
        .concat(),
    );
    let client = Stateless::new(server.port);
    Scene {
        _tmp: tmp,
        server,
        client,
        root,
        journal,
        n: 0,
    }
}

impl Scene {
    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.n += 1;
        let r = self
            .client
            .call(&format!("c{}", self.n), tool, args)
            .unwrap_or_else(|e| panic!("{tool}: {e:?}\n{}", self.server.stderr()));
        result_of(&r).clone()
    }

    /// The hatch's answer: (ok, detail).
    fn attempt(&mut self, op: &str, arg: &str) -> (bool, String) {
        let r = self.call("attempt", json!({"op": op, "arg": arg}));
        assert_eq!(error_code(&r), None, "{op} {arg}: {r}");
        let v = &r["structuredContent"];
        (
            v["ok"].as_bool().unwrap(),
            v["detail"].as_str().unwrap().to_owned(),
        )
    }

    fn path(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    /// A write through the grant, committed (the journal has an entry).
    fn write_through_the_grant(&mut self) {
        let r = self.call(
            "write",
            json!({"path": "/workspace/new.txt", "content": "made"}),
        );
        assert_eq!(error_code(&r), None, "{r}");
        assert_eq!(
            std::fs::read_to_string(self.root.join("ws/new.txt")).unwrap(),
            "made"
        );
        assert!(has_files(&self.journal), "the commit was journaled");
    }
}

fn has_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some())
}

/// What an escaped guest goes for: the serving process's secrets, another
/// component's grant, the journal, the user's keys, the serving process's
/// listening socket and environment. (op, arg, what success reveals.)
fn targets(s: &Scene) -> Vec<(&'static str, String, &'static str)> {
    let pid = s.server.child.id();
    vec![
        ("read", s.path("secret"), "STATE-SECRET"),
        ("read", s.path("other/o.txt"), "OTHER-GRANT"),
        ("list", s.journal.display().to_string(), ""),
        ("read", s.path("home/.ssh/id_ed25519"), "SSH-PRIVATE-KEY"),
        (
            "connect",
            format!("127.0.0.1:{}", s.server.port),
            "connected",
        ),
        (
            "read",
            format!("/proc/{pid}/environ"),
            "TOOLHOST_TEST_ESCAPE_HATCH",
        ),
        ("spawn", "/bin/sh".into(), "escaped"),
        ("signal", "parent".into(), "0"),
        ("socket", String::new(), ""),
        ("bind", "127.0.0.1:0".into(), "bound"),
        ("write", s.path("ws/a.txt"), "written"),
    ]
}

#[test]
fn an_escaped_guest_in_a_worker_reaches_nothing_its_policy_did_not_grant() {
    let mut s = scene("");
    // Its first guest code, `list-tools`, ran in a worker too.
    assert!(
        s.server.stderr().contains("tools listed in a worker"),
        "{}",
        s.server.stderr()
    );
    s.write_through_the_grant();
    for (op, arg, _) in targets(&s) {
        let (ok, detail) = s.attempt(op, &arg);
        assert!(!ok, "{op} {arg} got through the walls: {detail}");
    }
    // The kernel's own refusals, of what has no path to grant.
    for op in [
        "ptrace",
        "process_vm_readv",
        "unshare",
        "bpf",
        "mount",
        "keyctl",
        "userfaultfd",
        "perf_event_open",
    ] {
        let (ok, detail) = s.attempt(op, "parent");
        assert!(!ok, "{op} got through the walls: {detail}");
        assert!(detail.contains("Operation not permitted"), "{op}: {detail}");
    }
    for path in ["/proc/1/environ", "/etc/passwd", "/"] {
        let op = if path == "/" { "list" } else { "read" };
        let (ok, detail) = s.attempt(op, path);
        assert!(!ok, "{op} {path} got through the walls: {detail}");
    }
    // What it was granted it still reaches: its read-write grant reads,
    // natively too (writes go through staging only)…
    assert_eq!(
        s.attempt("read", &s.path("ws/a.txt")),
        (true, "hello".into())
    );
    // …and through WASI, as a tool does.
    let r = s.call("read", json!({"path": "/workspace/a.txt"}));
    assert_eq!(r["structuredContent"]["content"], "hello", "{r}");
    // An exec kills the worker (seccomp), which is replaced.
    let r = s.call("attempt", json!({"op": "exec", "arg": "/bin/sh"}));
    assert_eq!(error_code(&r).as_deref(), Some("worker_died"), "{r}");
    let reason = r["_meta"]["toolhost"]["error"]["info"]["reason"].to_string();
    assert!(reason.contains("seccomp"), "{r}");
    let r = s.call("read", json!({"path": "/workspace/a.txt"}));
    assert_eq!(r["structuredContent"]["content"], "hello", "{r}");
    assert!(
        s.server.stderr().contains("a worker died"),
        "{}",
        s.server.stderr()
    );
    // The other component's grant still serves it.
    let r = s.call("other_read", json!({"path": "/workspace/o.txt"}));
    assert_eq!(error_code(&r), None, "{r}");
    // Workers end with the serving process, however it ends.
    let workers = children(s.server.child.id());
    assert!(!workers.is_empty());
    s.server.kill();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while workers
        .iter()
        .any(|w| Path::new(&format!("/proc/{w}")).exists())
    {
        assert!(
            std::time::Instant::now() < until,
            "workers outlived the serving process: {workers:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn the_same_escape_in_process_reaches_everything() {
    let mut s = scene(r#"isolation = "in-process""#);
    s.write_through_the_grant();
    for (op, arg, reveals) in targets(&s) {
        let (ok, detail) = s.attempt(op, &arg);
        assert!(ok, "{op} {arg} failed in-process: {detail}");
        assert!(detail.contains(reveals), "{op} {arg}: {detail}");
    }
}

#[test]
fn a_kernel_without_a_wall_is_reported_and_required_walls_refuse() {
    let pretend = [("TOOLHOST_TEST_PRETEND_NO_WALLS", "landlock")];
    let mut s = scene_with("", &pretend);
    let (status, body) = support::fleet::get(s.server.port, "/readyz").unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("MISSING landlock"), "{body}");
    assert!(
        s.server.stderr().contains("this kernel lacks landlock"),
        "{}",
        s.server.stderr()
    );
    // Required: not served (none of its code ran, not even list-tools),
    // and the log says why.
    let r = s.call("strict_read", json!({"path": "/workspace/a.txt"}));
    assert_eq!(error_code(&r).as_deref(), Some("unknown_tool"), "{r}");
    let stderr = s.server.stderr();
    assert!(
        stderr.contains("lacks landlock") && stderr.contains("walls = \"required\""),
        "{stderr}"
    );
    // Best effort (a local file's default): it runs.
    let r = s.call("read", json!({"path": "/workspace/a.txt"}));
    assert_eq!(r["structuredContent"]["content"], "hello", "{r}");
    // `toolhost tools` refuses the toolbox that needs what is missing…
    let tools = |args: &[&str]| {
        std::process::Command::new(support::TOOLHOST)
            .arg("tools")
            .args(args)
            .envs(pretend)
            .env("TOOLHOST_TEST_ESCAPE_HATCH", "1")
            .current_dir(&s.root)
            .output()
            .unwrap()
    };
    let out = tools(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("lacks landlock"),
        "{err}"
    );
    // …and says what is missing for one that runs without it.
    let toolbox = std::fs::read_to_string(s.root.join("toolhost.toml")).unwrap();
    let lenient = toolbox.replace("walls = \"required\"", "walls = \"best-effort\"");
    std::fs::write(s.root.join("lenient.toml"), lenient).unwrap();
    let out = tools(&["--config", "lenient.toml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("walls: Landlock: unavailable"), "{text}");
    assert!(text.contains("MISSING landlock"), "{text}");
    assert!(text.contains("guest_escape.wasm (process)"), "{text}");
    assert!(text.contains("from builtin:read (in-process)"), "{text}");
}

/// A toolbox in `dir` served over HTTP (the shared cache).
fn serve(dir: &Path, toolbox: &str) -> (Replica, Stateless) {
    std::fs::write(dir.join("toolhost.toml"), toolbox).unwrap();
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let server = Replica::start_with(
        dir,
        &home,
        "127.0.0.1:0",
        &[
            "--cache-dir".into(),
            toolhost_guests::test_cache_dir().display().to_string(),
            "--journal".into(),
            dir.join("journal").display().to_string(),
        ],
        &[("TOOLHOST_TEST_ESCAPE_HATCH", "1")],
    );
    let client = Stateless::new(server.port);
    (server, client)
}

#[test]
fn a_scripts_calls_of_a_worker_tool_share_its_transaction_and_commit_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("ws")).unwrap();
    let (server, mut client) = serve(
        &root,
        &format!(
            r#"version = 1
mode = "both"

[[component]]
source = {escape:?}
[component.policy]
decision = "allow"
[[component.policy.fs]]
host = "ws"
guest = "/workspace"
mode = "rw"

[[component]]
source = "builtin:code"
[component.policy]
decision = "allow"
callers = "model"
call_tools = true
"#,
            escape = toolhost_guests::GUEST_ESCAPE,
        ),
    );
    let script = r#"await tools.write({path: "/workspace/x.txt", content: "one"});
const seen = await tools.read({path: "/workspace/x.txt"});
await tools.write({path: "/workspace/y.txt", content: seen.content + "+two"});
return (await tools.read({path: "/workspace/y.txt"})).content;"#;
    let r = client
        .call("s1", "run_code", json!({ "code": script }))
        .unwrap_or_else(|e| panic!("{e:?}\n{}", server.stderr()));
    let r = result_of(&r);
    assert_eq!(error_code(r), None, "{r}");
    assert_eq!(r["structuredContent"]["result"], "one+two", "{r}");
    assert_eq!(
        std::fs::read_to_string(root.join("ws/x.txt")).unwrap(),
        "one"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("ws/y.txt")).unwrap(),
        "one+two"
    );
    // One journal entry for the whole script.
    let out = std::process::Command::new(support::TOOLHOST)
        .args(["history", "--journal"])
        .arg(root.join("journal"))
        .current_dir(&root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines().filter(|l| l.contains("x.txt")).count(),
        1,
        "{text}"
    );
    // A failed script commits nothing of what its worker calls wrote.
    let r = client
        .call(
            "s2",
            "run_code",
            json!({"code": r#"await tools.write({path: "/workspace/z.txt", content: "z"}); throw new Error("no");"#}),
        )
        .unwrap();
    assert!(error_code(result_of(&r)).is_some(), "{r}");
    assert!(!root.join("ws/z.txt").exists());
}

#[test]
fn a_workers_http_requests_go_through_the_serving_processs_gate() {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { break };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nConnection: close\r\n\r\nfrom the host",
            );
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    // The built-in fetch, moved into a worker by its policy.
    let (server, mut client) = serve(
        &root,
        &format!(
            r#"version = 1

[[component]]
source = "builtin:fetch"
[component.policy]
decision = "allow"
isolation = "process"
[component.policy.network]
allow = ["127.0.0.1:{port}"]
"#
        ),
    );
    let r = client
        .call(
            "f1",
            "fetch",
            json!({"url": format!("http://127.0.0.1:{port}/x")}),
        )
        .unwrap_or_else(|e| panic!("{e:?}\n{}", server.stderr()));
    let r = result_of(&r);
    assert_eq!(error_code(r), None, "{r}\n{}", server.stderr());
    assert!(r.to_string().contains("from the host"), "{r}");
}

#[test]
fn workers_run_the_serving_binary_even_after_an_upgrade_replaced_its_file() {
    use std::io::{BufRead as _, Write as _};
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let exe = root.join("toolhost");
    std::fs::copy(support::TOOLHOST, &exe).unwrap();
    std::fs::write(
        root.join("toolhost.toml"),
        format!(
            "version = 1\n[[component]]\nsource = {:?}\n[component.policy]\ndecision = \"allow\"\n",
            toolhost_guests::GUEST_HOSTILE
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(&exe)
        .args(["--cache-dir"])
        .arg(toolhost_guests::test_cache_dir())
        .args(["serve", "--no-reload"])
        .current_dir(&root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut request = |msg: Value| -> Value {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        loop {
            let line = lines.next().unwrap().unwrap();
            let m: Value = serde_json::from_str(&line).unwrap();
            if m["id"] == msg["id"] {
                return m;
            }
        }
    };
    request(support::initialize(json!(1)));
    // The tools are listed (in a worker) before the file goes.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while request(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}))["result"]["tools"]
        .as_array()
        .is_none_or(|t| t.is_empty())
    {
        assert!(std::time::Instant::now() < until, "no tools listed");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // An upgrade replaces the file with another program.
    std::fs::remove_file(&exe).unwrap();
    std::fs::copy("/bin/true", &exe).unwrap();
    let r = request(json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
        "params":{"name":"echo","arguments":{"x":1}}}));
    assert_eq!(r["result"]["isError"], false, "{r}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_tools_worker_is_walled_to_that_tools_grants_not_the_components() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    for (dir, text) in [("ws", "WORKSPACE"), ("logs", "LOGS")] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        std::fs::write(root.join(dir).join("f.txt"), text).unwrap();
    }
    // The component grants `ws`; its `attempt` tool is granted `logs`
    // instead.
    let (server, mut client) = serve(
        &root,
        &format!(
            r#"version = 1

[[component]]
source = {escape:?}
[component.policy]
decision = "allow"
[[component.policy.fs]]
host = "ws"
guest = "/workspace"
mode = "ro"
[component.policy.tools.attempt]
[[component.policy.tools.attempt.fs]]
host = "logs"
guest = "/logs"
mode = "ro"
"#,
            escape = toolhost_guests::GUEST_ESCAPE,
        ),
    );
    let mut attempt = |n: u32, path: &Path| {
        let r = client
            .call(
                &format!("a{n}"),
                "attempt",
                json!({"op": "read", "arg": path.display().to_string()}),
            )
            .unwrap_or_else(|e| panic!("{e:?}\n{}", server.stderr()));
        let v = result_of(&r)["structuredContent"].clone();
        (v["ok"].as_bool().unwrap(), v["detail"].to_string())
    };
    // Escaped, the tool reaches its own grant and not the component's.
    let (ok, detail) = attempt(1, &root.join("logs/f.txt"));
    assert!(ok && detail.contains("LOGS"), "{detail}");
    let (ok, detail) = attempt(2, &root.join("ws/f.txt"));
    assert!(
        !ok,
        "the component's grant got through the tool's walls: {detail}"
    );
    // The component's other tools still reach theirs.
    let r = client
        .call("r1", "read", json!({"path": "/workspace/f.txt"}))
        .unwrap();
    let r = result_of(&r);
    assert_eq!(r["structuredContent"]["content"], "WORKSPACE", "{r}");
}

#[test]
fn the_code_runner_runs_in_a_walled_worker_its_calls_come_back_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "hello").unwrap();
    // Only built-ins, under their default policies: `read` in process,
    // the runner in a worker.
    let (server, mut client) = serve(
        &root,
        "version = 1\nmode = \"both\"\n[[component]]\nsource = \"builtin:read\"\n",
    );
    // A server starts its workers warm, before the first call.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while children(server.child.id()).is_empty() {
        assert!(
            std::time::Instant::now() < until,
            "no warm worker: {}",
            server.stderr()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let r = client
        .call(
            "s1",
            "run_code",
            json!({"code": r#"return (await tools.read({path: "/workspace/a.txt"})).lines;"#}),
        )
        .unwrap_or_else(|e| panic!("{e:?}\n{}", server.stderr()));
    let r = result_of(&r);
    assert_eq!(error_code(r), None, "{r}\n{}", server.stderr());
    assert_eq!(r["structuredContent"]["result"], json!(["hello"]), "{r}");
    // Its worker (started warm when the toolbox loaded), and no other:
    // `read` runs in process.
    let workers = children(server.child.id());
    assert!(
        (1..=2).contains(&workers.len()),
        "{workers:?}\n{}",
        server.stderr()
    );
    // A call past the runner's own policy is refused in the serving
    // process, as a direct call's would be.
    let r = client
        .call(
            "s2",
            "run_code",
            json!({"code": r#"return await tools.read({path: "/etc/passwd"});"#}),
        )
        .unwrap();
    let text = result_of(&r).to_string();
    assert!(
        text.contains("path_outside_grant") || text.contains("denied"),
        "{text}"
    );
}
