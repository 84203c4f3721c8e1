//! A host killed in the middle of a call, then started again with the same
//! pid and the same cache, as a container restart does (`toolhost serve`
//! is PID 1 in its pid namespace every time, and an `emptyDir` cache
//! survives the restart): the new host calls, commits, and leaves nothing
//! staged, neither its own bytes nor the killed host's.
//!
//! Both hosts run under `unshare --pid --fork` (the real util-linux tool),
//! so both are PID 1.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};
use support::{TOOLHOST, initialize, initialized, line, toolhost_with_cache};

/// The files under `p`, with their sizes (symlinks not followed).
fn files(p: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(p) else {
        return out;
    };
    for e in rd.flatten() {
        let m = e.metadata().unwrap();
        if m.is_dir() {
            out.extend(files(&e.path()));
        } else {
            out.push((e.path(), m.len()));
        }
    }
    out
}

/// `unshare`'s arguments for a new pid namespace (with a user namespace
/// when not root).
fn unshare() -> Vec<&'static str> {
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if root {
        vec!["--pid", "--fork"]
    } else {
        vec!["--user", "--map-root-user", "--pid", "--fork"]
    }
}

struct Host {
    unshare: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Host {
    /// `toolhost serve` as PID 1 of a new pid namespace, serving the hostile
    /// guest over stdio with `ws`'s policy, initialized.
    fn start(cache: &Path, ws: &Path) -> Host {
        let mut unshare = Command::new("unshare")
            .args(unshare())
            .arg(TOOLHOST)
            .arg("--cache-dir")
            .arg(cache)
            .args(["serve", "--no-reload", "--component"])
            .arg(toolhost_guests::GUEST_HOSTILE)
            .args(["--policy", "policy.toml"])
            .current_dir(ws)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("unshare (util-linux) runs");
        let stdin = unshare.stdin.take();
        let stdout = BufReader::new(unshare.stdout.take().unwrap());
        let mut h = Host {
            unshare,
            stdin,
            stdout,
        };
        h.send(&initialize(json!(0)));
        assert!(h.read().get("result").is_some());
        h.send(&initialized());
        h
    }

    fn send(&mut self, v: &Value) {
        self.stdin.as_mut().unwrap().write_all(&line(v)).unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "the host ended"
        );
        serde_json::from_str(&line).unwrap()
    }

    fn call(&mut self, id: u64, args: &Value) {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"scribble","arguments":args}}));
    }

    /// The host's own pid, as this test sees it (unshare's child).
    fn pid(&self) -> u32 {
        let id = self.unshare.id();
        let children = Path::new("/proc")
            .join(id.to_string())
            .join("task")
            .join(id.to_string())
            .join("children");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(pid) = std::fs::read_to_string(&children)
                .ok()
                .and_then(|t| t.split_whitespace().next()?.parse().ok())
            {
                return pid;
            }
            assert!(Instant::now() < deadline, "unshare started no child");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL: the namespace's PID 1 dies, and with it the namespace.
    fn kill(mut self) {
        let pid = self.pid();
        let killed = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        self.unshare.wait().unwrap();
    }

    /// Closes stdin: the host ends on its own.
    fn stop(mut self) {
        drop(self.stdin.take());
        let status = self.unshare.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

/// `toolhost history` on `cache`, which must succeed: its stderr.
fn history_stderr(cache: &Path) -> String {
    let out = toolhost_with_cache(cache).arg("history").output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_host_restarted_under_the_same_pid_calls_commits_and_leaves_nothing_staged() {
    let base = tempfile::tempdir().unwrap();
    let (ws, cache) = (base.path().join("ws"), base.path().join("cache"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&cache).unwrap();
    // The compiled components of the shared test cache, so nothing compiles
    // again (the journal and staging stay this test's own).
    for e in std::fs::read_dir(toolhost_guests::test_cache_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        if e.path().extension().is_some_and(|x| x == "cwasm") {
            let _ = std::fs::hard_link(e.path(), cache.join(e.file_name()));
        }
    }
    std::fs::write(
        ws.join("policy.toml"),
        "version = 1\ndecision = \"allow\"\n[[fs]]\nhost = \".\"\nguest = \"/workspace\"\nmode = \"rw\"\n[limits]\ntimeout_ms = 120000\nfuel = 100_000_000_000_000\n",
    )
    .unwrap();
    let staging = cache.join("staging");

    // The first host stages 40 files, then spins; it is killed meanwhile.
    let mut first = Host::start(&cache, &ws);
    first.call(1, &json!({"create": 40, "then": "spin"}));
    let deadline = Instant::now() + Duration::from_secs(60);
    while files(&staging).iter().filter(|(_, n)| *n > 0).count() < 40 {
        assert!(Instant::now() < deadline, "the first host staged nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    first.kill();
    let left = files(&staging);
    eprintln!(
        "left by the killed host: {} files, {} bytes",
        left.len(),
        left.iter().map(|(_, n)| n).sum::<u64>()
    );
    assert!(
        left.iter().map(|(_, n)| n).sum::<u64>() > 0,
        "the killed host's bytes are staged"
    );
    assert!(!ws.join("new-0.txt").exists(), "nothing was committed");

    // The second host, PID 1 again, with the same cache.
    let mut second = Host::start(&cache, &ws);
    second.call(2, &json!({"create": 3, "then": "ok"}));
    let reply = second.read();
    assert_eq!(
        reply["result"]["isError"],
        json!(false),
        "the call runs and commits: {reply}"
    );
    for i in 0..3 {
        assert_eq!(
            std::fs::read_to_string(ws.join(format!("new-{i}.txt"))).unwrap(),
            format!("new {i}\n")
        );
    }
    assert!(
        !ws.join("new-3.txt").exists(),
        "the killed call's files never land"
    );
    // Nothing staged: the killed host's area went at the start, the
    // committed call's with its commit.
    let staged: Vec<_> = files(&staging)
        .into_iter()
        .filter(|(p, _)| p.extension().is_none_or(|x| x != "lock"))
        .collect();
    assert!(staged.is_empty(), "still staged: {staged:?}");
    second.stop();
    let left: Vec<_> = std::fs::read_dir(&staging)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "the staging directory is empty: {left:?}");

    // And `history` has nothing more to say about staging.
    let err = history_stderr(&cache);
    assert!(!err.contains("staging:"), "{err}");
}

#[test]
fn history_removes_what_stopped_hosts_staged_and_says_how_much() {
    let base = tempfile::tempdir().unwrap();
    let cache = base.path().join("cache");
    let staging = cache.join("staging");
    // What an older host, killed, left under its pid; and a stopped host's
    // area (its lock file unlocked).
    std::fs::create_dir_all(staging.join("1-0-0")).unwrap();
    std::fs::write(staging.join("1-0-0/1"), vec![b'x'; 3 << 20]).unwrap();
    std::fs::create_dir_all(staging.join("0123456789abcdef/call-0.0")).unwrap();
    std::fs::write(staging.join("0123456789abcdef.lock"), "").unwrap();
    std::fs::write(
        staging.join("0123456789abcdef/call-0.0/1"),
        vec![b'y'; 1 << 20],
    )
    .unwrap();
    let err = history_stderr(&cache);
    assert!(
        err.contains("staging: removed 4.0 MiB staged by 2 stopped host(s)"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&staging).unwrap().count(), 0);
}
