//! Golden tests: every `tests/invalid/*.toml` must fail with exactly the
//! message in its sibling `.err` file; every `tests/valid/*.toml` and every
//! default policy in `policies/` must parse.
//!
//! Run with `BLESS=1` to rewrite the `.err` files from the current messages.

use std::path::Path;

use toolhost_policy::{Decision, FsMode, Policy, RenderMode};
use toolhost_testkit::golden::{self, file_name, toml_files};

const TESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
const POLICIES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies");

#[test]
fn invalid_policies_match_golden_errors() {
    golden::invalid_files_match_golden_errors(
        &Path::new(TESTS).join("invalid"),
        14,
        |text, name| Policy::parse(text, name, Path::new("/base")),
    );
}

#[test]
fn valid_policies_parse() {
    golden::valid_files_parse(&Path::new(TESTS).join("valid"), 1, |path| {
        Policy::load(path, Path::new("/base"))
    });
}

#[test]
fn full_policy_uses_every_key() {
    let path = Path::new(TESTS).join("valid/full.toml");
    let policy = Policy::load(&path, Path::new("/base")).unwrap_or_else(|e| panic!("{e}"));

    let component = policy.component();
    assert_eq!(component.decision, Decision::Ask);
    assert_eq!(component.render, RenderMode::SameInstance);
    let l = &component.limits;
    assert_eq!(l.fuel, 2_000_000_000);
    assert_eq!(l.timeout_ms, 10_000);
    assert_eq!(l.memory_bytes, 134_217_728);
    assert_eq!(l.max_stdout_bytes, 65_536);
    assert_eq!(l.max_result_bytes, 32_768);
    assert_eq!(l.max_result_tokens, Some(8_000));
    assert_eq!(l.max_value_bytes, 2_097_152);
    assert_eq!(l.result_byte_budget(), 32_000);
    assert_eq!(l.max_http_response_bytes, 10_485_760);
    assert_eq!(l.http_timeout_ms, 10_000);
    assert_eq!(l.max_write_bytes, 16_777_216);
    assert_eq!(l.max_files_created, 500);
    let d = policy.descriptor_limits();
    assert_eq!(
        (
            d.max_tools,
            d.max_description_bytes,
            d.max_schema_bytes,
            d.max_total_bytes
        ),
        (64, 4_096, 65_536, 524_288)
    );
    let s = &component.sandbox;
    assert_eq!(s.fs.len(), 2);
    assert_eq!(s.fs[0].host, Path::new("/base"));
    assert_eq!(s.fs[0].guest, "/workspace");
    assert_eq!(s.fs[0].mode, FsMode::ReadOnly);
    assert_eq!(s.fs[1].host, Path::new("/tmp/toolhost-scratch"));
    assert_eq!(s.fs[1].mode, FsMode::ReadWrite);
    assert_eq!(s.env_allow, ["LANG", "TZ"]);
    assert_eq!(s.env_set.get("TOOL_MODE").map(String::as_str), Some("ci"));
    assert!(s.allows_network("example.com", 443));
    assert!(!s.allows_network("example.com", 80));
    assert!(s.allows_network("127.0.0.1", 8080));
    assert!(s.allows_network("[::1]", 80));

    assert_eq!(
        policy.tool_overrides().collect::<Vec<_>>(),
        ["read", "write"]
    );
    let write = policy.for_tool("write");
    assert_eq!(write.decision, Decision::Ask);
    assert_eq!(write.render, RenderMode::SameInstance, "inherited");
    assert_eq!(write.limits.timeout_ms, 2_000);
    assert_eq!(write.limits.fuel, 2_000_000_000);
    assert_eq!(write.sandbox.fs.len(), 1);
    assert_eq!(write.sandbox.fs[0].mode, FsMode::ReadWrite);
    assert!(write.sandbox.env_allow.is_empty());
    assert_eq!(
        write.sandbox.env_set.get("TOOL_MODE").map(String::as_str),
        Some("write")
    );
    assert!(!write.sandbox.grants_network());
    let read = policy.for_tool("read");
    assert_eq!(read.decision, Decision::Allow);
    assert_eq!(read.render, RenderMode::Host);
    assert_eq!(read.sandbox, component.sandbox);
}

#[test]
fn default_policies_parse() {
    let files = toml_files(Path::new(POLICIES));
    let names: Vec<&str> = files.iter().map(|p| file_name(p)).collect();
    for expected in [
        "edit.toml",
        "fetch.toml",
        "grep.toml",
        "list.toml",
        "read.toml",
        "write.toml",
    ] {
        assert!(names.contains(&expected), "policies/{expected} is missing");
    }
    for path in &files {
        let policy = Policy::load(path, Path::new("/base")).unwrap_or_else(|e| panic!("{e}"));
        let tool = file_name(path).trim_end_matches(".toml");
        let p = policy.for_tool(tool);
        match tool {
            "read" | "list" | "grep" => {
                assert_eq!(p.decision, Decision::Allow, "{tool}");
                assert_eq!(p.sandbox.fs.len(), 1, "{tool}");
                assert_eq!(p.sandbox.fs[0].guest, "/workspace");
                assert_eq!(p.sandbox.fs[0].mode, FsMode::ReadOnly, "{tool}");
                assert!(!p.sandbox.grants_network(), "{tool}");
            }
            "write" | "edit" => {
                assert_eq!(p.decision, Decision::Ask, "{tool}");
                assert_eq!(p.sandbox.fs.len(), 1, "{tool}");
                assert_eq!(p.sandbox.fs[0].guest, "/workspace");
                assert_eq!(p.sandbox.fs[0].mode, FsMode::ReadWrite, "{tool}");
                assert!(!p.sandbox.grants_network(), "{tool}");
            }
            "fetch" => {
                assert_eq!(p.decision, Decision::Ask);
                assert!(p.sandbox.fs.is_empty());
                // No host until the user names one: fetch is not served
                // under the default policy.
                assert!(!p.sandbox.grants_network());
                assert!(!p.sandbox.allows_network("example.com", 443));
            }
            _ => {}
        }
    }
}
