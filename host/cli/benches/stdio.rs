//! Per-call latency of `toolhost serve` over stdio, as an MCP client sees
//! it: a minimal JSON-RPC driver writes one `tools/call` line and reads the
//! response line, sequentially, N times (default 1,000), for a trivial tool
//! (the test guest's `echo`) through the full pipeline with a fresh instance
//! per call. The same driver against an echo server (`cat`, which returns
//! each line as it reads it) in the same run shows the driver's and the
//! pipes' own cost, so the server's share is visible. The server's CPU time
//! per call (all its threads, from `/proc`) is the steadier figure. The
//! calls are measured in rounds (10; 2 with `--quick`) and every server
//! takes its turn in each round, so a slow spell of the machine falls on
//! all the rows alike rather than on whichever ran then; its first calls in
//! a round, cold from the others' turns, are not counted.
//!
//! One table per placement of the two processes ([`Placement`]): on one
//! CPU, on two, and unpinned. On a VM the wake-up of the other side is most
//! of a round trip when they are apart, and the scheduler moves them
//! between the two placements every few milliseconds, so an unpinned
//! figure says where they happened to be as much as what the server costs.
//!
//! A peer MCP server can be measured by the same driver in the same run:
//! `PEER_MCP="command args…"` (split on whitespace) adds its row, calling
//! its tool `PEER_TOOL` (default `echo`) with the arguments `PEER_ARGS` (a
//! JSON object; default `{"message":"hi"}`). The table then ends with the
//! ratio of the peer's p50 and CPU per call to toolhost's (render = "host"),
//! and to toolhost's row for the smallest component in the tree (the 0.1.0
//! test guest's `echo_v1`: one tool, raw bindings, no JSON library), which
//! does the work a peer's minimal echo component does. The hostile test
//! guest's `echo` of the other rows shares its component with the escape
//! tests, and each of their imports costs a lookup at every instantiation.
//!
//! The trivial tool runs in-process in these rows (`isolation =
//! "in-process"`), and once more in a worker process, the default for a
//! component that is not built in, whose CPU counts as the server's.
//!
//! The built-in `read` of a one-line file is measured too, in process (the
//! built-ins' default) and in a worker process, each set against the
//! trivial call placed the same way.
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
/// The server's worker processes (its children) count as its own.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    let mut ns = 0;
    for t in tasks.flatten() {
        ns += std::fs::read_to_string(t.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        ns += children
            .split_whitespace()
            .filter_map(|c| c.parse::<u32>().ok())
            .map(cpu_ns)
            .sum::<u64>();
    }
    ns
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

/// Calls each server makes at the start of each round before the counted
/// ones. While the other servers took their turns, this one's caches went
/// cold, and its first calls of the round paid for it: they were the p99
/// (one CPU: 104–116 µs with them, 75 µs without; `cat` 17 µs against
/// 5 µs), which a client calling one server back to back never sees.
const ROUND_WARM_UP: usize = 3;

/// One server of the table, measured round by round.
struct Row {
    name: String,
    server: Driver,
    call: Box<dyn Fn(usize) -> String>,
    /// Whether a response is the right one.
    check: fn(&str) -> bool,
    times: Vec<Duration>,
    /// The server's CPU time over the measured calls.
    cpu_ns: u64,
}

impl Row {
    fn new(
        name: impl Into<String>,
        server: Driver,
        call: impl Fn(usize) -> String + 'static,
        check: fn(&str) -> bool,
    ) -> Row {
        Row {
            name: name.into(),
            server,
            call: Box::new(call),
            check,
            times: Vec::new(),
            cpu_ns: 0,
        }
    }

    /// Measures `n` more calls (the ids go on from the last round's),
    /// after [`ROUND_WARM_UP`] calls that are not counted.
    fn round(&mut self, n: usize) -> anyhow::Result<()> {
        let from = self.times.len();
        let call = &self.call;
        // Ids of their own, past any the counted calls take.
        self.server.measure(
            ROUND_WARM_UP,
            |i| call(1_000_000 + from * ROUND_WARM_UP + i),
            self.check,
        )?;
        let cpu0 = cpu_ns(self.server.child.id());
        let times = self.server.measure(n, |i| call(from + i), self.check)?;
        self.cpu_ns += cpu_ns(self.server.child.id()).saturating_sub(cpu0);
        self.times.extend(times);
        Ok(())
    }

    fn p(&self, q: f64) -> Duration {
        let mut sorted = self.times.clone();
        sorted.sort();
        percentile(&sorted, q)
    }

    fn cpu_per_call_us(&self) -> f64 {
        self.cpu_ns as f64 / self.times.len().max(1) as f64 / 1000.0
    }
}

/// The `i`th `tools/call` request line (id `i + 10`, past `initialize`'s)
/// of tool `name` with `arguments`, a JSON object's text.
fn tools_call(i: usize, name: &str, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":{name:?},"arguments":{arguments}}}}}"#,
        i + 10
    )
}

/// A result, not an error (the test guest's `echo`, and a peer's tool).
fn served(r: &str) -> bool {
    r.contains(r#""result""#) && !r.contains(r#""isError":true"#)
}

/// Where the driver and the servers run. On a VM the round trip is mostly
/// the wake-up of the other side: a pipe write that wakes a process on the
/// writer's own CPU costs a few µs, one that wakes an idle CPU costs tens
/// (measured here: `cat` 3.5 µs on one CPU, 60 µs across two). Left to
/// itself the scheduler moves the two processes between those placements
/// every few milliseconds, so an unpinned row measures the scheduler as
/// much as the server: each table pins them one way.
#[derive(Clone, Copy)]
enum Placement {
    /// The driver and every thread of the server on one CPU.
    Shared(usize),
    /// The driver on one CPU, every thread of the server on another.
    Apart(usize, usize),
    /// Where the scheduler puts them (as a client starts a server).
    Unpinned,
}

impl Placement {
    fn describe(self) -> String {
        match self {
            Placement::Shared(c) => format!("the driver and the server on one CPU ({c})"),
            Placement::Apart(d, s) => {
                format!("the driver on CPU {d}, the server on CPU {s}")
            }
            Placement::Unpinned => "unpinned (where the scheduler puts them)".into(),
        }
    }

    /// `program` started where this placement puts servers (through
    /// `taskset`, which the server then replaces: the pid is the server's).
    fn command(self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let cpu = match self {
            Placement::Shared(c) | Placement::Apart(_, c) => c,
            Placement::Unpinned => return Command::new(program),
        };
        let mut cmd = Command::new("taskset");
        cmd.arg("-c").arg(cpu.to_string()).arg(program);
        cmd
    }

    /// Pins the driver (this process) where this placement puts it;
    /// `all` is every CPU it may use, for the unpinned table.
    fn pin_driver(self, all: &str) -> anyhow::Result<()> {
        let cpus = match self {
            Placement::Shared(c) | Placement::Apart(c, _) => c.to_string(),
            Placement::Unpinned => all.to_owned(),
        };
        let status = Command::new("taskset")
            .args(["-p", "-c", &cpus, &std::process::id().to_string()])
            .stdout(Stdio::null())
            .status()?;
        anyhow::ensure!(status.success(), "taskset -p -c {cpus} failed");
        Ok(())
    }
}

/// The CPUs this process may run on: the list as the kernel gives it
/// (`0-1`), and its first two.
fn allowed_cpus() -> (String, Vec<usize>) {
    let list = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|l| l.trim().to_owned())
        })
        .unwrap_or_else(|| "0".into());
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
            cpus.extend(a..=b);
        }
        if cpus.len() >= 2 {
            break;
        }
    }
    (list, cpus)
}

/// `toolhost serve` over stdio in a workspace of its own under `dir`
/// (`ws`), serving `component` under an allow policy with `render` and
/// `isolation` (`process`, a local component's default, or `in-process`),
/// initialized.
fn toolhost_serve(
    placement: Placement,
    dir: &tempfile::TempDir,
    ws: &str,
    component: &str,
    (render, isolation): (&str, &str),
    cache: &std::path::Path,
) -> anyhow::Result<Driver> {
    serve_toolbox(
        placement,
        dir,
        ws,
        &format!(
            "version = 1\n[[component]]\nsource = {component:?}\n[component.policy]\ndecision = \"allow\"\nrender = \"{render}\"\nisolation = \"{isolation}\"\n"
        ),
        cache,
    )
}

/// `toolhost serve` in `dir/ws` (holding a one-line `one.txt`) with
/// `toolbox` as its `toolhost.toml`, initialized.
fn serve_toolbox(
    placement: Placement,
    dir: &tempfile::TempDir,
    ws: &str,
    toolbox: &str,
    cache: &std::path::Path,
) -> anyhow::Result<Driver> {
    let ws = dir.path().join(ws);
    std::fs::create_dir_all(&ws)?;
    std::fs::write(ws.join("toolhost.toml"), toolbox)?;
    std::fs::write(ws.join("one.txt"), "one line\n")?;
    let mut server = Driver::spawn(
        placement
            .command(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--cache-dir")
            .arg(cache)
            .args(["serve", "--no-reload"])
            .current_dir(&ws),
    )?;
    initialize(&mut server)?;
    Ok(server)
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (n, rounds) = if quick { (100, 2) } else { (1000, 10) };
    let dir = tempfile::tempdir()?;
    let cache = dir.path().join("cache");
    let (all, cpus) = allowed_cpus();
    let mut placements = vec![Placement::Shared(cpus.first().copied().unwrap_or(0))];
    if let [d, s, ..] = cpus[..] {
        placements.push(Placement::Apart(d, s));
    } else {
        println!("one CPU only: no table with the driver and the server apart");
    }
    placements.push(Placement::Unpinned);
    println!(
        "stdio round trip, {n} sequential calls of a trivial tool (`echo`, full pipeline, fresh instance each), in {rounds} rounds taken in turn, for each placement:"
    );
    for placement in placements {
        placement.pin_driver(&all)?;
        table(placement, &dir, &cache, n, rounds)?;
    }
    Ok(())
}

/// One table: every server started where `placement` puts it, measured.
fn table(
    placement: Placement,
    dir: &tempfile::TempDir,
    cache: &std::path::Path,
    n: usize,
    rounds: usize,
) -> anyhow::Result<()> {
    let call = |i: usize| tools_call(i, "echo", &format!(r#"{{"i":{i}}}"#));

    // The echo server: the driver's and the pipes' own cost.
    let mut rows = vec![Row::new(
        "echo server (cat)",
        Driver::spawn(&mut placement.command("cat"))?,
        call,
        |r| r.contains("tools/call"),
    )];
    for render in ["isolated", "same-instance", "host"] {
        let server = toolhost_serve(
            placement,
            dir,
            render,
            toolhost_guests::GUEST_HOSTILE,
            (render, "in-process"),
            cache,
        )?;
        let name = format!("toolhost serve, render = \"{render}\"");
        rows.push(Row::new(name, server, call, served));
    }
    // render = "host", the last of the three: the peer is set against it.
    let host_row = rows.len() - 1;
    // The same in a worker process (a third-party component's default).
    let worker = toolhost_serve(
        placement,
        dir,
        "worker",
        toolhost_guests::GUEST_HOSTILE,
        ("host", "process"),
        cache,
    )?;
    rows.push(Row::new(
        "toolhost serve, render = \"host\", in a worker process",
        worker,
        call,
        served,
    ));
    let worker_row = rows.len() - 1;
    // The smallest tool in the tree (one tool, raw bindings, no JSON
    // library: what a peer's minimal echo component is), so a peer is also
    // set against the same work. The hostile guest's `echo` shares its
    // component with the escape tests, whose imports (files, sockets, ...)
    // each cost a lookup at every instantiation.
    let small = toolhost_serve(
        placement,
        dir,
        "small",
        toolhost_guests::GUEST_LEGACY,
        ("host", "in-process"),
        cache,
    )?;
    rows.push(Row::new(
        "toolhost serve, render = \"host\", the smallest component (`echo_v1`)",
        small,
        |i: usize| tools_call(i, "echo_v1", &format!(r#"{{"text":"hi {i}"}}"#)),
        served,
    ));
    let small_row = rows.len() - 1;
    // The built-in `read` of a one-line file, in process (its default) and
    // in a worker process (its policy, isolated).
    let read_call = |i: usize| tools_call(i, "read", r#"{"path":"one.txt"}"#);
    let mut read_rows = Vec::new();
    for (isolation, toolbox) in [
        (
            "in-process",
            "version = 1\n[[component]]\nsource = \"builtin:read\"\n",
        ),
        (
            "in a worker process",
            "version = 1\n[[component]]\nsource = \"builtin:read\"\n[component.policy]\n\
             decision = \"allow\"\nrender = \"same-instance\"\nisolation = \"process\"\n\
             [[component.policy.fs]]\nhost = \".\"\nguest = \"/workspace\"\nmode = \"ro\"\n",
        ),
    ] {
        let server = serve_toolbox(
            placement,
            dir,
            &format!("read-{}", read_rows.len()),
            toolbox,
            cache,
        )?;
        rows.push(Row::new(
            format!("toolhost serve, built-in `read` of a one-line file, {isolation}"),
            server,
            read_call,
            served,
        ));
        read_rows.push(rows.len() - 1);
    }
    if let Ok(peer) = std::env::var("PEER_MCP") {
        let mut words = peer.split_whitespace();
        let program = words
            .next()
            .ok_or_else(|| anyhow::anyhow!("PEER_MCP is empty"))?;
        let mut server = Driver::spawn(placement.command(program).args(words))?;
        initialize(&mut server)?;
        let tool = std::env::var("PEER_TOOL").unwrap_or_else(|_| "echo".into());
        let args = std::env::var("PEER_ARGS").unwrap_or_else(|_| r#"{"message":"hi"}"#.into());
        let peer_call = move |i: usize| tools_call(i, &tool, &args);
        rows.push(Row::new(format!("peer: {peer}"), server, peer_call, served));
    }

    // Warm-up, then the rounds: every server takes its turn in each round,
    // so a slow spell of the machine falls on all of them alike.
    for row in &mut rows {
        let call = &row.call;
        let check = row.check;
        row.server.measure(50, |i| call(n + i), check)?;
    }
    for _ in 0..rounds {
        for row in &mut rows {
            row.round(n / rounds)?;
        }
    }

    let e50 = rows[0].p(0.5);
    println!("\n{}:", placement.describe());
    println!("| server | p50 | p99 | p50 over the echo server's | server CPU per call |");
    println!("|---|---|---|---|---|");
    for (i, row) in rows.iter().enumerate() {
        let (s50, s99) = (row.p(0.5), row.p(0.99));
        if i == 0 {
            println!(
                "| {} | {:.1} µs | {:.1} µs | | {:.1} µs |",
                row.name,
                us(s50),
                us(s99),
                row.cpu_per_call_us()
            );
        } else {
            println!(
                "| {} | {:.1} µs | {:.1} µs | +{:.1} µs ({:.1}×) | {:.1} µs |",
                row.name,
                us(s50),
                us(s99),
                us(s50) - us(e50),
                us(s50) / us(e50),
                row.cpu_per_call_us()
            );
        }
    }
    let (w, h) = (&rows[worker_row], &rows[host_row]);
    println!(
        "in a worker process against in-process (render = \"host\"): {:.2}× at p50 (+{:.1} µs), {:.2}× the CPU per call (server and worker)",
        us(w.p(0.5)) / us(h.p(0.5)),
        us(w.p(0.5)) - us(h.p(0.5)),
        w.cpu_per_call_us() / h.cpu_per_call_us().max(f64::MIN_POSITIVE)
    );
    for (r, against) in [(read_rows[0], host_row), (read_rows[1], worker_row)] {
        let (r, t) = (&rows[r], &rows[against]);
        println!(
            "{} against the trivial call there: {:.2}× at p50, {:.2}× the CPU per call",
            r.name,
            us(r.p(0.5)) / us(t.p(0.5)),
            r.cpu_per_call_us() / t.cpu_per_call_us().max(f64::MIN_POSITIVE)
        );
    }
    println!(
        "built-in `read` in a worker process against in process: {:.2}× at p50",
        us(rows[read_rows[1]].p(0.5)) / us(rows[read_rows[0]].p(0.5))
    );
    // The peer (the row after the smallest component's and `read`'s) against toolhost's
    // fastest mode and against its smallest component, all in this run.
    if let Some(peer) = rows.get(small_row + 3) {
        for host in [&rows[host_row], &rows[small_row]] {
            println!(
                "{} against the peer: {:.2}× faster at p50, {:.2}× less CPU per call",
                host.name,
                us(peer.p(0.5)) / us(host.p(0.5)),
                peer.cpu_per_call_us() / host.cpu_per_call_us().max(f64::MIN_POSITIVE)
            );
        }
    }
    Ok(())
}
