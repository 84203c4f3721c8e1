//! Embeds the built-in tool components: `toolhost-guests` (a build
//! dependency) builds them from source; this script generates one
//! `include_bytes!` per tool, so the `toolhost` binary needs nothing on disk.
//!
//! Each is also precompiled here, with the runtime's engine settings
//! (`toolhost-engine`) for the target's portable CPU level (x86-64-v2, the
//! aarch64 baseline), and embedded beside its component: a machine that
//! never ran toolhost serves the built-ins at once instead of compiling
//! them first, whatever machine built the binary. The runtime checks that
//! the artifact fits its engine and CPU and compiles the component when it
//! does not.

use std::path::PathBuf;

/// The built-in components, sorted: the tools, and `code` and `code_python`
/// (the code runners behind code mode's `run_code`, JavaScript and Python).
const BUILTINS: &[&str] = &[
    "code",
    "code_python",
    "edit",
    "fetch",
    "grep",
    "list",
    "read",
    "write",
];

fn main() {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // One instance: the pool's size does not change the compiled code, and
    // a small pool reserves little address space in the build.
    let mut config = toolhost_engine::config(&toolhost_engine::EngineSettings {
        max_instances: 1,
        ..Default::default()
    });
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let cpu = toolhost_engine::compile_portably(&mut config, &target);
    // A target this build's cranelift cannot compile for (a cross build)
    // gets no artifacts: the runtime compiles the built-ins on first use.
    let engine = wasmtime::Engine::new(&config).ok();
    let precompiled_for = match (&engine, cpu) {
        (Some(_), Some(cpu)) => format!("{target} ({cpu})"),
        (Some(_), None) => format!("{target} (the building machine's CPU)"),
        (None, _) => "nothing (compiled on first use)".to_owned(),
    };
    let mut out = format!(
        "/// What the built-ins were precompiled for: the target triple and CPU level.\n\
         pub const PRECOMPILED_FOR: &str = {precompiled_for:?};\n\n\
         /// Every built-in tool component, sorted by name.\npub static ALL: &[Builtin] = &[\n",
    );
    for name in BUILTINS {
        let stem = format!("tool_{name}");
        let wasm = toolhost_guests::path(&stem)
            .unwrap_or_else(|| panic!("{stem}.wasm was not built by toolhost-guests"));
        println!("cargo:rerun-if-changed={wasm}");
        let bytes = std::fs::read(wasm).unwrap_or_else(|e| panic!("reading {wasm}: {e}"));
        let compiled = match &engine {
            Some(engine) => engine
                .precompile_component(&bytes)
                .unwrap_or_else(|e| panic!("precompiling {wasm}: {e:#}")),
            None => Vec::new(),
        };
        let cwasm = out_dir.join(format!("{stem}.cwasm"));
        std::fs::write(&cwasm, compiled)
            .unwrap_or_else(|e| panic!("writing {}: {e}", cwasm.display()));
        let policy = PathBuf::from(toolhost_guests::REPO_ROOT)
            .join("policies")
            .join(format!("{name}.toml"));
        println!("cargo:rerun-if-changed={}", policy.display());
        out.push_str(&format!(
            "    Builtin {{ name: {name:?}, wasm: include_bytes!({wasm:?}), precompiled: include_bytes!({:?}), policy: include_str!({:?}) }},\n",
            cwasm.display().to_string(),
            policy.display().to_string()
        ));
    }
    out.push_str("];\n");
    std::fs::write(out_dir.join("builtins.rs"), out).expect("writing builtins.rs");
}
