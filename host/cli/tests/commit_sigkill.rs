//! A host killed (SIGKILL) in the middle of committing a call's file
//! effects: at its next start the journal finishes or rolls back that
//! commit, so each call's files are all old or all new, never mixed, and no
//! temporary file is left in the user's tree.
//!
//! `toolhost serve` (the real binary) runs the hostile guest's `scribble`,
//! which rewrites 150 files and creates 150 more in one call; the test watches
//! the journal and kills the server once a commit has begun, a little later
//! each round, so kills land both before and after the commit point. It
//! asserts that at least one kill landed mid-commit (the journal held an
//! unfinished entry), and prints how many did.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{TOOLHOST, initialize, initialized, line, succeeded, toolhost_cached};

const ROUNDS: u64 = 24;
const FILES: usize = 150;

/// The step of a journal entry not yet applied: `staging` or `prepared`
/// (an applied entry has `committed.json`).
fn unfinished(journal: &Path) -> Option<String> {
    for e in std::fs::read_dir(journal).ok()?.flatten() {
        let dir = e.path();
        // (`.hosts` holds the hosts' claims, not entries.)
        if dir.join("committed.json").exists() || e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let prepared = std::fs::read_to_string(dir.join("prepared.json"))
            .is_ok_and(|t| serde_json::from_str::<serde_json::Value>(&t).is_ok());
        return Some(if prepared { "prepared" } else { "staging" }.to_owned());
    }
    None
}

#[test]
fn a_kill_during_a_commit_leaves_each_calls_files_all_old_or_all_new() {
    let mut mid = Vec::new();
    for round in 0..ROUNDS {
        let ws = tempfile::tempdir().unwrap();
        let journal = tempfile::tempdir().unwrap();
        let (ws, journal) = (ws.path(), journal.path());
        let names: Vec<String> = (0..FILES).map(|i| format!("f-{i}.txt")).collect();
        for n in &names {
            std::fs::write(ws.join(n), "old\n").unwrap();
        }
        std::fs::write(
            ws.join("policy.toml"),
            "version = 1\ndecision = \"allow\"\n[[fs]]\nhost = \".\"\nguest = \"/workspace\"\nmode = \"rw\"\n",
        )
        .unwrap();
        let mut child = toolhost_cached()
            .arg("--journal")
            .arg(journal)
            .args([
                "serve",
                "--no-reload",
                "--component",
                toolhost_guests::GUEST_HOSTILE,
            ])
            .args(["--policy", "policy.toml"])
            .current_dir(ws)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut send = |v: serde_json::Value| stdin.write_all(&line(&v)).unwrap();
        send(initialize(json!(0)));
        send(initialized());
        send(
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"scribble",
            "arguments":{"create": FILES, "modify": names, "then": "ok"}}}),
        );
        // Kill once a commit has started, a little later each round.
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut state = None;
        while Instant::now() < deadline {
            if let Some(s) = unfinished(journal) {
                std::thread::sleep(Duration::from_micros(round * 1_250));
                state = Some(s);
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let at_kill = unfinished(journal);
        assert!(state.is_some(), "round {round}: no commit began");
        if let Some(s) = &at_kill {
            mid.push(s.clone());
        }
        // The next start recovers (opening the journal is enough).
        let out = Command::new(TOOLHOST)
            .arg("--journal")
            .arg(journal)
            .arg("history")
            .output()
            .unwrap();
        succeeded(&out, "toolhost history");
        assert_eq!(unfinished(journal), None, "round {round}: recovered");
        let old = names
            .iter()
            .filter(|n| std::fs::read_to_string(ws.join(n)).unwrap() == "old\n")
            .count();
        let created = (0..FILES)
            .filter(|i| ws.join(format!("new-{i}.txt")).exists())
            .count();
        let leftovers: Vec<String> = std::fs::read_dir(ws)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.contains("toolhost"))
            .collect();
        assert!(leftovers.is_empty(), "round {round}: {leftovers:?}");
        assert!(
            (old == FILES && created == 0) || (old == 0 && created == FILES),
            "round {round} (killed in {at_kill:?}): {old} old files, {created} created: mixed"
        );
    }
    eprintln!(
        "kills that landed mid-commit: {} of {ROUNDS} ({mid:?})",
        mid.len()
    );
    assert!(!mid.is_empty(), "no kill landed inside a commit");
}
