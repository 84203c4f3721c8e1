//! Writing a tool the way a new user does, in every kit language: `toolhost
//! new` in an empty directory, `toolhost build` (which installs the
//! language's pinned toolchain into the cache the first time), `toolhost
//! call` through the whole pipeline; and `toolhost dev` serving a project
//! to the official Python MCP SDK's `Client` (its default configuration)
//! while the project's source changes, so the client sees the rebuilt tool
//! without reconnecting.
//!
//! The kits' cache is shared by these tests and kept between runs
//! (`target/author-cache`, or `$TOOLHOST_AUTHOR_CACHE`): the first run on a
//! machine installs every toolchain (componentize-py, componentize-js, Go,
//! the C and Go builder), later runs reuse them, as a user's machine would.
//! Needs what a user needs: bash, python3, node, cargo (for Rust, and for
//! the C and Go builder), clang and wasi-libc (make setup installs them).

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Instant;
use support::{TOOLHOST, lossy, repo_root, succeeded, toolhost_with_cache};

/// The kits' and toolchains' cache these tests share.
fn cache() -> PathBuf {
    match std::env::var_os("TOOLHOST_AUTHOR_CACHE") {
        Some(d) => PathBuf::from(d),
        None => repo_root().join("target/author-cache"),
    }
}

/// Builds run one at a time: two first builds of one language would
/// install its toolchain into the same place at once, and the machine has
/// few cores.
fn build_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// `toolhost ARGS` in `dir`, with the shared cache.
fn toolhost(dir: &Path, args: &[&str]) -> Output {
    toolhost_with_cache(cache())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("running toolhost")
}

/// The file every project counts: 3 lines, 28 bytes.
const NOTES: &str = "alpha\nthe quick brown fox\nz\n";

/// `new` → `build` → `call`, as the README the project comes with says.
fn new_build_call(lang: &str) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let name = format!("count-{lang}");
    let tool = format!("count_{lang}");
    let made = succeeded(
        &toolhost(tmp.path(), &["new", &name, "--lang", lang]),
        "toolhost new",
    );
    assert!(made.contains(&format!("toolhost call {tool}")), "{made}");
    let project = tmp.path().join(&name);
    std::fs::write(project.join("notes.txt"), NOTES).expect("notes");

    let started = Instant::now();
    let built = {
        let _one = build_lock();
        toolhost(&project, &["build"])
    };
    let stderr = lossy(&built.stderr);
    let stdout = succeeded(&built, &format!("toolhost build ({lang})"));
    eprintln!(
        "{lang}: build took {:.1} s\n{stdout}",
        started.elapsed().as_secs_f64()
    );
    assert!(
        stderr.contains(&format!(
            "built {}",
            project
                .join("target")
                .join(format!("{tool}.wasm"))
                .display()
        )),
        "{stderr}"
    );
    // Its imports against its policy: all granted.
    assert!(stdout.contains(&format!("tools: {tool}")), "{stdout}");
    assert!(!stdout.contains("DENIED"), "{stdout}");

    let called = succeeded(
        &toolhost(
            &project,
            &[
                "call",
                &tool,
                "--json",
                "--args",
                r#"{"path": "notes.txt"}"#,
            ],
        ),
        "toolhost call",
    );
    let result: Value = serde_json::from_str(&called).unwrap_or_else(|e| panic!("{e}: {called}"));
    let value = &result["value"];
    assert_eq!(value["lines"], 3, "{result}");
    assert_eq!(value["bytes"], NOTES.len(), "{result}");

    // A file that is not there: the kit's stable code, through the pipeline.
    let missing = toolhost(
        &project,
        &["call", &tool, "--json", "--args", r#"{"path": "nope.txt"}"#],
    );
    let out = lossy(&missing.stdout);
    assert!(!missing.status.success(), "{out}");
    assert!(
        out.contains("not_found"),
        "{out}\n{}",
        lossy(&missing.stderr)
    );

    // A path outside the policy's grants never reaches the tool.
    let outside = toolhost(
        &project,
        &[
            "call",
            &tool,
            "--json",
            "--args",
            r#"{"path": "/etc/passwd"}"#,
        ],
    );
    assert!(!outside.status.success());
    assert!(
        lossy(&outside.stdout).contains("path_denied"),
        "{}",
        lossy(&outside.stdout)
    );
}

#[test]
fn rust_new_build_call() {
    new_build_call("rust");
}

#[test]
fn python_new_build_call() {
    new_build_call("python");
}

#[test]
fn js_new_build_call() {
    new_build_call("js");
}

#[test]
fn c_new_build_call() {
    new_build_call("c");
}

#[test]
fn go_new_build_call() {
    new_build_call("go");
}

#[test]
fn new_refuses_what_it_cannot_do() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bad_lang = toolhost(tmp.path(), &["new", "x", "--lang", "cobol"]);
    assert!(!bad_lang.status.success());
    assert!(
        lossy(&bad_lang.stderr).contains("rust, python, js, c, go"),
        "{}",
        lossy(&bad_lang.stderr)
    );
    let bad_name = toolhost(tmp.path(), &["new", "Bad Name", "--lang", "c"]);
    assert!(!bad_name.status.success());
    assert!(
        lossy(&bad_name.stderr).contains("cannot name a tool"),
        "{}",
        lossy(&bad_name.stderr)
    );
    succeeded(&toolhost(tmp.path(), &["new", "x", "--lang", "c"]), "new x");
    let again = toolhost(tmp.path(), &["new", "x", "--lang", "go"]);
    assert!(
        lossy(&again.stderr).contains("already exists"),
        "{}",
        lossy(&again.stderr)
    );
    // Not a project: build says what to run.
    let nowhere = toolhost(tmp.path(), &["build"]);
    assert!(!nowhere.status.success());
    assert!(
        lossy(&nowhere.stderr).contains("toolhost new NAME --lang LANG"),
        "{}",
        lossy(&nowhere.stderr)
    );
}

/// `toolhost dev` as an MCP client's configuration starts it: the Python
/// SDK's `Client` (default mode) lists and calls the tool, the tool's
/// source changes, and the client sees the rebuilt tool (a new
/// description, through tools/list_changed) and calls it, all on one
/// connection.
#[test]
fn dev_rebuilds_what_changed_and_the_client_sees_it() {
    // The user's own HOME (rustup and cargo find their toolchain there,
    // for the C builder); the kits' cache is named.
    let tmp = tempfile::tempdir().expect("tempdir");
    succeeded(
        &toolhost(tmp.path(), &["new", "count-dev", "--lang", "c"]),
        "toolhost new",
    );
    let project = tmp.path().join("count-dev");
    std::fs::write(project.join("notes.txt"), NOTES).expect("notes");
    // The toolchain's first install belongs to the build tests; `dev`
    // builds again before serving (nothing changed: at once).
    {
        let _one = build_lock();
        succeeded(&toolhost(&project, &["build"]), "toolhost build");
    }
    let server = serde_json::json!([TOOLHOST, "--cache-dir", cache(), "dev", "--dir", project]);
    let started = Instant::now();
    let out = support::python_client_env(
        &[
            "--api",
            "client",
            "--mode",
            "auto",
            "--transport",
            "stdio",
            "--cmd",
            &server.to_string(),
            "--cwd",
            &project.display().to_string(),
            "dev",
            "tool=count_dev",
            &format!("source={}", project.join("count_dev.c").display()),
            "old=Counts the lines and bytes of a file.",
            "new=Counts lines and bytes, rebuilt.",
        ]
        .map(str::to_owned),
        &[("PY_CLIENT_DEADLINE", "240")],
    );
    let facts = support::facts(&out);
    succeeded(&out, "the dev scenario");
    eprintln!("dev: {:.1} s: {facts}", started.elapsed().as_secs_f64());
    assert_eq!(
        facts["after"], "Counts lines and bytes, rebuilt.",
        "{facts}"
    );
    assert_eq!(facts["value_before"]["lines"], 3, "{facts}");
    assert_eq!(facts["value_after"]["lines"], 3, "{facts}");
}

/// What a new user gets wrong, `build` names: a schema that does not
/// compile, a policy key misspelt.
#[test]
fn build_names_what_the_host_would_refuse() {
    let tmp = tempfile::tempdir().expect("tempdir");
    succeeded(
        &toolhost(tmp.path(), &["new", "broken", "--lang", "c"]),
        "toolhost new",
    );
    let project = tmp.path().join("broken");
    let source = project.join("broken.c");
    let code = std::fs::read_to_string(&source).expect("the C source");
    let schema = r#"\"path\":{\"type\":\"string\""#;
    assert!(code.contains(schema), "the template's input schema moved");
    std::fs::write(
        &source,
        code.replacen(schema, r#"\"path\":{\"type\":\"strin\""#, 1),
    )
    .expect("write");
    let built = {
        let _one = build_lock();
        toolhost(&project, &["build"])
    };
    assert!(!built.status.success(), "{}", lossy(&built.stdout));
    let err = lossy(&built.stderr);
    assert!(err.contains("input schema does not compile"), "{err}");
    assert!(err.contains("toolhost would not serve it"), "{err}");

    // The schema mended, a typo in the policy: named with its line.
    std::fs::write(&source, code).expect("write");
    std::fs::write(
        project.join("policy.toml"),
        "version = 1\ndecison = \"allow\"\n",
    )
    .expect("policy");
    let built = {
        let _one = build_lock();
        toolhost(&project, &["build"])
    };
    assert!(!built.status.success());
    let err = lossy(&built.stderr);
    assert!(
        err.contains("unknown field `decison`") && err.contains("policy.toml:2:"),
        "{err}"
    );
}

/// A machine without the language's starting point: `build` names the
/// program and how to get it, before running anything.
#[test]
fn build_names_a_missing_program() {
    let tmp = tempfile::tempdir().expect("tempdir");
    succeeded(
        &toolhost(tmp.path(), &["new", "lonely", "--lang", "python"]),
        "toolhost new",
    );
    // A PATH with bash and nothing else.
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink("/bin/bash", bin.join("bash")).expect("symlink");
    let out = Command::new(TOOLHOST)
        .arg("--cache-dir")
        .arg(cache())
        .arg("build")
        .current_dir(tmp.path().join("lonely"))
        .env("PATH", &bin)
        .stdin(Stdio::null())
        .output()
        .expect("running toolhost");
    assert!(!out.status.success());
    let err = lossy(&out.stderr);
    assert!(
        err.contains("needs `python3`, which is not on PATH"),
        "{err}"
    );
    assert!(err.contains("install Python"), "{err}");
}
