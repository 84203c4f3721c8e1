//! The built-in tools on a tree the size of a real repository, each against
//! its native counterpart in the same run, under the shipped policies.
//!
//! The tree (built once and kept under the cargo target directory) has
//! 20,000 source files across nested directories, a `.gitignore`d `target/`
//! of build outputs, binary assets, and three log files over 100 MB: about
//! 700 MB. Each tool runs through the whole pipeline of a host assembled
//! from the embedded default toolbox (the shipped policies, the tree as
//! `/workspace`):
//!
//! | tool | native counterpart | target |
//! |---|---|---|
//! | `grep`, no match and a few hundred matches | `rg` if installed, else `grep -rn` on the same files | ≤ 3× |
//! | `list`, recursive | `find` | ≤ 5× |
//! | `read`, a range near the end of a 110 MB file, and `tail` | `sed -n` / `tail -n` | ≤ 50 ms |
//!
//! Every call must succeed (no budget, memory or deadline failure). The
//! figures are medians; the first (cold) run of each is a warm-up.
//!
//! `cargo bench -p toolhost --bench scale`; `-- --quick` builds a small tree
//! (CI runs it so the benchmark cannot rot).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost_contract::ToolCall;
use toolhost_pipeline::Pipeline;
use toolhost_toolbox::{Host, HostConfig, embedded_default};

/// The shape of a generated tree.
struct Shape {
    name: &'static str,
    source_files: usize,
    source_lines: usize,
    build_files: usize,
    logs: usize,
    log_bytes: usize,
}

const FULL: Shape = Shape {
    name: "full",
    source_files: 20_000,
    source_lines: 300,
    build_files: 2_000,
    logs: 3,
    log_bytes: 110 << 20,
};

const QUICK: Shape = Shape {
    name: "quick",
    source_files: 1_000,
    source_lines: 100,
    build_files: 100,
    logs: 1,
    log_bytes: 12 << 20,
};

/// Files that carry the `matchable` token (one line each).
const MARKED_EVERY: usize = 70;
const NO_MATCH: &str = "zq_no_such_token_xj";
const SOME_MATCHES: &str = "matchable_marker_[0-9]+";

/// A deterministic word stream (xorshift), so every run builds the same tree.
struct Words(u64);

impl Words {
    const LIST: [&'static str; 16] = [
        "let", "value", "self", "return", "match", "config", "buffer", "index", "state", "result",
        "error", "into", "parse", "write", "handle", "count",
    ];

    fn next(&mut self) -> &'static str {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Self::LIST[(self.0 % 16) as usize]
    }

    fn line(&mut self, out: &mut String, words: usize) {
        out.push_str("    ");
        for k in 0..words {
            if k > 0 {
                out.push(' ');
            }
            out.push_str(self.next());
        }
        out.push_str(";\n");
    }
}

/// Builds the tree under `root` unless a complete one is already there.
fn build_tree(root: &Path, shape: &Shape) -> anyhow::Result<()> {
    let done = root.join(".complete");
    if done.exists() {
        return Ok(());
    }
    if root.exists() {
        std::fs::remove_dir_all(root)?;
    }
    eprintln!("building the {} tree in {} …", shape.name, root.display());
    let mut words = Words(0x9e37_79b9_7f4a_7c15);
    std::fs::create_dir_all(root)?;
    std::fs::write(root.join(".gitignore"), "target/\n*.tmp\n")?;
    let mut text = String::new();
    for i in 0..shape.source_files {
        let dir = root.join(format!("crates/c{:03}/src/m{:02}", i / 200, (i / 20) % 10));
        std::fs::create_dir_all(&dir)?;
        text.clear();
        text.push_str(&format!("// file {i}\nfn f{i}() {{\n"));
        for l in 0..shape.source_lines {
            if i % MARKED_EVERY == 0 && l == shape.source_lines / 2 {
                text.push_str(&format!("    let matchable_marker_{i} = 1;\n"));
            } else {
                words.line(&mut text, 8);
            }
        }
        text.push_str("}\n");
        std::fs::write(dir.join(format!("f{i}.rs")), &text)?;
    }
    for i in 0..shape.build_files {
        let dir = root.join(format!("target/debug/deps/d{:02}", i / 100));
        std::fs::create_dir_all(&dir)?;
        text.clear();
        for _ in 0..200 {
            words.line(&mut text, 10);
        }
        // Build outputs mention the token too: ignored, so never matched.
        text.push_str("matchable_marker_999999\n");
        std::fs::write(dir.join(format!("o{i}.d")), &text)?;
    }
    std::fs::create_dir_all(root.join("assets"))?;
    for i in 0..20 {
        let mut bytes = vec![0u8; 4096];
        bytes[100..117].copy_from_slice(b"matchable_marker_");
        std::fs::write(root.join(format!("assets/a{i}.bin")), bytes)?;
    }
    std::fs::create_dir_all(root.join("logs"))?;
    for k in 0..shape.logs {
        let mut f = std::io::BufWriter::new(std::fs::File::create(
            root.join(format!("logs/big-{k}.log")),
        )?);
        let mut written = 0;
        let mut n = 0u64;
        while written < shape.log_bytes {
            text.clear();
            text.push_str(&format!("{n:>10} INFO "));
            words.line(&mut text, 6);
            f.write_all(text.as_bytes())?;
            written += text.len();
            n += 1;
        }
        f.flush()?;
    }
    std::fs::write(&done, "")?;
    Ok(())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Times a native command (output discarded); exit status 0 or 1 (grep's
/// "no match") counts as success.
fn native(runs: usize, cmd: &mut Command) -> anyhow::Result<Duration> {
    let mut times = vec![];
    for _ in 0..=runs {
        let t = Instant::now();
        let out = cmd.output()?;
        times.push(t.elapsed());
        anyhow::ensure!(
            matches!(out.status.code(), Some(0 | 1)),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    times.remove(0);
    Ok(median(times))
}

/// Times a tool call through the pipeline; every call must succeed.
async fn tool(
    pipeline: &Pipeline,
    runs: usize,
    name: &str,
    args: Value,
) -> anyhow::Result<(Duration, Value, String)> {
    let mut times = vec![];
    let mut last = None;
    for i in 0..=runs {
        let t = Instant::now();
        let r = pipeline
            .execute(
                ToolCall::new(format!("{name}{i}"), name, args.to_string()),
                CancellationToken::new(),
            )
            .await;
        times.push(t.elapsed());
        anyhow::ensure!(!r.is_error(), "{name} {args} failed: {}", r.text());
        last = Some(r);
    }
    times.remove(0);
    let r = last.ok_or_else(|| anyhow::anyhow!("no run"))?;
    let mut value = r.value().cloned().unwrap_or(Value::Null);
    // The fuel the call burned, against its policy's budget.
    let meta = serde_json::to_value(r.meta())?;
    if let (Some(fuel), Value::Object(map)) = (find(&meta, "fuelConsumed"), &mut value) {
        map.insert("_fuel".into(), fuel.clone());
    }
    Ok((median(times), value, r.text()))
}

/// The first value under `key`, anywhere in `v`.
fn find<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(key).or_else(|| m.values().find_map(|x| find(x, key))),
        Value::Array(a) => a.iter().find_map(|x| find(x, key)),
        _ => None,
    }
}

/// The native search over the same files as `grep` with its default rules:
/// `rg` if installed, else GNU grep leaving out `target/` and `.git`.
fn native_grep(rg: Option<&Path>, pattern: &str) -> Command {
    match rg {
        Some(rg) => {
            let mut c = Command::new(rg);
            c.args(["-n", "--no-messages", pattern]);
            c
        }
        None => {
            let mut c = Command::new("grep");
            c.args([
                "-rn",
                "-E",
                "--exclude-dir=target",
                "--exclude-dir=.git",
                pattern,
                ".",
            ]);
            c
        }
    }
}

fn which(bin: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(bin))
        .find(|p| p.is_file())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    // `--repeat NAME N`: only call that tool N times (for a profiler).
    let args: Vec<String> = std::env::args().collect();
    let repeat = args.iter().position(|a| a == "--repeat").and_then(|i| {
        Some((
            args.get(i + 1)?.clone(),
            args.get(i + 2)?.parse::<usize>().ok()?,
        ))
    });
    let shape = if quick { &QUICK } else { &FULL };
    let runs = if quick { 1 } else { 3 };
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("scale-tree-{}", shape.name));
    let t = Instant::now();
    build_tree(&root, shape)?;
    let (files, bytes) = tree_size(&root);
    println!(
        "tree: {} files, {:.0} MB ({} ready in {:.1} s)",
        files,
        bytes as f64 / 1e6,
        root.display(),
        t.elapsed().as_secs_f64()
    );

    // A warm compiled-component cache, as a user has after the first start.
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scale-cache");
    let host = Host::new(HostConfig {
        cache_dir: Some(cache),
        max_instances: 8,
        artifact_capacity: 64,
        ..HostConfig::default()
    })?;
    host.load(&embedded_default(&root)).await?;
    let pipeline = host.session().build();

    if let Some((which, n)) = repeat {
        let args = match which.as_str() {
            "grep" => json!({"pattern": NO_MATCH, "path": "/workspace"}),
            "list" => json!({"path": "/workspace", "recursive": true, "limit": 2000}),
            _ => json!({"path": "/workspace/logs/big-0.log", "tail": 20}),
        };
        let name = if which == "tail" {
            "read"
        } else {
            which.as_str()
        };
        let (t, _, _) = tool(&pipeline, n, name, args).await?;
        println!("{which}: median {:.1} ms", ms(t));
        return Ok(());
    }

    let mut rows: Vec<(String, f64, f64, String, f64)> = vec![];
    let fuel = |v: &Value| v["_fuel"].as_f64().unwrap_or(0.0) / 1e9;
    let mut failures = vec![];

    // grep: the same set of files for the native search.
    let rg = which("rg");
    let native_name = if rg.is_some() {
        "rg -n"
    } else {
        "grep -rn (same files)"
    };
    for (label, pattern) in [("no match", NO_MATCH), ("some matches", SOME_MATCHES)] {
        let mut cmd = native_grep(rg.as_deref(), pattern);
        cmd.current_dir(&root);
        let n = native(runs, &mut cmd)?;
        let (t, v, text) = tool(
            &pipeline,
            runs,
            "grep",
            json!({"pattern": pattern, "path": "/workspace", "max_matches": 1000}),
        )
        .await?;
        if !v["stopped"].is_null() {
            failures.push(format!("grep {label}: stopped early: {}", v["stopped"]));
        }
        if label == "some matches" {
            let expect = shape.source_files.div_ceil(MARKED_EVERY);
            let got = v["matches"].as_array().map_or(0, Vec::len);
            if got != expect {
                failures.push(format!("grep {label}: {got} matches, expected {expect}"));
            }
        } else if !text.starts_with("No matches") {
            failures.push(format!("grep {label}: {text:.200}"));
        }
        rows.push((
            format!("grep, {label}"),
            ms(n),
            ms(t),
            format!("{native_name}; ≤ 3×"),
            fuel(&v),
        ));
    }

    // list: the whole tree, recursively.
    let n = native(runs, Command::new("find").arg(".").current_dir(&root))?;
    let (t, v, _) = tool(
        &pipeline,
        runs,
        "list",
        json!({"path": "/workspace", "recursive": true, "limit": 2000}),
    )
    .await?;
    if v["total"].as_u64().unwrap_or(0) < files as u64 {
        failures.push(format!("list: total {} < {files} files", v["total"]));
    }
    // `find` reads entry types from the directory; `list` also stats each
    // file for its size, as `find -printf %s` does.
    let sized = native(
        runs,
        Command::new("find")
            .args([".", "-printf", "%p %s\n"])
            .current_dir(&root),
    )?;
    rows.push((
        "list, recursive (vs find -printf %s)".into(),
        ms(sized),
        ms(t),
        "find -printf %s; ≤ 5×".into(),
        fuel(&v),
    ));
    rows.push((
        "list, recursive".into(),
        ms(n),
        ms(t),
        "find; ≤ 5×".into(),
        fuel(&v),
    ));

    // read: a range near the end of the first big log, and its tail.
    let log = root.join("logs/big-0.log");
    let lines = std::fs::read(&log).map(|b| b.iter().filter(|&&c| c == b'\n').count())?;
    let from = lines - 10;
    let n = native(
        runs,
        Command::new("sed")
            .arg("-n")
            .arg(format!("{from},{}p", from + 3))
            .arg(&log),
    )?;
    let (t, v, _) = tool(
        &pipeline,
        runs,
        "read",
        json!({"path": "/workspace/logs/big-0.log", "offset": from, "limit": 4}),
    )
    .await?;
    if v["lines"].as_array().map_or(0, Vec::len) != 4 {
        failures.push(format!("read range: {v:.200}"));
    }
    rows.push((
        format!("read, lines {from}-{} of {lines}", from + 3),
        ms(n),
        ms(t),
        "sed -n; ≤ 50 ms".into(),
        fuel(&v),
    ));
    let n = native(runs, Command::new("tail").args(["-n", "20"]).arg(&log))?;
    let (t, v, _) = tool(
        &pipeline,
        runs,
        "read",
        json!({"path": "/workspace/logs/big-0.log", "tail": 20}),
    )
    .await?;
    if v["totalLines"].as_u64() != Some(lines as u64) {
        failures.push(format!("read tail: totalLines {}", v["totalLines"]));
    }
    rows.push((
        "read, tail 20".into(),
        ms(n),
        ms(t),
        "tail -n; ≤ 50 ms".into(),
        fuel(&v),
    ));

    println!("\n| call | native ms | toolhost ms | ratio | counterpart; target | fuel (10⁹) |");
    println!("|---|---|---|---|---|---|");
    for (what, n, t, target, fuel) in &rows {
        println!(
            "| {what} | {n:.1} | {t:.1} | {:.2}× | {target} | {fuel:.2} |",
            t / n
        );
    }
    if !failures.is_empty() {
        anyhow::bail!("tools failed on the tree:\n{}", failures.join("\n"));
    }
    Ok(())
}

fn tree_size(root: &Path) -> (usize, u64) {
    let (mut files, mut bytes) = (0, 0);
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => {
                    files += 1;
                    bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
                }
                _ => {}
            }
        }
    }
    (files, bytes)
}
