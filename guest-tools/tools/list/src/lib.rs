//! The `list` tool: lists a directory, optionally recursively and filtered
//! by a glob over paths relative to the listed directory.
//!
//! Symbolic links are reported as `symlink` and never followed. Entries are
//! sorted by relative path. The walk visits at most [`MAX_VISITED`] entries.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_kit::{Annotations, Content, PathAccess, PathParam, Tool, ToolError};

/// Default maximum number of entries returned.
pub const DEFAULT_LIMIT: usize = 200;
/// Largest accepted `limit`.
pub const MAX_LIMIT: usize = 2000;
/// The walk stops after visiting this many entries (and reports `truncated`).
pub const MAX_VISITED: usize = 100_000;

/// Arguments of `list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// The directory to list; relative paths are resolved against the working directory.
    pub path: String,
    /// Glob matched against each entry's path relative to `path`, with `/`
    /// separators; `*` does not cross `/`, `**` does (e.g. `**/*.rs`).
    #[serde(default)]
    pub glob: Option<String>,
    /// Walk subdirectories. Defaults to true when the glob contains `**` or `/`,
    /// false otherwise.
    #[serde(default)]
    pub recursive: Option<bool>,
    /// Maximum number of entries returned (default 200, at most 2000).
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 2000))]
    pub limit: usize,
}

/// Progress is reported (and cancellation checked) every this many
/// entries visited: a big tree only.
const PROGRESS_EVERY: usize = 1_000;

fn default_limit() -> usize {
    DEFAULT_LIMIT
}

/// Kind of a directory entry.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EntryType {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// Anything else.
    Other,
}

/// One entry.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Path relative to the listed directory, `/`-separated.
    pub path: String,
    /// Kind of entry.
    #[serde(rename = "type")]
    pub kind: EntryType,
    /// Size in bytes for files; 0 for other kinds.
    pub size: u64,
}

/// Value of `list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListValue {
    /// The listed directory (resolved path).
    pub path: String,
    /// Matching entries sorted by path, at most `limit`.
    pub entries: Vec<Entry>,
    /// Number of matching entries found.
    pub total: usize,
    /// True when entries were left out (over `limit`, or the walk hit its size cap).
    pub truncated: bool,
}

/// The `list` tool.
pub struct ListTool;

impl Tool for ListTool {
    const NAME: &'static str = "list";
    const DESCRIPTION: &'static str = "Lists the entries of a directory, sorted by path. \
        Set recursive to walk subdirectories, and glob (e.g. \"**/*.rs\") to filter by path \
        relative to the directory. Symbolic links are shown, not followed.";
    type Args = ListArgs;
    type Output = ListValue;

    fn title() -> Option<&'static str> {
        Some("List files")
    }

    fn annotations() -> Annotations {
        Annotations::READ_ONLY_IDEMPOTENT
    }

    fn paths() -> Vec<PathParam> {
        vec![PathParam::new("/path", PathAccess::List)]
    }

    fn execute(args: ListArgs) -> Result<ListValue, ToolError> {
        if args.limit == 0 || args.limit > MAX_LIMIT {
            return Err(ToolError::invalid_arguments(format!(
                "limit must be between 1 and {MAX_LIMIT}"
            )));
        }
        let matcher = match &args.glob {
            Some(g) => Some(
                GlobBuilder::new(g)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| ToolError::invalid_arguments(format!("invalid glob: {e}")))?
                    .compile_matcher(),
            ),
            None => None,
        };
        let recursive = args.recursive.unwrap_or_else(|| {
            args.glob
                .as_deref()
                .is_some_and(|g| g.contains("**") || g.contains('/'))
        });
        let root = toolhost_kit::resolve_path(&args.path);
        let meta = std::fs::metadata(&root).map_err(|e| ToolError::io(&e, &root))?;
        if !meta.is_dir() {
            return Err(ToolError::new(
                "not_a_directory",
                format!("{} is not a directory", root.display()),
            ));
        }
        let mut walk = Walk {
            matcher,
            recursive,
            found: vec![],
            visited: 0,
            capped: false,
        };
        walk.dir(&root, "")?;
        let mut entries = walk.found;
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        let total = entries.len();
        entries.truncate(args.limit);
        // Sizes only for the entries returned: one stat each, instead of one
        // per file of the whole tree.
        for e in &mut entries {
            if e.kind == EntryType::File {
                e.size = std::fs::symlink_metadata(root.join(&e.path)).map_or(0, |m| m.len());
            }
        }
        Ok(ListValue {
            path: root.display().to_string(),
            truncated: walk.capped || total > entries.len(),
            entries,
            total,
        })
    }

    fn render(args: &ListArgs, v: &ListValue) -> Option<Vec<Content>> {
        Some(vec![Content::text(render_text(args, v))])
    }
}

struct Walk {
    matcher: Option<GlobMatcher>,
    recursive: bool,
    found: Vec<Entry>,
    visited: usize,
    capped: bool,
}

impl Walk {
    fn dir(&mut self, dir: &Path, rel: &str) -> Result<(), ToolError> {
        let read = match std::fs::read_dir(dir) {
            Ok(r) => r,
            // The root must be readable; unreadable subdirectories are skipped.
            Err(e) if rel.is_empty() => return Err(ToolError::io(&e, dir)),
            Err(_) => return Ok(()),
        };
        let mut children = vec![];
        for item in read {
            let Ok(item) = item else { continue };
            self.visited += 1;
            if self.visited > MAX_VISITED {
                self.capped = true;
                return Ok(());
            }
            if self.visited.is_multiple_of(PROGRESS_EVERY) {
                let ctx = toolhost_kit::ctx();
                if ctx.cancelled() {
                    return Err(ToolError::new(
                        "cancelled",
                        "the caller cancelled the listing",
                    ));
                }
                let message = format!("{} entries visited", self.visited);
                ctx.progress(self.visited as u64, None, Some(&message));
            }
            let name = item.file_name().to_string_lossy().into_owned();
            let child_rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let (kind, size) = match item.file_type() {
                Ok(t) if t.is_symlink() => (EntryType::Symlink, 0),
                Ok(t) if t.is_dir() => (EntryType::Dir, 0),
                Ok(t) if t.is_file() => (EntryType::File, 0),
                _ => (EntryType::Other, 0),
            };
            if self.matcher.as_ref().is_none_or(|m| m.is_match(&child_rel)) {
                self.found.push(Entry {
                    path: child_rel.clone(),
                    kind,
                    size,
                });
            }
            if self.recursive && kind == EntryType::Dir {
                children.push((item.path(), child_rel));
            }
        }
        children.sort();
        for (path, child_rel) in children {
            if self.capped {
                break;
            }
            self.dir(&path, &child_rel)?;
        }
        Ok(())
    }
}

/// `ls -F`-like rendering: `dir/`, `link@`, files with their size.
pub fn render_text(args: &ListArgs, v: &ListValue) -> String {
    let mut out = v.path.clone();
    if let Some(g) = &args.glob {
        out.push_str(&format!(" (glob {g})"));
    }
    out.push('\n');
    if v.entries.is_empty() {
        out.push_str(if args.glob.is_some() {
            "(no entries match the glob)\n"
        } else {
            "(empty directory)\n"
        });
        return out;
    }
    for e in &v.entries {
        match e.kind {
            EntryType::Dir => out.push_str(&format!("{}/\n", e.path)),
            EntryType::Symlink => out.push_str(&format!("{}@\n", e.path)),
            EntryType::Other => out.push_str(&format!("{} (special file)\n", e.path)),
            EntryType::File => out.push_str(&format!("{}  ({})\n", e.path, human_size(e.size))),
        }
    }
    if v.truncated {
        let more = v.total.saturating_sub(v.entries.len());
        if more > 0 {
            out.push_str(&format!(
                "({} of {} entries shown; raise limit or narrow the glob to see more)\n",
                v.entries.len(),
                v.total
            ));
        } else {
            out.push_str("(the walk stopped early: too many entries; narrow the path or glob)\n");
        }
    }
    out
}

fn human_size(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

toolhost_kit::export_tools!(ListTool);

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("src/bin")).unwrap();
        std::fs::create_dir_all(p.join("docs")).unwrap();
        std::fs::write(p.join("Cargo.toml"), "[package]\n").unwrap();
        std::fs::write(p.join("src/lib.rs"), "x").unwrap();
        std::fs::write(p.join("src/bin/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(p.join("docs/a.md"), "").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(p.join("src"), p.join("link")).unwrap();
        d
    }

    #[test]
    fn a_big_tree_reports_progress_and_a_cancelled_listing_stops() {
        use toolhost_kit::context::{Report, cancel_for_test, take_reports};
        let d = tempfile::tempdir().unwrap();
        for i in 0..2_500 {
            std::fs::write(d.path().join(format!("f{i}")), "").unwrap();
        }
        take_reports();
        let v = list(d.path(), None, None, 10);
        assert_eq!(v.total, 2_500);
        let reports = take_reports();
        assert_eq!(
            reports,
            vec![
                Report::Progress {
                    done: 1_000,
                    total: None,
                    message: Some("1000 entries visited".into())
                },
                Report::Progress {
                    done: 2_000,
                    total: None,
                    message: Some("2000 entries visited".into())
                },
            ]
        );
        cancel_for_test(true);
        let e = ListTool::execute(ListArgs {
            path: d.path().display().to_string(),
            glob: None,
            recursive: None,
            limit: 10,
        })
        .unwrap_err();
        cancel_for_test(false);
        assert_eq!(e.code, "cancelled");
    }

    fn list(root: &Path, glob: Option<&str>, recursive: Option<bool>, limit: usize) -> ListValue {
        ListTool::execute(ListArgs {
            path: root.display().to_string(),
            glob: glob.map(str::to_string),
            recursive,
            limit,
        })
        .unwrap()
    }

    fn paths(v: &ListValue) -> Vec<&str> {
        v.entries.iter().map(|e| e.path.as_str()).collect()
    }

    #[test]
    fn top_level() {
        let d = tree();
        let v = list(d.path(), None, None, 200);
        assert_eq!(paths(&v), vec!["Cargo.toml", "docs", "link", "src"]);
        assert_eq!(v.entries[0].kind, EntryType::File);
        assert_eq!(v.entries[0].size, 10);
        assert_eq!(v.entries[1].kind, EntryType::Dir);
        assert_eq!(v.entries[2].kind, EntryType::Symlink);
        assert!(!v.truncated);
        let json = serde_json::to_value(&v.entries[0]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"path": "Cargo.toml", "type": "file", "size": 10})
        );
    }

    #[test]
    fn recursive_glob_does_not_follow_symlinks() {
        let d = tree();
        let v = list(d.path(), Some("**/*.rs"), None, 200);
        assert_eq!(paths(&v), vec!["src/bin/main.rs", "src/lib.rs"]);
        let v = list(d.path(), None, Some(true), 200);
        assert_eq!(
            paths(&v),
            vec![
                "Cargo.toml",
                "docs",
                "docs/a.md",
                "link",
                "src",
                "src/bin",
                "src/bin/main.rs",
                "src/lib.rs"
            ]
        );
        // `*` does not cross `/`.
        let v = list(d.path(), Some("*.rs"), Some(true), 200);
        assert!(v.entries.is_empty());
        let v = list(d.path(), Some("src/*.rs"), None, 200);
        assert_eq!(paths(&v), vec!["src/lib.rs"]);
    }

    #[test]
    fn glob_without_match_and_limit() {
        let d = tree();
        let v = list(d.path(), Some("**/*.py"), None, 200);
        assert!(v.entries.is_empty());
        assert_eq!(v.total, 0);
        let args = ListArgs {
            path: "x".into(),
            glob: Some("**/*.py".into()),
            recursive: None,
            limit: 200,
        };
        assert!(render_text(&args, &v).contains("no entries match"));
        let v = list(d.path(), None, Some(true), 3);
        assert_eq!(paths(&v), vec!["Cargo.toml", "docs", "docs/a.md"]);
        assert_eq!(v.total, 8);
        assert!(v.truncated);
    }

    #[test]
    fn failures() {
        let d = tree();
        let run = |path: &Path, glob: Option<&str>, limit: usize| {
            ListTool::execute(ListArgs {
                path: path.display().to_string(),
                glob: glob.map(str::to_string),
                recursive: None,
                limit,
            })
            .unwrap_err()
            .code
        };
        assert_eq!(run(&d.path().join("missing"), None, 10), "not_found");
        assert_eq!(
            run(&d.path().join("Cargo.toml"), None, 10),
            "not_a_directory"
        );
        assert_eq!(run(d.path(), Some("a[b"), 10), "invalid_arguments");
        assert_eq!(run(d.path(), None, 5000), "invalid_arguments");
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(10), "10 B");
        assert_eq!(human_size(1536), "1.5 KiB");
    }
}
