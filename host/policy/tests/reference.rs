//! `policies/README.md` is the policy reference: every key the parser
//! accepts, in every table, appears in it. The accepted keys come from the
//! parser itself (its error for an unknown key lists them), so a key added
//! to a policy type fails this test until the reference names it.

use std::path::Path;
use toolhost_policy::Policy;

/// The keys the parser accepts in the table where `policy` puts
/// `zz_unknown`, read from its error.
fn accepted(policy: &str) -> Vec<String> {
    let err = match Policy::parse(policy, "reference.toml", Path::new("/")) {
        Ok(_) => panic!("an unknown key was accepted:\n{policy}"),
        Err(e) => e.to_string(),
    };
    let list = err
        .split_once("expected one of ")
        .or_else(|| err.split_once("expected "))
        .map(|(_, l)| l)
        .unwrap_or_else(|| panic!("no list of keys in: {err}"));
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The reference's TOML block.
fn reference() -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies/README.md"),
    )
    .expect("policies/README.md");
    let start = text.find("## Reference").expect("a Reference section");
    let block = &text[start..];
    let open = block.find("```toml").expect("a toml block") + 7;
    let close = open + block[open..].find("```").expect("its end");
    block[open..close].to_owned()
}

/// Whether `key` is set (`key = …`) or opens a table (`[….key]`,
/// `[[….key]]`) somewhere in the reference, comments included.
fn documented(reference: &str, key: &str) -> bool {
    reference.lines().any(|line| {
        let line = line.trim_start_matches(['#', ' ']);
        line.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
            || (line.starts_with('[')
                && line
                    .split(['[', ']', ',', ' '])
                    .any(|part| part.split('.').any(|seg| seg == key)))
    })
}

#[test]
fn every_key_the_parser_accepts_is_in_the_reference() {
    let reference = reference();
    let tables = [
        ("top level", "version = 1\nzz_unknown = 1\n"),
        ("[limits]", "version = 1\n[limits]\nzz_unknown = 1\n"),
        (
            "[descriptors]",
            "version = 1\n[descriptors]\nzz_unknown = 1\n",
        ),
        (
            "[[fs]]",
            "version = 1\n[[fs]]\nzz_unknown = 1\nhost = \".\"\nguest = \"/w\"\n",
        ),
        ("[env]", "version = 1\n[env]\nzz_unknown = 1\n"),
        ("[network]", "version = 1\n[network]\nzz_unknown = 1\n"),
        ("[tools.NAME]", "version = 1\n[tools.x]\nzz_unknown = 1\n"),
    ];
    let mut missing = Vec::new();
    for (table, policy) in tables {
        let keys = accepted(policy);
        assert!(!keys.is_empty(), "{table}: no keys read from the parser");
        for key in keys {
            if !documented(&reference, &key) {
                missing.push(format!("{table}: {key}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "keys the parser accepts that policies/README.md does not name: {missing:?}"
    );
}
