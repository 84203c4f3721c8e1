//! Shared by the no-panic tests of several crates (included with `#[path]`,
//! by `toolhost-testkit` for the TOML file parsers):
//! the corpus of interesting inputs kept in `tests/corpus/<target>/`, and a
//! proptest strategy that mutates its entries the way a fuzzer would (bit
//! flips, deletions, insertions of interesting bytes, duplicated and
//! truncated spans, splices of two entries).

use proptest::prelude::*;
use std::path::{Path, PathBuf};

/// The files of `tests/corpus/<target>/` (from the repository root), sorted,
/// with their bytes. Panics when there are none: a test without its corpus
/// would test nothing.
pub fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|d| d.join("tests/corpus").is_dir())
        .expect("the repository's tests/corpus directory")
        .join("tests/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "empty corpus {}", dir.display());
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("readable corpus file");
            (p, bytes)
        })
        .collect()
}

/// Bytes a fuzzer likes to insert.
const INTERESTING: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b"\0",
    b"\"",
    b"'",
    b"[",
    b"]",
    b"{",
    b"}",
    b"=",
    b"[[",
    b"]]",
    b".",
    b"\\",
    b"\\u",
    b"\xff",
    b"\xc3",
    b"\xe2\x80\xae",
    b"#",
    b"-1",
    b"0x",
    b"1e999",
    b"99999999999999999999999",
    b"inf",
    b"nan",
    b"true",
    b"null",
    b"\"\"\"",
    b"'''",
    b"version = 1\n",
    b"[[fs]]\n",
    b"/..",
    b"../",
    b"\t",
];

/// One mutation of a byte string.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Flip one bit of the byte at (index mod len).
    Flip(usize, u8),
    /// Delete `n` bytes from (index mod len).
    Delete(usize, usize),
    /// Insert an interesting token at (index mod len + 1).
    Insert(usize, usize),
    /// Duplicate `n` bytes from (index mod len) in place.
    Duplicate(usize, usize),
    /// Cut the input at (index mod len + 1).
    Truncate(usize),
    /// Append the second half of another corpus entry.
    Splice(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), 0u8..8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        2 => (any::<usize>(), 1usize..16).prop_map(|(i, n)| Mutation::Delete(i, n)),
        3 => (any::<usize>(), 0..INTERESTING.len()).prop_map(|(i, t)| Mutation::Insert(i, t)),
        1 => (any::<usize>(), 1usize..64).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => any::<usize>().prop_map(Mutation::Splice),
    ]
}

/// Applies `m` to `data`; `others` feeds splices.
pub fn apply(data: &mut Vec<u8>, m: &Mutation, others: &[Vec<u8>]) {
    let len = data.len();
    let at = |i: usize| if len == 0 { 0 } else { i % len };
    match *m {
        Mutation::Flip(i, b) if len > 0 => data[at(i)] ^= 1 << b,
        Mutation::Delete(i, n) if len > 0 => {
            let s = at(i);
            data.drain(s..(s + n).min(len));
        }
        Mutation::Insert(i, t) => {
            let s = if len == 0 { 0 } else { at(i) + 1 };
            data.splice(s..s, INTERESTING[t].iter().copied());
        }
        Mutation::Duplicate(i, n) if len > 0 => {
            let s = at(i);
            let span: Vec<u8> = data[s..(s + n).min(len)].to_vec();
            data.splice(s..s, span);
        }
        Mutation::Truncate(i) if len > 0 => data.truncate(at(i) + 1),
        Mutation::Splice(i) if !others.is_empty() => {
            let o = &others[i % others.len()];
            data.extend_from_slice(&o[o.len() / 2..]);
        }
        _ => {}
    }
}

/// A corpus entry (by index) with up to `max` mutations applied.
pub fn mutated(entries: Vec<Vec<u8>>, max: usize) -> impl Strategy<Value = Vec<u8>> {
    let n = entries.len();
    (0..n, proptest::collection::vec(mutation(), 0..=max)).prop_map(move |(i, ms)| {
        let mut data = entries[i].clone();
        for m in &ms {
            apply(&mut data, m, &entries);
        }
        data
    })
}
