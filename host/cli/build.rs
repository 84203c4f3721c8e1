//! Two things the binary carries from its source tree:
//!
//! - the commit it is built from, for `toolhost --version`
//!   (`TOOLHOST_COMMIT`): the environment's `TOOLHOST_COMMIT` when a
//!   release script sets it, else the sha1 cargo recorded when it packaged
//!   this crate (`.cargo_vcs_info.json`, so a `cargo install toolhost`
//!   names its commit too), else git's HEAD, else `unknown`;
//! - the tool-authoring kits (`kits.rs` in `OUT_DIR`): every file
//!   `toolhost new` and `toolhost build` need, embedded, so a user who has
//!   only the binary can write and build tools in every kit language.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the kits are made of, relative to the repository's root: the
/// contract, each language's build script, kit, WIT and project template,
/// and what those scripts use (the shared script library, the C and Go
/// builder's sources, the Rust kit's workspace and lock file).
const KIT_PATHS: &[&str] = &[
    "wit/v0.3.0",
    ".cargo/config.toml",
    "guest-tools/build-lib.sh",
    "guest-tools/Cargo.toml",
    "guest-tools/Cargo.lock",
    "guest-tools/kit",
    "guest-tools/rust/new",
    "guest-tools/builder/Cargo.toml",
    "guest-tools/builder/Cargo.lock",
    "guest-tools/builder/build.sh",
    "guest-tools/builder/src",
    "guest-tools/python/build.sh",
    "guest-tools/python/requirements.txt",
    "guest-tools/python/kit",
    "guest-tools/python/wit",
    "guest-tools/python/new",
    "guest-tools/js/build.sh",
    "guest-tools/js/install.sh",
    "guest-tools/js/package.json",
    "guest-tools/js/package-lock.json",
    "guest-tools/js/requirements.txt",
    "guest-tools/js/kit",
    "guest-tools/js/wit",
    "guest-tools/js/new",
    "guest-tools/c/build.sh",
    "guest-tools/c/toolchain.sh",
    "guest-tools/c/kit",
    "guest-tools/c/wit",
    "guest-tools/c/new",
    "guest-tools/go/build.sh",
    "guest-tools/go/env.sh",
    "guest-tools/go/go.mod",
    "guest-tools/go/requirements.txt",
    "guest-tools/go/runtime.patch",
    "guest-tools/go/kit",
    "guest-tools/go/wit",
    "guest-tools/go/new",
];

/// Directories never embedded: build output and caches.
const SKIPPED: &[&str] = &["target", "node_modules", "__pycache__"];

fn main() {
    kits();
    println!("cargo:rerun-if-env-changed=TOOLHOST_COMMIT");
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&dir);
    let commit = std::env::var("TOOLHOST_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| packaged(dir))
        .or_else(|| git(dir))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=TOOLHOST_COMMIT={commit}");
}

/// The sha1 in `.cargo_vcs_info.json` (`{"git": {"sha1": "…"}, …}`).
fn packaged(dir: &Path) -> Option<String> {
    let info = dir.join(".cargo_vcs_info.json");
    // Only a packaged crate has it (and it never changes there): naming a
    // missing file would run this script on every build.
    let text = std::fs::read_to_string(info).ok()?;
    let after = &text[text.find("\"sha1\"")? + 6..];
    let start = after.find('"')? + 1;
    let sha = &after[start..start + after[start..].find('"')?];
    short(sha)
}

/// HEAD's commit, and a rebuild when HEAD moves (its file, the branch it
/// names, and packed refs).
fn git(dir: &Path) -> Option<String> {
    let run = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let sha = run(&["rev-parse", "HEAD"])?;
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = run(&["rev-parse", "--path-format=absolute", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(branch) = run(&["symbolic-ref", "-q", "HEAD"])
        && let Some(p) = run(&["rev-parse", "--path-format=absolute", "--git-path", &branch])
    {
        println!("cargo:rerun-if-changed={p}");
    }
    short(&sha)
}

/// The first 12 hex digits, when `sha` is a commit id.
fn short(sha: &str) -> Option<String> {
    (sha.len() >= 12 && sha.bytes().all(|b| b.is_ascii_hexdigit())).then(|| sha[..12].to_owned())
}

/// Writes `kits.rs`: `KIT_FILES` (path and bytes of each file, sorted) and
/// `KIT_DIGEST` (a sha256 over them, which names the kits' directory in
/// the cache, so a binary with other kits never uses these).
fn kits() {
    // The repository, or in a packaged crate the sources toolhost-guests
    // unpacked.
    let root = Path::new(toolhost_guests::REPO_ROOT);
    let mut files = Vec::new();
    for rel in KIT_PATHS {
        let path = root.join(rel);
        println!("cargo:rerun-if-changed={}", path.display());
        collect(&path, &mut files);
    }
    files.sort();
    let mut digest = Sha256::new();
    let mut out = String::from(
        "/// Every file of the kits: its path, its bytes, and whether it is executable.\n",
    );
    out.push_str("pub(crate) static KIT_FILES: &[(&str, &[u8], bool)] = &[\n");
    for abs in &files {
        let canonical = abs.canonicalize().expect("an embedded kit file");
        let rel = abs
            .strip_prefix(root)
            .expect("below the root")
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = std::fs::read(abs).unwrap_or_else(|e| panic!("reading {}: {e}", abs.display()));
        let executable = {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(abs).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
        };
        digest.update((rel.len() as u64).to_le_bytes());
        digest.update(rel.as_bytes());
        digest.update((bytes.len() as u64).to_le_bytes());
        digest.update(&bytes);
        digest.update([u8::from(executable)]);
        out.push_str(&format!(
            "    ({rel:?}, include_bytes!({:?}), {executable}),\n",
            canonical.display().to_string()
        ));
    }
    out.push_str("];\n");
    let hex: String = digest.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    out.push_str(&format!(
        "/// A digest of [`KIT_FILES`].\npub(crate) const KIT_DIGEST: &str = {hex:?};\n"
    ));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out_dir.join("kits.rs"), out).expect("writing kits.rs");
}

/// Every file under `path` (or `path` itself), outside [`SKIPPED`].
fn collect(path: &Path, files: &mut Vec<PathBuf>) {
    let Ok(meta) = std::fs::metadata(path) else {
        panic!("a kit path is missing: {}", path.display());
    };
    if meta.is_file() {
        files.push(path.to_owned());
        return;
    }
    let mut entries: Vec<_> = std::fs::read_dir(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for entry in entries {
        let name = entry
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if SKIPPED.contains(&name) {
            continue;
        }
        collect(&entry, files);
    }
}
