//! The stages between an emitted call and dispatch, on bytes the model
//! controls: defensive parsing, schema validation, the path stage (with
//! fresh baselines) and the URL stage, then the approval summary.
//!
//! The first byte picks one of six tools shaped like the built-ins (every
//! `path-access` kind, a URL argument); the rest is the raw argument string.
//! Besides "no panic, no hang, no unbounded allocation", each input checks:
//! - a path the path stage allowed lands inside the grant it names, checked
//!   on the real filesystem with `std` (which follows every symlink, as the
//!   kernel would), and a write access is only ever allowed in a
//!   read-write grant;
//! - a URL the URL stage allowed is on the allow-list;
//! - a refusal carries one of the stage's stable codes;
//! - the approval summary stays within its bound.
//!
//! The tree the paths are checked against is built once per process, in a
//! temporary directory: a read-write grant and a read-only one, with
//! symlinks inside, outside, across grants, absolute, dangling and looping.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod world;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let w = world::world();
    let _ = world::check_call(
        w,
        usize::from(pick) % w.tools.len(),
        &String::from_utf8_lossy(rest),
    );
});
