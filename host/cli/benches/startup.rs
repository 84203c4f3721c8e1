//! How long a client waits for `toolhost serve` on a first start: the time
//! from spawning the server to its answer to `initialize` and to a complete
//! `tools/list` (one that names every tool: while components compile, a
//! list says what is still loading and the client lists again on
//! `notifications/tools/list_changed`), with an empty compiled-component
//! cache against a warm one, for the zero-config built-ins and for a toolbox
//! with the Python `table` component (18 MB). Also what the precompiled
//! built-ins add to the binary. Spawning `/bin/true` and answering
//! `initialize` from a warm cache are the baselines measured in the same run.
//!
//! `cargo bench -p toolhost --bench startup` (optimized; 5 rounds);
//! `-- --quick` runs one round of the built-ins' rows only (what `make
//! test` runs, so the bench cannot rot: the 18 MB component's cold compile
//! is 12 s of an unoptimized build). The Python rows need
//! `guest-tools/python/build.sh` to have run (`make bench` runs it).

#[path = "common/server.rs"]
mod server;

use server::{Server, TOOLHOST};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// One configuration: a served directory and how many tools it serves.
struct Config {
    label: &'static str,
    dir: tempfile::TempDir,
    tools: usize,
}

fn builtins() -> anyhow::Result<Config> {
    Ok(Config {
        label: "zero-config built-ins",
        dir: tempfile::tempdir()?,
        tools: 5,
    })
}

fn with_python(root: &Path) -> anyhow::Result<Option<Config>> {
    let wasm = root.join("target/python-guests/tool_table.wasm");
    if !wasm.exists() {
        return Ok(None);
    }
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "version = 1\n[[component]]\nsource = \"builtin:read\"\n\
             [[component]]\nsource = '{}'\npolicy = '{}'\n",
            wasm.display(),
            root.join("guest-tools/python/tools/table/policy.toml")
                .display()
        ),
    )?;
    Ok(Some(Config {
        label: "read + Python `table`",
        dir,
        tools: 4,
    }))
}

/// (median, min, max) of `xs` in ms.
fn stats(xs: &mut [Duration]) -> (f64, f64, f64) {
    xs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(xs[xs.len() / 2]), ms(xs[0]), ms(xs[xs.len() - 1]))
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 1 } else { 5 };
    let root = PathBuf::from(toolhost_guests::REPO_ROOT);

    let embedded: usize = toolhost_builtins::ALL
        .iter()
        .map(|b| b.precompiled.len())
        .sum();
    let components: usize = toolhost_builtins::ALL.iter().map(|b| b.wasm.len()).sum();
    let binary = std::fs::metadata(TOOLHOST)?.len();
    println!(
        "binary {:.1} MiB, of which the precompiled built-ins {:.1} MiB ({:.1} MiB of components)",
        binary as f64 / (1 << 20) as f64,
        embedded as f64 / (1 << 20) as f64,
        components as f64 / (1 << 20) as f64
    );

    let mut spawn = Vec::new();
    for _ in 0..rounds.max(3) {
        let t = Instant::now();
        Command::new("/bin/true").status()?;
        spawn.push(t.elapsed());
    }
    let (spawn_ms, _, _) = stats(&mut spawn);
    println!("spawn /bin/true: {spawn_ms:.1} ms (median)\n");

    let mut configs = vec![builtins()?];
    if quick {
        println!("(--quick: the built-ins only)\n");
    } else if let Some(c) = with_python(&root)? {
        configs.push(c);
    } else {
        println!("(the Python component is not built: run guest-tools/python/build.sh)\n");
    }
    println!(
        "| toolbox | cache | `initialize` p50 (min–max) | complete `tools/list` p50 (min–max) |"
    );
    println!("|---|---|---|---|");
    for config in &configs {
        for cold in [true, false] {
            let warm_cache = tempfile::tempdir()?;
            if !cold {
                // Fill the cache once.
                Server::spawn(config.dir.path(), warm_cache.path(), &[])?
                    .first_start(config.tools)?;
            }
            let (mut init, mut full) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                let empty = tempfile::tempdir()?;
                let cache = if cold {
                    empty.path()
                } else {
                    warm_cache.path()
                };
                let (i, f) =
                    Server::spawn(config.dir.path(), cache, &[])?.first_start(config.tools)?;
                init.push(i);
                full.push(f);
            }
            let (i50, imin, imax) = stats(&mut init);
            let (f50, fmin, fmax) = stats(&mut full);
            println!(
                "| {} | {} | {i50:.1} ms ({imin:.1}–{imax:.1}) | {f50:.1} ms ({fmin:.1}–{fmax:.1}) |",
                config.label,
                if cold { "empty" } else { "warm" },
            );
        }
    }
    Ok(())
}
