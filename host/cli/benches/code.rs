//! Code mode against native tool calling, in one run, optimized:
//!
//! - **context bytes**: for the same task, what the model must read in
//!   each mode (the advertisement, sent with every request, and every
//!   result) and how many requests it makes. Native: the model lists, then
//!   reads every file in one turn of parallel calls, then answers; code: it
//!   writes one script, then answers. Two tasks: count the TODO lines of a
//!   generated tree of 300 files (40 to 440 lines each) and report the top
//!   5; read 20 of them and say which define a given function.
//! - **start-up**: an empty `run_code` call (`return 1`; in Python `1`),
//!   p50, beside a native `read` of a small file.
//!
//! - **parallel calls**: 20 independent reads of a tool that runs in
//!   worker processes, all started at once (`Promise.all`,
//!   `asyncio.gather`) against one after another, as a ratio of wall time.
//!
//! Each in JavaScript and in Python (the toolbox's `language`).
//! - **inner calls**: the host time one `read` made by a script adds
//!   (a script making 100 reads against an empty one, per read) against the
//!   same `read` made directly, as a ratio.
//!
//! `cargo bench -p toolhost --bench code` (`-- --quick`: fewer rounds, for
//! `make test`).

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::{ContentBlock, ToolCall, ToolResult};
use toolhost_pipeline::Pipeline;
use toolhost_pipeline::advertise::{Format, schemas};
use toolhost_toolbox::{Host, HostConfig, find_toolbox};

const FILES: usize = 300;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A tree of `FILES` source files, some TODO lines in each; from 40 to 440
/// lines long, 240 on average (this repository's median Rust file has 238).
fn tree() -> anyhow::Result<tempfile::TempDir> {
    let ws = tempfile::tempdir()?;
    for i in 0..FILES {
        let dir = ws.path().join(format!("src/mod{}", i % 12));
        std::fs::create_dir_all(&dir)?;
        let mut text = String::new();
        for line in 0..40 + (i * 37) % 400 {
            if (line * 7 + i) % 13 == 0 || (i % 17 == 0 && line % 3 == 0) {
                text.push_str(&format!("    // TODO: item {line} of file {i}\n"));
            } else if line == 5 && i % 15 == 0 {
                text.push_str("pub fn parse_config(input: &str) -> Config {\n");
            } else {
                text.push_str(&format!("    let value_{line} = compute({line}, {i});\n"));
            }
        }
        std::fs::write(dir.join(format!("file{i}.rs")), text)?;
    }
    Ok(ws)
}

/// A host serving the built-in readers for `ws` in `mode`.
async fn host(ws: &std::path::Path, mode: &str) -> anyhow::Result<Host> {
    host_with(ws, mode, "").await
}

/// The same, with `more` at the end of its toolbox.
async fn host_with(ws: &std::path::Path, mode: &str, more: &str) -> anyhow::Result<Host> {
    host_in(ws, mode, "javascript", more).await
}

/// The same, its scripts in `language`.
async fn host_in(
    ws: &std::path::Path,
    mode: &str,
    language: &str,
    more: &str,
) -> anyhow::Result<Host> {
    std::fs::write(
        ws.join("toolhost.toml"),
        format!(
            "version = 1\nmode = \"{mode}\"\nlanguage = \"{language}\"\n[[component]]\nsource = \"builtin:read\"\n\
             [[component]]\nsource = \"builtin:list\"\n[[component]]\nsource = \"builtin:grep\"\n{more}"
        ),
    )?;
    let host = Host::new(HostConfig {
        cache_dir: Some(toolhost_guests::test_cache_dir()),
        ..HostConfig::default()
    })?;
    host.load(&find_toolbox(None, ws)?).await?;
    Ok(host)
}

async fn call(p: &Pipeline, id: &str, tool: &str, args: Value) -> anyhow::Result<ToolResult> {
    let r = p
        .execute(
            ToolCall::new(id, tool, args.to_string()),
            CancellationToken::new(),
        )
        .await;
    anyhow::ensure!(!r.is_error(), "{tool}: {}", r.text());
    Ok(r)
}

/// What the model reads of a result: its content blocks, as sent.
fn read_bytes(r: &ToolResult) -> usize {
    r.content()
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.len(),
            other => serde_json::to_string(other).map_or(0, |s| s.len()),
        })
        .sum()
}

/// Bytes of the advertisement (`tools/list`'s tools, as JSON).
fn advertised(h: &Host) -> usize {
    serde_json::to_string(&schemas(h.registry(), None, Format::Mcp)).map_or(0, |s| s.len())
}

/// One mode's cost for a task: advertisement, results, requests.
struct Cost {
    advertisement: usize,
    results: usize,
    requests: usize,
    answer: Value,
}

impl Cost {
    /// What the model reads in all: the advertisement with every request,
    /// and the results.
    fn total(&self) -> usize {
        self.advertisement * self.requests + self.results
    }
}

/// Task A natively: list the tree, read every file (one turn of parallel
/// calls), count and rank.
async fn todos_native(h: &Host) -> anyhow::Result<Cost> {
    let p = h.session().build();
    let listed = call(
        &p,
        "l",
        "list",
        json!({"path": "src", "recursive": true, "limit": 2000}),
    )
    .await?;
    let mut results = read_bytes(&listed);
    let files: Vec<String> = listed.value().map_or_else(Vec::new, |v| {
        v["entries"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["type"] == "file")
            .filter_map(|e| e["path"].as_str().map(|p| format!("src/{p}")))
            .collect()
    });
    anyhow::ensure!(files.len() == FILES, "listed {} files", files.len());
    let mut counts = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let r = call(&p, &format!("r{i}"), "read", json!({"path": f})).await?;
        results += read_bytes(&r);
        let n = r.value().map_or(0, |v| {
            v["lines"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|l| l.as_str().is_some_and(|l| l.contains("TODO")))
                .count()
        });
        counts.push((n, f.clone()));
    }
    counts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    counts.truncate(5);
    Ok(Cost {
        advertisement: advertised(h),
        results,
        requests: 3,
        answer: json!(
            counts
                .iter()
                .map(|(n, f)| json!([f, n]))
                .collect::<Vec<_>>()
        ),
    })
}

const TODOS_SCRIPT: &str = r#"const listed = await tools.list({path: "src", recursive: true, limit: 2000});
const counts = [];
for (const e of listed.entries) {
  if (e.type !== "file") continue;
  const path = "src/" + e.path;
  const r = await tools.read({path});
  counts.push([path, r.lines.filter(l => l.includes("TODO")).length]);
}
counts.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
return counts.slice(0, 5);"#;

const TODOS_SCRIPT_PY: &str = r#"listed = await tools.list(path="src", recursive=True, limit=2000)
counts = []
for e in listed["entries"]:
    if e["type"] != "file":
        continue
    path = "src/" + e["path"]
    r = await tools.read(path=path)
    counts.append([path, len([l for l in r["lines"] if "TODO" in l])])
counts.sort(key=lambda c: (-c[1], c[0]))
counts[:5]"#;

/// Task B natively: read the 20 files (one turn), then answer.
async fn defines_native(h: &Host, files: &[String]) -> anyhow::Result<Cost> {
    let p = h.session().build();
    let mut results = 0;
    let mut found = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let r = call(&p, &format!("r{i}"), "read", json!({"path": f})).await?;
        results += read_bytes(&r);
        if r.text().contains("fn parse_config(") {
            found.push(f.clone());
        }
    }
    Ok(Cost {
        advertisement: advertised(h),
        results,
        requests: 2,
        answer: json!(found),
    })
}

fn defines_script(files: &[String]) -> String {
    format!(
        r#"const files = {};
const found = [];
for (const path of files) {{
  const r = await tools.read({{path}});
  if (r.lines.some(l => l.includes("fn parse_config("))) found.push(path);
}}
return found;"#,
        serde_json::to_string(files).unwrap_or_default()
    )
}

fn defines_script_py(files: &[String]) -> String {
    format!(
        r#"found = []
for path in {}:
    r = await tools.read(path=path)
    if any("fn parse_config(" in l for l in r["lines"]):
        found.append(path)
found"#,
        serde_json::to_string(files).unwrap_or_default()
    )
}

/// A task in code mode: one script, then the answer.
async fn script_cost(h: &Host, code: &str) -> anyhow::Result<Cost> {
    let p = h.session().build();
    let r = call(&p, "s", "run_code", json!({ "code": code })).await?;
    Ok(Cost {
        advertisement: advertised(h),
        results: read_bytes(&r) + code.len(),
        requests: 2,
        answer: r.value().map_or(Value::Null, |v| v["result"].clone()),
    })
}

fn row(task: &str, native: &Cost, code: &Cost) {
    let saved = 100.0 * (1.0 - code.total() as f64 / native.total().max(1) as f64);
    println!(
        "| {task} | {} + {} × {} = **{}** | {} + {} × {} = **{}** | **{saved:.1} %** |",
        native.results,
        native.advertisement,
        native.requests,
        native.total(),
        code.results,
        code.advertisement,
        code.requests,
        code.total(),
    );
}

async fn timed(p: &Pipeline, tool: &str, args: &Value, n: usize) -> anyhow::Result<Duration> {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        call(p, &format!("t{i}"), tool, args.clone()).await?;
        times.push(t.elapsed());
    }
    Ok(median(times))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let ws = tree()?;
    if std::env::args().any(|a| a == "--inner-only") {
        // For `perf record`: scripts of 100 reads, over and over.
        let code = host(ws.path(), "code").await?;
        let p = code.session().build();
        let script = "for (let i = 0; i < 100; i++) await tools.read({path: \"src/mod0/file0.rs\"}); return 1;";
        timed(&p, "run_code", &json!({ "code": script }), 300).await?;
        return Ok(());
    }
    let native = host(ws.path(), "native").await?;
    let code = host(ws.path(), "code").await?;
    let python = host_in(ws.path(), "code", "python", "").await?;
    // The runner in process (its default is a walled worker).
    let code_in_process = host_with(
        ws.path(),
        "code",
        "[[component]]\nsource = \"builtin:code\"\n[component.policy]\ndecision = \"allow\"\n\
         callers = \"model\"\ncall_tools = true\nisolation = \"in-process\"\n\
         [component.policy.limits]\nfuel = 20_000_000_000\ntimeout_ms = 60_000\nmemory_bytes = 268_435_456\n",
    )
    .await?;

    println!("## Context bytes: what the model reads (results + advertisement × requests)\n");
    println!("| task | native | code mode | fewer bytes |");
    println!("|---|---|---|---|");
    let n = todos_native(&native).await?;
    let c = script_cost(&code, TODOS_SCRIPT).await?;
    anyhow::ensure!(
        n.answer == c.answer,
        "the answers differ: {} / {}",
        n.answer,
        c.answer
    );
    row(&format!("TODO lines of {FILES} files, top 5"), &n, &c);
    let py = script_cost(&python, TODOS_SCRIPT_PY).await?;
    anyhow::ensure!(
        n.answer == py.answer,
        "the answers differ: {} / {}",
        n.answer,
        py.answer
    );
    row(
        &format!("TODO lines of {FILES} files, top 5 (Python)"),
        &n,
        &py,
    );
    let twenty: Vec<String> = (0..20)
        .map(|i| format!("src/mod{}/file{}.rs", (i * 15) % 12, i * 15))
        .collect();
    let n = defines_native(&native, &twenty).await?;
    let c = script_cost(&code, &defines_script(&twenty)).await?;
    anyhow::ensure!(
        n.answer == c.answer,
        "the answers differ: {} / {}",
        n.answer,
        c.answer
    );
    row("20 files: which define `parse_config`", &n, &c);
    let py = script_cost(&python, &defines_script_py(&twenty)).await?;
    anyhow::ensure!(
        n.answer == py.answer,
        "the answers differ: {} / {}",
        n.answer,
        py.answer
    );
    row("20 files: which define `parse_config` (Python)", &n, &py);
    println!(
        "\n(Requests: native 3 and 2 (list; one turn of parallel reads; the answer), code mode 2 (the script; the answer). The script's own text counts as read: the model wrote it.)\n"
    );

    let rounds = if quick { 20 } else { 400 };
    let p = code.session().build();
    // file0.rs: 40 lines.
    let small = json!({"path": "src/mod0/file0.rs"});
    // Warm both paths first.
    timed(&p, "read", &small, 5).await?;
    timed(&p, "run_code", &json!({"code": "return 1"}), 5).await?;
    let read = timed(&p, "read", &small, rounds).await?;
    let empty = timed(&p, "run_code", &json!({"code": "return 1"}), rounds).await?;
    println!("## Start-up and inner calls ({rounds} calls a row, p50)\n");
    println!("| | p50 |");
    println!("|---|---|");
    println!("| a native `read` of a 40-line file | {:.1} µs |", us(read));
    println!(
        "| an empty `run_code` (`return 1`) | **{:.0} µs** |",
        us(empty)
    );
    let inner_n = 100;
    let script = format!(
        "for (let i = 0; i < {inner_n}; i++) await tools.read({{path: \"src/mod0/file0.rs\"}}); return 1;"
    );
    let with_reads = timed(&p, "run_code", &json!({ "code": script }), rounds / 4 + 1).await?;
    let per_inner = with_reads.saturating_sub(empty) / inner_n;
    // The host's own time for one call, as each result reports it: a
    // native call's whole pipeline, and each of a script's calls from the
    // runner's request to its reply (the script's own JSON work left out).
    let mut native_host = Vec::new();
    for i in 0..rounds {
        let r = call(&p, &format!("h{i}"), "read", small.clone()).await?;
        native_host.push(Duration::from_micros(r.meta().timings.total_us));
    }
    let mut inner_host = Vec::new();
    for i in 0..(rounds / 20).max(2) {
        let r = call(&p, &format!("s{i}"), "run_code", json!({ "code": script })).await?;
        for c in r.meta().extra["calls"]["list"]
            .as_array()
            .into_iter()
            .flatten()
        {
            inner_host.push(Duration::from_micros(c["us"].as_u64().unwrap_or(0)));
        }
    }
    let (native_host, inner_host) = (median(native_host), median(inner_host));
    // The runner in process, in the same run.
    let q = code_in_process.session().build();
    timed(&q, "run_code", &json!({"code": "return 1"}), 5).await?;
    let empty_in = timed(&q, "run_code", &json!({"code": "return 1"}), rounds).await?;
    let with_reads_in = timed(&q, "run_code", &json!({ "code": script }), rounds / 4 + 1).await?;
    let per_inner_in = with_reads_in.saturating_sub(empty_in) / inner_n;
    println!(
        "| a script making {inner_n} `read`s | {:.0} µs |",
        us(with_reads)
    );
    println!(
        "| one `read` made by a script: (script − empty) / {inner_n} | **{:.0} µs** |",
        us(per_inner)
    );
    println!(
        "| host time of a native `read` (its `timings.totalUs`) | {:.1} µs |",
        us(native_host)
    );
    println!(
        "| host time of a script's `read` (its `calls[].us`) | **{:.1} µs** |",
        us(inner_host)
    );
    println!(
        "| an empty `run_code`, the runner in process | {:.0} µs ({:.2}× in a worker) |",
        us(empty_in),
        us(empty) / us(empty_in).max(1e-9)
    );
    println!(
        "| one `read` made by a script, the runner in process | {:.0} µs ({:.2}× in a worker) |",
        us(per_inner_in),
        us(per_inner) / us(per_inner_in).max(1e-9)
    );
    // Python, in a worker and in process.
    let py = python.session().build();
    timed(&py, "run_code", &json!({"code": "1"}), 5).await?;
    let empty_py = timed(&py, "run_code", &json!({"code": "1"}), rounds).await?;
    let script_py =
        format!("for i in range({inner_n}):\n    await tools.read(path=\"src/mod0/file0.rs\")\n1");
    let with_reads_py = timed(
        &py,
        "run_code",
        &json!({ "code": script_py }),
        rounds / 4 + 1,
    )
    .await?;
    let python_in_process = host_in(
        ws.path(),
        "code",
        "python",
        "[[component]]\nsource = \"builtin:code_python\"\n[component.policy]\ndecision = \"allow\"\n\
         callers = \"model\"\ncall_tools = true\nisolation = \"in-process\"\n\
         [component.policy.limits]\nfuel = 20_000_000_000\ntimeout_ms = 60_000\nmemory_bytes = 268_435_456\n",
    )
    .await?;
    let pq = python_in_process.session().build();
    timed(&pq, "run_code", &json!({"code": "1"}), 5).await?;
    let empty_py_in = timed(&pq, "run_code", &json!({"code": "1"}), rounds).await?;
    println!(
        "| an empty Python `run_code` (`1`) | **{:.0} µs** ({:.2}× JavaScript's) |",
        us(empty_py),
        us(empty_py) / us(empty).max(1e-9)
    );
    println!(
        "| an empty Python `run_code`, the runner in process | {:.0} µs ({:.2}× in a worker) |",
        us(empty_py_in),
        us(empty_py) / us(empty_py_in).max(1e-9)
    );
    println!(
        "| one `read` made by a Python script: (script − empty) / {inner_n} | **{:.0} µs** |",
        us(with_reads_py.saturating_sub(empty_py) / inner_n)
    );
    // Parallel calls: 20 reads of a worker tool at once, against a loop.
    let workers = "[[component]]\nsource = \"builtin:read\"\nprefix = \"w_\"\n[component.policy]\n\
                   decision = \"allow\"\nisolation = \"process\"\n[[component.policy.fs]]\n\
                   host = \".\"\nguest = \"/workspace\"\nmode = \"ro\"\n";
    println!(
        "\n## Parallel calls: 20 reads of a tool in worker processes ({} scripts a row, p50)\n",
        rounds / 4 + 1
    );
    println!("| | one after another | at once | ratio |");
    println!("|---|---|---|---|");
    for (language, sequential, parallel) in [
        (
            "javascript",
            "for (let i = 0; i < 20; i++) await tools.w_read({path: `src/mod${i % 12}/file${i}.rs`});\nreturn 1;",
            "await Promise.all(Array.from({length: 20}, (_, i) => tools.w_read({path: `src/mod${i % 12}/file${i}.rs`})));\nreturn 1;",
        ),
        (
            "python",
            "for i in range(20):\n    await tools.w_read(path=f'src/mod{i % 12}/file{i}.rs')\n1",
            "import asyncio\nawait asyncio.gather(*[tools.w_read(path=f'src/mod{i % 12}/file{i}.rs') for i in range(20)])\n1",
        ),
    ] {
        let h = host_in(ws.path(), "code", language, workers).await?;
        let s = h.session().build();
        timed(&s, "run_code", &json!({"code": sequential}), 3).await?;
        timed(&s, "run_code", &json!({"code": parallel}), 3).await?;
        let one_by_one =
            timed(&s, "run_code", &json!({"code": sequential}), rounds / 4 + 1).await?;
        let at_once = timed(&s, "run_code", &json!({"code": parallel}), rounds / 4 + 1).await?;
        println!(
            "| {language} | {:.0} µs | {:.0} µs | **{:.2}×** |",
            us(one_by_one),
            us(at_once),
            us(at_once) / us(one_by_one).max(1e-9)
        );
    }
    println!(
        "\nA script's `read` over a native one: **{:.2}×** in host time; **{:.2}×** end to end (the script's own JSON work on the value included)",
        us(inner_host) / us(native_host).max(1e-9),
        us(per_inner) / us(read).max(1e-9)
    );
    Ok(())
}
