//! What the integration tests share, in one place: the binary under test
//! and the repository, install scripts run once, the MCP client scripts,
//! processes run to a deadline, `toolhost serve` over stdio (`stdio`) and
//! over HTTP with the team's parts around it (`fleet`). Each test file
//! includes it with `mod support;`.

#![allow(dead_code)]

pub mod fleet;
pub mod process;
pub mod stdio;

use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// The toolhost binary under test.
pub const TOOLHOST: &str = env!("CARGO_BIN_EXE_toolhost");

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(toolhost_guests::REPO_ROOT))
}

/// The search model's wheel the tests share (see `toolhost_testkit`).
pub fn search_model() -> PathBuf {
    toolhost_testkit::search_model::wheel()
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `toolhost --cache-dir CACHE`: add the command and run it.
pub fn toolhost_with_cache(cache: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(TOOLHOST);
    cmd.arg("--cache-dir").arg(cache);
    cmd
}

/// `toolhost` with the compiled-component cache the tests share, so a
/// component compiles once per run rather than once per test.
pub fn toolhost_cached() -> Command {
    toolhost_with_cache(toolhost_guests::test_cache_dir())
}

/// Bytes a process wrote, as text.
pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `out`'s stdout as text, once its process succeeded; otherwise the test
/// fails naming `what`, its exit status, stdout and stderr.
#[track_caller]
pub fn succeeded(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        lossy(&out.stdout),
        lossy(&out.stderr)
    );
    lossy(&out.stdout)
}

/// What a finished process printed: stdout, then stderr.
pub fn text(out: &Output) -> String {
    format!("{}{}", lossy(&out.stdout), lossy(&out.stderr))
}

/// The JSON-RPC `initialize` request a raw client sends first, as `id`.
pub fn initialize(id: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}})
}

/// The notification a raw client sends once initialized.
pub fn initialized() -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/initialized"})
}

/// `msg` as one line of the stdio transport.
pub fn line(msg: &Value) -> Vec<u8> {
    let mut l = msg.to_string().into_bytes();
    l.push(b'\n');
    l
}

/// Runs the bash script `script` (relative to the repository: an install
/// or build script) with `env` once per test binary, and panics with its
/// output if it fails; what it printed on stdout, trimmed. The scripts
/// skip what is already installed or built, so a later run is quick.
pub fn run_script_once(script: &str, env: &[(&str, &Path)]) -> String {
    // One cell a script: different scripts may run at once, as before.
    static RAN: Mutex<Option<HashMap<String, Arc<OnceLock<String>>>>> = Mutex::new(None);
    let cell = RAN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .entry(script.to_owned())
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let started = Instant::now();
        let out = Command::new("bash")
            .arg(repo_root().join(script))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running {script}: {e}"));
        let stdout = succeeded(&out, script);
        eprintln!("{script} took {:.1} s", started.elapsed().as_secs_f64());
        stdout.trim().to_owned()
    })
    .clone()
}

/// The plain test component (`wit/test-plain`: exported functions, no
/// `toolhost:tool`; built by host/guests from
/// `guest-tools/test-guests/plain`) with its WIT docs, as a published one
/// carries them (`guest-tools/test-guests/plain-build.sh`, once per test
/// binary; nothing is rebuilt when its sources did not change).
pub fn plain_component() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = repo_root().join("target/plain-guests/plain_rust.wasm");
            let built = Command::new("bash")
                .arg(repo_root().join("guest-tools/test-guests/plain-build.sh"))
                .arg("rust")
                .arg(&out)
                .arg(toolhost_guests::GUEST_PLAIN)
                .stdin(Stdio::null())
                .output()
                .expect("running plain-build.sh");
            succeeded(&built, "plain-build.sh rust");
            out
        })
        .clone()
}

/// Where `tests/clients/install.sh` puts the clients: `$TOOLHOST_CLIENTS_DIR`
/// (relative to the test's working directory), default
/// `<repo root>/target/clients`.
pub fn clients_dir() -> PathBuf {
    match std::env::var_os("TOOLHOST_CLIENTS_DIR") {
        Some(d) => std::env::current_dir().expect("current directory").join(d),
        None => repo_root().join("target/clients"),
    }
}

/// Installs the MCP clients (`tests/clients/install.sh`), once.
pub fn install_clients() {
    run_script_once(
        "tests/clients/install.sh",
        &[("TOOLHOST_CLIENTS_DIR", &clients_dir())],
    );
}

/// `tests/clients/py_client.py` under the pinned Python SDK, the clients
/// installed: add its arguments and run it.
pub fn python_client_command() -> Command {
    install_clients();
    let mut cmd = Command::new(clients_dir().join("venv/bin/python"));
    cmd.arg(repo_root().join("tests/clients/py_client.py"));
    cmd
}

/// Runs `tests/clients/py_client.py ARGS…` with the pinned Python SDK.
pub fn python_client(args: &[String]) -> Output {
    python_client_env(args, &[])
}

/// [`python_client`] with these variables added to its environment.
pub fn python_client_env(args: &[String], env: &[(&str, &str)]) -> Output {
    python_client_command()
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("running the Python client")
}

/// The facts a client scenario printed last (`Null` when that line is not
/// JSON).
pub fn facts(out: &Output) -> Value {
    last_json(&lossy(&out.stdout)).unwrap_or(Value::Null)
}

/// The last line of `stdout`, parsed: what a client scenario reports.
pub fn last_json(stdout: &str) -> serde_json::Result<Value> {
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
}

/// The facts of a client scenario that ran to its end: it must have
/// succeeded (else its output, and `also`, are the failure's report), and
/// its last line is the JSON of its facts. `what` names it in messages.
pub fn scenario_facts(out: &process::Finished, what: &str, also: &str) -> Value {
    assert!(
        out.status.success(),
        "{what} failed ({}) after {:.1} s\n\
         --- client stderr (stdio servers log here too) ---\n{}\n\
         --- client stdout ---\n{}\n{also}",
        out.status,
        out.elapsed.as_secs_f64(),
        out.stderr.trim_end(),
        out.stdout.trim_end(),
    );
    let facts = last_json(&out.stdout)
        .unwrap_or_else(|e| panic!("the client's last line is not JSON ({e}): {}", out.stdout));
    eprintln!("{what}: {:.2} s: {facts}", out.elapsed.as_secs_f64());
    facts
}
