//! toolhost for a team, measured:
//!
//! 1. **Stateless `tools/call` over HTTP** (MCP 2026-07-28, one POST per
//!    call, the built-in `read` of a small file through the whole pipeline):
//!    calls/s, p50 and p99 with 8 client connections for 60 s (`--quick`:
//!    3 s), against one replica directly, one behind HAProxy, and three
//!    behind HAProxy, in the same run; errors (must be 0) and each
//!    replica's RSS at the start and the end of its run.
//! 2. **Baseline handles:** the cost per call of sealing one (a read
//!    records its file and returns a handle) and of opening one (an edit
//!    checks it), against the session-memory baseline they replace.
//! 3. **JWT validation** per call, with the JWKS cached: a real RS256
//!    access token from oidc-provider, verified again and again.
//! 4. **MCP tasks** (SEP-2663): a script that becomes a task at once (the
//!    runner's policy), by a client that declared the extension: the
//!    `tools/call` that returns its handle, its first `tasks/get`, and its
//!    result polled back to back; against the same script answered in its
//!    request (a client without the extension), in interleaved rounds.
//!    `-- --tasks-only` for this part alone.
//!
//! `cargo bench -p toolhost --bench team` (optimized). The real parts come
//! from `tests/team/install.sh`.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use support::fleet::{self, Haproxy, Replica, Stateless, error_code, result_of};

/// Client connections sending calls at once.
const CONNECTIONS: usize = 8;

struct Load {
    calls: usize,
    errors: usize,
    secs: f64,
    p50_us: u64,
    p99_us: u64,
}

/// Samples the RSS of `pids` every `every` until `stop`: one series per pid.
fn sample_rss(
    pids: Vec<u32>,
    every: Duration,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<Vec<u64>>> {
    std::thread::spawn(move || {
        let mut series = vec![Vec::new(); pids.len()];
        let mut next = Instant::now() + every;
        while !stop.load(Ordering::Relaxed) {
            if Instant::now() >= next {
                for (s, pid) in series.iter_mut().zip(&pids) {
                    s.push(fleet::rss_kib(*pid) / 1024);
                }
                next += every;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        series
    })
}

/// `load`, with each replica's RSS sampled every tenth of the run (MiB).
fn load_sampled(port: u16, secs: f64, replicas: &[&Replica]) -> (Load, Vec<Vec<u64>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_rss(
        replicas.iter().map(|r| r.child.id()).collect(),
        Duration::from_secs_f64(secs / 10.0),
        stop.clone(),
    );
    let l = load(port, secs);
    stop.store(true, Ordering::Relaxed);
    (l, sampler.join().unwrap_or_default())
}

/// `CONNECTIONS` threads calling `read` through `port` for `secs`.
fn load(port: u16, secs: f64) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let threads: Vec<_> = (0..CONNECTIONS)
        .map(|t| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut c = Stateless::new(port);
                let mut lat = Vec::new();
                let mut errors = 0;
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let t0 = Instant::now();
                    let ok = c
                        .call(
                            &format!("t{t}-{i}"),
                            "read",
                            json!({"path": "/workspace/notes.txt"}),
                        )
                        .map(|r| error_code(result_of(&r)).is_none())
                        .unwrap_or(false);
                    lat.push(t0.elapsed().as_micros() as u64);
                    if !ok {
                        errors += 1;
                    }
                }
                (lat, errors)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    let mut errors = 0;
    for t in threads {
        let (lat, e) = t.join().expect("a load thread panicked");
        all.extend(lat);
        errors += e;
    }
    let secs = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    Load {
        calls: all.len(),
        errors,
        secs,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
    }
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    if std::env::args().any(|a| a == "--tasks-only") {
        return tasks(quick);
    }
    let secs = if quick { 3.0 } else { 60.0 };
    fleet::install();
    let tmp = tempfile::tempdir()?;
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws)?;
    std::fs::write(
        ws.join("notes.txt"),
        "alpha line\nneedle: the quick brown fox\nomega line\n",
    )?;
    std::fs::write(tmp.path().join("state.key"), "bench-secret-".repeat(4))?;
    let start = |i: usize| {
        let home = tmp.path().join(format!("home{i}"));
        let _ = std::fs::create_dir_all(&home);
        Replica::start(
            &ws,
            &home,
            &[
                "--state-secret-file".into(),
                tmp.path().join("state.key").display().to_string(),
                "--artifacts-dir".into(),
                tmp.path().join("artifacts").display().to_string(),
                "--no-reload".into(),
            ],
        )
    };

    println!(
        "stateless tools/call (read, 2026-07-28 over HTTP), {CONNECTIONS} connections, {secs} s each:"
    );
    println!(
        "{:<28} {:>9} {:>9} {:>9} {:>7} {:>12} {:>22}",
        "", "calls/s", "p50 µs", "p99 µs", "errors", "CPU µs/call", "RSS KiB start → end"
    );
    let report = |name: &str, l: &Load, rss: &[(u64, u64)], cpu_us: u64| {
        let rss: Vec<String> = rss.iter().map(|(a, b)| format!("{a}→{b}")).collect();
        println!(
            "{name:<28} {:>9.0} {:>9} {:>9} {:>7} {:>12.0} {:>22}",
            l.calls as f64 / l.secs,
            l.p50_us,
            l.p99_us,
            l.errors,
            cpu_us as f64 / l.calls.max(1) as f64,
            rss.join(" ")
        );
    };
    let cpu = |rs: &[&Replica]| rs.iter().map(|r| fleet::cpu_us(r.child.id())).sum::<u64>();
    let mut rates = Vec::new();
    let mut series: Vec<(&str, Vec<Vec<u64>>)> = Vec::new();
    // One configuration: calls through `port` to `replicas`, after a warm-up
    // (the first calls instantiate and fill caches).
    let mut measure = |name: &'static str, port: u16, replicas: &[&Replica]| {
        load(port, 0.5);
        let before: Vec<u64> = replicas.iter().map(|r| r.rss_kib()).collect();
        let c0 = cpu(replicas);
        let (l, rss_series) = load_sampled(port, secs, replicas);
        let used = cpu(replicas) - c0;
        let rss: Vec<(u64, u64)> = before
            .iter()
            .zip(replicas)
            .map(|(b, r)| (*b, r.rss_kib()))
            .collect();
        report(name, &l, &rss, used);
        series.push((name, rss_series));
        rates.push(l.calls as f64 / l.secs);
    };
    {
        let r = start(0);
        measure("1 replica, direct", r.port, &[&r]);
    }
    {
        let r = start(0);
        let lb = Haproxy::start(&[r.port]);
        measure("1 replica, HAProxy", lb.port, &[&r]);
    }
    {
        let rs: Vec<Replica> = (0..3).map(start).collect();
        let lb = Haproxy::start(&rs.iter().map(|r| r.port).collect::<Vec<_>>());
        measure(
            "3 replicas, HAProxy",
            lb.port,
            &rs.iter().collect::<Vec<_>>(),
        );
    }
    println!(
        "ratios to 1 replica direct: HAProxy {:.2}×, 3 replicas {:.2}× (all share this machine's {} CPUs with the load driver)",
        rates[1] / rates[0],
        rates[2] / rates[0],
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    println!("RSS of each replica (MiB), sampled every tenth of its run:");
    for (name, s) in &series {
        for (i, one) in s.iter().enumerate() {
            let text: Vec<String> = one.iter().map(u64::to_string).collect();
            println!("  {name}, replica {}: {}", i + 1, text.join(" "));
        }
    }

    handles(quick);
    jwt(quick);
    tasks(quick)
}

/// A script answered as a task against the same script answered in its
/// request.
fn tasks(quick: bool) -> anyhow::Result<()> {
    let n = if quick { 50 } else { 500 };
    let tmp = tempfile::tempdir()?;
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws)?;
    std::fs::write(
        ws.join("toolhost.toml"),
        "version = 1\nmode = \"both\"\n[[component]]\nsource = \"builtin:read\"\n",
    )?;
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home)?;
    let r = Replica::start(&ws, &home, &["--no-reload".into()]);
    let mut plain = Stateless::new(r.port);
    let mut tasked = Stateless::new(r.port);
    tasked.capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let script = json!({"code": "return 6 * 7;"});
    let mut rows: [Vec<Duration>; 4] = Default::default();
    for i in 0..n + 10 {
        let t = Instant::now();
        let answered = plain
            .call(&format!("p{i}"), "run_code", script.clone())
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let inline = t.elapsed();
        anyhow::ensure!(result_of(&answered)["isError"] == false, "{answered}");

        let t = Instant::now();
        let created = tasked
            .call(&format!("t{i}"), "run_code", script.clone())
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let handed = t.elapsed();
        let id = result_of(&created)["taskId"].as_str().map(str::to_owned);
        let id = id.ok_or_else(|| anyhow::anyhow!("not a task: {created}"))?;
        let g = Instant::now();
        let mut status = tasked
            .request(&format!("g{i}"), "tasks/get", &id, json!({"taskId": id}))
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let first = g.elapsed();
        while result_of(&status)["status"] == "working" {
            status = tasked
                .request(&format!("g{i}"), "tasks/get", &id, json!({"taskId": id}))
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        }
        let done = t.elapsed();
        anyhow::ensure!(result_of(&status)["status"] == "completed", "{status}");
        if i >= 10 {
            for (row, d) in rows.iter_mut().zip([inline, handed, first, done]) {
                row.push(d);
            }
        }
    }
    let p50 = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_micros()
    };
    let [inline, handed, first, done] = &mut rows;
    let (inline, handed, first, done) = (p50(inline), p50(handed), p50(first), p50(done));
    println!("\nMCP tasks, a script (`return 6 * 7`) over 2026-07-28 HTTP, p50 of {n}:");
    println!("  answered in its request (no tasks extension):   {inline} µs");
    println!("  tools/call returning the task handle:            {handed} µs");
    println!("  the task's first tasks/get:                      {first} µs");
    println!(
        "  its result, polling back to back from the call:  {done} µs ({:.2}× in its request)",
        done as f64 / inline as f64
    );
    Ok(())
}

/// Sealing and opening a baseline handle, against session memory.
fn handles(quick: bool) {
    use toolhost_pipeline::baseline::{Baselines, HandleKey, Presented};
    use toolhost_pipeline::paths::ResolvedPath;
    use toolhost_policy::{FsGrant, FsMode};
    let n = if quick { 2_000 } else { 50_000 };
    let Ok(dir) = tempfile::tempdir() else { return };
    let _ = std::fs::write(dir.path().join("a.txt"), "x".repeat(4096));
    let path = |access| ResolvedPath {
        pointer: "/path".into(),
        guest: "/workspace/a.txt".into(),
        grant: FsGrant {
            host: dir.path().to_path_buf(),
            guest: "/workspace".into(),
            mode: FsMode::ReadWrite,
        },
        relative: "a.txt".into(),
        access,
        exists: true,
    };
    let read = [path(toolhost_contract::PathAccess::Read)];
    let patch = [path(toolhost_contract::PathAccess::Patch)];
    let Ok(key) = HandleKey::from_secret(&[7; 32]) else {
        return;
    };
    let b = Baselines::default();
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        t.elapsed().as_nanos() as f64 / n as f64 / 1000.0
    };
    let record_memory = time(&mut || b.record(&read));
    let record_handle = time(&mut || {
        let _ = b.record_with(&read, Some(&key), "oauth:alice", 1_800_000_000_000);
    });
    let handle = b
        .record_with(&read, Some(&key), "oauth:alice", 1_800_000_000_000)
        .remove(0)
        .1;
    let check_memory = time(&mut || {
        let _ = b.check(&patch);
    });
    let fresh = Baselines::default();
    let handles = [handle];
    let check_handle = time(&mut || {
        let _ = fresh.check_with(
            &patch,
            Presented {
                key: Some(&key),
                principal: "oauth:alice",
                now_ms: 1_800_000_000_000,
                handles: &handles,
            },
        );
    });
    println!("\nbaseline handles ({n} rounds, a 4 KiB file, µs per call):");
    println!(
        "  read:  session memory {record_memory:.2}, with a sealed handle {record_handle:.2} (sealing {:.2})",
        record_handle - record_memory
    );
    println!(
        "  edit:  session memory {check_memory:.2}, with a presented handle {check_handle:.2} (opening {:.2})",
        check_handle - check_memory
    );
}

/// JWT validation of a real RS256 token, the JWKS cached.
fn jwt(quick: bool) {
    let n = if quick { 500 } else { 20_000 };
    let resource = format!("http://127.0.0.1:{}/mcp", support::free_port());
    let oidc = fleet::Oidc::start(&resource);
    let token = oidc.token("agent", "agent-secret", "mcp:tools", &resource);
    let Ok(verifier) = toolhost_auth::Verifier::new(toolhost_auth::OAuthConfig {
        issuer: oidc.issuer.clone(),
        resource,
        jwks_uri: None,
        scopes: toolhost_auth::ScopeRules::default(),
    }) else {
        return;
    };
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async {
        let first = Instant::now();
        let who = verifier.verify(&token).await;
        let cold = first.elapsed();
        assert!(who.is_ok(), "{who:?}");
        let t = Instant::now();
        for _ in 0..n {
            let _ = verifier.verify(&token).await;
        }
        let per = t.elapsed().as_nanos() as f64 / n as f64 / 1000.0;
        println!(
            "\nJWT validation (RS256, 2048-bit, oidc-provider's token): {per:.1} µs per call with the JWKS cached ({n} calls); the first, fetching the metadata and JWKS: {:.1} ms",
            cold.as_secs_f64() * 1000.0
        );
    });
}
