//! Transactional file effects through the pipeline: a call's writes are
//! staged while it runs and committed all or nothing after it succeeds; a
//! call that fails in any way leaves the tree exactly as it was.
#![allow(clippy::unwrap_used, missing_docs)]

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{ToolCall, ToolResult};
use toolhost_effects::Journal;
use toolhost_pipeline::{Pipeline, Registry, Scope};
use toolhost_policy::{FsMode, Policy};
use toolhost_tests::{Workspace, allow_in, build, hostile};

/// Everything about a tree: per path, kind, bytes, mode and mtime (files
/// and directories alike).
fn snapshot(root: &Path) -> BTreeMap<String, (String, u32, i64, i64)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (String, u32, i64, i64)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let what = if m.file_type().is_symlink() {
                format!("-> {}", std::fs::read_link(&p).unwrap().display())
            } else if m.is_dir() {
                "dir".to_owned()
            } else {
                String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned()
            };
            out.insert(rel, (what, m.mode(), m.mtime(), m.mtime_nsec()));
            if m.is_dir() {
                walk(root, &p, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    let m = std::fs::metadata(root).unwrap();
    out.insert(
        ".".into(),
        ("dir".into(), m.mode(), m.mtime(), m.mtime_nsec()),
    );
    walk(root, root, &mut out);
    out
}

fn workspace() -> Workspace {
    let ws = Workspace::new(&[
        ("a.txt", "alpha\n"),
        ("b.txt", "beta\n"),
        ("sub/c.txt", "gamma\n"),
    ]);
    std::fs::set_permissions(ws.file("a.txt"), std::fs::Permissions::from_mode(0o755)).unwrap();
    ws
}

struct Host {
    pipeline: Pipeline,
    _journal: tempfile::TempDir,
    _reg: toolhost_pipeline::Registration,
}

async fn host(policy: &Policy) -> Host {
    let registry = Registry::new();
    let reg = registry
        .register_component(Scope::Global, &hostile().await, policy)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (journal, _) = Journal::open(dir.path()).unwrap();
    Host {
        pipeline: Pipeline::builder(registry)
            .journal(Arc::new(journal))
            .build(),
        _journal: dir,
        _reg: reg,
    }
}

fn rw(ws: &Workspace, limits: impl FnOnce(&mut toolhost_policy::Limits)) -> Policy {
    build(allow_in(ws.path(), FsMode::ReadWrite).limits(limits))
}

async fn call(h: &Host, tool: &str, args: Value, cancel: CancellationToken) -> ToolResult {
    h.pipeline
        .execute(ToolCall::new("c", tool, args.to_string()), cancel)
        .await
}

fn code(r: &ToolResult) -> String {
    match r {
        ToolResult::Success(_) => "ok".into(),
        ToolResult::Failure { error, .. } => error.code.as_str().to_owned(),
    }
}

#[tokio::test]
async fn a_call_that_fails_in_any_way_after_writing_leaves_the_tree_byte_identical() {
    for (then, want) in [
        ("fail", "boom"),
        ("trap", "trap"),
        ("spin", "timeout"),
        ("memory", "memory_limit"),
        ("budget", "write_budget_exceeded"),
        ("cancel", "cancelled"),
    ] {
        let ws = workspace();
        let before = snapshot(ws.path());
        let h = host(&rw(&ws, |l| {
            l.timeout_ms = 3_000;
            l.fuel = 1 << 45;
            l.memory_bytes = 64 << 20;
            l.max_write_bytes = 4 << 20;
        }))
        .await;
        let cancel = CancellationToken::new();
        let args = json!({
            "create": 5,
            "modify": ["a.txt", "b.txt"],
            "delete": ["sub/c.txt"],
            "then": if then == "cancel" { "spin" } else { then },
        });
        if then == "cancel" {
            let c = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(500)).await;
                c.cancel();
            });
        }
        let r = call(&h, "scribble", args, cancel).await;
        assert_eq!(code(&r), want, "{then}: {r:?}");
        assert_eq!(snapshot(ws.path()), before, "{then}: the tree changed");
    }
}

#[tokio::test]
async fn a_successful_call_commits_every_effect_and_reports_them() {
    let ws = workspace();
    let h = host(&rw(&ws, |_| {})).await;
    let r = call(
        &h,
        "scribble",
        json!({"create": 2, "modify": ["a.txt"], "delete": ["sub/c.txt"], "then": "ok"}),
        CancellationToken::new(),
    )
    .await;
    let ToolResult::Success(s) = &r else {
        panic!("{r:?}")
    };
    assert_eq!(ws.read("new-0.txt"), "new 0\n");
    assert_eq!(ws.read("new-1.txt"), "new 1\n");
    assert_eq!(ws.read("a.txt"), "changed\n");
    assert!(!ws.file("sub/c.txt").exists());
    // The exec bit of the modified file is kept.
    let mode = std::fs::metadata(ws.file("a.txt")).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o755);
    // The effects, with hashes and sizes, never contents.
    let effects = &s.meta.extra["effects"];
    assert_eq!(effects["count"], 4, "{effects:#}");
    let kinds: Vec<(&str, &str)> = effects["effects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("a.txt", "modified"),
            ("new-0.txt", "created"),
            ("new-1.txt", "created"),
            ("sub/c.txt", "deleted"),
        ]
    );
    let a = &effects["effects"][0];
    assert_eq!(a["before"]["size"], 6);
    assert_eq!(a["after"]["size"], 8);
    assert_eq!(a["lines"], json!([1, 1]));
    assert!(
        !effects.to_string().contains("alpha"),
        "no contents in meta"
    );
    // The whole diff is an artifact.
    let uri = effects["diff"].as_str().unwrap();
    let (diff, _) = h.pipeline.artifacts().page(uri, 0, 1 << 20).unwrap();
    assert!(diff.contains("-alpha\n+changed\n"), "{diff}");
    assert!(diff.contains("+++ b/workspace/new-0.txt"), "{diff}");
    // Nothing is left behind by the commit.
    let names: Vec<String> = std::fs::read_dir(ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.contains("toolhost")), "{names:?}");
}

#[tokio::test]
async fn a_file_changed_by_someone_else_during_the_call_is_a_conflict_and_nothing_is_committed() {
    let ws = workspace();
    let h = host(&rw(&ws, |_| {})).await;
    let path = ws.file("a.txt");
    let editor = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(600)).await;
        std::fs::write(path, "the editor's\n").unwrap();
    });
    let r = call(
        &h,
        "scribble",
        json!({"create": 3, "modify": ["a.txt", "b.txt"], "sleep_ms": 1500, "then": "ok"}),
        CancellationToken::new(),
    )
    .await;
    editor.await.unwrap();
    assert_eq!(code(&r), "conflict", "{r:?}");
    let ToolResult::Failure { error, .. } = &r else {
        panic!()
    };
    assert_eq!(error.info.as_ref().unwrap()["path"], "/workspace/a.txt");
    assert!(
        error.message.contains("/workspace/a.txt"),
        "{}",
        error.message
    );
    assert_eq!(ws.read("a.txt"), "the editor's\n");
    assert_eq!(ws.read("b.txt"), "beta\n");
    assert!(!ws.file("new-0.txt").exists());
}

#[tokio::test]
async fn symlinks_are_written_through_inside_the_grant_and_directories_rename() {
    let ws = workspace();
    std::os::unix::fs::symlink("sub/c.txt", ws.file("link")).unwrap();
    let h = host(&rw(&ws, |_| {})).await;
    let r = call(
        &h,
        "scribble",
        json!({"create": 0, "modify": ["link"], "then": "ok"}),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(code(&r), "ok", "{r:?}");
    assert_eq!(ws.read("sub/c.txt"), "changed\n");
    assert!(
        std::fs::symlink_metadata(ws.file("link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // A directory renamed: the effects are per file, committed together.
    let r = call(
        &h,
        "rename",
        json!({"from": "sub", "to": "moved"}),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(code(&r), "ok", "{r:?}");
    assert_eq!(ws.read("moved/c.txt"), "changed\n");
    assert!(!ws.file("sub").exists());
}

#[tokio::test]
async fn a_thousand_files_and_a_200_mb_file_go_through_staging() {
    let ws = Workspace::new(&[]);
    let h = host(&rw(&ws, |l| {
        l.memory_bytes = 64 << 20;
        l.max_write_bytes = 256 << 20;
        l.max_files_created = 1_000;
        l.timeout_ms = 60_000;
    }))
    .await;
    let r = call(
        &h,
        "scribble",
        json!({"create": 1000, "then": "ok"}),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(code(&r), "ok", "{r:?}");
    assert_eq!(std::fs::read_dir(ws.path()).unwrap().count(), 1000);
    let ToolResult::Success(s) = &r else { panic!() };
    assert_eq!(s.meta.extra["effects"]["count"], 1000);
    assert_eq!(s.meta.extra["effects"]["truncated"], true);
    // 200 MB under a 64 MiB memory limit: the bytes are staged on disk.
    let r = call(
        &h,
        "fill",
        json!({"path": "big.bin", "bytes": 200_000_000u64}),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(code(&r), "ok", "{r:?}");
    assert_eq!(
        std::fs::metadata(ws.file("big.bin")).unwrap().len(),
        200_000_000
    );
}
