//! Per-call latency of `toolhost serve` over stdio, as an MCP client sees
//! it: a minimal JSON-RPC driver writes one `tools/call` line and reads the
//! response line, sequentially, N times (default 1,000), for a trivial tool
//! (the test guest's `echo`) through the full pipeline with a fresh instance
//! per call. The same driver against an echo server (`cat`, which returns
//! each line as it reads it) in the same run shows the driver's and the
//! pipes' own cost, so the server's share is visible. The server's CPU time
//! per call (all its threads, from `/proc`) is the steadier figure: on a
//! VM the latency swings with where the scheduler puts the two processes.
//!
//! A peer MCP server can be measured by the same driver in the same run:
//! `PEER_MCP="command args…"` (split on whitespace) adds its row, calling
//! its tool `PEER_TOOL` (default `echo`) with the arguments `PEER_ARGS` (a
//! JSON object; default `{"message":"hi"}`).
//!
//! `cargo bench -p toolhost --bench stdio` (optimized); `-- --quick` runs
//! 100 calls.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

struct Driver {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Driver {
    fn spawn(cmd: &mut Command) -> anyhow::Result<Driver> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
        let stdout = BufReader::new(
            child
                .stdout
                .take()
                .ok_or_else(|| anyhow::anyhow!("no stdout"))?,
        );
        Ok(Driver {
            child,
            stdin,
            stdout,
        })
    }

    /// Writes one line, reads one line; returns the line read.
    fn round_trip(&mut self, line: &str) -> anyhow::Result<String> {
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.write_all(b"\n")?;
        self.stdin.flush()?;
        let mut out = String::new();
        if self.stdout.read_line(&mut out)? == 0 {
            anyhow::bail!("the server closed stdout");
        }
        Ok(out)
    }

    fn notify(&mut self, line: &str) -> anyhow::Result<()> {
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.write_all(b"\n")?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Sends `n` copies of `request(i)` one after the other; the latency of each.
    fn measure(
        &mut self,
        n: usize,
        request: impl Fn(usize) -> String,
        check: impl Fn(&str) -> bool,
    ) -> anyhow::Result<Vec<Duration>> {
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            let req = request(i);
            let t = Instant::now();
            let resp = self.round_trip(&req)?;
            times.push(t.elapsed());
            if !check(&resp) {
                anyhow::bail!("unexpected response: {resp}");
            }
        }
        Ok(times)
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// CPU time used so far by every thread of process `pid` (running on a
/// CPU, from `/proc/PID/task/*/schedstat`), in ns; 0 where it cannot be read.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Initializes an MCP server over `driver` (protocol 2025-11-25).
fn initialize(server: &mut Driver) -> anyhow::Result<()> {
    let init = server.round_trip(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
    )?;
    if !init.contains("serverInfo") {
        anyhow::bail!("initialize failed: {init}");
    }
    server.notify(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
}

/// Measures `server` as a row of the table: p50, p99, the share over the
/// echo server's p50, CPU per call.
fn row(
    name: &str,
    server: &mut Driver,
    n: usize,
    call: impl Fn(usize) -> String + Copy,
    e50: Duration,
) -> anyhow::Result<()> {
    let ok = |r: &str| r.contains(r#""result""#) && !r.contains(r#""isError":true"#);
    server.measure(50, call, ok)?; // warm-up
    let cpu0 = cpu_ns(server.child.id());
    let mut served = server.measure(n, call, ok)?;
    let cpu = cpu_ns(server.child.id()).saturating_sub(cpu0) as f64 / n as f64 / 1000.0;
    served.sort();
    let (s50, s99) = (percentile(&served, 0.5), percentile(&served, 0.99));
    println!(
        "| {name} | {:.1} µs | {:.1} µs | {:.1} µs | {cpu:.1} µs |",
        us(s50),
        us(s99),
        us(s50) - us(e50)
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 100 } else { 1000 };
    let dir = tempfile::tempdir()?;
    let cache = dir.path().join("cache");
    let call = |i: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"i":{i}}}}}}}"#,
            i + 10
        )
    };

    // The echo server: the driver's and the pipes' own cost.
    let mut echo = Driver::spawn(&mut Command::new("cat"))?;
    echo.measure(50, call, |_| true)?;
    let mut echo_t = echo.measure(n, call, |r| r.contains("tools/call"))?;
    echo_t.sort();

    let (e50, e99) = (percentile(&echo_t, 0.5), percentile(&echo_t, 0.99));
    println!(
        "stdio round trip, {n} sequential calls of a trivial tool (`echo`, full pipeline, fresh instance each):"
    );
    println!("| server | p50 | p99 | server's share of p50 | server CPU per call |");
    println!("|---|---|---|---|---|");
    println!(
        "| echo server (cat) | {:.1} µs | {:.1} µs | | |",
        us(e50),
        us(e99)
    );
    for render in ["isolated", "same-instance", "host"] {
        // toolhost serve over stdio, the test guest under an allow policy.
        let ws = dir.path().join(render);
        std::fs::create_dir_all(&ws)?;
        std::fs::write(
            ws.join("toolhost.toml"),
            format!(
                "version = 1\n[[component]]\nsource = {:?}\n[component.policy]\ndecision = \"allow\"\nrender = \"{render}\"\n",
                toolhost_guests::GUEST_HOSTILE
            ),
        )?;
        let mut server = Driver::spawn(
            Command::new(env!("CARGO_BIN_EXE_toolhost"))
                .arg("--cache-dir")
                .arg(&cache)
                .args(["serve", "--no-reload"])
                .current_dir(&ws),
        )?;
        initialize(&mut server)?;
        let name = format!("toolhost serve, render = \"{render}\"");
        row(&name, &mut server, n, call, e50)?;
    }
    if let Ok(peer) = std::env::var("PEER_MCP") {
        let mut words = peer.split_whitespace();
        let program = words
            .next()
            .ok_or_else(|| anyhow::anyhow!("PEER_MCP is empty"))?;
        let mut server = Driver::spawn(Command::new(program).args(words))?;
        initialize(&mut server)?;
        let tool = std::env::var("PEER_TOOL").unwrap_or_else(|_| "echo".into());
        let args = std::env::var("PEER_ARGS").unwrap_or_else(|_| r#"{"message":"hi"}"#.into());
        let peer_call = |i: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":{tool:?},"arguments":{args}}}}}"#,
                i + 10
            )
        };
        row(&format!("peer: {peer}"), &mut server, n, peer_call, e50)?;
    }
    Ok(())
}
