//! `toolhost record` and `toolhost replay` on the demo session: a recording
//! plays back with nothing run, verifies against the same files, and a
//! changed file is reported at the exact field, with exit status 1.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::{lossy, succeeded, toolhost_with_cache};
use toolhost::script::copy_workspace;

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo")
}

/// A fresh copy of the demo workspace.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().expect("temp dir");
    copy_workspace(&demo().join("workspace"), ws.path()).expect("copy the demo workspace");
    ws
}

fn toolhost(args: &[&str], ws: &Path) -> Output {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolhost-replay-cli-cache");
    toolhost_with_cache(cache)
        .args(args)
        .arg("--dir")
        .arg(ws)
        .output()
        .expect("running toolhost")
}

#[test]
fn record_then_replay_then_verify_a_changed_workspace() {
    let out_dir = tempfile::tempdir().expect("temp dir");
    let cassette = out_dir.path().join("demo.cassette.jsonl");
    let cassette_arg = cassette.to_str().expect("utf-8 path");
    let script = demo().join("calls.jsonl");
    let ws = workspace();
    let rec = toolhost(
        &[
            "record",
            script.to_str().expect("utf-8 path"),
            "--out",
            cassette_arg,
            "--yes",
        ],
        ws.path(),
    );
    succeeded(&rec, "toolhost record");
    assert!(
        lossy(&rec.stdout).contains("9. read: error [invalid_arguments]"),
        "{}",
        lossy(&rec.stdout)
    );

    // Played back over a fresh copy: the same results, nothing run.
    let play = toolhost(&["replay", cassette_arg, "--yes"], workspace().path());
    succeeded(&play, "toolhost replay");
    assert!(
        lossy(&play.stdout).contains("no divergence (0 ran)"),
        "{}",
        lossy(&play.stdout)
    );

    // Verified over a fresh copy: the tools run again and agree.
    let verify = toolhost(
        &["replay", cassette_arg, "--verify", "--yes"],
        workspace().path(),
    );
    succeeded(&verify, "toolhost replay --verify");

    // Verified over a workspace whose file changed: exit 1, the field named.
    let changed = workspace();
    let greet = changed.path().join("src/greet.rs");
    let source = std::fs::read_to_string(&greet).expect("read greet.rs");
    std::fs::write(&greet, source.replace("Hello", "Howdy")).expect("write greet.rs");
    let diverged = toolhost(
        &["replay", cassette_arg, "--verify", "--yes"],
        changed.path(),
    );
    assert_eq!(
        diverged.status.code(),
        Some(1),
        "{}",
        lossy(&diverged.stdout)
    );
    let report = lossy(&diverged.stderr);
    assert!(report.contains("call #0 (read#"), "{report}");
    assert!(report.contains("diverged at value /lines/2"), "{report}");
    assert!(report.contains("Howdy"), "{report}");
}
