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
//! - **Hybrid search**: the same queries ranked by BM25F alone and fused
//!   with the embedding model (WordLlama, read from the pinned wheel that
//!   `TOOLHOST_SEARCH_MODEL` names, else fetched by
//!   `tests/search-model/fetch.sh`), p50 and p99 and their ratio; the
//!   index built with every tool embedded (cold), again with their
//!   embeddings kept (a reload), and with them read from the cache on disk
//!   (a restart); reading the model, and the memory it adds (resident, and
//!   the peak while reading).
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
    // BM25 alone here; the hybrid search is measured beside it below.
    let host = Host::new(HostConfig {
        cache_dir: Some(cache),
        journal_dir: Some(dir.path().join("journal")),
        search_model: toolhost_toolbox::model::SearchModel::Off,
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
    hybrid(&host, dir.path(), &all, &queries, rounds).await
}

/// Kilobytes of the process's memory: resident now, and its peak.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// BM25F alone against the hybrid search, on 645 and 1,645 tools.
async fn hybrid(
    host: &Host,
    dir: &Path,
    all: &[String],
    queries: &[&str],
    rounds: usize,
) -> anyhow::Result<()> {
    use toolhost_pipeline::discovery::SearchIndex;
    use toolhost_pipeline::embed::{Model, WORDLLAMA};
    let wheel = toolhost_testkit::search_model::wheel();
    // The peak from here on: "5" resets the process's high-water mark.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (rss, _) = memory();
    let started = Instant::now();
    let model = std::sync::Arc::new(Model::from_wheel_file(&wheel, &WORDLLAMA)?);
    let read = started.elapsed();
    let (after, peak) = memory();
    println!(
        "\nhybrid search: model read in {:.0} ms (SHA-256 checked, inflated, parsed); it adds \
         {:.1} MB resident ({:.1} MB of token table), peak {:.1} MB; the wheel is {:.1} MB in \
         the store, 0 B in toolhost's packages",
        read.as_secs_f64() * 1e3,
        after.saturating_sub(rss) as f64 / 1024.0,
        model.table_bytes() as f64 / 1e6,
        peak.saturating_sub(rss) as f64 / 1024.0,
        WORDLLAMA.size as f64 / 1e6
    );
    println!(
        "{:<8} {:>10} {:>10} {:>10} {:>10} {:>9} {:>12} {:>12} {:>14}",
        "tools",
        "BM25 p50",
        "p50",
        "BM25 p99",
        "p99",
        "p50 ×",
        "index cold",
        "index kept",
        "from disk"
    );
    for thousand in [false, true] {
        host.load(&toolbox(dir, all, thousand, "defer_over = 100000")?)
            .await?;
        let tools = host.registry().visible(None);
        let (mut cold, mut kept) = (Vec::new(), Vec::new());
        let mut index = SearchIndex::new(Vec::new());
        for _ in 0..rounds {
            let mut memo = Default::default();
            let started = Instant::now();
            index = SearchIndex::with_model(tools.clone(), model.clone(), &mut memo);
            cold.push(started.elapsed());
            let started = Instant::now();
            std::hint::black_box(SearchIndex::with_model(
                tools.clone(),
                model.clone(),
                &mut memo,
            ));
            kept.push(started.elapsed());
        }
        // A restart: the embeddings read from the cache on disk, then the
        // index built with them.
        let cache = toolhost_toolbox::model::EmbeddingCache::in_dir(dir);
        let mut memo = Default::default();
        std::hint::black_box(SearchIndex::with_model(
            tools.clone(),
            model.clone(),
            &mut memo,
        ));
        host.registry().keep_embeddings(memo);
        cache.save(host.registry()).await;
        let mut restart = Vec::new();
        for _ in 0..rounds {
            let started = Instant::now();
            let mut memo = cache.read(model.dim());
            std::hint::black_box(SearchIndex::with_model(
                tools.clone(),
                model.clone(),
                &mut memo,
            ));
            restart.push(started.elapsed());
        }
        let words = SearchIndex::new(tools.clone());
        let (mut lexical, mut fused) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            for q in queries {
                let started = Instant::now();
                std::hint::black_box(words.search(q, 5));
                lexical.push(started.elapsed());
                let started = Instant::now();
                std::hint::black_box(index.search(q, 5));
                fused.push(started.elapsed());
            }
        }
        let (l50, f50) = (
            percentile(lexical.clone(), 0.5),
            percentile(fused.clone(), 0.5),
        );
        println!(
            "{:<8} {:>10} {:>10} {:>10} {:>10} {:>8.2}× {:>12} {:>12} {:>14}",
            tools.len(),
            us(l50),
            us(f50),
            us(percentile(lexical, 0.99)),
            us(percentile(fused, 0.99)),
            f50.as_secs_f64() / l50.as_secs_f64(),
            us(median(cold)),
            us(median(kept)),
            us(median(restart))
        );
    }
    Ok(())
}
