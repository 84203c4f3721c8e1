//! What progressive discovery saves and costs, on the recorded tool lists
//! of 29 public MCP servers (`tests/discovery/catalog/`, one catalog
//! component each, 645 tools) and, for scale, the 1,000 small tools of
//! the descriptors test guest beside them.
//!
//! - **Advertised bytes**: the MCP `tools/list` tools of the first servers
//!   up to 501 tools, and of all 645, everything advertised
//!   (`defer_over` above the count) against the default (deferred: the
//!   built-in and `search_tools` only); and the Anthropic projection,
//!   which carries every tool with `defer_loading`.
//! - **Search**: `search_tools`' ranking over 645 and 1,645 tools, p50 and
//!   p99 of the 117 labelled queries (`tests/discovery/queries.json`), the
//!   index built; building the index alone, and the first search 200 ms
//!   after a load (the host builds the index in the background at each
//!   load that defers tools), timed apart. The baseline of the same run: projecting the eager `tools/list`
//!   once (what every request of an eager toolbox costs the host before
//!   the model reads a token of it).
//!
//! `cargo bench -p toolhost --bench discovery` (optimized; 7 rounds,
//! medians); `-- --quick` runs 2.

use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};
use toolhost_pipeline::advertise::{Format, schemas};
use toolhost_toolbox::file::Toolbox;
use toolhost_toolbox::{Host, HostConfig};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

/// A toolbox of `builtin:read`, the catalog `servers` and maybe the
/// thousand small tools, every component allowed.
fn toolbox(dir: &Path, servers: &[String], thousand: bool, top: &str) -> anyhow::Result<Toolbox> {
    let mut text = format!("version = 1\n{top}\n[[component]]\nsource = \"builtin:read\"\n");
    let mut add = |name: &str, bytes: Vec<u8>| -> anyhow::Result<()> {
        let wasm = dir.join(format!("{name}.wasm"));
        if !wasm.exists() {
            std::fs::write(&wasm, bytes)?;
        }
        text.push_str(&format!(
            "[[component]]\nsource = {:?}\n[component.policy]\ndecision = \"allow\"\n",
            wasm.display().to_string()
        ));
        Ok(())
    };
    for s in servers {
        add(s, toolhost_guests::catalog_guest(s))?;
    }
    if thousand {
        add("tools1k", toolhost_guests::descriptor_guest("tools1k"))?;
    }
    Ok(Toolbox::parse(&text, "toolhost.toml", dir, &["read"])?)
}

fn bytes(host: &Host, format: Format) -> usize {
    Value::Array(schemas(host.registry(), None, format))
        .to_string()
        .len()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 2 } else { 7 };
    let dir = tempfile::tempdir()?;
    let cache = Path::new(toolhost_guests::REPO_ROOT).join("target/bench-discovery-cache");
    let host = Host::new(HostConfig {
        cache_dir: Some(cache),
        journal_dir: Some(dir.path().join("journal")),
        ..HostConfig::default()
    })?;
    let all = toolhost_guests::catalog_servers();
    let mut first = Vec::new();
    let mut count = 0;
    for s in &all {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(
            Path::new(toolhost_guests::REPO_ROOT).join(format!("tests/discovery/catalog/{s}.json")),
        )?)?;
        count += v["tools"].as_array().map_or(0, Vec::len);
        first.push(s.clone());
        if count >= 500 {
            break;
        }
    }

    println!("discovery: advertised bytes (MCP tools/list, every page)");
    println!(
        "{:<26} {:>11} {:>11} {:>8} {:>13}",
        "toolbox", "eager", "deferred", "fewer", "anthropic"
    );
    for (label, servers) in [
        (format!("{count} tools, {} servers", first.len()), &first),
        ("645 tools, 29 servers".to_owned(), &all),
    ] {
        host.load(&toolbox(dir.path(), servers, false, "defer_over = 100000")?)
            .await?;
        let eager = bytes(&host, Format::Mcp);
        host.load(&toolbox(dir.path(), servers, false, "")?).await?;
        let deferred = bytes(&host, Format::Mcp);
        let anthropic = bytes(&host, Format::Anthropic);
        println!(
            "{label:<26} {eager:>9} B {deferred:>9} B {:>7.1}% {anthropic:>11} B",
            100.0 * (1.0 - deferred as f64 / eager as f64)
        );
    }

    let queries: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(
        Path::new(toolhost_guests::REPO_ROOT).join("tests/discovery/queries.json"),
    )?)?;
    let queries: Vec<&str> = queries.iter().filter_map(|q| q["query"].as_str()).collect();
    println!(
        "\nsearch: {} queries, limit 5, {rounds} rounds; baseline: projecting the eager tools/list once",
        queries.len()
    );
    println!(
        "{:<8} {:>9} {:>9} {:>11} {:>13} {:>11} {:>9}",
        "tools", "p50", "p99", "index", "first search", "eager list", "p50/list"
    );
    for thousand in [false, true] {
        host.load(&toolbox(dir.path(), &all, thousand, "defer_over = 100000")?)
            .await?;
        let mut list = Vec::new();
        for _ in 0..rounds {
            let started = Instant::now();
            std::hint::black_box(schemas(host.registry(), None, Format::Mcp));
            list.push(started.elapsed());
        }
        let list = median(list);
        let tools = host.registry().visible(None).len();
        let mut build = Vec::new();
        for _ in 0..rounds {
            let tools = host.registry().visible(None);
            let started = Instant::now();
            std::hint::black_box(toolhost_pipeline::discovery::SearchIndex::new(tools));
            build.push(started.elapsed());
        }
        let mut index = Vec::new();
        let mut each = Vec::new();
        for _ in 0..rounds {
            // A load is a change: the index is built again, in the
            // background; a model's first search comes later than this.
            host.load(&toolbox(dir.path(), &all, thousand, "")?).await?;
            tokio::time::sleep(Duration::from_millis(200)).await;
            let started = Instant::now();
            std::hint::black_box(host.registry().search(queries[0], 5));
            index.push(started.elapsed());
            for q in &queries {
                let started = Instant::now();
                std::hint::black_box(host.registry().search(q, 5));
                each.push(started.elapsed());
            }
        }
        let p50 = percentile(each.clone(), 0.5);
        println!(
            "{tools:<8} {:>9} {:>9} {:>11} {:>13} {:>11} {:>8.3}×",
            us(p50),
            us(percentile(each, 0.99)),
            us(median(build)),
            us(median(index)),
            us(list),
            p50.as_secs_f64() / list.as_secs_f64()
        );
    }
    Ok(())
}
