//! A `toolhost serve` over stdio, driven line by line as an MCP client
//! would: JSON-RPC requests in, responses out, its log kept to search.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
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

impl Server {
    pub fn start(dir: &Path, reload: bool) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        cmd.arg("--cache-dir")
            .arg(toolhost_guests::test_cache_dir())
            .arg("serve")
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
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let (tx, lines) = channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (tx, stderr) = channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Server {
            child,
            stdin,
            lines,
            stderr,
        };
        let init = s.request(json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}));
        assert!(init.get("result").is_some(), "{init}");
        s.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        s
    }

    pub fn send(&mut self, msg: &Value) {
        self.stdin.write_all(msg.to_string().as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends `msg` and returns its response (notifications before it are
    /// skipped).
    pub fn request(&mut self, msg: Value) -> Value {
        serde_json::from_str(&self.raw(msg)).unwrap()
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
            let m: Value = serde_json::from_str(&line).unwrap();
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
                    .unwrap()
                    .iter()
                    .map(|t| t["name"].as_str().unwrap().to_owned())
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
