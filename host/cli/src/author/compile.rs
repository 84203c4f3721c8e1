//! `toolhost build`: a project's component, built with its language's kit
//! and pinned toolchain.
//!
//! Rust projects are ordinary cargo projects (their `Cargo.toml` names the
//! kit in the cache) built for `wasm32-wasip2`. The others are built as the
//! repository builds its own tools: the project's sources are copied to
//! `guest-tools/<lang>/tools/<name>/` of the kits' directory and that
//! language's `build.sh` runs there, installing its toolchain below the
//! kits the first time and skipping the build when no source changed.

use super::{AuthorError, Lang, io, kits};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};
use toolhost_toolbox::file::{Source, Toolbox};

/// A tool project: what `build` needs to know about it.
#[derive(Debug, Clone)]
pub struct Project {
    /// Its directory.
    pub dir: PathBuf,
    /// The tool's name: the component's file stem.
    pub tool: String,
    /// Where its toolbox expects the component.
    pub component: PathBuf,
    /// Its language, told by its files.
    pub lang: Lang,
}

/// A build's result.
#[derive(Debug)]
pub struct Built {
    /// The project built.
    pub project: Project,
    /// How long it took (nothing was rebuilt when the sources had not
    /// changed).
    pub elapsed: Duration,
}

/// What in a project is not the component's source: build output, tests,
/// the toolbox and the policy (which the host reads, not the build). They
/// are not staged for the build scripts (whose up-to-date check would
/// otherwise rebuild, and change the bytes, on a README edit), and `dev`
/// does not rebuild when they change (`serve` reloads a changed policy
/// itself).
const NOT_SOURCES: &[&str] = &[
    "target",
    ".git",
    ".gitignore",
    "node_modules",
    "__pycache__",
    ".cargo",
    "tests",
    "test",
    "README.md",
    "toolhost.toml",
    "policy.toml",
];

/// The project in `dir`: its `toolhost.toml` names a component file under
/// `target/`, and its files tell the language.
pub fn project_of(dir: &Path) -> Result<Project, AuthorError> {
    let not_a_project = |reason: String| AuthorError::NotAProject {
        dir: dir.to_owned(),
        reason,
    };
    let file = dir.join("toolhost.toml");
    if !file.is_file() {
        return Err(not_a_project("it has no toolhost.toml".into()));
    }
    let builtins = toolhost_builtins::names();
    let toolbox = Toolbox::load(&file, &builtins)
        .map_err(|e| not_a_project(format!("its toolhost.toml is not valid: {e}")))?;
    let target = dir.join("target");
    let component = toolbox
        .components
        .iter()
        .find_map(|c| match &c.source {
            Source::File(p) if p.parent() == Some(target.as_path()) => Some(p.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            not_a_project("its toolhost.toml names no component under target/ to build".into())
        })?;
    let tool = component
        .file_stem()
        .and_then(|s| s.to_str())
        .map(str::to_owned)
        .ok_or_else(|| not_a_project(format!("{} has no name", component.display())))?;
    let lang = detect(dir)?;
    Ok(Project {
        dir: dir.to_owned(),
        tool,
        component,
        lang,
    })
}

/// The language of the sources in `dir`.
fn detect(dir: &Path) -> Result<Lang, AuthorError> {
    let has = |name: &str| dir.join(name).is_file();
    let any_ext = |ext: &str| {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == ext) && e.path().is_file())
    };
    if has("Cargo.toml") {
        Ok(Lang::Rust)
    } else if has("app.py") {
        Ok(Lang::Python)
    } else if has("app.js") {
        Ok(Lang::Js)
    } else if any_ext("go") {
        Ok(Lang::Go)
    } else if any_ext("c") {
        Ok(Lang::C)
    } else {
        Err(AuthorError::UnknownLanguage(dir.to_owned()))
    }
}

/// Builds `project`'s component into the path its toolbox names. The
/// language's output (and its toolchain's installation, the first time)
/// goes to stderr.
pub fn build(project: &Project, cache: &Path) -> Result<Built, AuthorError> {
    let started = Instant::now();
    preflight(project.lang)?;
    let out = &project.component;
    if let Some(p) = out.parent() {
        std::fs::create_dir_all(p).map_err(io(format!("creating {}", p.display())))?;
    }
    let status = match project.lang {
        Lang::Rust => {
            let status = rust(project)?;
            if status.success() {
                // cargo names the library after the crate, with `_`.
                let crate_name = crate_name(&project.dir)?.replace('-', "_");
                let built = project
                    .dir
                    .join("target/wasm32-wasip2/release")
                    .join(format!("{crate_name}.wasm"));
                // Beside it, then renamed over it: a server reloading the
                // component never reads half a file.
                let partial = out.with_extension("wasm.partial");
                std::fs::copy(&built, &partial)
                    .and_then(|_| std::fs::rename(&partial, out))
                    .map_err(io(format!(
                        "copying {} to {}",
                        built.display(),
                        out.display()
                    )))?;
            }
            status
        }
        lang => {
            let kit = kits::extract(cache)?;
            let here = kit.join("guest-tools").join(lang.name());
            let staged = here.join("tools").join(&project.tool);
            stage(&project.dir, &staged)?;
            let toolchains = cache.join("toolchains");
            Command::new("bash")
                .arg(here.join("build.sh"))
                .arg(absolute(out)?)
                .arg(&project.tool)
                .current_dir(&kit)
                // Toolchains outside the kits' directory: another version
                // of the kits reuses them (each script reinstalls what its
                // pins no longer match).
                .env("TOOLHOST_PY_VENV", toolchains.join("python"))
                .env("TOOLHOST_JS_NODE", toolchains.join("js-node"))
                .env("TOOLHOST_JS_VENV", toolchains.join("js-venv"))
                .env("TOOLHOST_GO_VENV", toolchains.join("go"))
                .env("TOOLHOST_BUILDER_TARGET", toolchains.join("builder"))
                .stdout(std::io::stderr())
                .status()
                .map_err(io("running bash"))?
        }
    };
    if !status.success() {
        return Err(AuthorError::BuildFailed {
            lang: project.lang,
            status,
        });
    }
    if !out.is_file() {
        return Err(AuthorError::NoComponent {
            lang: project.lang,
            path: out.clone(),
        });
    }
    Ok(Built {
        project: project.clone(),
        elapsed: started.elapsed(),
    })
}

/// The programs each language's build runs before it can install anything
/// else, with what to do when one is missing.
fn preflight(lang: Lang) -> Result<(), AuthorError> {
    const PYTHON: (&str, &str) = (
        "python3",
        "install Python 3.10 or later (Debian: apt install python3 python3-venv); the build installs its pinned packages into a venv in the cache",
    );
    const CARGO: (&str, &str) = (
        "cargo",
        "install Rust with rustup (https://rustup.rs); the wasm32-wasip2 target is added for you",
    );
    const NODE: (&str, &str) = (
        "node",
        "install Node.js 20 or later with npm; the build installs its pinned componentize-js into the cache",
    );
    const BASH: (&str, &str) = ("bash", "install bash");
    let needs: &[(&str, &str)] = match lang {
        Lang::Rust => &[CARGO],
        Lang::Python => &[BASH, PYTHON],
        Lang::Js => &[BASH, NODE, PYTHON],
        // The C and Go kits' builder (bindings, componentizing) is built
        // with cargo the first time.
        Lang::C => &[BASH, CARGO],
        Lang::Go => &[BASH, PYTHON, CARGO],
    };
    for (program, hint) in needs {
        if !on_path(program) {
            return Err(AuthorError::MissingProgram {
                lang,
                program,
                hint,
            });
        }
    }
    Ok(())
}

/// Whether `program` is an executable file in a `PATH` directory.
fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            std::fs::metadata(d.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// `cargo build` of a Rust project for the component target (added with
/// rustup when it is missing).
fn rust(project: &Project) -> Result<std::process::ExitStatus, AuthorError> {
    const TARGET: &str = "wasm32-wasip2";
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == TARGET)
        });
    if !installed && on_path("rustup") {
        eprintln!("adding the {TARGET} target (rustup target add {TARGET})");
        let _ = Command::new("rustup")
            .args(["target", "add", TARGET])
            .stdout(std::io::stderr())
            .status();
    }
    Command::new("cargo")
        .args(["build", "--release", "--target", TARGET, "--manifest-path"])
        .arg(project.dir.join("Cargo.toml"))
        .current_dir(&project.dir)
        .stdout(std::io::stderr())
        .status()
        .map_err(io("running cargo"))
}

/// The `[package] name` of the project's `Cargo.toml`.
fn crate_name(dir: &Path) -> Result<String, AuthorError> {
    let path = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&path).map_err(io(format!("reading {}", path.display())))?;
    let manifest: toml::Table = text.parse().map_err(|e| AuthorError::NotAProject {
        dir: dir.to_owned(),
        reason: format!("its Cargo.toml is not valid: {e}"),
    })?;
    manifest
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_owned)
        .ok_or_else(|| AuthorError::NotAProject {
            dir: dir.to_owned(),
            reason: "its Cargo.toml has no [package] name".into(),
        })
}

/// Replaces `staged` with a copy of the project's sources.
fn stage(project: &Path, staged: &Path) -> Result<(), AuthorError> {
    if staged.exists() {
        std::fs::remove_dir_all(staged).map_err(io(format!("clearing {}", staged.display())))?;
    }
    copy_sources(project, staged)
}

fn copy_sources(from: &Path, to: &Path) -> Result<(), AuthorError> {
    std::fs::create_dir_all(to).map_err(io(format!("creating {}", to.display())))?;
    for entry in std::fs::read_dir(from).map_err(io(format!("reading {}", from.display())))? {
        let entry = entry.map_err(io(format!("reading {}", from.display())))?;
        let name = entry.file_name();
        if NOT_SOURCES.iter().any(|n| name == *n) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let kind = entry
            .file_type()
            .map_err(io(format!("reading {}", src.display())))?;
        if kind.is_dir() {
            copy_sources(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).map_err(io(format!("copying {}", src.display())))?;
        }
    }
    Ok(())
}

fn absolute(path: &Path) -> Result<PathBuf, AuthorError> {
    std::path::absolute(path).map_err(io(format!("resolving {}", path.display())))
}

/// A fingerprint of the project's sources (every file's path, size and
/// modification time, outside build output): `dev` rebuilds when it moves.
pub fn fingerprint(dir: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, u64, Option<SystemTime>)>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        if NOT_SOURCES.iter().any(|n| name == *n) {
            continue;
        }
        let path = entry.path();
        match entry.metadata() {
            Ok(m) if m.is_dir() => walk(&path, out),
            Ok(m) => out.push((path, m.len(), m.modified().ok())),
            Err(_) => {}
        }
    }
}
