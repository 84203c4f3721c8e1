//! Golden tests of a TOML file parser: the files of `tests/invalid/` must
//! fail with exactly the message in their sibling `.err` files, those of
//! `tests/valid/` must parse.
//!
//! Run with `BLESS=1` to rewrite the `.err` files from the current messages.

use std::fmt::{Debug, Display};
use std::fs;
use std::path::{Path, PathBuf};

/// The `.toml` files of `dir`, sorted.
pub fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
}

/// The file name of `path`, as the parsers' errors name it.
pub fn file_name(path: &Path) -> &str {
    path.file_name()
        .and_then(|name| name.to_str())
        .expect("UTF-8 file name")
}

/// Checks that every `.toml` file of `dir` (at least `min` of them) fails
/// to parse, with a one-line message equal to its sibling `.err` file.
///
/// `parse` gets the file's text and its name (the origin its errors
/// name). With `BLESS=1` in the environment the `.err` files are written
/// from the current messages instead of compared.
pub fn invalid_files_match_golden_errors<T: Debug, E: Display>(
    dir: &Path,
    min: usize,
    parse: impl Fn(&str, &str) -> Result<T, E>,
) {
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let files = toml_files(dir);
    assert!(files.len() >= min, "only {} invalid cases", files.len());
    let mut failures = Vec::new();
    for path in files {
        let name = file_name(&path);
        let text = fs::read_to_string(&path).expect("readable test file");
        let actual = match parse(&text, name) {
            Ok(parsed) => {
                failures.push(format!("{name}: parsed but should fail: {parsed:?}"));
                continue;
            }
            Err(err) => err.to_string(),
        };
        assert!(
            !actual.contains('\n'),
            "{name}: multi-line message {actual:?}"
        );
        let err_path = path.with_extension("err");
        if bless {
            fs::write(&err_path, format!("{actual}\n")).expect("writable .err file");
            continue;
        }
        match fs::read_to_string(&err_path) {
            Ok(expected) if expected.trim_end() == actual => {}
            Ok(expected) => failures.push(format!(
                "{name}:\n  expected: {}\n  actual:   {actual}",
                expected.trim_end()
            )),
            Err(e) => failures.push(format!(
                "{}: {e} (run with BLESS=1 to create it; actual: {actual})",
                err_path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The `.toml` files of `dir`, at least `min` of them, each parsed with
/// `load` (a panic names the file's error); returns what they parsed to,
/// with their paths, for the caller's own checks.
pub fn valid_files_parse<T, E: Display>(
    dir: &Path,
    min: usize,
    load: impl Fn(&Path) -> Result<T, E>,
) -> Vec<(PathBuf, T)> {
    let files = toml_files(dir);
    assert!(files.len() >= min, "only {} valid cases", files.len());
    files
        .into_iter()
        .map(|path| match load(&path) {
            Ok(parsed) => (path, parsed),
            Err(err) => panic!("{err}"),
        })
        .collect()
}
