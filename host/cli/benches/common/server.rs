//! A `toolhost serve` spawned over stdio for the benchmarks that time a
//! first start: the time to its `initialize` answer and to a complete
//! `tools/list` (one that names every tool and says nothing is loading).

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The binary under test.
pub const TOOLHOST: &str = env!("CARGO_BIN_EXE_toolhost");

/// A server spawned over stdio, its stdout read on a thread.
pub struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    started: Instant,
}

impl Server {
    /// `toolhost --cache-dir CACHE serve` in `dir`, with `env` set.
    pub fn spawn(dir: &Path, cache: &Path, env: &[(&str, &Path)]) -> anyhow::Result<Server> {
        let started = Instant::now();
        let mut child = Command::new(TOOLHOST)
            .arg("--cache-dir")
            .arg(cache)
            .args(["serve", "--no-reload"])
            .current_dir(dir)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Ok(Server {
            child,
            stdin,
            lines,
            started,
        })
    }

    fn send(&mut self, msg: &Value) -> anyhow::Result<()> {
        writeln!(self.stdin, "{msg}")?;
        self.stdin.flush()?;
        Ok(())
    }

    /// The next message with `id`, or a notification named `method`.
    fn next(&self, id: Option<u64>, method: Option<&str>) -> anyhow::Result<Value> {
        loop {
            let v = self.lines.recv_timeout(Duration::from_secs(300))?;
            if id.is_some_and(|id| v["id"] == id) || method.is_some_and(|m| v["method"] == m) {
                return Ok(v);
            }
        }
    }

    /// (time to the `initialize` answer, time to a complete `tools/list`
    /// of at least `tools` tools).
    pub fn first_start(mut self, tools: usize) -> anyhow::Result<(Duration, Duration)> {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "startup-bench", "version": "1"}}}),
        )?;
        self.next(Some(0), None)?;
        let initialized = self.started.elapsed();
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        let mut id = 1;
        loop {
            self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}))?;
            let list = self.next(Some(id), None)?;
            let listed = list["result"]["tools"].as_array().map_or(0, Vec::len);
            let loading = !list["result"]["_meta"]["toolhost"]["loading"]
                .as_array()
                .is_none_or(Vec::is_empty);
            if listed >= tools && !loading {
                return Ok((initialized, self.started.elapsed()));
            }
            if loading {
                self.next(None, Some("notifications/tools/list_changed"))?;
            }
            id += 1;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
