//! Golden tests: every `tests/invalid/*.toml` must fail with exactly the
//! message in its sibling `.err` file; every `tests/valid/*.toml` must parse.
//!
//! Run with `BLESS=1` to rewrite the `.err` files from the current messages.

use std::path::Path;

use toolhost_policy::{Decision, FsMode};
use toolhost_testkit::golden;
use toolhost_toolbox_file::{Mode, PolicySource, Source, Toolbox};

const TESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");

/// The built-in tools of these tests (those of the real host).
const BUILTINS: &[&str] = &["read", "write", "edit", "list", "grep", "fetch"];

fn load(name: &str) -> Toolbox {
    let path = Path::new(TESTS).join("valid").join(name);
    Toolbox::load(&path, BUILTINS).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn invalid_toolboxes_match_golden_errors() {
    golden::invalid_files_match_golden_errors(
        &Path::new(TESTS).join("invalid"),
        15,
        |text, name| Toolbox::parse(text, name, Path::new("/base"), BUILTINS),
    );
}

#[test]
fn valid_toolboxes_parse() {
    let parsed = golden::valid_files_parse(&Path::new(TESTS).join("valid"), 5, |path| {
        Toolbox::load(path, BUILTINS)
    });
    for (path, toolbox) in parsed {
        assert!(!toolbox.components.is_empty(), "{}", path.display());
        assert_eq!(toolbox.base_dir, Path::new(TESTS).join("valid"));
    }
}

#[test]
fn the_mode_is_native_unless_the_file_says() {
    assert_eq!(load("example.toml").mode, Mode::Native);
    assert_eq!(load("code_mode.toml").mode, Mode::Both);
}

#[test]
fn example_toolbox() {
    let toolbox = load("example.toml");
    let dir = Path::new(TESTS).join("valid");
    assert_eq!(toolbox.components.len(), 2);

    let read = &toolbox.components[0];
    assert_eq!(read.source, Source::Builtin("read".into()));
    assert_eq!(read.source.to_string(), "builtin:read");
    assert_eq!(
        read.policy,
        PolicySource::File(dir.join("policies/read.toml"))
    );
    assert_eq!(read.prefix.as_deref(), Some("ws_"));
    assert_eq!(read.line, 5);

    let csv = &toolbox.components[1];
    assert_eq!(csv.source, Source::File(dir.join("tools/csv.wasm")));
    assert_eq!(csv.prefix, None);
    assert_eq!(csv.line, 10);
    let PolicySource::Inline(policy) = &csv.policy else {
        panic!("expected an inline policy: {csv:?}");
    };
    let component = policy.component();
    assert_eq!(component.decision, Decision::Allow);
    assert_eq!(component.sandbox.fs.len(), 1);
    assert_eq!(component.sandbox.fs[0].host, dir.join("data"));
    assert_eq!(component.sandbox.fs[0].guest, "/data");
    assert_eq!(component.sandbox.fs[0].mode, FsMode::ReadOnly);
}

#[test]
fn every_builtin_and_every_policy_form() {
    let toolbox = load("builtins.toml");
    let sources: Vec<String> = toolbox
        .components
        .iter()
        .map(|c| c.source.to_string())
        .collect();
    let expected: Vec<String> = ["read", "list", "grep", "write", "edit", "fetch"]
        .iter()
        .map(|name| format!("builtin:{name}"))
        .collect();
    assert_eq!(sources, expected);

    let c = &toolbox.components;
    assert_eq!(c[0].policy, PolicySource::BuiltinDefault);
    assert_eq!(c[1].policy, PolicySource::BuiltinDefault);
    assert_eq!(c[1].prefix.as_deref(), Some("ws_"));
    // `..` is kept for the file system to resolve
    let grep = Path::new(TESTS).join("valid/../../../../policies/grep.toml");
    assert_eq!(c[2].policy, PolicySource::File(grep.clone()));
    assert!(
        grep.is_file(),
        "{} is the real default policy",
        grep.display()
    );
    let PolicySource::Inline(write) = &c[3].policy else {
        panic!("{:?}", c[3]);
    };
    let write = write.for_tool("write");
    assert_eq!(write.decision, Decision::Ask);
    assert_eq!(write.sandbox.fs[0].host, Path::new(TESTS).join("valid"));
    assert_eq!(write.sandbox.fs[0].mode, FsMode::ReadWrite);
    assert_eq!(
        c[4].policy,
        PolicySource::File("/etc/toolhost/edit.toml".into())
    );
    let PolicySource::Inline(fetch) = &c[5].policy else {
        panic!("{:?}", c[5]);
    };
    let fetch = fetch.for_tool("fetch");
    assert_eq!(fetch.limits.timeout_ms, 5_000);
    assert!(fetch.sandbox.allows_network("example.com", 443));
}

#[test]
fn full_inline_policy_uses_every_key() {
    let toolbox = load("full_inline.toml");
    let entry = &toolbox.components[0];
    assert_eq!(entry.prefix.as_deref(), Some("all_"));
    let PolicySource::Inline(policy) = &entry.policy else {
        panic!("{entry:?}");
    };
    let component = policy.component();
    assert_eq!(component.decision, Decision::Ask);
    let l = &component.limits;
    assert_eq!(l.fuel, 1_000_000);
    assert_eq!(l.timeout_ms, 2_000);
    assert_eq!(l.memory_bytes, 67_108_864);
    assert_eq!(l.max_stdout_bytes, 4_096);
    assert_eq!(l.max_result_bytes, 8_192);
    assert_eq!(l.max_result_tokens, Some(1_000));
    assert_eq!(l.max_http_response_bytes, 1_048_576);
    assert_eq!(l.http_timeout_ms, 1_000);
    assert_eq!(component.sandbox.env_allow, ["LANG"]);
    assert_eq!(
        component.sandbox.env_set.get("MODE").map(String::as_str),
        Some("toolbox")
    );
    assert!(component.sandbox.allows_network("example.com", 443));

    let save = policy.for_tool("save");
    assert_eq!(save.decision, Decision::Allow);
    assert_eq!(save.sandbox.fs[0].host, Path::new(TESTS).join("valid/out"));
    assert_eq!(save.sandbox.fs[0].mode, FsMode::ReadWrite);
}

#[test]
fn remote_sources_registries_and_trust() {
    use toolhost_toolbox_file::{Requirement, Signer};
    let toolbox = load("remote.toml");
    let dir = Path::new(TESTS).join("valid");
    let sources: Vec<String> = toolbox
        .components
        .iter()
        .map(|c| c.source.to_string())
        .collect();
    assert_eq!(sources[0], "oci://ghcr.io/acme/csv:1.2");
    assert!(sources[1].starts_with("oci://localhost:5000/tools/hello@sha256:0123"));
    assert_eq!(sources[2], "https://example.com/tools/md.wasm");
    assert!(toolbox.components.iter().all(|c| c.source.is_remote()));
    let Source::Https { digest, .. } = &toolbox.components[2].source else {
        panic!("https");
    };
    assert!(digest.hex().starts_with("fedcba98"));
    assert_eq!(toolbox.lock_path(), dir.join("remote.lock"));
    let local = toolbox.registry("localhost:5000");
    assert!(local.insecure);
    assert_eq!(local.auth_env.as_deref(), Some("TOOLHOST_REGISTRY_AUTH"));
    assert_eq!(local.deadline, Some(std::time::Duration::from_secs(20)));
    assert_eq!(local.min_rate, Some(4096));
    let ghcr = toolbox.registry("ghcr.io");
    assert!(!ghcr.insecure);
    assert_eq!((ghcr.deadline, ghcr.min_rate), (None, None));
    // The longest prefix wins.
    let csv = toolbox.trust_for("ghcr.io/acme/csv").expect("a rule");
    assert_eq!(csv.signature, Requirement::Optional);
    assert!(
        matches!(&csv.signer, Signer::Keyless { trusted_root, .. } if *trusted_root == dir.join("trusted_root.json"))
    );
    let other = toolbox.trust_for("ghcr.io/acme/other").expect("a rule");
    assert_eq!(
        other.signer,
        Signer::Key {
            key: dir.join("keys/acme.pub"),
            trusted_root: None
        }
    );
    assert_eq!(other.signature, Requirement::Required);
    assert!(toolbox.trust_for("docker.io/x").is_none());
}
