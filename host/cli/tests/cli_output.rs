//! The CLI as a user meets it: output to a pipe whose reader went away
//! (`toolhost … | head`) ends quietly, and a tool that is not served says why.

mod support;

use std::path::Path;
use support::toolhost_with_cache;

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let ws = tempfile::tempdir().expect("temp dir");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolhost-cli-output-cache");
    // A pipe with no reader: the first write fails with EPIPE.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = toolhost_with_cache(&cache)
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

/// A tool that exists but is not served says why where the user asks:
/// `toolhost call` names the reason (here: the policy grants no network to
/// a component that imports `wasi:sockets`), as `toolhost tools` does.
#[test]
fn a_tool_that_is_not_served_says_why_in_call() {
    let ws = tempfile::tempdir().expect("temp dir");
    let policy = ws.path().join("nonet.toml");
    std::fs::write(&policy, "version = 1\ndecision = \"allow\"\n").expect("write policy");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolhost-cli-output-cache");
    let toolhost = |args: &[&str]| {
        toolhost_with_cache(&cache)
            .args(args)
            .args([
                "--component",
                toolhost_guests::GUEST_HOSTILE_NET,
                "--policy",
            ])
            .arg(&policy)
            .current_dir(ws.path())
            .output()
            .expect("running toolhost")
    };
    let out = toolhost(&["call", "tcp_connect", "--args", "{}"]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Error [unknown_tool]: `tcp_connect` is not served: its component needs what the policy does not grant")
            && text.contains("wasi:sockets"),
        "{text}"
    );
    let out = toolhost(&["tools"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("tcp_connect")
            && l.contains("not served:")
            && l.contains("wasi:sockets")),
        "{text}"
    );
}
