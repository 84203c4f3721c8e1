//! Embeds the checked-in catalog (`tests/discovery/catalog/*.json`, real
//! `tools/list` answers of public MCP servers), one `include_str!` per
//! file; the component parses the one it declares when asked.
//!
//! No build dependency: one on `serde_json` here changed the bytes of the
//! other guests of this workspace (their recorded digests with them).

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let catalog = dir
        .join("../../../tests/discovery/catalog")
        .canonicalize()
        .expect("tests/discovery/catalog");
    println!("cargo:rerun-if-changed={}", catalog.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&catalog)
        .expect("tests/discovery/catalog")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut out = String::from(
        "/// Every server: (its file stem, its recorded JSON).\npub static SERVERS: &[(&str, &str)] = &[\n",
    );
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let stem = file
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 stem");
        let _ = writeln!(
            out,
            "    ({stem:?}, include_str!({:?})),",
            file.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("catalog.rs");
    std::fs::write(dest, out).expect("writing catalog.rs");
}
