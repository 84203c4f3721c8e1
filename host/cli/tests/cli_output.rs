//! The CLI's output to a pipe whose reader went away (`toolhost … | head`):
//! a quiet exit, not a panic about a broken pipe.

use std::path::Path;
use std::process::Command;

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let ws = tempfile::tempdir().expect("temp dir");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolhost-cli-output-cache");
    // A pipe with no reader: the first write fails with EPIPE.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--cache-dir")
        .arg(&cache)
        .args(["tools", "--dir"])
        .arg(ws.path())
        .stdout(writer)
        .output()
        .expect("running toolhost");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
}
