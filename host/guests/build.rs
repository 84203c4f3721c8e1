//! Builds every component in `guest-tools/` for `wasm32-wasip2` (release),
//! in its own target directory, and generates constants with their paths.
//! Installs the rustup target when it is missing, so a fresh machine needs
//! no manual step. The code runner (`guest-tools/code`, QuickJS in C) is
//! built by its own script, which also installs its pinned C toolchain
//! when it is missing (as root; otherwise the build stops saying what to
//! install).

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .join("../..")
        .canonicalize()
        .expect("repository root");
    let guests = root.join("guest-tools");
    for p in ["Cargo.toml", "Cargo.lock", "kit", "tools", "test-guests"] {
        println!("cargo:rerun-if-changed={}", guests.join(p).display());
    }
    println!("cargo:rerun-if-changed={}", root.join("wit").display());
    // The catalog test guest embeds the recorded tool lists.
    println!(
        "cargo:rerun-if-changed={}",
        root.join("tests/discovery/catalog").display()
    );
    for p in [
        "code/src",
        "code/Cargo.toml",
        "code/Cargo.lock",
        "code/build.sh",
        "c/toolchain.sh",
    ] {
        println!("cargo:rerun-if-changed={}", guests.join(p).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        root.join(".cargo/config.toml").display()
    );

    ensure_target();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target_dir = guests.join("target");
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(guests.join("Cargo.toml"))
        .arg("--target")
        .arg(TARGET)
        .arg("--release")
        .arg("--target-dir")
        .arg(&target_dir);
    // Reproducible components: no checkout or cargo-home path is embedded
    // (panic locations name files), so the same source builds the same
    // bytes in any clone, and a recorded component hash stays valid.
    // (Arrays given with --config are joined with .cargo/config.toml's.)
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let mut remaps = vec![format!("--remap-path-prefix={}=/toolhost", root.display())];
    if let Some(home) = cargo_home {
        remaps.push(format!("--remap-path-prefix={}=/cargo", home.display()));
    }
    let flags: Vec<String> = remaps.iter().map(|f| format!("{f:?}")).collect();
    cmd.arg("--config")
        .arg(format!("target.{TARGET}.rustflags=[{}]", flags.join(", ")));
    clean_env(&mut cmd);
    let status = cmd.status().expect("running cargo for guest-tools");
    if !status.success() {
        panic!("building guest-tools for {TARGET} failed (see the cargo output above)");
    }

    let out_dir = target_dir.join(TARGET).join("release");
    build_code_runner(&guests, &out_dir.join("tool_code.wasm"));
    let mut consts = String::new();
    let mut all = String::from(
        "/// Every built component: (file stem, path).\npub const ALL: &[(&str, &str)] = &[\n",
    );
    let mut names: Vec<String> = std::fs::read_dir(&out_dir)
        .expect("guest output directory")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    for stem in names {
        let path = out_dir.join(format!("{stem}.wasm"));
        consts.push_str(&format!(
            "/// `{stem}.wasm`, built from guest-tools/.\npub const {}: &str = {:?};\n",
            stem.to_uppercase(),
            path.display().to_string()
        ));
        all.push_str(&format!(
            "    ({stem:?}, {:?}),\n",
            path.display().to_string()
        ));
    }
    all.push_str("];\n");
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("guests.rs");
    std::fs::write(out, consts + &all).expect("writing guests.rs");
    write_root_hint(&root);
}

fn ensure_target() {
    let installed = Command::new("rustc")
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .is_some_and(|p| p.exists());
    if !installed {
        println!("cargo:warning=installing the {TARGET} target with rustup");
        let ok = Command::new("rustup")
            .args(["target", "add", TARGET])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            panic!("the {TARGET} target is missing; run `rustup target add {TARGET}`");
        }
    }
}

/// Builds the code runner into `out` with its own script (it needs a C
/// compiler for wasm32, which the rest of guest-tools does not).
fn build_code_runner(guests: &Path, out: &Path) {
    let mut cmd = Command::new("bash");
    cmd.arg(guests.join("code/build.sh")).arg(out);
    clean_env(&mut cmd);
    let status = cmd
        .stdout(std::process::Stdio::null())
        .status()
        .expect("running guest-tools/code/build.sh");
    if !status.success() {
        panic!(
            "building the code runner (guest-tools/code/build.sh) failed; see its output above \
             (it needs the C kit's toolchain: guest-tools/c/toolchain.sh)"
        );
    }
}

/// The outer build's settings must not leak into a guest build.
fn clean_env(cmd: &mut Command) {
    for (k, _) in std::env::vars() {
        if k.starts_with("CARGO_") && k != "CARGO_HOME"
            || k == "RUSTFLAGS"
            || k == "RUSTC_WRAPPER"
            || k == "RUSTC_WORKSPACE_WRAPPER"
        {
            cmd.env_remove(&k);
        }
    }
}

fn write_root_hint(root: &Path) {
    println!("cargo:rustc-env=TOOLHOST_REPO_ROOT={}", root.display());
}
