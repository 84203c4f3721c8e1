//! The fuzz target's seeds (`tests/corpus/worker_answer/`), taken as the
//! serving process takes a worker's answer: each decodes, an honest one's
//! staged files are taken, and each forgery is refused with its code.

use std::path::{Path, PathBuf};
use toolhost_effects::Transaction;
use toolhost_policy::{FsGrant, FsMode, ToolPolicy};
use toolhost_worker_wire::accept::{Granted, restage};
use toolhost_worker_wire::{Executed, FromWorker};

/// Where the seeds name their granted directories.
const SEED_BASE: &str = "/tmp/toolhost-fuzz-worker-answer";

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/worker_answer")
}

/// A seed, its directories moved to `base`.
fn seed(name: &str, base: &Path) -> FromWorker {
    let text = std::fs::read_to_string(corpus().join(name)).expect("the seed is read");
    let text = text.replace(SEED_BASE, &base.to_string_lossy());
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn executed(name: &str, base: &Path) -> Executed {
    match seed(name, base) {
        FromWorker::Executed(e) => *e,
        other => panic!("{name} is not an answer to an execute: {other:?}"),
    }
}

/// The fuzz target's setting: `rw` granted read-write as `/work`, `ro`
/// read-only as `/ro`.
fn setting() -> (tempfile::TempDir, ToolPolicy) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (rw, ro) = (dir.path().join("rw"), dir.path().join("ro"));
    std::fs::create_dir_all(rw.join("src")).expect("made");
    std::fs::create_dir_all(&ro).expect("made");
    std::fs::write(rw.join("src/a.txt"), "one\n").expect("written");
    let mut policy = ToolPolicy::default();
    policy.limits.max_write_bytes = 4096;
    policy.limits.max_files_created = 8;
    policy.sandbox.fs = vec![
        FsGrant {
            host: rw,
            guest: "/work".into(),
            mode: FsMode::ReadWrite,
        },
        FsGrant {
            host: ro,
            guest: "/ro".into(),
            mode: FsMode::ReadOnly,
        },
    ];
    (dir, policy)
}

#[test]
fn every_seed_is_a_message_a_worker_can_send() {
    let base = Path::new(SEED_BASE);
    let mut n = 0;
    for e in std::fs::read_dir(corpus()).expect("the corpus is there") {
        let name = e.expect("an entry").file_name();
        let _ = seed(&name.to_string_lossy(), base);
        n += 1;
    }
    assert!(n >= 10, "{n} seeds");
}

#[test]
fn an_honest_workers_staged_files_are_taken_and_nothing_lands() {
    let (dir, policy) = setting();
    let e = executed("staged.json", dir.path());
    let staged = restage(&dir.path().join("staging"), e.staged, &policy).expect("taken");
    assert_eq!(staged.grants().len(), 1);
    assert_eq!(staged.grants()[0].0, "/work");
    let effects = staged.effects().expect("the effect set");
    assert!(!effects.is_empty(), "{effects:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("rw/src/a.txt"))
            .ok()
            .as_deref(),
        Some("one\n"),
        "staging is not committing"
    );
    assert!(!dir.path().join("rw/src/new.txt").exists());
}

#[test]
fn forged_staged_files_are_refused_with_their_codes() {
    let (dir, policy) = setting();
    let staging = dir.path().join("staging");
    let code = |name: &str| {
        let e = executed(name, dir.path());
        match restage(&staging, e.staged, &policy) {
            Ok(_) => panic!("{name} was taken"),
            Err(f) => f.code.as_str().to_owned(),
        }
    };
    assert_eq!(code("staged_in_read_only_grant.json"), "worker_refused");
    assert_eq!(code("path_leaves_overlay.json"), "worker_refused");
    assert_eq!(code("over_budget.json"), "write_budget_exceeded");
    assert!(!dir.path().join("escape.txt").exists());
}

/// A seed's transaction taken as a script's call's changes into an empty
/// transaction of the fuzz target's setting: the outcome, and the
/// transaction (its directory lives as long as the `TempDir`).
fn take_seed(
    name: &str,
) -> (
    Result<(), toolhost_contract::ToolFailure>,
    Transaction,
    tempfile::TempDir,
) {
    let (dir, policy) = setting();
    let e = executed(name, dir.path());
    let tx = Transaction::new(dir.path().join("tx"));
    let before = tx.snapshot().expect("a snapshot");
    let after = e.transaction.expect("the seed has a transaction");
    let taken = Granted::of(&policy).take_changes(&tx, &before, after, &policy);
    (taken, tx, dir)
}

#[test]
fn a_scripts_call_changes_only_its_read_write_grants() {
    let (taken, tx, _dir) = take_seed("transaction.json");
    taken.expect("taken");
    let staged = tx.staged();
    let guests: Vec<&str> = staged.grants().iter().map(|(g, _)| g.as_str()).collect();
    assert_eq!(
        guests,
        ["/work"],
        "the read-only grant's changes are dropped"
    );
}

#[test]
fn a_scripts_call_cannot_rename_a_directory_it_was_granted() {
    let (refused, tx, _dir) = take_seed("transaction_under_another_name.json");
    assert_eq!(
        refused.err().map(|f| f.code.as_str().to_owned()).as_deref(),
        Some("worker_refused")
    );
    assert!(tx.staged().grants().is_empty(), "nothing taken");
}
