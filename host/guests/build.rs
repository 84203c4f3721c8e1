//! Builds every component in `guest-tools/` for `wasm32-wasip2` (release),
//! in its own target directory, and generates constants with their paths.
//! Installs the rustup target when it is missing, so a fresh machine needs
//! no manual step. The code runner (`guest-tools/code`, QuickJS in C) is
//! built by its own script, which also installs its pinned C toolchain
//! when it is missing (as root; otherwise the build stops saying what to
//! install).
//!
//! In a packaged crate (`cargo install toolhost`) there is no repository
//! around it: the sources come from `guest-sources.tar` beside this file
//! (written by `deploy/dist/crates.sh`; a tarball because cargo leaves out
//! of a package every directory holding a `Cargo.toml`), unpacked into
//! `OUT_DIR`, and only the built-ins are built, into `OUT_DIR` too (a build
//! script must not write to its package's sources). The test guests'
//! constants are then empty paths.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

/// The guest-tools packages a packaged build builds: the built-ins.
const BUILTIN_PACKAGES: &[&str] = &[
    "tool-read",
    "tool-write",
    "tool-edit",
    "tool-list",
    "tool-grep",
    "tool-fetch",
];

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let (root, packaged) = sources(&manifest_dir, &out_dir);
    let guests = root.join("guest-tools");
    // A packaged build's sources are the tarball (named in `sources`).
    if !packaged {
        watch(&root, &guests);
    }

    ensure_target();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target_dir = if packaged {
        out_dir.join("guest-target")
    } else {
        guests.join("target")
    };
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(guests.join("Cargo.toml"))
        .arg("--target")
        .arg(TARGET)
        .arg("--release")
        .arg("--target-dir")
        .arg(&target_dir);
    if packaged {
        for p in BUILTIN_PACKAGES {
            cmd.args(["-p", p]);
        }
        // cargo reads .cargo/config.toml (wasm SIMD) from where it runs.
        cmd.current_dir(&root);
    }
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

    let built = target_dir.join(TARGET).join("release");
    build_code_runner(&guests, &built.join("tool_code.wasm"), "javascript");
    build_code_runner(&guests, &built.join("tool_code_python.wasm"), "python");
    let mut consts = String::new();
    let mut all = String::from(
        "/// Every built component: (file stem, path).\npub const ALL: &[(&str, &str)] = &[\n",
    );
    let mut names: Vec<String> = std::fs::read_dir(&built)
        .expect("guest output directory")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    if packaged {
        // The test guests, not built here: their constants name nothing.
        for stem in member_stems(&guests) {
            if !names.contains(&stem) {
                consts.push_str(&format!(
                    "/// `{stem}.wasm`: not built in a packaged build.\npub const {}: &str = \"\";\n",
                    stem.to_uppercase()
                ));
            }
        }
    }
    names.sort();
    for stem in names {
        let path = built.join(format!("{stem}.wasm"));
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
    std::fs::write(out_dir.join("guests.rs"), consts + &all).expect("writing guests.rs");
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

/// Builds the code runner of `language` into `out` with its own script
/// (the JavaScript one needs a C compiler for wasm32, which the rest of
/// guest-tools does not).
fn build_code_runner(guests: &Path, out: &Path, language: &str) {
    let mut cmd = Command::new("bash");
    cmd.arg(guests.join("code/build.sh")).arg(out).arg(language);
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

/// Reruns this script when a guest's sources change in the repository.
fn watch(root: &Path, guests: &Path) {
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
}

/// Where the sources are: the repository around this crate, or (packaged)
/// `guest-sources.tar` unpacked into `OUT_DIR`; and whether packaged.
fn sources(manifest_dir: &Path, out_dir: &Path) -> (PathBuf, bool) {
    let repo = manifest_dir.join("../..");
    if repo.join("guest-tools/Cargo.toml").is_file() {
        return (repo.canonicalize().expect("repository root"), false);
    }
    let tar = manifest_dir.join("guest-sources.tar");
    println!("cargo:rerun-if-changed={}", tar.display());
    if !tar.is_file() {
        panic!(
            "{} is missing: a packaged toolhost-guests carries its sources in it \
             (deploy/dist/crates.sh writes it before `cargo package`)",
            tar.display()
        );
    }
    let dest = out_dir.join("sources");
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::create_dir_all(&dest).expect("creating the sources' directory");
    let status = Command::new("tar")
        .arg("-xf")
        .arg(&tar)
        .arg("-C")
        .arg(&dest)
        .status()
        .expect("running tar");
    if !status.success() {
        panic!("unpacking {} failed ({status})", tar.display());
    }
    (dest, true)
}

/// The library file stems of the guest-tools workspace's members (their
/// package names with `_`), read from each member's `Cargo.toml`.
fn member_stems(guests: &Path) -> Vec<String> {
    let workspace = std::fs::read_to_string(guests.join("Cargo.toml")).unwrap_or_default();
    let Some(start) = workspace.find("members = [") else {
        return Vec::new();
    };
    let list = &workspace[start..];
    let list = &list[..list.find(']').unwrap_or(list.len())];
    list.split('"')
        .skip(1)
        .step_by(2)
        .filter_map(|member| {
            let manifest = std::fs::read_to_string(guests.join(member).join("Cargo.toml")).ok()?;
            let name = manifest
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = \""))?
                .trim_end_matches('"');
            Some(name.replace('-', "_"))
        })
        .collect()
}
