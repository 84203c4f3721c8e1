//! The serving side of a worker's answers: any frame a worker sends,
//! decoded as the serving process decodes it, and an `execute`'s answer
//! taken as it takes one: what it reports checked against the call's
//! policy, what it staged restaged (a call of its own) or taken into the
//! script's transaction (a script's call). Nothing panics; what is taken
//! lies only in the call's read-write grant and within its write budget;
//! a refusal has a stable code; and nothing lands in the granted directory
//! (staging is not committing).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use toolhost_effects::Transaction;
use toolhost_policy::{FsGrant, FsMode, ToolPolicy};
use toolhost_worker_wire::FromWorker;
use toolhost_worker_wire::accept::{Granted, answer_bound, check_report, restage};

/// A fixed place, so the corpus can name the granted directories.
const BASE: &str = "/tmp/toolhost-fuzz-worker-answer";

struct Setup {
    policy: ToolPolicy,
    granted: Granted,
    rw: PathBuf,
    listing: Vec<(PathBuf, u64)>,
}

/// The granted directories' files, with their sizes.
fn listing(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if meta.is_dir() {
                todo.push(e.path());
            }
            out.push((e.path(), meta.len()));
        }
    }
    out.sort();
    out
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let base = Path::new(BASE);
        let (rw, ro) = (base.join("rw"), base.join("ro"));
        for d in [&rw, &ro, &rw.join("src")] {
            std::fs::create_dir_all(d).expect("the fuzz directories are made");
        }
        std::fs::write(rw.join("src/a.txt"), "one\n").expect("a file is written");
        std::fs::write(ro.join("b.txt"), "two\n").expect("a file is written");
        let mut policy = ToolPolicy::default();
        policy.limits.max_write_bytes = 4096;
        policy.limits.max_files_created = 8;
        policy.limits.max_stdout_bytes = 1024;
        policy.limits.max_context_bytes = 1024;
        policy.sandbox.fs = vec![
            FsGrant {
                host: rw.clone(),
                guest: "/work".into(),
                mode: FsMode::ReadWrite,
            },
            FsGrant {
                host: ro.clone(),
                guest: "/ro".into(),
                mode: FsMode::ReadOnly,
            },
        ];
        let granted = Granted::of(&policy);
        let listing = listing(&rw);
        Setup {
            policy,
            granted,
            rw,
            listing,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let s = setup();
    // The frame is refused before it is read when past the call's bound.
    if data.len() > answer_bound(&s.policy, None) {
        return;
    }
    let Ok(msg) = serde_json::from_slice::<FromWorker>(data) else {
        return;
    };
    let _ = msg.answers();
    let FromWorker::Executed(e) = msg else {
        return;
    };
    let _ = check_report(&e.report, &s.policy);
    let budget = |(bytes, entries): (u64, u64)| {
        let l = &s.policy.limits;
        bytes <= l.max_write_bytes && entries <= l.max_files_created
    };
    let codes = ["worker_refused", "write_budget_exceeded", "host_error"];
    let staging = Path::new(BASE).join("staging");
    match restage(&staging, e.staged, &s.policy) {
        Ok(staged) => {
            let mut size = (0, 0);
            for (guest, overlay) in staged.grants() {
                assert_eq!(guest, "/work", "staged outside the read-write grant");
                assert_eq!(overlay.root(), s.rw.as_path());
                if let Ok(snapshot) = overlay.snapshot() {
                    let (b, n) = snapshot.staged_size();
                    size = (size.0 + b, size.1 + n);
                }
            }
            assert!(budget(size), "staged past the budget: {size:?}");
            let _ = staged.effects();
        }
        Err(f) => assert!(codes.contains(&f.code.as_str()), "{}", f.code.as_str()),
    }
    if let Some(after) = e.transaction {
        let tx = Transaction::new(Path::new(BASE).join("tx"));
        let Ok(before) = tx.snapshot() else { return };
        match s.granted.take_changes(&tx, &before, after, &s.policy) {
            Ok(()) => {
                if let Ok(now) = tx.snapshot() {
                    assert!(budget(now.staged_size()), "took past the budget");
                }
                for (guest, _) in tx.staged().grants() {
                    assert_eq!(guest, "/work", "took outside the read-write grant");
                }
            }
            Err(f) => assert!(codes.contains(&f.code.as_str()), "{}", f.code.as_str()),
        }
    }
    assert_eq!(
        listing(&s.rw),
        s.listing,
        "something landed in the granted directory"
    );
});
