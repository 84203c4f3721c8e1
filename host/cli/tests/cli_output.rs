//! The CLI as a user meets it: output to a pipe whose reader went away
//! (`toolhost … | head`) ends quietly, a tool that is not served says why,
//! and another host's policy is imported.

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
/// a component that imports `wasi:http`), as `toolhost tools` does.
#[test]
fn a_tool_that_is_not_served_says_why_in_call() {
    let ws = tempfile::tempdir().expect("temp dir");
    let policy = ws.path().join("nonet.toml");
    std::fs::write(&policy, "version = 1\ndecision = \"allow\"\n").expect("write policy");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolhost-cli-output-cache");
    let toolhost = |args: &[&str]| {
        toolhost_with_cache(&cache)
            .args(args)
            .args(["--component", toolhost_guests::TOOL_FETCH, "--policy"])
            .arg(&policy)
            .current_dir(ws.path())
            .output()
            .expect("running toolhost")
    };
    let out = toolhost(&["call", "fetch", "--args", "{}"]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Error [unknown_tool]: `fetch` is not served: its component needs what the policy does not grant")
            && text.contains("wasi:http"),
        "{text}"
    );
    let out = toolhost(&["tools"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("fetch")
            && l.contains("not served:")
            && l.contains("wasi:http")),
        "{text}"
    );
}

/// `toolhost policy import`: a wassette `policy.yaml` becomes a policy
/// that grants the same (written where asked, never over a file unless
/// forced), what could not be mapped is said, and a bad file names its line.
#[test]
fn a_wassette_policy_is_imported_and_what_is_left_out_is_said() {
    let ws = tempfile::tempdir().expect("temp dir");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolhost-cli-output-cache");
    let yaml = ws.path().join("policy.yaml");
    std::fs::write(
        &yaml,
        "version: \"1.0\"\ndescription: \"Permission policy for filesystem access\"\n\
         permissions:\n  storage:\n    allow:\n      - uri: \"fs://data/**\"\n        access: [\"read\"]\n\
         \x20 network:\n    allow:\n      - host: \"api.example.com\"\n      - cidr: \"10.0.0.0/8\"\n",
    )
    .expect("write policy.yaml");
    let out_path = ws.path().join("policy.toml");
    let run = |extra: &[&str]| {
        toolhost_with_cache(&cache)
            .args(["policy", "import"])
            .arg(&yaml)
            .args(extra)
            .current_dir(ws.path())
            .output()
            .expect("running toolhost")
    };
    let out = run(&["--out", "policy.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("not imported: network cidr `10.0.0.0/8`"),
        "{stderr}"
    );
    let toml = std::fs::read_to_string(&out_path).expect("written");
    assert!(
        toml.contains("guest = \"/data\"") && toml.contains("mode = \"ro\""),
        "{toml}"
    );
    assert!(toml.contains("allow = [\"api.example.com:*\"]"), "{toml}");
    // The policy it wrote serves: `toolhost tools` reads it.
    let policy = toolhost_policy::Policy::load(&out_path, ws.path()).expect("parses");
    assert_eq!(policy.component().sandbox.fs[0].guest, "/data");
    // Not over an existing file, unless forced.
    let again = run(&["--out", "policy.toml"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    assert!(run(&["--out", "policy.toml", "--force"]).status.success());
    // A key it does not know: its line.
    std::fs::write(
        &yaml,
        "version: \"1.0\"\npermissions:\n  storage:\n    alow: []\n",
    )
    .expect("write");
    let bad = run(&[]);
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("policy.yaml:4:5: unknown field `alow`"),
        "{stderr}"
    );
}
