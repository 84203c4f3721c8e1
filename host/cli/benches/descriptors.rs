//! What checking a component's descriptors costs, and what loading a
//! hostile one costs: `Host::load` of a toolbox holding the descriptors
//! test guest (`guest-tools/test-guests/descriptors`) in each mode, the
//! component compiled once beforehand (the compile cache is warm: this is
//! the cost of asking for, checking and registering the tools).
//!
//! | mode | declares | expected |
//! |---|---|---|
//! | `normal` | 2 tools (the baseline of this run) | served |
//! | `tools1k` | 1,000 tools | served, ≤ 1 s |
//! | `tools100` | 100,000 tools | refused, ≤ 1 s |
//! | `bigdesc` | a 20 MiB description | refused |
//! | `bigschem` | a 5 MiB input schema | refused |
//! | `bulk` | 300 tools, 2.4 MiB of schemas | refused |
//! | `invisibl` | invisible characters everywhere | served, escaped |
//!
//! Then the checks alone on the 1,000 tools (the escaping scan, the
//! shadowing scan and the digests; the bounds are integer comparisons of
//! lengths made before anything is parsed), against the load.
//!
//! `cargo bench -p toolhost --bench descriptors` (optimized; 7 rounds,
//! medians); `-- --quick` runs 2.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};
use toolhost_pipeline::advertise::{Format, schemas};
use toolhost_toolbox::file::Toolbox;
use toolhost_toolbox::{Host, HostConfig};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 2 } else { 7 };
    let dir = tempfile::tempdir()?;
    let cache = Path::new(toolhost_guests::REPO_ROOT).join("target/bench-descriptors-cache");
    let host = Host::new(HostConfig {
        cache_dir: Some(cache),
        journal_dir: Some(dir.path().join("journal")),
        ..HostConfig::default()
    })?;
    println!("descriptors: Host::load of one component, warm compile cache, {rounds} rounds");
    println!(
        "{:<10} {:>10} {:>8} {:>14} {:>9}  outcome",
        "mode", "load", "×normal", "advertised", "tools"
    );
    let mut baseline = None;
    let mut thousand = Duration::ZERO;
    for mode in [
        "normal", "tools1k", "tools100", "bigdesc", "bigschem", "bulk", "invisibl",
    ] {
        let wasm = dir.path().join(format!("{mode}.wasm"));
        std::fs::write(&wasm, toolhost_guests::descriptor_guest(mode))?;
        let text = format!(
            "version = 1\n[[component]]\nsource = {:?}\n[component.policy]\ndecision = \"allow\"\n",
            wasm.display().to_string()
        );
        let toolbox = Toolbox::parse(&text, "toolhost.toml", dir.path(), &[])?;
        // The compile, once, outside the figures.
        let _ = host.load(&toolbox).await;
        let mut times = Vec::new();
        let mut outcome = String::new();
        for _ in 0..rounds {
            let started = Instant::now();
            let r = host.load(&toolbox).await;
            times.push(started.elapsed());
            outcome = match r {
                Ok(report) => format!("served {}", report.served.len()),
                Err(e) => {
                    let e = e.to_string();
                    let why = e.split(": ").skip(2).collect::<Vec<_>>().join(": ");
                    format!("refused: {}", why.chars().take(70).collect::<String>())
                }
            };
        }
        let t = median(times);
        let base = *baseline.get_or_insert(t);
        let advertised = if outcome.starts_with("served") {
            let v = schemas(host.registry(), None, Format::Mcp);
            format!("{} B", serde_json::to_string(&v)?.len())
        } else {
            "-".into()
        };
        // A refused load leaves what was served before: nothing of its own.
        let tools = if outcome.starts_with("served") {
            host.registry().visible(None).len().to_string()
        } else {
            "-".into()
        };
        if mode == "tools1k" {
            thousand = t;
        }
        println!(
            "{mode:<10} {:>10} {:>7.1}× {advertised:>14} {tools:>9}  {outcome}",
            ms(t),
            t.as_secs_f64() / base.as_secs_f64()
        );
    }

    // The checks alone, on the 1,000 tools as declared.
    let rt = host.runtime();
    let loaded = rt
        .load_bytes(
            Path::new("tools1k"),
            toolhost_guests::descriptor_guest("tools1k"),
        )
        .await?;
    let load = {
        let mut times = Vec::new();
        for _ in 0..rounds {
            let started = Instant::now();
            rt.load_bytes(
                Path::new("tools1k"),
                toolhost_guests::descriptor_guest("tools1k"),
            )
            .await?;
            times.push(started.elapsed());
        }
        median(times)
    };
    let tools = loaded.tools().to_vec();
    let names: HashMap<&str, ()> = tools.iter().map(|t| (t.name.as_str(), ())).collect();
    let reps = if quick { 5 } else { 50 };
    let time = |f: &dyn Fn()| {
        let started = Instant::now();
        for _ in 0..reps {
            f();
        }
        started.elapsed() / reps
    };
    let escape = time(&|| {
        for t in &tools {
            let mut d = t.clone();
            std::hint::black_box(d.escape_invisible());
        }
    });
    let clones = time(&|| {
        for t in &tools {
            std::hint::black_box(t.clone());
        }
    });
    let shadow = time(&|| {
        for t in &tools {
            std::hint::black_box(toolhost_toolbox::descriptors::mentions(
                &t.description,
                &names,
            ));
        }
    });
    let digests = time(&|| {
        for t in &tools {
            std::hint::black_box(t.digest());
        }
    });
    let us = |d: Duration| format!("{:.0} µs", d.as_secs_f64() * 1e6);
    let escape = escape.saturating_sub(clones);
    let checks = escape + shadow + digests;
    println!(
        "\nchecks on 1,000 tools (in this run: the runtime's load {}, the host's load with registration {}):",
        ms(load),
        ms(thousand)
    );
    println!("  invisible-character scan:          {}", us(escape));
    println!("  shadowing scan:                    {}", us(shadow));
    println!("  descriptor digests:                {}", us(digests));
    println!(
        "  scan + shadowing + digests:        {} ({:.1}% of the host's load)",
        us(checks),
        100.0 * checks.as_secs_f64() / thousand.as_secs_f64()
    );
    Ok(())
}
