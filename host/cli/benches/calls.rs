//! Load and call costs of the sandbox, as ratios against a native baseline
//! measured in the same run. `cargo bench -p toolhost --bench calls`.

use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_contract::ToolCall;
use toolhost_pipeline::{ApproveAll, Pipeline, Registry, Scope};
use toolhost_policy::{Decision, FsMode, PolicyBuilder};
use toolhost_runtime::{Runtime, RuntimeConfig};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let read = Path::new(toolhost_guests::TOOL_READ);
    let ws = tempfile::tempdir()?;
    let text: String = (1..=100)
        .map(|i| format!("line {i} of the file\n"))
        .collect();
    std::fs::write(ws.path().join("a.txt"), &text)?;

    // Baseline: the same work natively (read the file, number its lines).
    let native = median(
        (0..200)
            .map(|_| {
                let t = Instant::now();
                let s = std::fs::read_to_string(ws.path().join("a.txt")).unwrap_or_default();
                let out: String = s
                    .lines()
                    .enumerate()
                    .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
                    .collect();
                std::hint::black_box(out);
                t.elapsed()
            })
            .collect(),
    );

    // Cold compile (fresh cache) and warm load (cached artifact).
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..3 {
        let cache = tempfile::tempdir()?;
        let cfg = RuntimeConfig {
            cache_dir: Some(cache.path().to_owned()),
            ..RuntimeConfig::default()
        };
        let t = Instant::now();
        Runtime::new(cfg.clone())?.load(read).await?;
        cold.push(t.elapsed());
        for _ in 0..3 {
            let rt = Runtime::new(cfg.clone())?;
            let t = Instant::now();
            rt.load(read).await?;
            warm.push(t.elapsed());
        }
    }
    let (cold, warm) = (median(cold), median(warm));

    // Per-call, in process, through the whole pipeline.
    let rt = Runtime::new(RuntimeConfig::default())?;
    let registry = Registry::new();
    let policy = PolicyBuilder::new()
        .decision(Decision::Allow)
        .grant(
            ws.path().to_str().unwrap_or("."),
            "/workspace",
            FsMode::ReadWrite,
        )
        .build()?;
    let mut regs = Vec::new();
    for stem in [
        "tool_read",
        "tool_write",
        "tool_edit",
        "tool_list",
        "tool_grep",
    ] {
        let c = rt
            .load(Path::new(toolhost_guests::path(stem).unwrap_or_default()))
            .await?;
        regs.push(registry.register_component(Scope::Global, &c, &policy)?);
    }
    // fetch, against a loopback server on the allow-list.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let _ = sock.read(&mut buf).await;
                let body = "<p>hello</p>";
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    let net = PolicyBuilder::new()
        .decision(Decision::Allow)
        .network(format!("127.0.0.1:{port}"))
        .build()?;
    let fetch = rt.load(Path::new(toolhost_guests::TOOL_FETCH)).await?;
    regs.push(registry.register_component(Scope::Global, &fetch, &net)?);
    let p = Pipeline::builder(registry)
        .approver(Arc::new(ApproveAll))
        .build();
    let mut n = 0u32;
    let mut call = |tool: &str, args: serde_json::Value| {
        n += 1;
        ToolCall::new(format!("b{n}"), tool, args.to_string())
    };
    p.execute(call("read", json!({"path": "a.txt"})), Default::default())
        .await;
    let mut table = Vec::new();
    for (tool, args) in [
        ("read", json!({"path": "a.txt"})),
        ("list", json!({"path": "."})),
        ("grep", json!({"pattern": "line 5", "path": "."})),
        ("edit", json!({})),
        ("write", json!({})),
        ("fetch", json!({"url": format!("http://127.0.0.1:{port}/")})),
    ] {
        let mut times = Vec::new();
        for i in 0..100 {
            let args = match tool {
                "edit" if i % 2 == 0 => {
                    json!({"path": "a.txt", "old_text": "line 1 of", "new_text": "LINE 1 of"})
                }
                "edit" => {
                    json!({"path": "a.txt", "old_text": "LINE 1 of", "new_text": "line 1 of"})
                }
                "write" => json!({"path": format!("w{i}.txt"), "content": "x\n"}),
                _ => args.clone(),
            };
            let c = call(tool, args);
            let t = Instant::now();
            let r = p.execute(c, Default::default()).await;
            times.push(t.elapsed());
            if let Some(e) = r.error() {
                anyhow::bail!("{tool} failed in the benchmark: {} {}", e.code, e.message);
            }
        }
        table.push((tool, median(times)));
    }

    let cpu = portable_against_native(&rt, &policy, ws.path()).await?;

    println!(
        "native baseline (read + number 100 lines): {:>9.1} µs",
        us(native)
    );
    println!(
        "cold compile of tool_read:                  {:>9.1} µs  ({:.0}x baseline)",
        us(cold),
        us(cold) / us(native)
    );
    println!(
        "warm (cached) load of tool_read:            {:>9.1} µs  ({:.0}x baseline, {:.1}% of cold)",
        us(warm),
        us(warm) / us(native),
        100.0 * us(warm) / us(cold)
    );
    for (tool, t) in table {
        println!(
            "per call, full pipeline, {tool:<6}             {:>9.1} µs  ({:.0}x baseline)",
            us(t),
            us(t) / us(native)
        );
    }
    println!(
        "built-ins precompiled for {} against compiled for this CPU, per call (p50):",
        toolhost_builtins::PRECOMPILED_FOR
    );
    for (tool, portable, here) in cpu {
        println!(
            "  {tool:<5} {:>9.1} µs against {:>9.1} µs  ({:.3}x)",
            us(portable),
            us(here),
            us(portable) / us(here)
        );
    }
    Ok(())
}

/// The embedded built-ins as shipped (precompiled for the target's
/// portable CPU level) against the same components compiled for this
/// machine's CPU: per-call medians of work that leans on the compiled code
/// (grep over 40,000 lines, reading 10,000 lines), in alternating rounds.
async fn portable_against_native(
    rt: &Runtime,
    policy: &toolhost_policy::Policy,
    dir: &Path,
) -> anyhow::Result<Vec<(&'static str, Duration, Duration)>> {
    let big = dir.join("big");
    std::fs::create_dir_all(&big)?;
    for f in 0..20 {
        let text: String = (0..2_000)
            .map(|i| {
                format!(
                    "{f}:{i} the quick brown fox jumps over the lazy dog {}\n",
                    i * 7919 % 10_007
                )
            })
            .collect();
        std::fs::write(big.join(format!("f{f}.txt")), text)?;
    }
    let mut pipelines = Vec::new();
    // Dropping a registration unregisters its tools: kept to the end.
    let mut registrations = Vec::new();
    for portable in [true, false] {
        let registry = Registry::new();
        for name in ["grep", "read"] {
            let b = toolhost_builtins::get(name).ok_or_else(|| anyhow::anyhow!("no {name}"))?;
            let origin = Path::new(name);
            let c = if portable {
                rt.load_precompiled(origin, b.wasm, b.precompiled).await?
            } else {
                rt.load_bytes(origin, b.wasm.to_vec()).await?
            };
            registrations.push(registry.register_component(Scope::Global, &c, policy)?);
        }
        pipelines.push(
            Pipeline::builder(registry)
                .approver(Arc::new(ApproveAll))
                .build(),
        );
    }
    let cases = [
        (
            "grep",
            json!({"pattern": "fox jumps over the lazy dog 99", "path": "big"}),
        ),
        ("read", json!({"path": "big/f3.txt", "limit": 10_000})),
    ];
    let mut out = Vec::new();
    for (tool, args) in cases {
        let mut times = [Vec::new(), Vec::new()];
        for round in 0..60 {
            for (i, p) in pipelines.iter().enumerate() {
                let t = Instant::now();
                let r = p
                    .execute(
                        ToolCall::new(format!("c{round}"), tool, args.to_string()),
                        Default::default(),
                    )
                    .await;
                times[i].push(t.elapsed());
                if let Some(e) = r.error() {
                    anyhow::bail!("{tool} failed in the benchmark: {} {}", e.code, e.message);
                }
            }
        }
        let [portable, here] = times;
        out.push((tool, median(portable), median(here)));
    }
    Ok(out)
}
