//! Property tests of the path stage ([`check_paths`]): no generated path
//! escapes a grant, for every `path-access` kind, in a tree full of symlinks
//! (pointing inside, outside, into another grant, chains, loops, dangling),
//! with `..` segments, absolute paths, mixed separators, NUL bytes and very
//! long names.
//!
//! The oracle is independent of the code under test: it resolves the path
//! on the real filesystem with `std` (following every symlink, as the kernel
//! would) and checks that whatever the path stage allowed lands inside the
//! grant it named, that the grant has the permission the access needs, and
//! that everything else was refused with a stable code, without a panic.

#![allow(clippy::unwrap_used, missing_docs)]

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::collections::VecDeque;
use std::os::unix::fs::symlink;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use toolhost_contract::{ErrorCode, FailureCode, PathAccess, PathParam, ToolDescriptor};
use toolhost_policy::{FsGrant, FsMode, Sandbox};
use toolhost_stages::paths::{ResolvedPath, check_paths};

const ACCESSES: [PathAccess; 6] = [
    PathAccess::Read,
    PathAccess::List,
    PathAccess::Create,
    PathAccess::Overwrite,
    PathAccess::Patch,
    PathAccess::Write,
];

/// Names that exist somewhere in the tree (or deliberately do not).
const NAMES: &[&str] = &[
    "a.txt",
    "sub",
    "b.txt",
    "link_in",
    "link_out",
    "link_abs",
    "chain1",
    "chain2",
    "dirlink_in",
    "dirlink_out",
    "dangling_in",
    "dangling_out",
    "loop",
    "to_other_grant",
    "up_and_back",
    "secret.txt",
    "outside",
    "ro",
    "rw",
    "inner",
    "missing",
    "new.txt",
];

/// The tree, built once: `<tmp>/{outside,ro,rw,rw/inner-host}` plus links.
struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

fn populate(dir: &Path, root: &Path) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a.txt"), "a").unwrap();
    std::fs::write(dir.join("sub/b.txt"), "b").unwrap();
    symlink("a.txt", dir.join("link_in")).unwrap();
    symlink("../outside/secret.txt", dir.join("link_out")).unwrap();
    symlink(root.join("outside/secret.txt"), dir.join("link_abs")).unwrap();
    symlink("chain2", dir.join("chain1")).unwrap();
    symlink("link_out", dir.join("chain2")).unwrap();
    symlink("sub", dir.join("dirlink_in")).unwrap();
    symlink("../outside", dir.join("dirlink_out")).unwrap();
    symlink("nothing.txt", dir.join("dangling_in")).unwrap();
    symlink("../outside/nothing.txt", dir.join("dangling_out")).unwrap();
    symlink("loop", dir.join("loop")).unwrap();
    symlink("../rw/a.txt", dir.join("to_other_grant")).unwrap();
    // Leaves the directory and comes back in: the kernel would allow it.
    let name = dir.file_name().unwrap().to_str().unwrap();
    symlink(format!("../{name}/a.txt"), dir.join("up_and_back")).unwrap();
    symlink("../../outside", dir.join("sub/up2")).unwrap();
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir_all(root.join("outside/dir")).unwrap();
    std::fs::write(root.join("outside/secret.txt"), "secret").unwrap();
    for d in ["ro", "rw", "inner-host"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
        populate(&root.join(d), &root);
    }
    Tree { _tmp: tmp, root }
}

/// The sandboxes under test: one grant per mode, nested grants of opposite
/// modes, a grant at `/`, and none at all.
fn sandboxes(root: &Path) -> Vec<Sandbox> {
    let g = |host: &str, guest: &str, mode| FsGrant {
        host: root.join(host),
        guest: guest.into(),
        mode,
    };
    let sb = |fs| Sandbox {
        fs,
        ..Sandbox::default()
    };
    vec![
        sb(vec![
            g("ro", "/ro", FsMode::ReadOnly),
            g("rw", "/rw", FsMode::ReadWrite),
        ]),
        sb(vec![
            g("rw", "/workspace", FsMode::ReadWrite),
            g("inner-host", "/workspace/inner", FsMode::ReadOnly),
        ]),
        sb(vec![
            g("ro", "/workspace", FsMode::ReadOnly),
            g("inner-host", "/workspace/inner", FsMode::ReadWrite),
        ]),
        sb(vec![g("rw", "/", FsMode::ReadWrite)]),
        sb(vec![]),
    ]
}

fn tool(access: PathAccess) -> ToolDescriptor {
    ToolDescriptor::from_raw(
        "t".into(),
        "t".into(),
        r#"{"type":"object"}"#,
        r#"{"type":"object"}"#,
        Default::default(),
        vec![PathParam {
            pointer: "/path".into(),
            access,
        }],
    )
    .unwrap()
}

/// One path segment.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => proptest::sample::select(NAMES).prop_map(str::to_owned),
        2 => Just("..".to_owned()),
        1 => Just(".".to_owned()),
        1 => Just(String::new()),
        1 => Just("sub\\..\\..\\outside".to_owned()),
        1 => Just("a.txt\0".to_owned()),
        1 => (1usize..400).prop_map(|n| "x".repeat(n)),
        1 => Just("up2".to_owned()),
        1 => "[a-z.\\\\/\u{0}é]{0,8}",
    ]
}

/// A whole path argument: a start (absolute in a grant, absolute elsewhere,
/// the host's own path, or relative) and segments joined by a separator.
fn path_arg(root: PathBuf) -> impl Strategy<Value = String> {
    let host_root = root.to_string_lossy().into_owned();
    let start = prop_oneof![
        Just(String::new()),
        Just("/".to_owned()),
        Just("/ro".to_owned()),
        Just("/rw".to_owned()),
        Just("/workspace".to_owned()),
        Just("/workspace/inner".to_owned()),
        Just("/etc".to_owned()),
        Just("/proc/self".to_owned()),
        Just(host_root),
    ];
    let sep = prop_oneof![
        4 => Just("/"),
        1 => Just("//"),
        1 => Just("\\"),
        1 => Just("/./"),
    ];
    (
        start,
        proptest::collection::vec(segment(), 0..7),
        sep,
        any::<bool>(),
    )
        .prop_map(|(start, segs, sep, trailing)| {
            let mut p = start;
            for s in segs {
                if !p.is_empty() {
                    p.push_str(sep);
                }
                p.push_str(&s);
            }
            if trailing {
                p.push('/');
            }
            p
        })
}

/// Where `rel` really resolves when looked up from `root` by the kernel:
/// every symlink followed (at most 40), `..` applied after. `Err` for a
/// symlink loop or a lookup error other than not-found.
fn real_resolve(root: &Path, rel: &Path) -> Result<PathBuf, String> {
    let mut cur = root.to_path_buf();
    let mut todo: VecDeque<PathBuf> = rel
        .components()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut links = 0;
    let mut missing = false;
    while let Some(c) = todo.pop_front() {
        match Path::new(&c).components().next() {
            None | Some(Component::CurDir) => {}
            Some(Component::RootDir) => cur = PathBuf::from("/"),
            Some(Component::ParentDir) => {
                cur.pop();
            }
            Some(Component::Normal(name)) => {
                let next = cur.join(name);
                if missing {
                    cur = next;
                    continue;
                }
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        links += 1;
                        if links > 40 {
                            return Err("symlink loop".into());
                        }
                        let target = std::fs::read_link(&next).map_err(|e| e.to_string())?;
                        for (i, tc) in target.components().enumerate() {
                            todo.insert(i, PathBuf::from(tc.as_os_str()));
                        }
                    }
                    Ok(_) => cur = next,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        missing = true;
                        cur = next;
                    }
                    Err(e) => return Err(e.to_string()),
                }
            }
            Some(Component::Prefix(_)) => return Err("prefix".into()),
        }
    }
    Ok(cur)
}

/// The soundness property for one allowed path.
fn check_allowed(
    r: &ResolvedPath,
    access: PathAccess,
    sandbox: &Sandbox,
) -> Result<(), TestCaseError> {
    prop_assert!(
        sandbox.fs.contains(&r.grant),
        "resolved into a grant the sandbox does not have: {r:?}"
    );
    if access.is_write() {
        prop_assert_eq!(r.grant.mode, FsMode::ReadWrite, "write allowed in {:?}", r);
    }
    // The guest path lies in the grant's guest directory, and `relative`
    // is exactly the rest: no `..`, no root, nothing to climb with.
    let groot = r.grant.guest.trim_end_matches('/');
    prop_assert!(r.guest.starts_with(groot), "{r:?}");
    prop_assert!(
        r.relative
            .components()
            .all(|c| matches!(c, Component::Normal(_))),
        "relative path with non-normal components: {r:?}"
    );
    // No longer grant prefix should have matched (longest prefix wins).
    for g in &sandbox.fs {
        let gr = g.guest.trim_end_matches('/');
        let inside = r.guest == gr || r.guest.starts_with(&format!("{gr}/"));
        prop_assert!(
            !(inside && gr.len() > groot.len()),
            "{:?} is in the longer grant {}",
            r.guest,
            g.guest
        );
    }
    let root = std::fs::canonicalize(&r.grant.host).unwrap();
    let real = real_resolve(&root, &r.relative)
        .map_err(|e| TestCaseError::fail(format!("allowed but unresolvable ({e}): {r:?}")))?;
    prop_assert!(
        real.starts_with(&root),
        "{:?} ({:?}) was allowed but resolves to {} outside {}",
        r.guest,
        access,
        real.display(),
        root.display()
    );
    let exists = std::fs::metadata(root.join(&r.relative)).is_ok();
    prop_assert_eq!(r.exists, exists, "existence of {:?}", r);
    match r.access {
        PathAccess::Create => prop_assert!(!exists),
        PathAccess::Overwrite | PathAccess::Patch => prop_assert!(exists),
        PathAccess::Write => prop_assert!(false, "`write` left unresolved"),
        _ => {}
    }
    Ok(())
}

#[test]
fn no_generated_path_escapes_a_grant() {
    let t = tree();
    let boxes = sandboxes(&t.root);
    let tools: Vec<ToolDescriptor> = ACCESSES.iter().map(|a| tool(*a)).collect();
    let allowed = AtomicUsize::new(0);
    let denied = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: 1500,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (path_arg(t.root.clone()), 0..ACCESSES.len(), 0..boxes.len());
    runner
        .run(&strategy, |(path, ai, bi)| {
            let (access, sandbox) = (ACCESSES[ai], &boxes[bi]);
            let args = serde_json::json!({ "path": path });
            let out = std::panic::catch_unwind(|| check_paths(&tools[ai], &args, sandbox))
                .map_err(|_| TestCaseError::fail(format!("check_paths panicked on {path:?}")))?;
            match out {
                Ok(resolved) => {
                    prop_assert_eq!(resolved.len(), 1);
                    allowed.fetch_add(1, Ordering::Relaxed);
                    check_allowed(&resolved[0], access, sandbox)?;
                }
                Err(f) => {
                    denied.fetch_add(1, Ordering::Relaxed);
                    let ok = f.code == ErrorCode::from(FailureCode::PathDenied)
                        || f.code == ErrorCode::from(FailureCode::PathConflict);
                    prop_assert!(ok, "{path:?}: unexpected code {} ({})", f.code, f.message);
                    prop_assert!(!f.message.is_empty());
                }
            }
            Ok(())
        })
        .unwrap();
    // Not vacuous: both outcomes happen a fair share of the time.
    let (a, d) = (allowed.into_inner(), denied.into_inner());
    eprintln!("allowed {a}, denied {d}");
    assert!(a >= 100 && d >= 100, "allowed {a}, denied {d}");
}

/// Every access kind, on fixed paths whose verdict is known: the property
/// above would pass on a path stage that denies everything; this would not.
#[test]
fn known_paths_get_known_verdicts() {
    let t = tree();
    let boxes = sandboxes(&t.root);
    let two = &boxes[0];
    let run = |access: PathAccess, path: &str| {
        check_paths(&tool(access), &serde_json::json!({ "path": path }), two)
    };
    let code = |r: Result<Vec<ResolvedPath>, toolhost_contract::ToolFailure>| {
        r.map(|v| v[0].access).map_err(|f| f.code.to_string())
    };
    let denied = Err("path_denied".to_owned());
    let conflict = Err("path_conflict".to_owned());
    // Reads and lists inside either grant, directly or through inside links.
    for p in [
        "/ro/a.txt",
        "/rw/sub/b.txt",
        "/ro/link_in",
        "/rw/dirlink_in/b.txt",
    ] {
        assert_eq!(code(run(PathAccess::Read, p)), Ok(PathAccess::Read), "{p}");
    }
    assert_eq!(code(run(PathAccess::List, "/ro")), Ok(PathAccess::List));
    // Writes only in the read-write grant, resolved by existence.
    assert_eq!(
        code(run(PathAccess::Write, "/rw/new.txt")),
        Ok(PathAccess::Create)
    );
    assert_eq!(
        code(run(PathAccess::Write, "/rw/a.txt")),
        Ok(PathAccess::Overwrite)
    );
    assert_eq!(
        code(run(PathAccess::Patch, "/rw/link_in")),
        Ok(PathAccess::Patch)
    );
    assert_eq!(code(run(PathAccess::Create, "/rw/a.txt")), conflict);
    assert_eq!(code(run(PathAccess::Overwrite, "/rw/new.txt")), conflict);
    for access in ACCESSES.iter().filter(|a| a.is_write()) {
        assert_eq!(code(run(*access, "/ro/new.txt")), denied, "{access:?}");
        assert_eq!(code(run(*access, "/ro/a.txt")), denied, "{access:?}");
    }
    // Escapes, for every access kind.
    for access in ACCESSES {
        for p in [
            "/rw/link_out",
            "/rw/link_abs",
            "/rw/chain1",
            "/rw/dirlink_out/secret.txt",
            "/rw/dirlink_out/new.txt",
            "/rw/dangling_out",
            "/rw/to_other_grant",
            "/rw/sub/up2/secret.txt",
            "/rw/loop",
            "/rw/../outside/secret.txt",
            "../../etc/passwd",
            "/etc/passwd",
            "/rw/a.txt\0",
        ] {
            assert_eq!(code(run(access, p)), denied, "{access:?} {p}");
        }
    }
}
