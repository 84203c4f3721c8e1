//! A plain component's calls and loads, against the same work behind
//! `toolhost:tool`, measured in the same run:
//!
//! - **a trivial call**: `greet({"name": …})` of the plain test component
//!   (`wit/test-plain`, Rust; the host converts the JSON to component
//!   values and back, and renders) against `greet` of `guest-greet` (the
//!   same work behind the contract: JSON in and out through the guest's
//!   serde, rendered by the host), in process, both through
//!   `Pipeline::execute` (every stage) and `LoadedComponent::execute` (the
//!   sandbox alone), in interleaved rounds; the medians and their ratio;
//! - **a wide call**: `points` with 100 records, against the same echo of
//!   JSON behind the contract (`guest-hostile`'s `echo`): where the
//!   conversion's cost shows;
//! - **load**: a plain component of 50 functions
//!   (`guest-tools/test-guests/plain-wide.sh`): compiled cold into an
//!   empty cache, and loaded from the cache (its type read, 50 tools'
//!   schemas and descriptions written from its WIT types and docs, and
//!   checked), against the cached load of the plain test component (18
//!   functions).
//!
//! `cargo bench -p toolhost --bench plain` (optimized); `-- --quick` for a
//! short run (CI runs it so it cannot rot); `-- --load-only` loads the
//! wide component from the cache in a loop (for `perf record`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::ToolCall;
use toolhost_pipeline::{ApproveAll, Pipeline, Registration, Registry, Scope};
use toolhost_policy::{Decision, PolicyBuilder, RenderMode};
use toolhost_runtime::{Budget, Invocation, LoadedComponent, Runtime, RuntimeConfig};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Runs a repository script, failing the bench with its output.
fn script(args: &[&str]) -> anyhow::Result<()> {
    let root = Path::new(toolhost_guests::REPO_ROOT);
    let out = Command::new("bash")
        .arg(root.join(args[0]))
        .args(&args[1..])
        .output()?;
    if !out.status.success() {
        anyhow::bail!(
            "{} failed: {}",
            args[0],
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// A pipeline serving `loaded`'s tools under an allow policy, rendered by
/// the host.
fn pipeline(loaded: &Arc<LoadedComponent>) -> anyhow::Result<(Arc<Pipeline>, Registration)> {
    let registry = Registry::new();
    let policy = PolicyBuilder::new()
        .decision(Decision::Allow)
        .render(RenderMode::Host)
        .build()?;
    let reg = registry.register_component(Scope::Global, loaded, &policy)?;
    let p = Pipeline::builder(registry)
        .approver(Arc::new(ApproveAll))
        .build();
    Ok((Arc::new(p), reg))
}

async fn through_pipeline(p: &Pipeline, tool: &str, args: &str) -> anyhow::Result<Duration> {
    let t = Instant::now();
    let r = p
        .execute(ToolCall::new("b", tool, args), CancellationToken::new())
        .await;
    let took = t.elapsed();
    if r.is_error() {
        anyhow::bail!("{tool} failed: {}", r.text());
    }
    Ok(took)
}

async fn in_sandbox(c: &LoadedComponent, tool: &str, args: &str) -> anyhow::Result<Duration> {
    let policy = PolicyBuilder::new()
        .decision(Decision::Allow)
        .build()?
        .for_tool(tool);
    let mut inv = Invocation::new(tool, args, &policy);
    inv.budget = Budget {
        fuel: 1_000_000_000,
        deadline: Duration::from_secs(10),
    };
    let t = Instant::now();
    let e = c.execute(inv).await;
    let took = t.elapsed();
    if let Err(f) = e.outcome {
        anyhow::bail!("{tool} failed: {f:?}");
    }
    Ok(took)
}

/// One pair of rows: `(plain tool, its args)` against `(contract tool,
/// its args)`, `rounds` interleaved rounds of `n` calls each way.
struct Pair<'a> {
    what: &'a str,
    plain: (&'a str, String),
    contract: (&'a str, String),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, n) = if quick { (2, 20) } else { (7, 500) };
    let root = PathBuf::from(toolhost_guests::REPO_ROOT);
    let built = root.join("target/plain-guests");
    let plain_path = built.join("plain_rust.wasm");
    script(&[
        "guest-tools/test-guests/plain-build.sh",
        "rust",
        &plain_path.display().to_string(),
        toolhost_guests::GUEST_PLAIN,
    ])?;
    let wide_path = built.join("plain_wide.wasm");
    script(&[
        "guest-tools/test-guests/plain-wide.sh",
        &wide_path.display().to_string(),
        "50",
    ])?;

    let rt = Runtime::new(RuntimeConfig {
        cache_dir: Some(root.join("target/bench-plain-cache")),
        ..RuntimeConfig::default()
    })?;
    if std::env::args().any(|a| a == "--load-only") {
        for _ in 0..500 {
            rt.load(&wide_path).await?;
        }
        return Ok(());
    }
    let plain = rt.load(&plain_path).await?;
    let greet = rt.load(Path::new(toolhost_guests::GUEST_GREET)).await?;
    let hostile = rt.load(Path::new(toolhost_guests::GUEST_HOSTILE)).await?;
    let (plain_p, _r1) = pipeline(&plain)?;
    let (greet_p, _r2) = pipeline(&greet)?;
    let (hostile_p, _r3) = pipeline(&hostile)?;

    let points: Vec<serde_json::Value> = (0..100)
        .map(|i| serde_json::json!({"x": i, "y": -i, "label": format!("p{i}")}))
        .collect();
    let pairs = [
        Pair {
            what: "greet (trivial)",
            plain: ("greet", r#"{"name":"Ana"}"#.to_owned()),
            contract: ("greet", r#"{"name":"Ana"}"#.to_owned()),
        },
        Pair {
            what: "100 records",
            plain: ("points", serde_json::json!({"items": points}).to_string()),
            contract: ("echo", serde_json::json!({"items": points}).to_string()),
        },
    ];

    println!("plain: in process, {rounds} interleaved rounds of {n} calls each way; medians (µs)");
    println!("| call | layer | plain | toolhost:tool | plain / contract |\n|---|---|---|---|---|");
    for pair in &pairs {
        let contract_pipeline = if pair.contract.0 == "greet" {
            &greet_p
        } else {
            &hostile_p
        };
        let contract_component = if pair.contract.0 == "greet" {
            &greet
        } else {
            &hostile
        };
        // Warm both paths first.
        for _ in 0..20 {
            through_pipeline(&plain_p, pair.plain.0, &pair.plain.1).await?;
            through_pipeline(contract_pipeline, pair.contract.0, &pair.contract.1).await?;
        }
        let (mut pp, mut cp, mut ps, mut cs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            for _ in 0..n {
                pp.push(through_pipeline(&plain_p, pair.plain.0, &pair.plain.1).await?);
                cp.push(
                    through_pipeline(contract_pipeline, pair.contract.0, &pair.contract.1).await?,
                );
            }
            for _ in 0..n {
                ps.push(in_sandbox(&plain, pair.plain.0, &pair.plain.1).await?);
                cs.push(in_sandbox(contract_component, pair.contract.0, &pair.contract.1).await?);
            }
        }
        for (layer, p, c) in [
            ("Pipeline::execute", median(pp), median(cp)),
            ("LoadedComponent::execute", median(ps), median(cs)),
        ] {
            println!(
                "| {} | {layer} | {:.1} | {:.1} | **{:.2}×** |",
                pair.what,
                us(p),
                us(c),
                p.as_secs_f64() / c.as_secs_f64()
            );
        }
    }

    // Loads: cold into an empty cache, then from the cache.
    let cold_rounds = if quick { 1 } else { 3 };
    let mut cold = Vec::new();
    for _ in 0..cold_rounds {
        let dir = tempfile::tempdir()?;
        let fresh = Runtime::new(RuntimeConfig {
            cache_dir: Some(dir.path().to_owned()),
            ..RuntimeConfig::default()
        })?;
        let t = Instant::now();
        let c = fresh.load(&wide_path).await?;
        cold.push(t.elapsed());
        anyhow::ensure!(c.tools().len() == 50, "wide: {} tools", c.tools().len());
    }
    let loads = if quick { 3 } else { 31 };
    let (mut wide, mut narrow) = (Vec::new(), Vec::new());
    for _ in 0..loads {
        let t = Instant::now();
        rt.load(&wide_path).await?;
        wide.push(t.elapsed());
        let t = Instant::now();
        rt.load(&plain_path).await?;
        narrow.push(t.elapsed());
    }
    let (wide, narrow) = (median(wide), median(narrow));
    println!(
        "\n| load | time |\n|---|---|\n| 50 functions, cold (compiled into an empty cache) | {:.1} ms |\n| 50 functions, cached (type read, 50 schemas written and checked) | {:.2} ms |\n| the plain test component (18 functions), cached | {:.2} ms |",
        median(cold).as_secs_f64() * 1e3,
        wide.as_secs_f64() * 1e3,
        narrow.as_secs_f64() * 1e3,
    );
    Ok(())
}
