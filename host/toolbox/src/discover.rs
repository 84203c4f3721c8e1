//! Which toolbox a host serves, and which files it names: the toolbox
//! file given or found in a directory, else the embedded default of every
//! built-in tool.

use std::path::{Path, PathBuf};

use crate::file::{ComponentEntry, PolicySource, Source, Toolbox, ToolboxError};

/// The component, policy and lock files `toolbox` names: what a change of
/// should reload it (besides the toolbox file itself).
pub fn watched_files(toolbox: &Toolbox) -> Vec<PathBuf> {
    let mut files = Vec::new();
    // A moved pin reloads, and is checked again.
    if toolbox.has_remote() {
        files.push(toolbox.lock_path());
    }
    for entry in &toolbox.components {
        if let Source::File(path) = &entry.source {
            files.push(path.clone());
        }
        if let PolicySource::File(path) = &entry.policy {
            files.push(path.clone());
        }
    }
    files
}

/// The toolbox used when there is no toolbox file: every built-in tool
/// with its default policy, `.` (the `/workspace` of the policies) being
/// `dir` (the code runner comes with a mode that serves it).
pub fn embedded_default(dir: &Path) -> Toolbox {
    Toolbox::of(
        "<embedded default>",
        dir,
        toolhost_builtins::names()
            .into_iter()
            .map(|name| Source::Builtin(name.to_owned()))
            // The code runners come with a mode that serves them.
            .filter(|source| source.runner_language().is_none())
            .map(|source| ComponentEntry {
                source,
                policy: PolicySource::BuiltinDefault,
                prefix: None,
                advertise: Default::default(),
                line: 0,
            })
            .collect(),
    )
}

/// Where the toolbox comes from: `explicit` (`--config FILE`), else
/// `toolhost.toml` in `dir` when it exists, else the embedded default.
pub fn find_toolbox(explicit: Option<&Path>, dir: &Path) -> Result<Toolbox, ToolboxError> {
    let builtins = toolhost_builtins::names();
    match explicit {
        Some(path) => Toolbox::load(path, &builtins),
        None => {
            let candidate = dir.join(crate::file::DEFAULT_FILE_NAME);
            if candidate.is_file() {
                Toolbox::load(&candidate, &builtins)
            } else {
                Ok(embedded_default(dir))
            }
        }
    }
}
