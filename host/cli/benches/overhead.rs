//! What the sandbox and the pipeline cost per call, as ratios against a
//! floor measured in the same run:
//!
//! - **raw floor**: wasmtime alone, on the runtime's own engine: a fresh
//!   `Store` with an empty WASI context, `instantiate_async`, and
//!   `execute("echo", "{}")` of the test guest;
//! - **runtime**: `LoadedComponent::execute` (the policy's sandbox, budget,
//!   limits, classification);
//! - **pipeline**: `Pipeline::execute`, every stage including render, of
//!   the same call (`echo` with `{}`), so every row asks the guest for the
//!   same work; with the tool's render isolated (a second instance), in the
//!   execute instance, and not called (`render = "host"`: `echo` leaves
//!   rendering to the host anyway, so all three give the same content);
//! - **host-renders**: the pipeline under the third-party default
//!   (render isolated) for `echo_plain`, the same tool declaring that it
//!   renders nothing (contract 0.3.0): the host skips the second instance;
//! - **pipeline alone**: the same with a body that returns at once, so the
//!   stages' own cost is read without the sandbox's;
//! - **worker**: the `render = "host"` row with the tool in a worker
//!   process (toolhost-worker: the default for a component that is not
//!   built in), and what a worker costs to start and to keep idle;
//! - **spawn**: starting `/bin/true` and waiting for it, the native
//!   alternative to a sandbox;
//! - **spans** (SEP-414): the pipeline alone and the full pipeline with no
//!   subscriber, under `serve`'s subscriber with no OTLP endpoint, and
//!   exporting by OTLP to a loopback sink; and a call's disabled spans;
//! - throughput with 1, 2, 8 and 64 concurrent callers (p50, p99, calls/s),
//!   each call with its own arguments (identical calls in flight together
//!   run one after another: the repeat check waits for the previous one);
//! - cold compile against cached load, for a small and a large component;
//! - resident memory growth over many calls;
//! - record and replay: a call recorded to a cassette, played back from it
//!   (nothing runs) and verified (re-run and compared), against the same
//!   call live in deterministic mode;
//! - tools in other languages (those built under `target/<lang>-guests/`,
//!   which `make bench` builds first): cold compile and cached load, and a
//!   call through the pipeline against the Rust `read` tool's.
//!
//! The per-call rows are measured in interleaved rounds, back to back and
//! again with each call after 1 ms asleep (cold caches, as an agent's calls
//! arrive), each with its own floor.
//!
//! `cargo bench -p toolhost --bench overhead` (optimized); `-- --quick` for a
//! short run (CI runs it so the benchmark cannot rot); `-- --calls-only` for
//! the per-call tables alone. For `perf record`, one kind of call in a loop:
//! `--floor-only`, `--runtime-only` (execute + render in one instance),
//! `--isolated-only`, `--pipeline-only` (same-instance), `--host-only`
//! (render = "host"), `--worker-only` (the same in a worker process),
//! `--stages-only` (pipeline alone), `--workers-only` (worker start and
//! memory alone), `--tracing-only` (the spans' table alone),
//! `--deterministic-only`, `--record-only` (to a cassette), `--read-only`
//! (Rust's `read` of a small file); with `--idle`, a hundredth as many
//! calls, each after 1 ms asleep.

#[path = "../../../tests/support/process.rs"]
mod process;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::ToolCall;
use toolhost_pipeline::replay::{Layer, Mode, Replay};
use toolhost_pipeline::{
    ApproveAll, Pipeline, PipelineBuilder, Registration, Registry, Scope, ToolBody, ToolSpec,
};
use toolhost_policy::{Decision, PolicyBuilder, RenderMode};
use toolhost_runtime::{Budget, Execution, Invocation, LoadedComponent, Runtime, RuntimeConfig};
use wasmtime::Store;
use wasmtime::component::{Component, Linker, ResourceTable, Val};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

struct Raw {
    ctx: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Raw {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Appends the times of `n` runs of `f` to `times`, each after the thread
/// slept for `idle` when it is given.
async fn times_of<F, Fut>(
    n: usize,
    idle: Option<Duration>,
    mut f: F,
    times: &mut Vec<Duration>,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    for _ in 0..n {
        if let Some(idle) = idle {
            std::thread::sleep(idle);
        }
        let t = Instant::now();
        f().await?;
        times.push(t.elapsed());
    }
    Ok(())
}

/// Median of `n` timed runs of `f`.
async fn median_of<F, Fut>(n: usize, mut f: F) -> anyhow::Result<(Duration, Duration)>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f().await?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok((percentile(&times, 0.5), percentile(&times, 0.99)))
}

/// A pipeline serving the test guest's tools under an allow policy.
fn echo_pipeline(
    loaded: &Arc<LoadedComponent>,
    render: RenderMode,
) -> anyhow::Result<(Arc<Pipeline>, Registration)> {
    echo_pipeline_with(loaded, render, |b| b)
}

/// [`echo_pipeline`], with `f` finishing the builder.
fn echo_pipeline_with(
    loaded: &Arc<LoadedComponent>,
    render: RenderMode,
    f: impl FnOnce(PipelineBuilder) -> PipelineBuilder,
) -> anyhow::Result<(Arc<Pipeline>, Registration)> {
    let registry = Registry::new();
    let policy = PolicyBuilder::new()
        .decision(Decision::Allow)
        .render(render)
        .build()?;
    let reg = registry.register_component(Scope::Global, loaded, &policy)?;
    let pipeline = f(Pipeline::builder(registry).approver(Arc::new(ApproveAll))).build();
    Ok((Arc::new(pipeline), reg))
}

/// A body that runs nothing: `echo`'s value (the arguments) at once, as if
/// rendered in the instance by the host's default. The pipeline's own cost
/// (every stage, wrapper, validation and the result) is then all there is.
struct Canned;

#[async_trait::async_trait]
impl ToolBody for Canned {
    async fn execute(&self, input: Invocation<'_>) -> Execution {
        let mut e = Execution::new(
            Ok(format!(r#"{{"args":{}}}"#, input.arguments)),
            Default::default(),
        );
        e.rendered = Some(Ok(None));
        e
    }
}

/// A pipeline whose `echo` is [`Canned`], with the policy of the
/// same-instance row.
fn canned_pipeline(loaded: &Arc<LoadedComponent>) -> anyhow::Result<(Arc<Pipeline>, Registration)> {
    let registry = Registry::new();
    let policy = PolicyBuilder::new()
        .decision(Decision::Allow)
        .render(RenderMode::SameInstance)
        .build()?;
    let echo = loaded
        .tools()
        .iter()
        .find(|d| d.name == "echo")
        .ok_or_else(|| anyhow::anyhow!("the test guest has no echo"))?;
    let reg = registry.register(
        Scope::Global,
        vec![ToolSpec {
            descriptor: echo.clone(),
            policy: policy.for_tool("echo"),
            body: Arc::new(Canned),
            source: "canned".into(),
            deferred: false,
            listed_with_handles: None,
        }],
    )?;
    let pipeline = Pipeline::builder(registry)
        .approver(Arc::new(ApproveAll))
        .build();
    Ok((Arc::new(pipeline), reg))
}

/// A pipeline whose `echo` runs in a worker process (the default for a
/// component that is not built in), under the policy of `render`.
fn worker_pipeline(
    loaded: &Arc<LoadedComponent>,
    render: RenderMode,
) -> anyhow::Result<(Arc<Pipeline>, Registration, Arc<toolhost_worker::Isolated>)> {
    let registry = Registry::new();
    let policy = PolicyBuilder::new()
        .decision(Decision::Allow)
        .render(render)
        .build()?;
    let body = Arc::new(toolhost_worker::Isolated::new(
        loaded.clone(),
        &policy,
        toolhost_policy::Walls::Required,
    ));
    let specs = loaded
        .tools()
        .iter()
        .map(|d| ToolSpec {
            descriptor: d.clone(),
            policy: policy.for_tool(&d.name),
            body: body.clone(),
            source: "worker".into(),
            deferred: false,
            listed_with_handles: None,
        })
        .collect();
    let reg = registry.register(Scope::Global, specs)?;
    let pipeline = Pipeline::builder(registry)
        .approver(Arc::new(ApproveAll))
        .build();
    Ok((Arc::new(pipeline), reg, body))
}

/// Worker processes: how long one takes to start (spawn, load the
/// artifact, wall itself in), and what an idle one holds.
async fn worker_rows(loaded: &Arc<LoadedComponent>, m: usize) -> anyhow::Result<()> {
    let policy = PolicyBuilder::new().decision(Decision::Allow).build()?;
    let mut starts = Vec::with_capacity(m);
    let mut kept = Vec::new();
    for _ in 0..m {
        // A pool of its own each time: every prestart is a fresh worker.
        let body = toolhost_worker::Isolated::new(
            loaded.clone(),
            &policy,
            toolhost_policy::Walls::Required,
        );
        let t = Instant::now();
        body.prestart()
            .await
            .map_err(|f| anyhow::anyhow!("{f:?}"))?;
        starts.push(t.elapsed());
        kept.push(body);
    }
    starts.sort();
    let pids: Vec<u32> = kept.iter().flat_map(|b| b.idle_pids()).collect();
    let kib = |pid: u32, key: &str| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    };
    let n = pids.len().max(1) as u64;
    let rss = pids.iter().map(|&p| kib(p, "Rss:")).sum::<u64>() / n;
    let pss = pids.iter().map(|&p| kib(p, "Pss:")).sum::<u64>() / n;
    let anon = pids.iter().map(|&p| kib(p, "Anonymous:")).sum::<u64>() / n;
    println!(
        "
worker processes ({m} started, the test guest, {} idle):",
        pids.len()
    );
    println!("| | p50 | p99 |");
    println!("|---|---|---|");
    println!(
        "| start (spawn, load the artifact, Landlock + seccomp, ready) | {:.1} ms | {:.1} ms |",
        us(percentile(&starts, 0.5)) / 1000.0,
        us(percentile(&starts, 0.99)) / 1000.0
    );
    println!(
        "memory per idle worker: {rss} KiB resident, {pss} KiB proportional (shared pages split), {anon} KiB its own (anonymous)"
    );
    // What idle workers cost while they wait: their threads' wake-ups
    // (context switches) and CPU time over a quiet stretch.
    let quiet = Duration::from_secs(2);
    let before: Vec<(u64, u64)> = pids.iter().map(|&p| idle_cost(p)).collect();
    tokio::time::sleep(quiet).await;
    let after: Vec<(u64, u64)> = pids.iter().map(|&p| idle_cost(p)).collect();
    let (wakes, ticks) = before.iter().zip(&after).fold((0, 0), |(w, t), (b, a)| {
        (w + a.0.saturating_sub(b.0), t + a.1.saturating_sub(b.1))
    });
    let per_s = |x: u64| x as f64 / n as f64 / quiet.as_secs_f64();
    println!(
        "idle worker: {:.1} wake-ups/s, {:.2} ms CPU/s (over {} s)",
        per_s(wakes),
        per_s(ticks) * 1000.0 / USER_HZ,
        quiet.as_secs()
    );
    drop(kept);

    // The first call a fresh worker runs, against its second.
    let mut firsts = Vec::new();
    let mut seconds = Vec::new();
    for i in 0..m.min(10) as u64 {
        let (pipeline, _reg, body) = worker_pipeline(loaded, RenderMode::Host)?;
        body.prestart()
            .await
            .map_err(|f| anyhow::anyhow!("{f:?}"))?;
        let t = Instant::now();
        call_echo(pipeline.clone(), 2 * i).await?;
        firsts.push(t.elapsed());
        let t = Instant::now();
        call_echo(pipeline, 2 * i + 1).await?;
        seconds.push(t.elapsed());
    }
    firsts.sort();
    seconds.sort();
    println!(
        "first call on a started worker: {:.0} µs p50 (its second: {:.0} µs)",
        us(percentile(&firsts, 0.5)),
        us(percentile(&seconds, 0.5))
    );
    Ok(())
}

/// Context switches and CPU clock ticks (user + system) so far of every
/// thread of `pid`.
fn idle_cost(pid: u32) -> (u64, u64) {
    let mut switches = 0;
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten();
    for task in tasks.flatten() {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        switches += status
            .lines()
            .filter(|l| l.contains("ctxt_switches:"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised name: utime and stime are the 12th and 13th.
    let cpu = stat
        .rsplit_once(')')
        .map(|(_, rest)| {
            rest.split_whitespace()
                .skip(11)
                .take(2)
                .filter_map(|f| f.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0);
    (switches, cpu)
}

/// The clock ticks per second that `/proc` CPU times count (Linux reports
/// 100 to user space on every architecture).
const USER_HZ: f64 = 100.0;

/// Per-call times of `m` echo calls (`i` = 0..m) through `pipeline`, sorted.
async fn timed_calls(pipeline: &Arc<Pipeline>, m: u64) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::new();
    for i in 0..m {
        let t = Instant::now();
        call_echo(pipeline.clone(), i).await?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok(times)
}

/// Guest components in other languages: (label, path under the repository,
/// tool, its arguments on the fixture workspace).
const LANGUAGES: &[(&str, &str, &str, &str)] = &[
    (
        "Python (table_schema)",
        "target/python-guests/tool_table.wasm",
        "table_schema",
        r#"{"path": "data.csv"}"#,
    ),
    (
        "C (hash_file)",
        "target/c-guests/tool_hash.wasm",
        "hash_file",
        r#"{"path": "data.csv", "algorithm": "sha256"}"#,
    ),
    (
        "JavaScript (md_outline)",
        "target/js-guests/tool_markdown.wasm",
        "md_outline",
        r#"{"path": "notes.md"}"#,
    ),
    (
        "Go (go_outline)",
        "target/go-guests/tool_gosource.wasm",
        "go_outline",
        r#"{"path": "shapes.go"}"#,
    ),
];

/// The files the guests in other languages read, and the policy they run
/// under (generous limits: the Python and JavaScript runtimes are large).
fn language_fixture() -> anyhow::Result<(tempfile::TempDir, toolhost_policy::Policy)> {
    let ws = tempfile::tempdir()?;
    let mut csv = String::from("city,country,population\n");
    for i in 0..50 {
        csv.push_str(&format!("city{i},C{},{}\n", i % 7, i * 1000));
    }
    std::fs::write(ws.path().join("data.csv"), &csv)?;
    std::fs::write(
        ws.path().join("notes.md"),
        "# Notes\n\n## One\n\nSee [two](#two).\n\n## Two\n",
    )?;
    std::fs::write(
        ws.path().join("shapes.go"),
        "package shapes\n\n// Circle is round.\ntype Circle struct{ R float64 }\n\n\
         // Area of the circle.\nfunc (c *Circle) Area() float64 { return 3 * c.R * c.R }\n",
    )?;
    let policy = PolicyBuilder::new()
        .decision(Decision::Allow)
        .grant(
            ws.path().to_str().unwrap_or_default(),
            "/workspace",
            toolhost_policy::FsMode::ReadOnly,
        )
        .limits(|l| {
            l.fuel = 40_000_000_000;
            l.timeout_ms = 30_000;
            l.memory_bytes = 256 << 20;
        })
        .build()?;
    Ok((ws, policy))
}

/// For `perf record` (`--read-only`): Rust's `read` of the small file, as
/// in the languages table, `n` times; `false` when not asked for.
async fn read_perf_loop(rt: &Runtime, n: usize) -> anyhow::Result<bool> {
    if !has_flag("--read-only") {
        return Ok(false);
    }
    let (_ws, policy) = language_fixture()?;
    let read = rt.load(Path::new(toolhost_guests::TOOL_READ)).await?;
    let registry = Registry::new();
    let _reg = registry.register_component(Scope::Global, &read, &policy)?;
    let p = Pipeline::builder(registry).build();
    for i in 0..n {
        let r = p
            .execute(
                ToolCall::new(format!("r{i}"), "read", r#"{"path": "data.csv"}"#),
                CancellationToken::new(),
            )
            .await;
        anyhow::ensure!(!r.is_error(), "read: {r:?}");
    }
    Ok(true)
}

/// Cold compile, cached load and per-call time of each built guest in
/// another language, against Rust's `read` in the same run.
async fn languages(quick: bool) -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (_ws, policy) = language_fixture()?;
    let n = if quick { 10 } else { 100 };
    let per_call = |component: Arc<LoadedComponent>, tool: &'static str, args: &'static str| {
        let policy = policy.clone();
        async move {
            let registry = Registry::new();
            let _reg = registry.register_component(Scope::Global, &component, &policy)?;
            let p = Pipeline::builder(registry).build();
            let mut times = Vec::new();
            for i in 0..=n {
                let t = Instant::now();
                let r = p
                    .execute(
                        ToolCall::new(format!("l{i}"), tool, args),
                        CancellationToken::new(),
                    )
                    .await;
                anyhow::ensure!(!r.is_error(), "{tool}: {r:?}");
                if i > 0 {
                    times.push(t.elapsed()); // the first call warms up
                }
            }
            times.sort();
            anyhow::Ok(percentile(&times, 0.5))
        }
    };
    // Quick mode (CI) loads from the test suite's cache, which the tests
    // filled: compiling an 18 MB component again would only cost CI time.
    let dir = tempfile::tempdir()?;
    let cache = if quick {
        toolhost_guests::test_cache_dir()
    } else {
        dir.path().to_owned()
    };
    let cfg = RuntimeConfig {
        cache_dir: Some(cache),
        ..RuntimeConfig::default()
    };
    let rt = Runtime::new(cfg.clone())?;
    let read = rt.load(Path::new(toolhost_guests::TOOL_READ)).await?;
    let rust = per_call(read, "read", r#"{"path": "data.csv"}"#).await?;
    println!("\nguests in other languages (a small file, full pipeline, render isolated):");
    println!("| component | size | cold compile | cached load | call p50 | call / Rust read |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| Rust (read) | {} KiB | | | {:.1} µs | 1.00× |",
        std::fs::metadata(toolhost_guests::TOOL_READ)?.len() / 1024,
        us(rust)
    );
    for (label, rel, tool, args) in LANGUAGES {
        let path = root.join(rel);
        if !path.exists() {
            println!("| {label} | not built ({rel}) | | | | |");
            continue;
        }
        let t = Instant::now();
        let first = Runtime::new(cfg.clone())?.load(&path).await?;
        let cold = match first.cache_outcome() {
            toolhost_runtime::CacheOutcome::Hit => "(cached)".to_owned(),
            _ => format!("{:.1} s", t.elapsed().as_secs_f64()),
        };
        let t = Instant::now();
        let loaded = Runtime::new(cfg.clone())?.load(&path).await?;
        let warm = t.elapsed();
        let p50 = per_call(loaded, tool, args).await?;
        println!(
            "| {label} | {:.2} MiB | {cold} | {:.1} ms | {:.1} µs | {:.1}× |",
            std::fs::metadata(&path)?.len() as f64 / (1 << 20) as f64,
            warm.as_secs_f64() * 1e3,
            us(p50),
            us(p50) / us(rust)
        );
    }
    Ok(())
}

/// Live (deterministic, recording), cassette playback and verify, per call.
/// A sink that counts what it is given (a front end's relay, minus the
/// client).
#[derive(Debug, Default)]
struct Counting(std::sync::atomic::AtomicU64);

impl toolhost_contract::ContextSink for Counting {
    fn emit(&self, _: &toolhost_contract::ContextEvent) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// What a tool's progress and log reports cost: the test guest's `report`
/// making 0 or 10 of them per call, recorded only or relayed to a sink too,
/// under a policy whose bounds let every one through.
async fn context_rows(loaded: &Arc<LoadedComponent>, m: usize) -> anyhow::Result<()> {
    let registry = Registry::new();
    let policy = PolicyBuilder::new()
        .decision(Decision::Allow)
        .render(RenderMode::Host)
        .limits(|l| {
            l.max_context_per_second = 1_000_000;
            l.max_context_bytes = 1 << 20;
        })
        .build()?;
    let _reg = registry.register_component(Scope::Global, loaded, &policy)?;
    let pipeline = Arc::new(Pipeline::builder(registry).build());
    let sink = Arc::new(Counting::default());
    let seq = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let call = |n: u64, log: bool, relay: bool| {
        let (pipeline, sink, seq) = (pipeline.clone(), sink.clone(), seq.clone());
        move || {
            let (pipeline, sink) = (pipeline.clone(), sink.clone());
            let i = seq.fetch_add(1, Ordering::Relaxed);
            async move {
                let sink = relay.then_some(sink as Arc<dyn toolhost_contract::ContextSink>);
                let r = pipeline
                    .execute_with(
                        ToolCall::new(
                            format!("r{i}"),
                            "report",
                            format!(r#"{{"n":{n},"log":{log},"i":{i}}}"#),
                        ),
                        CancellationToken::new(),
                        sink,
                    )
                    .await;
                anyhow::ensure!(r.meta().context.len() as u64 == n, "{r:?}");
                Ok(())
            }
        }
    };
    let rows = [
        ("no reports", call(0, false, false)),
        ("10 progress updates, recorded", call(10, false, false)),
        (
            "10 progress updates, recorded and relayed",
            call(10, false, true),
        ),
        (
            "10 log messages, recorded and relayed",
            call(10, true, true),
        ),
    ];
    let mut times: [Vec<Duration>; 4] = Default::default();
    for (_, f) in &rows {
        median_of(50, f).await?;
    }
    let rounds = 10;
    for _ in 0..rounds {
        for (i, (_, f)) in rows.iter().enumerate() {
            times_of(m / rounds, None, f, &mut times[i]).await?;
        }
    }
    let p50s: Vec<Duration> = times
        .iter_mut()
        .map(|t| {
            t.sort();
            percentile(t, 0.5)
        })
        .collect();
    println!(
        "
what a tool's reports cost (contract 0.3.0 `context`; {m} calls a row, full pipeline, render = \"host\"):"
    );
    println!("| | p50 | per report over none |");
    println!("|---|---|---|");
    for ((what, _), p50) in rows.iter().zip(&p50s) {
        let per = (us(*p50) - us(p50s[0])) / 10.0;
        println!("| {what} | {:.1} µs | {per:.2} µs |", us(*p50));
    }
    Ok(())
}

async fn replay_rows(loaded: &Arc<LoadedComponent>, m: u64) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let cassette = dir.path().join("bench.cassette.jsonl");
    let mode = RenderMode::SameInstance;
    let (live, _r0) = echo_pipeline_with(loaded, mode, |b| b.deterministic(1))?;
    timed_calls(&live, m).await?; // warm-up
    let live = timed_calls(&live, m).await?;
    let rec = Replay::open(&cassette, Mode::Record, Layer::Cassette)?;
    let (p, _r1) = echo_pipeline_with(loaded, mode, |b| b.cassette(rec.clone()))?;
    let recorded = timed_calls(&p, m).await?;
    let mut rows = vec![("live, deterministic", live), ("recording", recorded)];
    for (what, layer) in [
        ("replay, cassette layer", Layer::Cassette),
        ("replay, verify layer", Layer::Verify),
    ] {
        let replay = Replay::open(&cassette, Mode::Replay, layer)?;
        let (p, _r) = echo_pipeline_with(loaded, mode, |b| b.cassette(replay.clone()))?;
        let times = timed_calls(&p, m).await?;
        replay
            .finish()
            .map_err(|report| anyhow::anyhow!("{report}"))?;
        rows.push((what, times));
    }
    println!("\nrecord and replay ({m} echo calls, render = \"same-instance\"):");
    println!("| | p50 | p99 | p50 / live |");
    println!("|---|---|---|---|");
    let live50 = us(percentile(&rows[0].1, 0.5));
    for (what, times) in &rows {
        let p50 = us(percentile(times, 0.5));
        println!(
            "| {what} | {p50:.1} µs | {:.1} µs | {:.3}× |",
            us(percentile(times, 0.99)),
            p50 / live50
        );
    }
    Ok(())
}

/// For `perf record`: `--deterministic-only` (live calls in deterministic
/// mode) or `--record-only` (the same, recorded to a cassette), `m` calls;
/// `false` when neither is asked for.
async fn replay_perf_loop(loaded: &Arc<LoadedComponent>, m: u64) -> anyhow::Result<bool> {
    let dir = tempfile::tempdir()?;
    let mode = RenderMode::SameInstance;
    let (p, _r) = if has_flag("--deterministic-only") {
        echo_pipeline_with(loaded, mode, |b| b.deterministic(1))?
    } else if has_flag("--record-only") {
        let rec = Replay::open(
            &dir.path().join("perf.jsonl"),
            Mode::Record,
            Layer::Cassette,
        )?;
        echo_pipeline_with(loaded, mode, |b| b.cassette(rec))?
    } else {
        return Ok(false);
    };
    timed_calls(&p, m).await?;
    Ok(true)
}

/// For `perf record`: when the command line has `flag`, `n` runs of `f`
/// and nothing else (the caller returns at once).
async fn perf_loop<F, Fut>(flag: &str, n: usize, f: F) -> anyhow::Result<bool>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    if !has_flag(flag) {
        return Ok(false);
    }
    if has_flag("--idle") {
        times_of(n / 100, Some(IDLE), f, &mut Vec::new()).await?;
    } else {
        median_of(n, f).await?;
    }
    Ok(true)
}

/// Whether the command line has `flag`.
fn has_flag(flag: &str) -> bool {
    std::env::args().any(|a| a == flag)
}

/// The value after `flag` on the command line.
fn flag_value(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).cloned()
}

/// How long the thread sleeps before each call of the after-idle rows (and
/// of a `--*-only` loop given `--idle`).
const IDLE: Duration = Duration::from_millis(1);

/// The floor's arguments, used by every per-call row: the same call in each.
const ECHO_ARGS: &str = "{}";

/// The subscribers the spans' rows compare, each in processes of its own
/// (a serving process has one, installed for the whole process; `tracing`
/// caches whether a span is wanted across every subscriber alive, so
/// several in one process would not measure what serving pays).
const TRACING_CONFIGS: [&str; 3] = ["none", "no-endpoint", "exporting"];

/// What a call's spans cost (SEP-414 trace context, OTLP export): the same
/// calls with no subscriber, under `serve`'s subscriber with no OTLP
/// endpoint (the spans disabled), and exporting by OTLP to a loopback sink
/// (the default batch settings). Each configuration runs in a process of
/// its own (this bench, with `--tracing-config`), in interleaved rounds;
/// the row is the median of the processes' medians.
async fn tracing_rows(n: usize) -> anyhow::Result<()> {
    let sink = otlp_sink()?;
    let rounds = 9;
    let m = n / 5;
    let exe = std::env::current_exe()?;
    // [config] → per round (stages, full, spans) in ns.
    let mut got: Vec<Vec<[f64; 3]>> = vec![Vec::new(); TRACING_CONFIGS.len()];
    for _ in 0..rounds {
        for (i, config) in TRACING_CONFIGS.iter().enumerate() {
            let out = std::process::Command::new(&exe)
                .args([
                    "--tracing-config",
                    config,
                    "--tracing-calls",
                    &m.to_string(),
                ])
                .env("TOOLHOST_BENCH_OTLP", format!("http://{sink}/v1/traces"))
                .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
                .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                .stderr(std::process::Stdio::inherit())
                .output()?;
            anyhow::ensure!(out.status.success(), "the {config} process failed");
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text
                .lines()
                .rfind(|l| l.starts_with("tracing "))
                .ok_or_else(|| anyhow::anyhow!("no figures from the {config} process: {text}"))?;
            let v: Vec<f64> = line
                .split_whitespace()
                .skip(1)
                .map(str::parse)
                .collect::<Result<_, _>>()?;
            anyhow::ensure!(v.len() == 3, "{line}");
            got[i].push([v[0], v[1], v[2]]);
        }
    }
    let median = |config: usize, k: usize| {
        let mut v: Vec<f64> = got[config].iter().map(|r| r[k]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "\nspans per call (SEP-414), p50 of {m} calls in each of {rounds} processes a configuration, interleaved; the median process:"
    );
    println!("| | no subscriber | serve, no endpoint | exporting by OTLP |");
    println!("|---|---|---|---|");
    for (what, k) in [
        ("pipeline alone", 0),
        ("full pipeline, render = \"same-instance\"", 1),
    ] {
        let (a, b, c) = (median(0, k), median(1, k), median(2, k));
        println!(
            "| {what} | {:.2} µs | {:.2} µs ({:.3}×) | {:.2} µs ({:.2}×) |",
            a / 1e3,
            b / 1e3,
            b / a,
            c / 1e3,
            c / a,
        );
    }
    let spans = median(1, 2);
    println!(
        "a call's 18 spans under serve's subscriber with no endpoint: {spans:.0} ns, {:.2} % of the pipeline alone",
        100.0 * spans / median(1, 0)
    );
    Ok(())
}

/// One process of [`tracing_rows`]: `config`'s subscriber for the whole
/// process, then `m` calls of each row; prints `tracing STAGES FULL SPANS`
/// (p50s and a call's spans alone, in ns).
async fn tracing_child<F, Fut, G, Gut>(
    config: &str,
    stages: &F,
    full: &G,
    m: usize,
) -> anyhow::Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
    G: Fn() -> Gut,
    Gut: std::future::Future<Output = anyhow::Result<()>>,
{
    let endpoint = std::env::var("TOOLHOST_BENCH_OTLP")?;
    let handle = tokio::runtime::Handle::current();
    let telemetry = match config {
        "none" => None,
        "no-endpoint" => Some(toolhost::telemetry::init(None, handle)?),
        "exporting" => Some(toolhost::telemetry::init(Some(&endpoint), handle)?),
        other => anyhow::bail!("unknown --tracing-config {other}"),
    };
    median_of(100, stages).await?;
    median_of(100, full).await?;
    let mut a = Vec::new();
    let mut b = Vec::new();
    for _ in 0..10 {
        times_of(m / 10, None, stages, &mut a).await?;
        times_of(m / 10, None, full, &mut b).await?;
    }
    a.sort();
    b.sort();
    let reps = 100_000u32;
    let t = Instant::now();
    for i in 0..reps {
        for _ in 0..18 {
            let span = tracing::info_span!(target: toolhost_contract::SPAN_TARGET, "stage", otel.name = "x", i);
            std::hint::black_box(&span);
        }
    }
    let spans = t.elapsed() / reps;
    println!(
        "tracing {} {} {}",
        percentile(&a, 0.5).as_nanos(),
        percentile(&b, 0.5).as_nanos(),
        spans.as_nanos()
    );
    if let Some(t) = telemetry {
        t.shutdown().await;
    }
    Ok(())
}

/// An OTLP/HTTP endpoint on loopback that reads each request and answers
/// 200 (an empty `ExportTraceServiceResponse`): where the bench exports to.
fn otlp_sink() -> anyhow::Result<std::net::SocketAddr> {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn);
                loop {
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((k, v)) = line.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if reader.get_mut().write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(addr)
}

/// One call of `echo` through `pipeline`, numbered `i`, with arguments
/// `{"i": i}` (each call of a recording differs).
async fn call_echo(pipeline: Arc<Pipeline>, i: u64) -> anyhow::Result<()> {
    call_echo_with(pipeline, i, format!(r#"{{"i":{i}}}"#)).await
}

/// One call of `echo` through `pipeline`, numbered `i`, with `arguments`.
async fn call_echo_with(pipeline: Arc<Pipeline>, i: u64, arguments: String) -> anyhow::Result<()> {
    call_tool_with(pipeline, "echo", i, arguments).await
}

/// One call of `tool` through `pipeline`, numbered `i`, with `arguments`.
async fn call_tool_with(
    pipeline: Arc<Pipeline>,
    tool: &'static str,
    i: u64,
    arguments: String,
) -> anyhow::Result<()> {
    let r = pipeline
        .execute(
            ToolCall::new(format!("c{i}"), tool, arguments),
            CancellationToken::new(),
        )
        .await;
    anyhow::ensure!(!r.is_error(), "{r:?}");
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let quick = has_flag("--quick");
    let n = if quick { 200 } else { 2000 };
    let hostile = Path::new(toolhost_guests::GUEST_HOSTILE);
    let cache = tempfile::tempdir()?;
    let rt = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..RuntimeConfig::default()
    })?;
    let loaded = rt.load(hostile).await?;
    if read_perf_loop(&rt, 20 * n).await? {
        return Ok(());
    }
    if has_flag("--workers-only") {
        return worker_rows(&loaded, if quick { 5 } else { 30 }).await;
    }

    // ── raw floor: wasmtime alone, same engine ─────────────────────────
    let engine = rt.engine().clone();
    let component = Component::from_file(&engine, hostile)?;
    let mut linker = Linker::<Raw>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    // The contract's `context` import (the guest's `report` uses it),
    // doing nothing: the floor calls `echo`, which never reports.
    let mut context = linker.instance("toolhost:tool/context@0.3.0")?;
    for name in ["progress", "log"] {
        context.func_new(name, |_, _, _, _| Ok(()))?;
    }
    context.func_new("cancelled", |_, _, _, results| {
        results[0] = Val::Bool(false);
        Ok(())
    })?;
    let pre = linker.instantiate_pre(&component)?;
    let raw_call = || {
        let pre = pre.clone();
        let engine = engine.clone();
        async move {
            let mut store = Store::new(
                &engine,
                Raw {
                    ctx: WasiCtxBuilder::new().build(),
                    table: ResourceTable::new(),
                },
            );
            store.set_fuel(u64::MAX)?;
            store.set_epoch_deadline(1 << 30);
            let instance = pre.instantiate_async(&mut store).await?;
            let iface = instance
                .get_export_index(&mut store, None, "toolhost:tool/tool@0.3.0")
                .ok_or_else(|| anyhow::anyhow!("no tool interface"))?;
            let exec = instance
                .get_export_index(&mut store, Some(&iface), "execute")
                .ok_or_else(|| anyhow::anyhow!("no execute"))?;
            let f = instance
                .get_func(&mut store, exec)
                .ok_or_else(|| anyhow::anyhow!("execute is not a function"))?;
            let mut out = [Val::Bool(false)];
            f.call_async(
                &mut store,
                &[Val::String("echo".into()), Val::String("{}".into())],
                &mut out,
            )
            .await?;
            anyhow::ensure!(matches!(&out[0], Val::Result(Ok(_))), "{:?}", out[0]);
            Ok(())
        }
    };
    median_of(50, raw_call).await?; // warm-up
    if perf_loop("--floor-only", 200 * n, raw_call).await? {
        return Ok(());
    }

    // ── runtime alone ──────────────────────────────────────────────────
    let policy = PolicyBuilder::new()
        .decision(Decision::Allow)
        .build()?
        .component();
    // A call to `execute` under `policy`; when it renders in the execute
    // instance, `echo` leaves the rendering to the host.
    let runtime_call = |policy: toolhost_policy::ToolPolicy| {
        let loaded = loaded.clone();
        move || {
            let loaded = loaded.clone();
            let policy = policy.clone();
            async move {
                let mut inv = Invocation::new("echo", "{}", &policy);
                inv.budget = Budget {
                    fuel: policy.limits.fuel,
                    deadline: Duration::from_millis(policy.limits.timeout_ms),
                };
                let e = LoadedComponent::execute(&loaded, inv).await;
                anyhow::ensure!(e.outcome.is_ok(), "{:?}", e.outcome);
                if policy.render == RenderMode::SameInstance {
                    anyhow::ensure!(matches!(e.rendered, Some(Ok(None))), "{:?}", e.rendered);
                }
                Ok(())
            }
        }
    };
    let execute_only = runtime_call(policy.clone());
    median_of(50, &execute_only).await?;
    // The same, with `render` called in the execute instance: what the
    // pipeline's same-instance calls below add is the pipeline's own.
    let mut render_policy = policy.clone();
    render_policy.render = RenderMode::SameInstance;
    let execute_and_render = runtime_call(render_policy);
    median_of(50, &execute_and_render).await?;
    if perf_loop("--runtime-only", 200 * n, &execute_and_render).await? {
        return Ok(());
    }

    // ── full pipeline: render isolated, in the execute instance, by the host
    let seq = Arc::new(std::sync::atomic::AtomicU64::new(0));
    // The floor's call through `$pipeline`, numbered from `seq`. A macro:
    // a function cannot return the closure (`impl Fn() -> impl Future` is
    // not allowed), and boxing its future would add an allocation the
    // floor does not pay.
    macro_rules! echo_call {
        ($pipeline:expr) => {{
            let (seq, pipeline) = (seq.clone(), $pipeline.clone());
            move || {
                call_echo_with(
                    pipeline.clone(),
                    seq.fetch_add(1, Ordering::Relaxed),
                    ECHO_ARGS.to_owned(),
                )
            }
        }};
    }
    let (pipeline, _reg) = echo_pipeline(&loaded, RenderMode::Isolated)?;
    let pipeline_call = echo_call!(pipeline);
    median_of(50, &pipeline_call).await?;
    if perf_loop("--isolated-only", 100 * n, &pipeline_call).await? {
        return Ok(());
    }
    // The same default policy, the same tool, but declaring that it
    // renders nothing (contract 0.3.0's `host-renders`): one instance.
    let plain_call = {
        let (seq, pipeline) = (seq.clone(), pipeline.clone());
        move || {
            call_tool_with(
                pipeline.clone(),
                "echo_plain",
                seq.fetch_add(1, Ordering::Relaxed),
                ECHO_ARGS.to_owned(),
            )
        }
    };
    median_of(50, &plain_call).await?;
    let (pipeline1, _reg1) = echo_pipeline(&loaded, RenderMode::SameInstance)?;
    let one_call = echo_call!(pipeline1);
    median_of(50, &one_call).await?;
    if perf_loop("--pipeline-only", 200 * n, &one_call).await? {
        return Ok(());
    }
    let (pipeline2, _reg3) = echo_pipeline(&loaded, RenderMode::Host)?;
    let host_call = echo_call!(pipeline2);
    median_of(50, &host_call).await?;
    if perf_loop("--host-only", 200 * n, &host_call).await? {
        return Ok(());
    }
    // Concurrent callers send distinct calls: identical calls in flight
    // together are run one after another by design (the repeat check waits
    // for the previous identical call's outcome).
    let distinct_call = {
        let seq = seq.clone();
        let pipeline1 = pipeline1.clone();
        move || call_echo(pipeline1.clone(), seq.fetch_add(1, Ordering::Relaxed))
    };
    // The render = "host" row through a worker process.
    let (in_worker, _reg4, _body) = worker_pipeline(&loaded, RenderMode::Host)?;
    let worker_call = echo_call!(in_worker);
    median_of(50, &worker_call).await?;
    if perf_loop("--worker-only", 100 * n, &worker_call).await? {
        return Ok(());
    }
    let (canned, _reg2) = canned_pipeline(&loaded)?;
    let canned_call = echo_call!(canned);
    median_of(50, &canned_call).await?;
    if perf_loop("--stages-only", 1000 * n, &canned_call).await? {
        return Ok(());
    }
    if replay_perf_loop(&loaded, 100 * n as u64).await? {
        return Ok(());
    }
    if let Some(config) = flag_value("--tracing-config") {
        let m = flag_value("--tracing-calls")
            .and_then(|v| v.parse().ok())
            .unwrap_or(n);
        return tracing_child(&config, &canned_call, &one_call, m).await;
    }
    if has_flag("--tracing-only") {
        return tracing_rows(n).await;
    }

    // The rows are measured in rounds, each row in turn, so that drift in
    // the machine's speed (other tenants, frequency) falls on every row
    // alike instead of on whichever row ran at the time. Twice: back to
    // back, and each call after the thread slept (as an agent's calls come,
    // seconds apart, on caches other work has filled).
    let rounds = 10;
    let mut tables: Vec<[(Duration, Duration); 9]> = Vec::new();
    for (m, nap) in [(n / rounds, None), (n / 4 / rounds, Some(IDLE))] {
        let mut rows: [Vec<Duration>; 9] = Default::default();
        for _ in 0..rounds {
            times_of(m, nap, raw_call, &mut rows[0]).await?;
            times_of(m, nap, &execute_only, &mut rows[1]).await?;
            times_of(m, nap, &execute_and_render, &mut rows[2]).await?;
            times_of(m, nap, &pipeline_call, &mut rows[3]).await?;
            times_of(m, nap, &one_call, &mut rows[4]).await?;
            times_of(m, nap, &host_call, &mut rows[5]).await?;
            times_of(m, nap, &canned_call, &mut rows[6]).await?;
            times_of(m, nap, &plain_call, &mut rows[7]).await?;
            times_of(m, nap, &worker_call, &mut rows[8]).await?;
        }
        tables.push(rows.map(|mut t| {
            t.sort();
            (percentile(&t, 0.5), percentile(&t, 0.99))
        }));
    }
    // The rows of both tables, in the order measured.
    let labels = [
        "raw wasmtime floor",
        "runtime (LoadedComponent::execute)",
        "runtime, execute + render in one instance",
        "full pipeline (Pipeline::execute), render isolated",
        "full pipeline, render = \"same-instance\"",
        "full pipeline, render = \"host\" (no tool render)",
        "pipeline alone (a body that returns at once)",
        "full pipeline, render isolated, the tool declares `host-renders`",
        "full pipeline, render = \"host\", in a worker process",
    ];
    let (raw50, p50) = (tables[0][0].0, tables[0][3].0);

    // ── spawning a native process ──────────────────────────────────────
    let (sp50, sp99) = median_of(if quick { 50 } else { 300 }, || async {
        let st = std::process::Command::new("/bin/true").status()?;
        anyhow::ensure!(st.success());
        Ok(())
    })
    .await?;

    println!(
        "per call, sequential ({n} calls a row, in {rounds} interleaved rounds; the floor is wasmtime alone on the same engine):"
    );
    println!("| | p50 | p99 | p50 / floor |");
    println!("|---|---|---|---|");
    let spawn = ("spawn /bin/true", (sp50, sp99));
    for (what, (a, b)) in labels.into_iter().zip(tables[0]).chain([spawn]) {
        println!(
            "| {what} | {:.1} µs | {:.1} µs | {:.2}× |",
            us(a),
            us(b),
            us(a) / us(raw50)
        );
    }
    println!(
        "spawning a process costs {:.1}× a pipeline call",
        us(sp50) / us(p50)
    );
    println!(
        "a call in a worker process costs {:.2}× the same call in-process (render = \"host\", p50)",
        us(tables[0][8].0) / us(tables[0][5].0)
    );
    println!(
        "\nthe same, each call after {} ms asleep ({} calls a row; the floor measured the same way):",
        IDLE.as_millis(),
        n / 4
    );
    println!("| | p50 | p99 | p50 / floor | p50 / back to back |");
    println!("|---|---|---|---|---|");
    for ((what, (a, b)), (hot, _)) in labels.into_iter().zip(tables[1]).zip(tables[0]) {
        println!(
            "| {what} | {:.1} µs | {:.1} µs | {:.2}× | {:.1}× |",
            us(a),
            us(b),
            us(a) / us(tables[1][0].0),
            us(a) / us(hot)
        );
    }
    tracing_rows(n).await?;
    if has_flag("--calls-only") {
        return Ok(()); // the tables above and nothing else
    }

    worker_rows(&loaded, if quick { 5 } else { 30 }).await?;
    replay_rows(&loaded, if quick { 200 } else { 2000 }).await?;
    context_rows(&loaded, if quick { 200 } else { 2000 }).await?;

    // ── throughput ─────────────────────────────────────────────────────
    println!(
        "\nthroughput, full pipeline, trivial tool, render = \"same-instance\", distinct arguments per call:"
    );
    println!("| callers | calls | calls/s | p50 | p99 |");
    println!("|---|---|---|---|---|");
    for callers in [1usize, 2, 8, 64] {
        let total = if quick { 400 } else { 4000 };
        let per = total / callers;
        let t = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..callers {
            let call = distinct_call.clone();
            tasks.push(tokio::spawn(async move {
                let mut times = Vec::with_capacity(per);
                for _ in 0..per {
                    let t = Instant::now();
                    call().await?;
                    times.push(t.elapsed());
                }
                anyhow::Ok(times)
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await??);
        }
        let elapsed = t.elapsed();
        all.sort();
        println!(
            "| {callers} | {} | {:.0} | {:.1} µs | {:.1} µs |",
            all.len(),
            all.len() as f64 / elapsed.as_secs_f64(),
            us(percentile(&all, 0.5)),
            us(percentile(&all, 0.99))
        );
    }

    // ── cold compile vs cached load ────────────────────────────────────
    println!("\ncompile vs cached load:");
    println!("| component | size | cold compile | cached load | cached / cold |");
    println!("|---|---|---|---|---|");
    for stem in ["guest_legacy", "tool_fetch"] {
        let path = Path::new(toolhost_guests::path(stem).unwrap_or_default());
        let size = std::fs::metadata(path)?.len();
        let dir = tempfile::tempdir()?;
        let cfg = RuntimeConfig {
            cache_dir: Some(dir.path().to_owned()),
            ..RuntimeConfig::default()
        };
        let t = Instant::now();
        Runtime::new(cfg.clone())?.load(path).await?;
        let cold = t.elapsed();
        let fresh = Runtime::new(cfg)?;
        let t = Instant::now();
        fresh.load(path).await?;
        let warm = t.elapsed();
        println!(
            "| {stem} | {} KiB | {:.1} ms | {:.2} ms | {:.2}% |",
            size / 1024,
            cold.as_secs_f64() * 1e3,
            warm.as_secs_f64() * 1e3,
            100.0 * warm.as_secs_f64() / cold.as_secs_f64()
        );
    }

    languages(quick).await?;

    // ── memory and descriptors over many calls ─────────────────────────
    let many = if quick { 5_000 } else { 100_000 };
    for _ in 0..1000 {
        one_call().await?;
    }
    let (rss0, fd0) = (
        process::resident_kib().unwrap_or(0),
        process::open_fds().unwrap_or(0),
    );
    let t = Instant::now();
    for _ in 0..many {
        one_call().await?;
    }
    let (rss1, fd1) = (
        process::resident_kib().unwrap_or(0),
        process::open_fds().unwrap_or(0),
    );
    println!(
        "\n{many} more calls in {:.1} s: RSS {} → {} KiB ({:+} KiB), open fds {} → {}",
        t.elapsed().as_secs_f64(),
        rss0,
        rss1,
        rss1 as i64 - rss0 as i64,
        fd0,
        fd1
    );
    Ok(())
}
