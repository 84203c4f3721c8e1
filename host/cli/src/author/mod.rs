//! Writing a tool without reading a guide: `toolhost new` lays out a tool
//! project from a kit language's template, `toolhost build` builds it with
//! that language's kit and pinned toolchain (installed into the cache the
//! first time), and `toolhost dev` rebuilds it whenever its sources change
//! while `serve` hot-reloads what it built.
//!
//! The kits (the contract's WIT, each language's kit, build script and
//! template) are embedded in the binary ([`kits`]), so this works from a
//! `uvx`, `npx` or `cargo install` install with no checkout of toolhost.
//! A project is a directory with a `toolhost.toml` toolbox naming the
//! component it builds (`target/NAME.wasm`) and its `policy.toml`: `call`,
//! `serve` and `dev` in that directory serve it as any toolbox is served.

mod compile;
pub mod kits;
mod new;

pub use compile::{Built, Project, build, fingerprint, project_of};
pub use new::{Created, create};

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// A language with a tool kit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// Rust (`cargo`, the `wasm32-wasip2` target).
    Rust,
    /// Python (componentize-py).
    Python,
    /// JavaScript (componentize-js).
    Js,
    /// C (clang and wasi-libc, wrapped with the preview 1 adapter).
    C,
    /// Go (Go's wasip1 port, wrapped with the same adapter).
    Go,
}

impl Lang {
    /// Every kit language.
    pub const ALL: [Lang; 5] = [Lang::Rust, Lang::Python, Lang::Js, Lang::C, Lang::Go];

    /// Its name on the command line, and its directory in `guest-tools/`.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
            Lang::C => "c",
            Lang::Go => "go",
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Lang {
    type Err = String;

    fn from_str(s: &str) -> Result<Lang, String> {
        let s = s.to_ascii_lowercase();
        let alias = match s.as_str() {
            "rs" => "rust",
            "py" => "python",
            "javascript" | "node" => "js",
            "golang" => "go",
            other => other,
        };
        Lang::ALL
            .into_iter()
            .find(|l| l.name() == alias)
            .ok_or_else(|| {
                format!(
                    "no kit for `{s}`: choose one of {}",
                    Lang::ALL.map(Lang::name).join(", ")
                )
            })
    }
}

/// Why a project could not be created or built. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum AuthorError {
    /// The name cannot be a tool's name.
    #[error(
        "`{0}` cannot name a tool: use lower-case letters, digits, `_` or `-`, starting with a letter (for example `word_count`)"
    )]
    BadName(String),
    /// `new` would overwrite something.
    #[error("{} already exists: choose another name, or remove it first", .0.display())]
    Exists(PathBuf),
    /// No `toolhost.toml` naming a component to build.
    #[error(
        "no tool project in {}: {reason} (`toolhost new NAME --lang LANG` writes one)",
        dir.display()
    )]
    NotAProject {
        /// The directory.
        dir: PathBuf,
        /// What is missing.
        reason: String,
    },
    /// No language's sources were found.
    #[error(
        "cannot tell the language of the project in {}: none of Cargo.toml (rust), app.py (python), app.js (js), *.go (go) or *.c (c) is there",
        .0.display()
    )]
    UnknownLanguage(PathBuf),
    /// A program the build needs is not installed.
    #[error("building a {lang} tool needs `{program}`, which is not on PATH: {hint}")]
    MissingProgram {
        /// The project's language.
        lang: Lang,
        /// The program.
        program: &'static str,
        /// How to install it.
        hint: &'static str,
    },
    /// The language's build failed; its output went to stderr.
    #[error("the {lang} build failed ({status}); its output is above")]
    BuildFailed {
        /// The project's language.
        lang: Lang,
        /// How the build process ended.
        status: std::process::ExitStatus,
    },
    /// The build ended but left no component.
    #[error("the {lang} build wrote no component at {}", path.display())]
    NoComponent {
        /// The project's language.
        lang: Lang,
        /// Where the component was expected.
        path: PathBuf,
    },
    /// Reading or writing a file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, and to which path.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

/// An [`AuthorError::Io`] for `what`.
fn io(what: impl fmt::Display) -> impl FnOnce(std::io::Error) -> AuthorError {
    let what = what.to_string();
    move |source| AuthorError::Io { what, source }
}

/// The tool name for a project name: `word-count` → `word_count`.
pub fn tool_name(project: &str) -> Result<String, AuthorError> {
    let name = project.replace('-', "_");
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 64;
    if ok {
        Ok(name)
    } else {
        Err(AuthorError::BadName(project.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(tool_name("word-count").ok().as_deref(), Some("word_count"));
        assert_eq!(tool_name("wc2").ok().as_deref(), Some("wc2"));
        for bad in ["", "2wc", "Word", "a b", "a/b", "../x", "é"] {
            assert!(
                matches!(tool_name(bad), Err(AuthorError::BadName(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn languages() {
        for l in Lang::ALL {
            assert_eq!(l.name().parse::<Lang>(), Ok(l));
        }
        assert_eq!("Python".parse::<Lang>(), Ok(Lang::Python));
        assert_eq!("golang".parse::<Lang>(), Ok(Lang::Go));
        let err = "cobol".parse::<Lang>().err().unwrap_or_default();
        assert!(err.contains("rust, python, js, c, go"), "{err}");
    }
}
