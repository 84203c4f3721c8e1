//! `toolhost history`, `undo` and `redo` as a user runs them, after
//! `toolhost call` committed a write through the journal.

mod support;

use std::path::Path;
use std::process::Output;
use support::{text, toolhost_with_cache};

fn toolhost(cache: &Path, dir: &Path, args: &[&str]) -> Output {
    toolhost_with_cache(cache)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running toolhost")
}

#[test]
fn a_committed_call_is_listed_undone_redone_and_not_undone_over_a_later_change() {
    let ws = tempfile::tempdir().expect("temp dir");
    let cache = tempfile::tempdir().expect("temp dir");
    let (ws, cache) = (ws.path(), cache.path());
    std::fs::write(ws.join("notes.txt"), "one\n").expect("write");
    // Reads first (the write tool wants a fresh baseline), then writes.
    let o = toolhost(
        cache,
        ws,
        &["call", "read", "--args", r#"{"path":"notes.txt"}"#],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = toolhost(
        cache,
        ws,
        &[
            "call",
            "write",
            "--yes",
            "--args",
            r#"{"path":"new.txt","content":"fresh\n"}"#,
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(ws.join("new.txt")).expect("new"),
        "fresh\n"
    );

    let o = toolhost(cache, ws, &["history"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("write") && t.contains("/workspace/new.txt created"),
        "{t}"
    );

    let o = toolhost(cache, ws, &["undo"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !ws.join("new.txt").exists(),
        "undo removes the created file"
    );

    let o = toolhost(cache, ws, &["redo"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(ws.join("new.txt")).expect("new"),
        "fresh\n"
    );

    // Someone changes the file: undoing would lose that, so it is refused.
    std::fs::write(ws.join("new.txt"), "edited by hand\n").expect("write");
    let o = toolhost(cache, ws, &["undo"]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("/workspace/new.txt changed"), "{t}");
    assert_eq!(
        std::fs::read_to_string(ws.join("new.txt")).expect("new"),
        "edited by hand\n"
    );
    // Nothing to redo once undo was refused.
    let o = toolhost(cache, ws, &["redo"]);
    assert!(!o.status.success(), "{}", text(&o));
}
