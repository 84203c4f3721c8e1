//! Embeds the built-in tool components: `toolhost-guests` (a build
//! dependency) builds them from source; this script generates one
//! `include_bytes!` per tool, so the `toolhost` binary needs nothing on disk.

use std::path::PathBuf;

/// The built-in tools, in advertisement order of their names.
const BUILTINS: &[&str] = &["edit", "fetch", "grep", "list", "read", "write"];

fn main() {
    let mut out = String::from(
        "/// Every built-in tool component, sorted by name.\npub static ALL: &[Builtin] = &[\n",
    );
    for name in BUILTINS {
        let stem = format!("tool_{name}");
        let wasm = toolhost_guests::path(&stem)
            .unwrap_or_else(|| panic!("{stem}.wasm was not built by toolhost-guests"));
        println!("cargo:rerun-if-changed={wasm}");
        let policy = PathBuf::from(toolhost_guests::REPO_ROOT)
            .join("policies")
            .join(format!("{name}.toml"));
        println!("cargo:rerun-if-changed={}", policy.display());
        out.push_str(&format!(
            "    Builtin {{ name: {name:?}, wasm: include_bytes!({wasm:?}), policy: include_str!({:?}) }},\n",
            policy.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("builtins.rs");
    std::fs::write(dest, out).expect("writing builtins.rs");
}
