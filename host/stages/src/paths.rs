//! The path stage: every declared path argument must resolve inside a
//! granted directory with the right permission, and write targets are
//! classified (create / overwrite / patch) before anything runs.
//!
//! The host's own look at the filesystem goes through `cap-std` directories
//! opened on each grant, so a `..` or a symlink cannot take the host out of
//! a granted directory either.

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde_json::Value;
use std::path::{Component, Path, PathBuf};
use toolhost_contract::{FailureCode, PathAccess, ToolDescriptor, ToolFailure};
use toolhost_policy::{FsGrant, FsMode, Sandbox};

/// A path argument after the path stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The argument's JSON Pointer.
    pub pointer: String,
    /// The absolute, normalized guest path.
    pub guest: String,
    /// The grant it falls in.
    pub grant: FsGrant,
    /// The path relative to the grant's root.
    pub relative: PathBuf,
    /// The access, with `write` resolved to `create` or `overwrite`.
    pub access: PathAccess,
    /// Whether it exists now.
    pub exists: bool,
}

/// How the host looks into a granted directory for its own checks (the
/// path stage, baselines): the tree itself ([`RealTree`]), or what a
/// script's next call will see there, its earlier calls' staged changes
/// included (the pipeline's view of a script's transaction).
pub trait GrantView: Sync {
    /// Whether `rel` (relative to `grant`'s root) exists; refused when it
    /// resolves outside the grant.
    fn exists(&self, grant: &FsGrant, rel: &Path) -> Result<bool, ViewError>;
    /// The file's bytes, at most `max + 1` of them (more than `max` means
    /// too large); `None` when it cannot be read.
    fn read(&self, grant: &FsGrant, rel: &Path, max: u64) -> Option<Vec<u8>>;
}

/// Why a [`GrantView`] could not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewError {
    /// The path resolves outside the grant (a symlink, `..`).
    Outside,
    /// The grant's directory cannot be opened.
    Unavailable(String),
}

/// The granted directories themselves, read through cap-std: a `..` or a
/// symlink cannot take the host out of a grant.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealTree;

/// Opens `grant`'s directory for the host's own access.
fn open_grant(grant: &FsGrant) -> std::io::Result<Dir> {
    Dir::open_ambient_dir(&grant.host, ambient_authority())
}

impl GrantView for RealTree {
    fn exists(&self, grant: &FsGrant, rel: &Path) -> Result<bool, ViewError> {
        let dir = open_grant(grant).map_err(|e| ViewError::Unavailable(e.to_string()))?;
        let target: &Path = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        match dir.metadata(target) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // The parent must still be inside the grant.
                if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty())
                    && let Err(pe) = dir.metadata(parent)
                    && pe.kind() != std::io::ErrorKind::NotFound
                {
                    return Err(ViewError::Outside);
                }
                Ok(false)
            }
            Err(_) => Err(ViewError::Outside),
        }
    }

    fn read(&self, grant: &FsGrant, rel: &Path, max: u64) -> Option<Vec<u8>> {
        use std::io::Read as _;
        let f = open_grant(grant).ok()?.open(rel).ok()?;
        let mut buf = Vec::new();
        f.take(max.saturating_add(1)).read_to_end(&mut buf).ok()?;
        Some(buf)
    }
}

fn denied(msg: String) -> ToolFailure {
    ToolFailure::new(FailureCode::PathDenied, msg)
}

/// Normalizes a guest path lexically: relative paths are joined onto `cwd`;
/// `.` is dropped; `..` pops, and popping past `/` is an error.
pub fn normalize(path: &str, cwd: &str) -> Result<String, String> {
    let joined = if path.starts_with('/') {
        PathBuf::from(path)
    } else {
        Path::new(cwd).join(path)
    };
    let mut parts: Vec<String> = Vec::new();
    for c in joined.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(format!("`{path}` climbs above the root"));
                }
            }
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::Prefix(_) => return Err(format!("`{path}` is not a guest path")),
        }
    }
    Ok(format!("/{}", parts.join("/")))
}

/// The grant containing `guest` (longest prefix) and the path relative to it.
fn find_grant<'a>(sandbox: &'a Sandbox, guest: &str) -> Option<(&'a FsGrant, PathBuf)> {
    sandbox
        .fs
        .iter()
        .filter_map(|g| {
            let root = g.guest.trim_end_matches('/');
            let rest = guest.strip_prefix(root)?;
            if !(rest.is_empty() || rest.starts_with('/') || root.is_empty()) {
                return None;
            }
            Some((g, root.len(), PathBuf::from(rest.trim_start_matches('/'))))
        })
        .max_by_key(|(_, len, _)| *len)
        .map(|(g, _, rel)| (g, rel))
}

/// Runs the path stage for every declared path argument of `tool`,
/// against the granted directories themselves.
pub fn check_paths(
    tool: &ToolDescriptor,
    args: &Value,
    sandbox: &Sandbox,
) -> Result<Vec<ResolvedPath>, ToolFailure> {
    check_paths_in(&RealTree, tool, args, sandbox)
}

/// Runs the path stage as [`check_paths`] does, looking into the grants
/// through `view`.
pub fn check_paths_in(
    view: &dyn GrantView,
    tool: &ToolDescriptor,
    args: &Value,
    sandbox: &Sandbox,
) -> Result<Vec<ResolvedPath>, ToolFailure> {
    let cwd = sandbox.fs.first().map_or("/", |g| g.guest.as_str());
    let mut out = Vec::new();
    for param in &tool.paths {
        let Some(raw) = args.pointer(&param.pointer) else {
            continue; // optional and absent
        };
        let Some(raw) = raw.as_str() else {
            return Err(ToolFailure::new(
                FailureCode::InvalidArguments,
                format!("`{}` must be a path string", param.pointer),
            ));
        };
        if raw.contains('\0') {
            // No filesystem path holds a NUL: refuse it plainly instead of
            // letting the lookup below fail with a misleading reason.
            return Err(denied(format!(
                "`{}` contains a NUL byte, which no path may contain",
                raw.escape_debug()
            )));
        }
        let guest = normalize(raw, cwd).map_err(|e| denied(format!("path {e}")))?;
        let Some((grant, relative)) = find_grant(sandbox, &guest) else {
            let granted: Vec<&str> = sandbox.fs.iter().map(|g| g.guest.as_str()).collect();
            return Err(denied(if granted.is_empty() {
                format!("`{raw}` is not accessible: this tool is granted no directories")
            } else {
                format!(
                    "`{raw}` is outside the granted directories ({})",
                    granted.join(", ")
                )
            }));
        };
        if param.access.is_write() && grant.mode == FsMode::ReadOnly {
            return Err(denied(format!(
                "`{raw}` is in {}, which is granted read-only",
                grant.guest
            )));
        }
        // A `..` or a symlink that leaves the grant is refused here, not
        // followed to a path on the host.
        let exists = match view.exists(grant, &relative) {
            Ok(e) => e,
            Err(ViewError::Unavailable(e)) => {
                return Err(ToolFailure::new(
                    FailureCode::HostError,
                    format!("granted directory {} cannot be opened: {e}", grant.guest),
                ));
            }
            Err(ViewError::Outside) => {
                return Err(denied(format!(
                    "`{raw}` resolves outside the granted directory {} (through a symlink or `..`)",
                    grant.guest
                )));
            }
        };
        let access = match (param.access, exists) {
            (PathAccess::Write, true) => PathAccess::Overwrite,
            (PathAccess::Write, false) => PathAccess::Create,
            (a, _) => a,
        };
        match (access, exists) {
            (PathAccess::Create, true) => {
                return Err(ToolFailure::new(
                    FailureCode::PathConflict,
                    format!("`{raw}` already exists; this tool only creates new files"),
                ));
            }
            (PathAccess::Overwrite | PathAccess::Patch, false) => {
                return Err(ToolFailure::new(
                    FailureCode::PathConflict,
                    format!("`{raw}` does not exist"),
                ));
            }
            _ => {}
        }
        out.push(ResolvedPath {
            pointer: param.pointer.clone(),
            guest,
            grant: grant.clone(),
            relative,
            access,
            exists,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization() {
        assert_eq!(normalize("a/b", "/workspace").unwrap(), "/workspace/a/b");
        assert_eq!(
            normalize("/workspace/./a/../b", "/").unwrap(),
            "/workspace/b"
        );
        assert_eq!(
            normalize("../etc/passwd", "/workspace").unwrap(),
            "/etc/passwd"
        );
        assert!(normalize("/../x", "/").is_err());
        assert_eq!(normalize(".", "/workspace").unwrap(), "/workspace");
    }

    #[test]
    fn a_nul_byte_is_refused_plainly() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        let tool = ToolDescriptor::from_raw(
            "t".into(),
            "t".into(),
            r#"{"type":"object"}"#,
            r#"{"type":"object"}"#,
            Default::default(),
            vec![toolhost_contract::PathParam {
                pointer: "/path".into(),
                access: PathAccess::Read,
            }],
        )
        .unwrap();
        let sandbox = Sandbox {
            fs: vec![FsGrant {
                host: dir.path().to_owned(),
                guest: "/workspace".into(),
                mode: FsMode::ReadOnly,
            }],
            ..Sandbox::default()
        };
        let args = serde_json::json!({"path": "a.txt\u{0}../../etc/passwd"});
        let e = check_paths(&tool, &args, &sandbox).unwrap_err();
        assert_eq!(e.code, FailureCode::PathDenied.into());
        assert!(e.message.contains("contains a NUL byte"), "{}", e.message);
        assert!(e.message.contains("a.txt\\0"), "escaped: {}", e.message);
        let ok = check_paths(&tool, &serde_json::json!({"path": "a.txt"}), &sandbox).unwrap();
        assert!(ok[0].exists);
    }
}
