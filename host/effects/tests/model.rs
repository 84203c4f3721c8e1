//! The overlay against the real file system: a random sequence of file
//! operations run staged and then committed gives the same tree as the same
//! sequence run directly, each operation succeeding or failing alike; run
//! staged and discarded, it leaves the original tree.
#![allow(clippy::unwrap_used, missing_docs)]

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use toolhost_effects::{CommitInfo, Journal, OpenRequest, Opened, Overlay, Staged};

#[derive(Debug, Clone)]
enum Op {
    Write(&'static str, String),
    Append(&'static str, String),
    Mkdir(&'static str),
    Unlink(&'static str),
    Rmdir(&'static str),
    Rename(&'static str, &'static str),
    Symlink(&'static str, &'static str),
}

const PATHS: &[&str] = &[
    "a", "b", "d", "d/x", "d/y", "d/e", "d/e/z", "l", "l/x", "n", "n/q",
];
const TARGETS: &[&str] = &["d", "a", "d/e", "x", "e/z", "missing"];

fn op() -> impl Strategy<Value = Op> {
    let p = proptest::sample::select(PATHS);
    let t = proptest::sample::select(TARGETS);
    prop_oneof![
        (p.clone(), "[a-c]{0,6}").prop_map(|(p, s)| Op::Write(p, s)),
        (p.clone(), "[a-c]{1,3}").prop_map(|(p, s)| Op::Append(p, s)),
        p.clone().prop_map(Op::Mkdir),
        p.clone().prop_map(Op::Unlink),
        p.clone().prop_map(Op::Rmdir),
        (p.clone(), p.clone()).prop_map(|(a, b)| Op::Rename(a, b)),
        (t, p).prop_map(|(t, p)| Op::Symlink(t, p)),
    ]
}

fn seed(root: &Path) {
    std::fs::write(root.join("a"), "alpha\n").unwrap();
    std::fs::create_dir_all(root.join("d/e")).unwrap();
    std::fs::write(root.join("d/x"), "x\n").unwrap();
    std::fs::write(root.join("d/e/z"), "z\n").unwrap();
    std::os::unix::fs::symlink("d", root.join("l")).unwrap();
}

/// The tree as path → description.
fn snapshot(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, rel: &str, out: &mut BTreeMap<String, String>) {
        let dir = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(rel)
        };
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let name = e.file_name().into_string().unwrap();
            let p = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                out.insert(
                    p.clone(),
                    format!(
                        "-> {}",
                        std::fs::read_link(root.join(&p)).unwrap().display()
                    ),
                );
            } else if ft.is_dir() {
                out.insert(p.clone(), "dir".into());
                walk(root, &p, out);
            } else {
                out.insert(p.clone(), std::fs::read_to_string(root.join(&p)).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, "", &mut out);
    out
}

fn direct(root: &Path, op: &Op) -> bool {
    let p = |s: &str| root.join(s);
    match op {
        Op::Write(f, s) => std::fs::write(p(f), s).is_ok(),
        Op::Append(f, s) => std::fs::OpenOptions::new()
            .append(true)
            .open(p(f))
            .and_then(|mut h| h.write_all(s.as_bytes()))
            .is_ok(),
        Op::Mkdir(d) => std::fs::create_dir(p(d)).is_ok(),
        Op::Unlink(f) => std::fs::remove_file(p(f)).is_ok(),
        Op::Rmdir(d) => std::fs::remove_dir(p(d)).is_ok(),
        Op::Rename(a, b) => std::fs::rename(p(a), p(b)).is_ok(),
        Op::Symlink(t, l) => std::os::unix::fs::symlink(t, p(l)).is_ok(),
    }
}

fn staged(o: &Overlay, op: &Op) -> bool {
    let write = |f: &str, s: &str, trunc: bool| -> bool {
        let req = OpenRequest {
            follow: true,
            create: trunc,
            truncate: trunc,
            write: true,
            ..OpenRequest::default()
        };
        match o.open("", f, req) {
            Ok(Opened::File { mut file, .. }) => {
                use std::io::Seek;
                file.seek(std::io::SeekFrom::End(0)).is_ok() && file.write_all(s.as_bytes()).is_ok()
            }
            _ => false,
        }
    };
    match op {
        Op::Write(f, s) => write(f, s, true),
        Op::Append(f, s) => write(f, s, false),
        Op::Mkdir(d) => o.create_dir("", d).is_ok(),
        Op::Unlink(f) => o.unlink("", f).is_ok(),
        Op::Rmdir(d) => o.remove_dir("", d).is_ok(),
        Op::Rename(a, b) => o.rename("", a, "", b).is_ok(),
        Op::Symlink(t, l) => o.symlink("", t, l).is_ok(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn staged_then_committed_equals_direct(ops in proptest::collection::vec(op(), 1..12)) {
        let base = tempfile::tempdir().unwrap();
        let (want, got, journal) = (base.path().join("want"), base.path().join("got"), base.path().join("journal"));
        for r in [&want, &got] {
            std::fs::create_dir(r).unwrap();
            seed(r);
        }
        let original = snapshot(&got);
        let overlay = std::sync::Arc::new(Overlay::new(&got, base.path().join("stage")).unwrap());
        for (i, op) in ops.iter().enumerate() {
            let a = direct(&want, op);
            let b = staged(&overlay, op);
            prop_assert_eq!(a, b, "op {} {:?} of {:?}", i, op, ops);
        }
        prop_assert_eq!(snapshot(&got), original.clone(), "the tree is untouched while staged");
        let staged = Staged::new(vec![("/w".into(), overlay)]);
        let set = staged.effects().unwrap();
        let (j, _) = Journal::open(&journal).unwrap();
        j.commit(&staged, &set, &CommitInfo::default()).unwrap();
        prop_assert_eq!(snapshot(&got), snapshot(&want), "effects {:#?}", set);
        // Undo brings the original back, redo the result.
        if !set.is_empty() {
            j.undo(None, None).unwrap();
            prop_assert_eq!(snapshot(&got), original, "after undo");
            j.redo(None, None).unwrap();
            prop_assert_eq!(snapshot(&got), snapshot(&want), "after redo");
        }
    }

    #[test]
    fn staged_then_discarded_leaves_the_tree(ops in proptest::collection::vec(op(), 1..12)) {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("t");
        std::fs::create_dir(&root).unwrap();
        seed(&root);
        let original = snapshot(&root);
        {
            let overlay = Overlay::new(&root, base.path().join("stage")).unwrap();
            for op in &ops {
                staged(&overlay, op);
            }
        }
        prop_assert_eq!(snapshot(&root), original);
        prop_assert!(!base.path().join("stage").exists(), "the staging area is removed");
    }
}
