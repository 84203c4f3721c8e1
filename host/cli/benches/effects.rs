//! What transactional file effects cost: the same calls through the whole
//! pipeline with staging on (writes staged, then committed through the
//! journal) and off (the guest writes straight into the files, the
//! baseline), in interleaved rounds of the same run, as ratios.
//!
//! Rows: `write` of a new small file, `edit` of a small file, `read` in a
//! read-write grant (staged grants resolve paths in the overlay) and in a
//! read-only one (never staged), one call creating 1,000 files, one call
//! writing 200 MB; then the journal's size per committed call.
//!
//! `cargo bench -p toolhost --bench effects` (`-- --quick`: fewer rounds
//! and 20 MB instead of 200, to keep the bench from rotting in `make test`).

use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost_contract::{ToolCall, ToolResult};
use toolhost_effects::Journal;
use toolhost_pipeline::{ApproveAll, Pipeline, Registration, Registry, Scope};
use toolhost_policy::{Decision, FsMode, PolicyBuilder, RenderMode};
use toolhost_runtime::{Runtime, RuntimeConfig};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// One configuration: a pipeline over the built-ins and the hostile guest
/// with a read-write grant of `ws` (and a read-only grant of `ro`).
struct Side {
    pipeline: Pipeline,
    ws: tempfile::TempDir,
    journal: tempfile::TempDir,
    _regs: Vec<Registration>,
    n: u64,
    staged: bool,
}

async fn side(stage: bool, ro: &Path) -> anyhow::Result<Side> {
    let rt = Runtime::new(RuntimeConfig {
        cache_dir: Some(toolhost_guests::test_cache_dir()),
        stage_writes: stage,
        ..RuntimeConfig::default()
    })?;
    let ws = tempfile::tempdir()?;
    std::fs::write(ws.path().join("small.txt"), "alpha\nbeta\ngamma\n")?;
    let policy = PolicyBuilder::new()
        .decision(Decision::Allow)
        .render(RenderMode::SameInstance)
        .limits(|l| {
            l.max_write_bytes = 256 << 20;
            l.max_files_created = 10_000;
            l.timeout_ms = 120_000;
            l.fuel = 1 << 40;
        })
        .grant(
            ws.path().to_str().unwrap_or("."),
            "/workspace",
            FsMode::ReadWrite,
        )
        .grant(ro.to_str().unwrap_or("."), "/ro", FsMode::ReadOnly)
        .build()?;
    let registry = Registry::new();
    let mut regs = Vec::new();
    for path in [
        toolhost_guests::TOOL_READ,
        toolhost_guests::TOOL_WRITE,
        toolhost_guests::TOOL_EDIT,
        toolhost_guests::GUEST_HOSTILE,
    ] {
        let c = rt.load(Path::new(path)).await?;
        regs.push(registry.register_component(Scope::Global, &c, &policy)?);
    }
    let journal = tempfile::tempdir()?;
    let (j, _) = Journal::open(journal.path())?;
    let pipeline = Pipeline::builder(registry)
        .approver(Arc::new(ApproveAll))
        .journal(Arc::new(j))
        .build();
    Ok(Side {
        pipeline,
        ws,
        journal,
        _regs: regs,
        n: 0,
        staged: stage,
    })
}

impl Side {
    async fn call(&mut self, tool: &str, args: Value) -> (Duration, ToolResult) {
        self.n += 1;
        let c = ToolCall::new(format!("c{}", self.n), tool, args.to_string());
        let t = Instant::now();
        let r = self.pipeline.execute(c, CancellationToken::new()).await;
        (t.elapsed(), r)
    }

    async fn timed(&mut self, tool: &str, args: Value) -> Duration {
        let (d, r) = self.call(tool, args).await;
        if r.is_error() {
            eprintln!("{tool} failed: {:?}", r.content());
        }
        d
    }
}

/// A timing row: its name, the staged side's samples, the direct side's.
type Row = (&'static str, Vec<Duration>, Vec<Duration>);

/// Adds one sample per row to the side that took it.
fn record<const N: usize>(rows: &mut [Row], staged: bool, samples: [Duration; N]) {
    for (row, d) in rows.iter_mut().zip(samples) {
        if staged {
            row.1.push(d);
        } else {
            row.2.push(d);
        }
    }
}

fn dir_size(p: &Path) -> (u64, u64) {
    let (mut bytes, mut files) = (0, 0);
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => {
                    let (b, f) = dir_size(&e.path());
                    bytes += b;
                    files += f;
                }
                Ok(m) => {
                    bytes += m.len();
                    files += 1;
                }
                Err(_) => {}
            }
        }
    }
    (bytes, files)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 20 } else { 300 };
    let ro = tempfile::tempdir()?;
    std::fs::write(ro.path().join("r.txt"), "read only\n".repeat(50))?;
    let mut on = side(true, ro.path()).await?;
    let mut off = side(false, ro.path()).await?;

    // Warm both (first instantiation, page cache).
    for s in [&mut on, &mut off] {
        s.timed("read", json!({"path": "small.txt"})).await;
    }
    let mut rows: Vec<Row> = vec![
        ("read (read-write grant)", vec![], vec![]),
        ("read (read-only grant)", vec![], vec![]),
        ("write (new 1 KiB file)", vec![], vec![]),
        ("edit (one line of a small file)", vec![], vec![]),
    ];
    let body = "x".repeat(1023) + "\n";
    // Reads first, on their own: the file-system work of the writes (the
    // kernel's journal flushing in the background) would weigh on the
    // side that wrote more.
    for i in 0..rounds {
        // Interleaved: each round measures both sides, alternating which
        // goes first.
        let sides: [&mut Side; 2] = if i % 2 == 0 {
            [&mut on, &mut off]
        } else {
            [&mut off, &mut on]
        };
        for s in sides {
            let r = s.timed("read", json!({"path": "small.txt"})).await;
            let ro = s.timed("read", json!({"path": "/ro/r.txt"})).await;
            record(&mut rows[..2], s.staged, [r, ro]);
        }
    }
    for i in 0..rounds {
        let sides: [&mut Side; 2] = if i % 2 == 0 {
            [&mut on, &mut off]
        } else {
            [&mut off, &mut on]
        };
        for s in sides {
            let w = s
                .timed(
                    "write",
                    json!({"path": format!("w-{i}.txt"), "content": body}),
                )
                .await;
            // `edit` needs a fresh read of the file in the session.
            s.timed("read", json!({"path": "small.txt"})).await;
            let (from, to) = if i % 2 == 0 {
                ("beta", "BETA")
            } else {
                ("BETA", "beta")
            };
            let e = s
                .timed(
                    "edit",
                    json!({"path": "small.txt", "old_text": from, "new_text": to}),
                )
                .await;
            record(&mut rows[2..], s.staged, [w, e]);
        }
    }
    println!("| call | staged + committed p50 | direct p50 | ratio |");
    println!("|---|---|---|---|");
    for (name, a, b) in rows {
        let (a, b) = (median(a), median(b));
        println!(
            "| {name} | {:.1} µs | {:.1} µs | {:.2}× |",
            us(a),
            us(b),
            a.as_secs_f64() / b.as_secs_f64()
        );
    }

    // Journal size per committed call (the writes and edits above).
    let (bytes, files) = dir_size(on.journal.path());
    let entries = std::fs::read_dir(on.journal.path())?.count().max(1) as u64;
    println!(
        "journal: {entries} committed calls, {:.1} KiB each ({files} files; pre-images are hard links to the replaced files where the journal shares their file system)",
        bytes as f64 / entries as f64 / 1024.0
    );

    // Big calls, a few rounds each.
    let big = if quick { 20_000_000u64 } else { 200_000_000 };
    let mut thousand = (vec![], vec![]);
    let mut large = (vec![], vec![]);
    for i in 0..if quick { 1 } else { 3 } {
        for s in [&mut on, &mut off] {
            let staged = s.staged;
            let dir = format!("k-{i}");
            std::fs::create_dir(s.ws.path().join(&dir))?;
            // scribble writes into the working directory (/workspace).
            let t = s
                .timed("scribble", json!({"create": 1000, "then": "ok"}))
                .await;
            for e in std::fs::read_dir(s.ws.path())?.flatten() {
                if e.file_name().to_string_lossy().starts_with("new-") {
                    std::fs::rename(e.path(), s.ws.path().join(&dir).join(e.file_name()))?;
                }
            }
            let f = s
                .timed(
                    "fill",
                    json!({"path": format!("big-{i}.bin"), "bytes": big}),
                )
                .await;
            std::fs::remove_file(s.ws.path().join(format!("big-{i}.bin")))?;
            if staged {
                thousand.0.push(t);
                large.0.push(f);
            } else {
                thousand.1.push(t);
                large.1.push(f);
            }
        }
    }
    for (name, (a, b)) in [
        ("one call creating 1,000 files", thousand),
        (
            if quick {
                "one call writing 20 MB"
            } else {
                "one call writing 200 MB"
            },
            large,
        ),
    ] {
        let (a, b) = (median(a), median(b));
        println!(
            "{name}: staged + committed {:.1} ms, direct {:.1} ms ({:.2}×)",
            a.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            a.as_secs_f64() / b.as_secs_f64()
        );
    }
    Ok(())
}
