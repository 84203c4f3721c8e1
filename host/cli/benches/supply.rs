//! What the way in for third-party tools costs, against Debian's CNCF
//! distribution registry on a loopback port (started here, stopped at the
//! end; `tests/registry/install.sh` installs it):
//!
//! - pulling, verifying (a key-signed Sigstore bundle with its Rekor
//!   entry) and locking a component (`toolhost lock`, fresh store), then its
//!   first compile (`toolhost tools`, empty compile cache), for the built-in
//!   `read` (about 200 KiB) and the Python `table` component (18 MiB);
//! - a warm start of `toolhost serve` with the component locked from the
//!   registry against the same bytes as a local file, in the same run (the
//!   lock, store and signature checks are the difference).
//!
//! `cargo bench -p toolhost --bench supply` (optimized; 5 rounds);
//! `-- --quick` runs one, of `read` only (what `make test` runs, so the
//! bench cannot rot; the 18 MiB rows are half a minute of an unoptimized
//! build).

#[path = "common/server.rs"]
mod server;

use server::{Server, TOOLHOST};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(toolhost_guests::REPO_ROOT)
}

struct Registry {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn registry() -> anyhow::Result<Registry> {
    let status = Command::new("bash")
        .arg(root().join("tests/registry/install.sh"))
        .status()?;
    anyhow::ensure!(status.success(), "tests/registry/install.sh failed");
    let dir = tempfile::tempdir()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let config = dir.path().join("config.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: bench\n",
            dir.path().join("data").display()
        ),
    )?;
    let child = Command::new("docker-registry")
        .arg("serve")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let until = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        anyhow::ensure!(Instant::now() < until, "the registry did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(Registry {
        child,
        port,
        _dir: dir,
    })
}

/// Runs `toolhost ARGS` in `dir` with `home` as HOME; how long it took.
fn toolhost(dir: &Path, home: &Path, args: &[&str]) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let out = Command::new(TOOLHOST)
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env_remove("XDG_CACHE_HOME")
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "toolhost {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(started.elapsed())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// Publishes `wasm` as `repo:1`, signs it with a key (and a Rekor entry);
/// the project directory with a toolbox trusting that key.
fn published(
    reg: &Registry,
    wasm: &Path,
    repo: &str,
    policy: &str,
) -> anyhow::Result<tempfile::TempDir> {
    let project = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    let reference = format!("oci://127.0.0.1:{}/{repo}:1", reg.port);
    let out = Command::new(TOOLHOST)
        .args(["publish"])
        .arg(wasm)
        .arg(&reference)
        .env("HOME", home.path())
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "publish: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    let digest = said
        .rsplit('(')
        .next()
        .and_then(|d| d.trim().strip_suffix(')'))
        .ok_or_else(|| anyhow::anyhow!("no digest in {said}"))?
        .to_owned();
    let keys = project.path().join("keys");
    let out = Command::new("node")
        .arg(root().join("tests/registry/sign.mjs"))
        .args(["key", "--rekor", "--registry"])
        .arg(format!("127.0.0.1:{}", reg.port))
        .args(["--repo", repo, "--digest", &digest, "--key-dir"])
        .arg(&keys)
        .arg("--trusted-root")
        .arg(keys.join("root.json"))
        .env("TOOLHOST_SIGNER_DIR", root().join("target/registry-signer"))
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "sign: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        project.path().join("toolhost.toml"),
        format!(
            "version = 1\n\n[[component]]\nsource = \"builtin:read\"\n\n[[component]]\nsource = \"{reference}\"\npolicy = '{policy}'\nprefix = \"r_\"\n\n[[trust]]\nprefix = \"127.0.0.1:{}/\"\nkey = \"keys/key.pub\"\ntrusted_root = \"keys/root.json\"\n",
            reg.port
        ),
    )?;
    Ok(project)
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 1 } else { 5 };
    let reg = registry()?;
    let read = PathBuf::from(toolhost_guests::TOOL_READ);
    let table = root().join("target/python-guests/tool_table.wasm");
    let table_policy = root().join("guest-tools/python/tools/table/policy.toml");
    let read_policy = root().join("policies/read.toml");
    let mut components = vec![(
        "read (Rust)",
        read.clone(),
        "tools/read",
        read_policy.clone(),
    )];
    if quick {
        println!("(--quick: `read` only)");
    } else if table.exists() {
        components.push(("table (Python)", table, "tools/table", table_policy));
    } else {
        println!("(the Python component is not built: run guest-tools/python/build.sh)");
    }

    println!("| component | size | pull + verify + lock p50 | first compile p50 |");
    println!("|---|---|---|---|");
    for (label, wasm, repo, policy) in &components {
        let project = published(&reg, wasm, repo, &policy.display().to_string())?;
        let (mut pulls, mut compiles) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let home = tempfile::tempdir()?;
            let _ = std::fs::remove_file(project.path().join("toolhost.lock"));
            pulls.push(toolhost(project.path(), home.path(), &["lock"])?);
            compiles.push(toolhost(project.path(), home.path(), &["tools"])?);
        }
        println!(
            "| {label} | {:.1} MiB | {:.1} ms | {:.1} ms |",
            std::fs::metadata(wasm)?.len() as f64 / (1 << 20) as f64,
            ms(median(pulls)),
            ms(median(compiles))
        );
    }

    // A warm start: the component locked from the registry, against the same
    // bytes as a local file.
    let project = published(
        &reg,
        &read,
        "tools/read",
        &read_policy.display().to_string(),
    )?;
    let home = tempfile::tempdir()?;
    toolhost(project.path(), home.path(), &["lock"])?;
    let local = tempfile::tempdir()?;
    std::fs::write(
        local.path().join("toolhost.toml"),
        format!(
            "version = 1\n\n[[component]]\nsource = \"builtin:read\"\n\n[[component]]\nsource = '{}'\npolicy = '{}'\nprefix = \"r_\"\n",
            read.display(),
            read_policy.display()
        ),
    )?;
    let cache = home.path().join(".cache/toolhost");
    let home_path = home.path();
    // Warm both (compile once).
    Server::spawn(project.path(), &cache, &[("HOME", home_path)])?.first_start(2)?;
    Server::spawn(local.path(), &cache, &[("HOME", home_path)])?.first_start(2)?;
    let (mut remote, mut file) = (Vec::new(), Vec::new());
    for _ in 0..rounds.max(3) {
        remote.push(
            Server::spawn(project.path(), &cache, &[("HOME", home_path)])?
                .first_start(2)?
                .1,
        );
        file.push(
            Server::spawn(local.path(), &cache, &[("HOME", home_path)])?
                .first_start(2)?
                .1,
        );
    }
    let (remote, file) = (median(remote), median(file));
    println!(
        "\nwarm serve start to a complete tools/list: locked from the registry (signed) {:.1} ms, the same bytes as a file {:.1} ms: {:+.1} ms",
        ms(remote),
        ms(file),
        ms(remote) - ms(file)
    );
    Ok(())
}
