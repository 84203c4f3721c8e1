//! A `toolhost serve` over stdio, driven line by line as an MCP client
//! would: JSON-RPC requests in, responses out, its log kept to search.

use super::{initialize, initialized, toolhost_cached};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// `toolhost serve` over stdio, its stderr collected.
pub struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends each line `pipe` gives on a channel, on a thread of its own.
fn lines_of(pipe: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Server {
    /// Serves `dir` with the shared cache (hot reload on or off), logging at
    /// info, and initializes the session.
    pub fn start(dir: &Path, reload: bool) -> Server {
        let mut cmd = toolhost_cached();
        cmd.arg("serve")
            // Reloads are logged at info.
            .env("TOOLHOST_LOG", "info");
        if !reload {
            cmd.arg("--no-reload");
        }
        let mut child = cmd
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning toolhost serve");
        let stdin = child.stdin.take().expect("stdin piped");
        let lines = lines_of(child.stdout.take().expect("stdout piped"));
        let stderr = lines_of(child.stderr.take().expect("stderr piped"));
        let mut s = Server {
            child,
            stdin,
            lines,
            stderr,
        };
        let init = s.request(initialize(json!("init")));
        assert!(init.get("result").is_some(), "{init}");
        s.send(&initialized());
        s
    }

    /// Sends `msg` as one line.
    pub fn send(&mut self, msg: &Value) {
        self.send_line(&msg.to_string());
    }

    /// Sends `line` as it is, and a newline.
    pub fn send_line(&mut self, line: &str) {
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.write_all(b"\n"))
            .and_then(|()| self.stdin.flush())
            .expect("writing to the server's stdin");
    }

    /// The next message on stdout (within 60 s).
    pub fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .expect("the server answers (and is still running)");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends `msg` and returns the next message, which must be its response.
    pub fn request_next(&mut self, msg: Value) -> Value {
        let id = msg["id"].clone();
        self.send(&msg);
        let m = self.next();
        assert_eq!(m["id"], id, "the response to {id}, not: {m}");
        m
    }

    /// Sends `msg` and returns its response (notifications before it are
    /// skipped).
    pub fn request(&mut self, msg: Value) -> Value {
        let line = self.raw(msg);
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends `msg` and returns its response's line, byte for byte.
    pub fn raw(&mut self, msg: Value) -> String {
        let id = msg["id"].clone();
        self.send(&msg);
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("the server answers");
            let m: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if m["id"] == id {
                return line;
            }
        }
    }

    /// The names `tools/list` lists, once nothing is loading any more.
    pub fn tool_names(&mut self, id: u64) -> Vec<String> {
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            let r = self.request(json!({"jsonrpc":"2.0","id":id,"method":"tools/list"}));
            let loading = r["result"]["_meta"]["toolhost"]["loading"]
                .as_array()
                .is_some_and(|l| !l.is_empty());
            if !loading || Instant::now() > until {
                return r["result"]["tools"]
                    .as_array()
                    .expect("a tools array")
                    .iter()
                    .map(|t| t["name"].as_str().expect("a tool name").to_owned())
                    .collect();
            }
        }
    }

    /// Waits for a stderr line containing `needle` (within 60 s).
    pub fn said(&self, needle: &str) -> String {
        let until = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match self.stderr.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(line) => seen.push(line),
                Err(_) => break,
            }
        }
        panic!("no stderr line with {needle:?}; saw:\n{}", seen.join("\n"));
    }
}
