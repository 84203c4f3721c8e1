//! The packages users run toolhost from, installed the way users install
//! them and driven by an MCP client nobody here wrote: the wheel through
//! `uvx toolhost serve` (and `pip install toolhost`), the npm packages
//! through `npx -y toolhost serve`, and the MCP bundle (`.mcpb`) started as
//! its manifest says.
//!
//! The packages are built once per run by `deploy/dist/pack.py` from this
//! test build's binary (a stripped copy), the same script `make dist` runs on
//! the release binary, into `target/dist-tests/packages`. Each test starts
//! its own registry on a free loopback port, stopped when the test ends: a
//! pypiserver index with no fallback to PyPI, or a verdaccio registry with no
//! uplink. Every user is fresh: a new `HOME` (so empty uv, pip and npm caches)
//! whose configuration names only that registry, and an environment with
//! nothing else in it. The client is the MCP Python SDK's high-level
//! `Client` in its default mode (`tests/clients/py_client.py`'s `call`
//! scenario), spawning the server command a client configuration would hold.
//!
//! `tests/dist/install.sh` installs pypiserver, uv and verdaccio (pinned,
//! into `target/dist-tests`), `deploy/dist/install.sh` the bundle packer
//! (`@anthropic-ai/mcpb`), and `tests/clients/install.sh` the Python SDK;
//! each once, skipped when up to date. Needs python3 (with venv), node 20+
//! with npm, and `strip` (binutils); the first run reaches PyPI and npm.

mod support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};
use support::process::{self, Drain, children, kill_group};
use support::{
    TOOLHOST, clients_dir, free_port, install_clients, repo_root, run_script_once, succeeded,
};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Longest a client scenario may run, an install from a cold cache included.
const CLIENT_DEADLINE: Duration = Duration::from_secs(240);

/// The file every served directory has, and the line `read` must return.
const NOTES: &str = "alpha line\nneedle: the quick brown fox\nomega line\n";
const NEEDLE: &str = "needle: the quick brown fox";

/// Where `tests/dist/install.sh` installs (the default of
/// `$TOOLHOST_DIST_TESTS_DIR`), and where the packages are built.
fn tools_dir() -> PathBuf {
    repo_root().join("target/dist-tests")
}

/// The installed tools, once per test binary.
struct Tools {
    /// The `@anthropic-ai/mcpb` CLI (a Node script).
    mcpb: PathBuf,
}

fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        install_clients();
        run_script_once("tests/dist/install.sh", &[]);
        let mcpb = run_script_once("deploy/dist/install.sh", &[]);
        Tools {
            mcpb: PathBuf::from(mcpb),
        }
    })
}

/// The packages `deploy/dist/pack.py` built from this test build's binary.
struct Packages {
    wheel: PathBuf,
    npm_main: PathBuf,
    npm_platform: PathBuf,
    bundle: PathBuf,
}

/// The platform key of the packages for this machine (`linux-x64-gnu`).
fn platform_key() -> String {
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => panic!("no toolhost packages for {other}"),
    };
    format!("linux-{cpu}-gnu")
}

fn packages() -> &'static Packages {
    static PACKAGES: OnceLock<Packages> = OnceLock::new();
    PACKAGES.get_or_init(|| {
        let tools = tools();
        let dir = tools_dir().join("packages");
        if dir.exists() {
            std::fs::remove_dir_all(&dir).expect("removing the previous packages");
        }
        let started = Instant::now();
        // The test binary carries line tables and symbols (160 MB): the
        // packages get it stripped, as small as a release binary.
        let out = Command::new("python3")
            .arg(repo_root().join("deploy/dist/pack.py"))
            .arg(TOOLHOST)
            .arg("--out")
            .arg(&dir)
            .args(["--strip", "all", "--mcpb"])
            .arg(&tools.mcpb)
            .stdin(Stdio::null())
            .output()
            .expect("running deploy/dist/pack.py");
        succeeded(&out, "deploy/dist/pack.py");
        eprintln!(
            "dist: pack.py took {:.1} s:\n{}",
            started.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&out.stdout)
        );
        let key = platform_key();
        let arch = std::env::consts::ARCH;
        let wheels: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("list the packages")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "whl"))
            .collect();
        assert_eq!(wheels.len(), 1, "expected one wheel: {wheels:?}");
        let wheel = wheels[0].clone();
        let name = wheel.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let prefix = format!("toolhost-{VERSION}-py3-none-manylinux_2_");
        assert!(
            name.starts_with(&prefix) && name.ends_with(&format!("_{arch}.whl")),
            "the wheel's name is not {prefix}<minor>_{arch}.whl: {name}"
        );
        // The tag pack.py read from the ELF file agrees with binutils: the
        // highest GLIBC_x.y symbol version the binary needs.
        let symbols = Command::new("objdump")
            .arg("-T")
            .arg(TOOLHOST)
            .output()
            .expect("running objdump -T (binutils)");
        assert!(symbols.status.success(), "objdump -T {TOOLHOST} failed");
        let glibc = String::from_utf8_lossy(&symbols.stdout)
            .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
            .filter_map(|w| w.strip_prefix("GLIBC_"))
            .filter_map(|v| {
                let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
                Some((parts.next()??, parts.next()??))
            })
            .max()
            .expect("objdump -T shows GLIBC_ symbol versions");
        let tag = format!("manylinux_{}_{}_{arch}", glibc.0, glibc.1);
        assert!(
            name.contains(&tag),
            "the wheel {name} is not tagged {tag} (objdump -T)"
        );
        check_record(&wheel);
        let packages = Packages {
            wheel,
            npm_main: dir.join(format!("toolhost-{VERSION}.tgz")),
            npm_platform: dir.join(format!("toolhost-{key}-{VERSION}.tgz")),
            bundle: dir.join(format!("toolhost-{VERSION}-{key}.mcpb")),
        };
        for p in [&packages.npm_main, &packages.npm_platform, &packages.bundle] {
            assert!(p.is_file(), "pack.py wrote no {}", p.display());
        }
        // The checksums cover every package, and hold.
        let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).expect("read SHA256SUMS");
        assert_eq!(sums.lines().count(), 4, "SHA256SUMS:\n{sums}");
        let check = Command::new("sha256sum")
            .args(["--check", "--strict", "SHA256SUMS"])
            .current_dir(&dir)
            .output()
            .expect("running sha256sum");
        succeeded(&check, "sha256sum --check SHA256SUMS");
        packages
    })
}

/// The wheel's RECORD lists every file with its size and sha256 (installers
/// differ in how much of it they check), and its binary is executable.
fn check_record(wheel: &Path) {
    const CHECK: &str = r#"
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
rows = [line.rsplit(",", 2) for line in z.read(record).decode().splitlines() if line]
assert sorted(r[0] for r in rows) == sorted(z.namelist()), "RECORD does not list exactly the files"
for path, digest, size in rows:
    if path == record:
        continue
    data = z.read(path)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert digest == want and int(size) == len(data), f"RECORD is wrong about {path}"
scripts = [i for i in z.infolist() if ".data/scripts/" in i.filename]
assert len(scripts) == 1 and (scripts[0].external_attr >> 16) & 0o111 == 0o111, "no executable script"
"#;
    let out = Command::new("python3")
        .args(["-c", CHECK])
        .arg(wheel)
        .output()
        .expect("running python3");
    succeeded(&out, &format!("checking the wheel {}", wheel.display()));
}

/// A registry the test started on a loopback port: killed when dropped,
/// however the test ends.
struct Server {
    name: &'static str,
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Server {
    /// Starts `cmd` (which listens on 127.0.0.1:`port`) and waits until the
    /// port answers.
    fn start(name: &'static str, mut cmd: Command, port: u16, log: PathBuf) -> Server {
        let file = std::fs::File::create(&log).expect("create the server's log");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("clone the log file"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        let mut server = Server {
            name,
            child,
            port,
            log,
        };
        let until = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "{name} exited ({status}) before listening:\n{}",
                    server.log_text()
                );
            }
            assert!(
                Instant::now() < until,
                "{name} did not listen on 127.0.0.1:{port} within 60 s:\n{}",
                server.log_text()
            );
            thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!("--- {} log ---\n{}", self.name, self.log_text());
        }
    }
}

/// A user on a machine that never ran toolhost: a fresh `HOME` and a
/// project directory with `notes.txt`.
struct User {
    tmp: tempfile::TempDir,
}

impl User {
    fn new() -> User {
        let tmp = tempfile::Builder::new()
            .prefix("toolhost-dist-")
            .tempdir()
            .expect("temp dir");
        let user = User { tmp };
        std::fs::create_dir_all(user.home()).expect("mkdir home");
        std::fs::create_dir_all(user.project()).expect("mkdir project");
        std::fs::write(user.project().join("notes.txt"), NOTES).expect("write notes.txt");
        user
    }

    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    fn project(&self) -> PathBuf {
        self.tmp.path().join("project")
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// Writes a file under `HOME`.
    fn home_file(&self, rel: &str, text: &str) {
        let path = self.home().join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write a file under HOME");
    }

    /// A command in this user's environment: `HOME`, `PATH` (`extra_path`
    /// first, then the system's) and nothing else, so no cache, index or
    /// registry setting of the machine running the tests reaches it.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>, extra_path: &[PathBuf]) -> Command {
        let mut paths = extra_path.to_vec();
        paths.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("HOME", self.home())
            .env(
                "PATH",
                std::env::join_paths(paths).expect("a PATH without ':' in its entries"),
            )
            .env("LANG", "C.UTF-8")
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null());
        cmd
    }

    /// The Python SDK's `Client` (default mode) spawns `server` over stdio
    /// in `cwd`, lists the tools and reads `notes.txt` with `read`; returns
    /// the client's facts once they are checked.
    fn list_and_call(&self, server: &[String], cwd: &Path, extra_path: &[PathBuf]) -> Value {
        let mut cmd = self.command(clients_dir().join("venv/bin/python"), extra_path);
        cmd.arg(repo_root().join("tests/clients/py_client.py"))
            .args(["--transport", "stdio", "--api", "client", "--mode", "auto"])
            .arg("--cmd")
            .arg(json!(server).to_string())
            .arg("--cwd")
            .arg(cwd)
            .arg("call")
            .arg("tool=read")
            .arg(format!("args={}", json!({"path": "/workspace/notes.txt"})));
        let facts = support::scenario_facts(
            &process::run_in_group(cmd, CLIENT_DEADLINE),
            &format!("dist: the Python Client with {server:?}"),
            "",
        );
        let tools: Vec<&str> = facts["tools"]
            .as_array()
            .expect("facts.tools")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for tool in ["read", "list", "grep"] {
            assert!(tools.contains(&tool), "{tool} not listed: {tools:?}");
        }
        assert_eq!(facts["is_error"], false, "read notes.txt failed: {facts}");
        assert!(
            facts["text"].as_str().unwrap_or("").contains(NEEDLE),
            "read did not return notes.txt: {facts}"
        );
        facts
    }
}

/// Runs `cmd`, which must succeed; its stdout.
fn succeed(cmd: Command, what: &str) -> String {
    let out = process::run_in_group(cmd, CLIENT_DEADLINE);
    assert!(
        out.status.success(),
        "{what} failed ({}) after {:.1} s:\n{}\n{}",
        out.status,
        out.elapsed.as_secs_f64(),
        out.stdout.trim_end(),
        out.stderr.trim_end()
    );
    out.stdout
}

// --- the wheel ---------------------------------------------------------------

/// A pypiserver index serving `dir`, with no fallback to PyPI.
fn pypiserver(dir: &Path, log: PathBuf) -> Server {
    let port = free_port();
    let mut cmd = Command::new(tools_dir().join("venv/bin/pypi-server"));
    // `-v` logs each request: the test checks the wheel was fetched from here.
    cmd.args(["run", "-v", "--disable-fallback", "-i", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .arg(dir);
    Server::start("pypiserver", cmd, port, log)
}

#[test]
fn wheel_serves_through_uvx_and_installs_with_pip() {
    let packages = packages();
    let user = User::new();
    let index_dir = user.path("index");
    std::fs::create_dir_all(&index_dir).expect("mkdir index");
    let wheel_name = packages.wheel.file_name().expect("the wheel's name");
    std::fs::copy(&packages.wheel, index_dir.join(wheel_name)).expect("copy the wheel");
    let index = pypiserver(&index_dir, user.path("pypiserver.log"));
    let simple = format!("{}simple/", index.url());

    // uv reads its user configuration from ~/.config/uv/uv.toml: the local
    // index is the only one, and no Python is downloaded (uvx runs the
    // wheel's binary in an environment made with the system's python3).
    user.home_file(
        ".config/uv/uv.toml",
        &format!("index-url = \"{simple}\"\npython-downloads = \"never\"\n"),
    );
    // `uvx` on PATH (alone: the venv that holds it has a python of its own).
    let bin = user.path("bin");
    std::fs::create_dir_all(&bin).expect("mkdir bin");
    std::os::unix::fs::symlink(tools_dir().join("venv/bin/uvx"), bin.join("uvx"))
        .expect("link uvx");

    // As a client configuration holds it: {"command": "uvx", "args": ["toolhost", "serve"]}.
    let server = ["uvx".to_owned(), "toolhost".into(), "serve".into()];
    user.list_and_call(&server, &user.project(), std::slice::from_ref(&bin));
    assert!(
        user.home().join(".cache/uv").is_dir(),
        "uvx did not use the fresh HOME's cache (~/.cache/uv)"
    );
    let served = index.log_text();
    let wheel_name = wheel_name.to_string_lossy();
    assert!(
        served.contains(&*wheel_name),
        "pypiserver's log does not show the wheel downloaded:\n{served}"
    );

    // pip, in a fresh virtual environment: the binary lands on its PATH.
    let venv = user.path("venv");
    let mut make_venv = user.command("python3", &[]);
    make_venv.args(["-m", "venv"]).arg(&venv);
    succeed(make_venv, "python3 -m venv");
    let mut pip = user.command(venv.join("bin/python"), &[]);
    pip.args([
        "-m",
        "pip",
        "install",
        "--no-input",
        "--disable-pip-version-check",
        "--no-cache-dir",
        "--index-url",
        &simple,
    ])
    .arg(format!("toolhost=={VERSION}"));
    succeed(pip, "pip install toolhost");
    let version = succeed(
        {
            let mut c = user.command("toolhost", &[venv.join("bin")]);
            c.arg("--version");
            c
        },
        "toolhost --version (pip's)",
    );
    assert!(
        version.starts_with("toolhost "),
        "toolhost --version printed {version:?}"
    );
    let which = venv.join("bin/toolhost");
    let mode = std::fs::metadata(&which)
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()))
        .unwrap_or_else(|e| panic!("pip put no {}: {e}", which.display()));
    assert_eq!(mode & 0o111, 0o111, "{} is not executable", which.display());
}

// --- the npm packages --------------------------------------------------------

/// A verdaccio registry with its storage in `dir`: no uplink, so nothing
/// comes from npmjs.org; anyone may publish.
fn verdaccio(dir: &Path) -> Server {
    let port = free_port();
    let config = dir.join("config.yaml");
    std::fs::create_dir_all(dir.join("storage")).expect("mkdir storage");
    std::fs::write(
        &config,
        format!(
            "storage: {storage}\n\
             auth:\n  htpasswd:\n    file: {htpasswd}\n    max_users: -1\n\
             uplinks: {{}}\n\
             packages:\n  '**':\n    access: $all\n    publish: $anonymous\n\
             listen: 127.0.0.1:{port}\n\
             max_body_size: 300mb\n\
             log: {{ type: stdout, format: pretty, level: http }}\n",
            storage = dir.join("storage").display(),
            htpasswd = dir.join("htpasswd").display(),
        ),
    )
    .expect("write verdaccio's config");
    let mut cmd = Command::new("node");
    cmd.arg(tools_dir().join("node/node_modules/verdaccio/bin/verdaccio"))
        .arg("--config")
        .arg(&config);
    Server::start("verdaccio", cmd, port, dir.join("verdaccio.log"))
}

#[test]
fn npm_package_serves_through_npx() {
    let packages = packages();
    let user = User::new();
    let registry = verdaccio(&user.path("verdaccio"));
    let url = registry.url();
    let host = url.trim_start_matches("http:");

    // The publisher: another HOME, with a token verdaccio takes for anonymous.
    let publisher = User::new();
    publisher.home_file(
        ".npmrc",
        &format!("registry={url}\n{host}:_authToken=anonymous\n"),
    );
    for tarball in [&packages.npm_platform, &packages.npm_main] {
        let mut publish = publisher.command("npm", &[]);
        publish
            .args(["publish", "--ignore-scripts", "--loglevel=warn"])
            .arg(tarball);
        succeed(publish, &format!("npm publish {}", tarball.display()));
    }

    user.home_file(".npmrc", &format!("registry={url}\n"));
    // As a client configuration holds it: {"command": "npx", "args": ["-y", "toolhost", "serve"]}.
    let server = [
        "npx".to_owned(),
        "-y".into(),
        "toolhost".into(),
        "serve".into(),
    ];
    user.list_and_call(&server, &user.project(), &[]);

    // npx installed the platform package (from the fresh HOME's cache) and
    // the launcher ran its binary.
    let npx = user.home().join(".npm/_npx");
    let installs: Vec<PathBuf> = std::fs::read_dir(&npx)
        .unwrap_or_else(|e| panic!("npx left no {}: {e}", npx.display()))
        .map(|e| e.expect("a directory entry").path().join("node_modules"))
        .collect();
    let platform = format!("@toolhost/{}", platform_key());
    let install = installs
        .iter()
        .find(|d| d.join(&platform).join("bin/toolhost").is_file())
        .unwrap_or_else(|| panic!("npx did not install {platform}: {installs:?}"));

    // The launcher passes SIGTERM on and ends the way the binary ended.
    signal_passes_through(&user, &install.join("toolhost/bin/toolhost.js"));

    // Without the platform package, the launcher says so and names the platform.
    let bare = user.path("bare");
    std::fs::create_dir_all(&bare).expect("mkdir bare");
    let mut npm = user.command("npm", &[]);
    npm.args([
        "install",
        "--omit=optional",
        "--no-audit",
        "--no-fund",
        "--loglevel=warn",
        "--prefix",
    ])
    .arg(&bare)
    .arg(&packages.npm_main);
    succeed(npm, "npm install --omit=optional toolhost");
    let mut launcher = user.command(bare.join("node_modules/.bin/toolhost"), &[]);
    launcher.arg("--version");
    let out = process::run_in_group(launcher, Duration::from_secs(60));
    assert!(
        !out.status.success(),
        "the launcher without its platform package succeeded: {}",
        out.stdout
    );
    assert!(
        out.stderr.contains(&platform) && out.stderr.contains(&platform_key()),
        "the launcher's error does not name {platform}: {}",
        out.stderr
    );
}

/// Starts `toolhost serve` through the npm launcher, answers one MCP
/// request through it (stdin and stdout pass through), sends the launcher
/// SIGTERM, and checks that the binary got it: both are gone, and the
/// launcher ended the way the binary did.
fn signal_passes_through(user: &User, launcher: &Path) {
    let mut cmd = user.command("node", &[]);
    let mut child = cmd
        .arg(launcher)
        .args(["serve", "--dir"])
        .arg(user.project())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("spawning the npm launcher");
    let pgid = child.id();
    let _guard = GroupGuard(pgid);
    let err = Drain::new(child.stderr.take().expect("stderr piped"));
    let mut stdin = child.stdin.take().expect("stdin piped");
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "dist-test", "version": "0"}}
    });
    writeln!(stdin, "{request}").expect("write initialize");
    stdin.flush().expect("flush");
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().expect("stdout piped");
    thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(120))
        .unwrap_or_else(|_| {
            panic!(
                "no answer to initialize through the launcher; stderr:\n{}",
                err.text(Duration::from_secs(1))
            )
        });
    let answer: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("not a JSON-RPC line through the launcher ({e}): {line:?}"));
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");

    let binary = children(child.id());
    assert_eq!(
        binary.len(),
        1,
        "the launcher has not one child: {binary:?}"
    );
    let binary = binary[0];
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
    let until = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the launcher") {
            break status;
        }
        assert!(
            Instant::now() < until,
            "the launcher did not end within 30 s of SIGTERM"
        );
        thread::sleep(Duration::from_millis(20));
    };
    assert!(
        !Path::new(&format!("/proc/{binary}")).exists()
            || std::fs::read_to_string(format!("/proc/{binary}/stat"))
                .map(|s| s.contains(") Z "))
                .unwrap_or(true),
        "the binary (pid {binary}) outlived the launcher"
    );
    // toolhost ends on SIGTERM by its own choice of exit code, or by the
    // signal: the launcher must end the same way, never by a code of its own.
    assert!(
        status.signal() == Some(15) || status.code() == Some(0) || status.code() == Some(143),
        "the launcher ended with {status} after SIGTERM; stderr:\n{}",
        err.text(Duration::from_secs(1))
    );
    drop(stdin);
}

/// Kills a process group when dropped.
struct GroupGuard(u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

// --- the MCP bundle ----------------------------------------------------------

/// Substitutes the bundle's variables the way a bundle host does.
fn expand(value: &str, dirname: &Path, workspace: &Path) -> String {
    value
        .replace("${__dirname}", &dirname.display().to_string())
        .replace("${user_config.workspace}", &workspace.display().to_string())
}

#[test]
fn bundle_validates_and_its_manifest_starts_the_server() {
    let packages = packages();
    let tools = tools();
    let user = User::new();
    let unpacked = user.path("bundle");

    // The official CLI unpacks it and validates its manifest.
    let mut unpack = user.command("node", &[]);
    unpack
        .arg(&tools.mcpb)
        .arg("unpack")
        .arg(&packages.bundle)
        .arg(&unpacked);
    succeed(unpack, "mcpb unpack");
    let mut validate = user.command("node", &[]);
    validate
        .arg(&tools.mcpb)
        .arg("validate")
        .arg(unpacked.join("manifest.json"));
    let said = succeed(validate, "mcpb validate");
    assert!(said.contains("passes"), "mcpb validate said: {said}");

    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(unpacked.join("manifest.json")).expect("read manifest.json"),
    )
    .expect("manifest.json is JSON");
    let server = &manifest["server"];
    assert_eq!(server["type"], "binary", "{manifest}");
    let entry = unpacked.join(server["entry_point"].as_str().expect("entry_point"));
    let mode = std::fs::metadata(&entry)
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()))
        .unwrap_or_else(|e| panic!("the entry point {}: {e}", entry.display()));
    assert_eq!(mode & 0o111, 0o111, "the entry point is not executable");
    assert_eq!(
        manifest["user_config"]["workspace"]["type"], "directory",
        "{manifest}"
    );
    assert_eq!(manifest["version"], VERSION);

    // The server starts exactly as the manifest says, from a directory that
    // is not the workspace: `--dir` is what serves it.
    let config = &server["mcp_config"];
    let project = user.project();
    let mut command = vec![expand(
        config["command"].as_str().expect("mcp_config.command"),
        &unpacked,
        &project,
    )];
    command.extend(
        config["args"]
            .as_array()
            .expect("mcp_config.args")
            .iter()
            .map(|a| expand(a.as_str().expect("a string argument"), &unpacked, &project)),
    );
    assert!(
        config
            .get("env")
            .is_none_or(|e| e.as_object().is_some_and(|e| e.is_empty())),
        "mcp_config.env is not expected: {config}"
    );
    assert_eq!(Path::new(&command[0]), entry);
    user.list_and_call(&command, &user.home(), &[]);
}
