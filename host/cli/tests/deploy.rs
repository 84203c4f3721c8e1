//! `deploy/kubernetes/` is checked, not only written: every manifest
//! validates strictly against the Kubernetes API schemas
//! (`kubernetes-validate`, installed by `tests/team/install.sh`), a broken
//! copy does not (so the check can fail), and every `toolhost` flag the
//! Deployment passes is one `toolhost serve` has.

mod support;

use support::{fleet, succeeded};

use std::path::PathBuf;
use std::process::Command;

fn manifests() -> Vec<PathBuf> {
    let dir = support::repo_root().join("deploy/kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("deploy/kubernetes")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

fn validate(files: &[PathBuf]) -> std::process::Output {
    Command::new(fleet::team_dir().join("venv/bin/kubernetes-validate"))
        .args(["--strict", "--kubernetes-version", "1.33.0"])
        .args(files)
        .output()
        .expect("kubernetes-validate (tests/team/install.sh installs it)")
}

#[test]
fn the_manifests_validate_against_the_kubernetes_schemas() {
    fleet::install();
    let files = manifests();
    assert!(files.len() >= 3, "{files:?}");
    let out = validate(&files);
    succeeded(&out, "kubernetes-validate");
    // The same Deployment with a field the API does not have: refused.
    let tmp = tempfile::tempdir().expect("tmp");
    let broken = tmp.path().join("broken.yaml");
    let text =
        std::fs::read_to_string(support::repo_root().join("deploy/kubernetes/deployment.yaml"))
            .expect("deployment.yaml");
    std::fs::write(
        &broken,
        text.replacen("replicas: 3", "replicas: 3\n  replica: 3", 1),
    )
    .expect("write");
    assert!(!validate(&[broken]).status.success());
}

#[test]
fn the_deployment_passes_only_flags_serve_has() {
    let text =
        std::fs::read_to_string(support::repo_root().join("deploy/kubernetes/deployment.yaml"))
            .expect("deployment.yaml");
    let help = Command::new(support::TOOLHOST)
        .args(["serve", "--help"])
        .output()
        .expect("toolhost serve --help");
    let help = String::from_utf8_lossy(&help.stdout);
    let flags: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter(|a| a.starts_with("--"))
        .collect();
    assert!(flags.len() >= 10, "{flags:?}");
    for flag in flags {
        assert!(help.contains(flag), "`toolhost serve` has no {flag}");
    }
}
