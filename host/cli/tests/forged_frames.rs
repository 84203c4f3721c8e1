//! A serving process trusts nothing a worker sends. A test build's worker
//! lies on request (`TOOLHOST_TEST_FORGE`, see `toolhost-worker`'s
//! `forge`): it runs the call honestly, then forges its answer as a worker
//! whose sandbox was broken could. For each forgery the call is refused
//! with a stable code, the worker is stopped and a new one serves the next
//! call, and nothing it staged lands on disk.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use serde_json::{Value, json};
use support::fleet::{Replica, Stateless, error_code, result_of};

/// A `toolhost serve` whose `write` runs in a worker that forges `case`.
struct Scene {
    _tmp: tempfile::TempDir,
    server: Replica,
    client: Stateless,
    root: std::path::PathBuf,
    n: u32,
}

impl Scene {
    fn new(case: &str) -> Scene {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(root.join("ws")).unwrap();
        std::fs::write(
            root.join("toolhost.toml"),
            r#"version = 1

[[component]]
source = "builtin:write"
[component.policy]
decision = "allow"
isolation = "process"
walls = "best-effort"
[component.policy.limits]
max_write_bytes = 4096
[[component.policy.fs]]
host = "ws"
guest = "/workspace"
mode = "rw"
"#,
        )
        .unwrap();
        let server = Replica::start_with(
            &root,
            &home,
            "127.0.0.1:0",
            &[
                "--cache-dir".into(),
                toolhost_guests::test_cache_dir().display().to_string(),
            ],
            &[("TOOLHOST_TEST_FORGE", case), ("TOOLHOST_LOG", "info")],
        );
        let client = Stateless::new(server.port);
        Scene {
            _tmp: tmp,
            server,
            client,
            root,
            n: 0,
        }
    }

    fn write(&mut self, name: &str) -> Value {
        self.n += 1;
        let r = self
            .client
            .call(
                &format!("c{}", self.n),
                "write",
                json!({"path": format!("/workspace/{name}"), "content": "made"}),
            )
            .unwrap_or_else(|e| panic!("{e:?}\n{}", self.server.stderr()));
        result_of(&r).clone()
    }
}

#[test]
fn every_forged_answer_is_refused_its_worker_replaced_and_nothing_lands() {
    // An honest worker first: the scene can succeed.
    let mut honest = Scene::new("");
    let r = honest.write("honest.txt");
    assert_eq!(error_code(&r), None, "{r}");
    assert_eq!(
        std::fs::read_to_string(honest.root.join("ws/honest.txt")).unwrap(),
        "made"
    );
    for (case, code) in [
        ("not-pending", "worker_refused"),
        ("garbage", "worker_refused"),
        ("too-large", "worker_refused"),
        ("out-of-turn", "worker_refused"),
        ("ring-length", "worker_refused"),
        ("ring-counter", "worker_refused"),
        ("outside-grant", "worker_refused"),
        ("escape-path", "worker_refused"),
        ("over-budget", "write_budget_exceeded"),
        ("flood", "worker_refused"),
    ] {
        let mut s = Scene::new(case);
        for i in 0..2 {
            let name = format!("{case}-{i}.txt");
            let r = s.write(&name);
            assert_eq!(
                error_code(&r).as_deref(),
                Some(code),
                "{case}: {r}\n{}",
                s.server.stderr()
            );
            assert!(
                !s.root.join("ws").join(&name).exists(),
                "{case}: the forged write landed"
            );
        }
        let ws: Vec<_> = std::fs::read_dir(s.root.join("ws")).unwrap().collect();
        assert!(ws.is_empty(), "{case}: {ws:?}");
        assert!(!s.root.join("escaped.txt").exists(), "{case}");
        // Each forgery stopped its worker: the second call had a new one.
        let stopped = s
            .server
            .stderr()
            .matches("a worker sent what no honest worker sends")
            .count();
        assert!(stopped >= 2, "{case}: {}", s.server.stderr());
    }
}

#[test]
fn a_relayed_request_off_the_allow_list_is_refused_and_nothing_is_sent() {
    // Where the forged request would go if it were sent.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let target = listener.local_addr().unwrap();
    let mut s = Scene::new(&format!("http:{target}"));
    let r = s.write("relayed.txt");
    // A relayed request is what a guest may ask for itself: refused at
    // the gate (not on the allow-list), and the call's honest part stands.
    assert_eq!(error_code(&r), None, "{r}");
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "the forged request reached its host"
    );
}
