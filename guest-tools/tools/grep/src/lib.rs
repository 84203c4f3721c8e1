//! The `grep` tool: searches text files under a directory for a regular
//! expression.
//!
//! The walk is depth-first in name order (deterministic), never follows
//! symbolic links, and skips binary (NUL bytes) and non-UTF-8 files and files
//! over [`MAX_FILE_BYTES`]. Include/exclude globs without a `/` match file (or
//! directory) names; globs with a `/` match paths relative to `path`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_kit::text::{decode, split_lines, truncate_chars};
use toolhost_kit::{Annotations, Content, PathAccess, PathParam, Tool, ToolError};

/// Default maximum number of matches.
pub const DEFAULT_MAX_MATCHES: usize = 100;
/// Largest accepted `max_matches`.
pub const MAX_MATCHES: usize = 1000;
/// Largest accepted `context`.
pub const MAX_CONTEXT: usize = 10;
/// Files larger than this are skipped.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Matched and context lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 500;
/// The walk stops after visiting this many entries.
pub const MAX_VISITED: usize = 100_000;

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// Regular expression (Rust `regex` syntax), matched against each line.
    pub pattern: String,
    /// Directory (or single file) to search; relative paths are resolved against the working directory.
    pub path: String,
    /// Only search files matching one of these globs (e.g. `*.rs`, `src/**/*.ts`).
    #[serde(default)]
    pub include: Vec<String>,
    /// Skip files and directories matching one of these globs (e.g. `target`, `*.min.js`).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Lines of context to return before and after each match (0-10).
    #[serde(default)]
    #[schemars(range(max = 10))]
    pub context: usize,
    /// Maximum number of matching lines returned (default 100, at most 1000).
    #[serde(default = "default_max_matches")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_matches: usize,
    /// Match without regard to case.
    #[serde(default)]
    pub case_insensitive: bool,
}

fn default_max_matches() -> usize {
    DEFAULT_MAX_MATCHES
}

/// One matching line.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// The file (resolved path).
    pub path: String,
    /// 1-based line number.
    pub line: usize,
    /// The line's text (cut at 500 characters).
    pub text: String,
    /// Up to `context` lines before the match.
    pub before: Vec<String>,
    /// Up to `context` lines after the match.
    pub after: Vec<String>,
}

/// Value of `grep`.
#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrepValue {
    /// Matching lines, in walk order (files by path, lines ascending).
    pub matches: Vec<Match>,
    /// Text files searched.
    pub files_searched: usize,
    /// Files skipped as binary, not UTF-8, too large or unreadable.
    pub files_skipped: usize,
    /// True when more matches exist than were returned.
    pub truncated: bool,
}

/// The `grep` tool.
pub struct GrepTool;

impl Tool for GrepTool {
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str = "Searches text files under a directory for lines matching \
        a regular expression (Rust regex syntax). Filter files with include/exclude globs \
        (a glob without '/' matches the file name, e.g. \"*.rs\"); ask for context lines \
        around each match. Binary and non-UTF-8 files are skipped; symbolic links are not followed.";
    type Args = GrepArgs;
    type Output = GrepValue;

    fn title() -> Option<&'static str> {
        Some("Search file contents")
    }

    fn annotations() -> Annotations {
        Annotations {
            read_only: true,
            idempotent: true,
            ..Annotations::NONE
        }
    }

    fn paths() -> Vec<PathParam> {
        vec![PathParam {
            pointer: "/path",
            access: PathAccess::List,
        }]
    }

    fn execute(args: GrepArgs) -> Result<GrepValue, ToolError> {
        if args.context > MAX_CONTEXT {
            return Err(ToolError::invalid_arguments(format!(
                "context must be at most {MAX_CONTEXT}"
            )));
        }
        if args.max_matches == 0 || args.max_matches > MAX_MATCHES {
            return Err(ToolError::invalid_arguments(format!(
                "max_matches must be between 1 and {MAX_MATCHES}"
            )));
        }
        let regex = RegexBuilder::new(&args.pattern)
            .case_insensitive(args.case_insensitive)
            .size_limit(16 << 20)
            .build()
            .map_err(|e| ToolError::invalid_arguments(format!("invalid regex: {e}")))?;
        let mut search = Search {
            regex,
            include: Filter::new(&args.include, "include")?,
            exclude: Filter::new(&args.exclude, "exclude")?,
            context: args.context,
            max: args.max_matches,
            value: GrepValue {
                matches: vec![],
                files_searched: 0,
                files_skipped: 0,
                truncated: false,
            },
            visited: 0,
        };
        let root = toolhost_kit::resolve_path(&args.path);
        let meta = std::fs::metadata(&root).map_err(|e| ToolError::io(&e, &root))?;
        if meta.is_dir() {
            search.dir(&root, "")?;
        } else {
            search.file(&root, meta.len());
        }
        Ok(search.value)
    }

    fn render(args: &GrepArgs, v: &GrepValue) -> Option<Vec<Content>> {
        Some(vec![Content::text(render_text(args, v))])
    }
}

/// Globs split by whether they match names or relative paths.
struct Filter {
    names: GlobSet,
    paths: GlobSet,
    empty: bool,
}

impl Filter {
    fn new(globs: &[String], what: &str) -> Result<Self, ToolError> {
        let (mut names, mut paths) = (GlobSetBuilder::new(), GlobSetBuilder::new());
        for g in globs {
            let bad = |e: globset::Error| {
                ToolError::invalid_arguments(format!("invalid {what} glob {g:?}: {e}"))
            };
            if g.contains('/') {
                let pattern = g.trim_start_matches("./");
                paths.add(
                    GlobBuilder::new(pattern)
                        .literal_separator(true)
                        .build()
                        .map_err(bad)?,
                );
            } else {
                names.add(Glob::new(g).map_err(bad)?);
            }
        }
        let build = |b: GlobSetBuilder| {
            b.build()
                .map_err(|e| ToolError::invalid_arguments(format!("invalid {what} glob: {e}")))
        };
        Ok(Filter {
            names: build(names)?,
            paths: build(paths)?,
            empty: globs.is_empty(),
        })
    }

    fn matches(&self, name: &str, rel: &str) -> bool {
        self.names.is_match(name) || self.paths.is_match(rel)
    }
}

struct Search {
    regex: Regex,
    include: Filter,
    exclude: Filter,
    context: usize,
    max: usize,
    value: GrepValue,
    visited: usize,
}

impl Search {
    fn done(&self) -> bool {
        self.value.truncated
    }

    fn dir(&mut self, dir: &Path, rel: &str) -> Result<(), ToolError> {
        let read = match std::fs::read_dir(dir) {
            Ok(r) => r,
            Err(e) if rel.is_empty() => return Err(ToolError::io(&e, dir)),
            Err(_) => return Ok(()),
        };
        let mut items: Vec<(String, PathBuf, bool, u64)> = vec![];
        for item in read.flatten() {
            self.visited += 1;
            if self.visited > MAX_VISITED {
                self.value.truncated = true;
                return Ok(());
            }
            let Ok(t) = item.file_type() else { continue };
            if t.is_symlink() || !(t.is_dir() || t.is_file()) {
                continue;
            }
            let len = if t.is_file() {
                item.metadata().map(|m| m.len()).unwrap_or(0)
            } else {
                0
            };
            let name = item.file_name().to_string_lossy().into_owned();
            items.push((name, item.path(), t.is_dir(), len));
        }
        items.sort();
        for (name, path, is_dir, len) in items {
            if self.done() {
                break;
            }
            let child_rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if self.exclude.matches(&name, &child_rel) {
                continue;
            }
            if is_dir {
                self.dir(&path, &child_rel)?;
            } else if self.include.empty || self.include.matches(&name, &child_rel) {
                self.file(&path, len);
            }
        }
        Ok(())
    }

    fn file(&mut self, path: &Path, len: u64) {
        if len > MAX_FILE_BYTES {
            self.value.files_skipped += 1;
            return;
        }
        let Ok(bytes) = std::fs::read(path) else {
            self.value.files_skipped += 1;
            return;
        };
        let Ok(text) = decode(bytes) else {
            self.value.files_skipped += 1;
            return;
        };
        self.value.files_searched += 1;
        let lines = split_lines(&text);
        let shown = path.display().to_string();
        let cut = |l: &&str| truncate_chars(l, MAX_LINE_CHARS).0.to_string();
        for (i, line) in lines.iter().enumerate() {
            if !self.regex.is_match(line) {
                continue;
            }
            if self.value.matches.len() == self.max {
                self.value.truncated = true;
                return;
            }
            let before = lines[i.saturating_sub(self.context)..i].iter().map(cut);
            let after_end = (i + 1 + self.context).min(lines.len());
            let after = lines[i + 1..after_end].iter().map(cut);
            self.value.matches.push(Match {
                path: shown.clone(),
                line: i + 1,
                text: cut(line),
                before: before.collect(),
                after: after.collect(),
            });
        }
    }
}

/// ripgrep-like rendering: `path:line:text` for matches, `path-line-text`
/// for context, `--` between groups.
pub fn render_text(args: &GrepArgs, v: &GrepValue) -> String {
    if v.matches.is_empty() {
        return format!(
            "No matches for /{}/ in {} ({} file{} searched)\n",
            args.pattern,
            args.path,
            v.files_searched,
            if v.files_searched == 1 { "" } else { "s" }
        );
    }
    let files = {
        let mut f: Vec<&str> = v.matches.iter().map(|m| m.path.as_str()).collect();
        f.dedup();
        f.len()
    };
    let mut out = format!(
        "{} match{} in {} file{} ({} searched)\n",
        v.matches.len(),
        if v.matches.len() == 1 { "" } else { "es" },
        files,
        if files == 1 { "" } else { "s" },
        v.files_searched
    );
    let is_match: HashSet<(&str, usize)> = v
        .matches
        .iter()
        .map(|m| (m.path.as_str(), m.line))
        .collect();
    // The last line printed, per file, so overlapping context is not repeated.
    let mut last: Option<(&str, usize)> = None;
    for m in &v.matches {
        let first = m.line.saturating_sub(m.before.len());
        if args.context > 0 && last.is_some_and(|(p, end)| p != m.path || first > end + 1) {
            out.push_str("--\n");
        }
        let window = m
            .before
            .iter()
            .chain(std::iter::once(&m.text))
            .chain(m.after.iter());
        for (k, text) in window.enumerate() {
            let n = first + k;
            if last.is_some_and(|(p, end)| p == m.path && n <= end) {
                continue;
            }
            let sep = if is_match.contains(&(m.path.as_str(), n)) {
                ':'
            } else {
                '-'
            };
            out.push_str(&format!("{}{sep}{n}{sep}{text}\n", m.path));
        }
        let end = m.line + m.after.len();
        last = Some(match last {
            Some((p, e)) if p == m.path => (p, e.max(end)),
            _ => (m.path.as_str(), end),
        });
    }
    if v.truncated {
        out.push_str(&format!(
            "(more results: stopped after {} matches; narrow the pattern or path, or raise max_matches)\n",
            v.matches.len()
        ));
    }
    out
}

toolhost_kit::export_tools!(GrepTool);

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("src")).unwrap();
        std::fs::create_dir_all(p.join("target")).unwrap();
        std::fs::write(
            p.join("src/a.rs"),
            "one\ntwo\nfn alpha() {}\nthree\nfour\nfn beta() {}\n",
        )
        .unwrap();
        std::fs::write(p.join("src/b.txt"), "FN gamma\r\n").unwrap();
        std::fs::write(p.join("target/gen.rs"), "fn generated() {}\n").unwrap();
        std::fs::write(p.join("bin.dat"), b"fn \0binary").unwrap();
        std::fs::write(p.join("latin1.txt"), b"fn caf\xe9").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(p.join("src"), p.join("zlink")).unwrap();
        d
    }

    fn args(pattern: &str, path: &Path) -> GrepArgs {
        GrepArgs {
            pattern: pattern.into(),
            path: path.display().to_string(),
            include: vec![],
            exclude: vec![],
            context: 0,
            max_matches: 100,
            case_insensitive: false,
        }
    }

    fn hits(v: &GrepValue, root: &Path) -> Vec<(String, usize)> {
        v.matches
            .iter()
            .map(|m| {
                let rel = Path::new(&m.path).strip_prefix(root).unwrap();
                (rel.display().to_string(), m.line)
            })
            .collect()
    }

    #[test]
    fn basic_search_skips_binary_and_symlinks() {
        let d = tree();
        let v = GrepTool::execute(args(r"^fn \w+", d.path())).unwrap();
        assert_eq!(
            hits(&v, d.path()),
            vec![
                ("src/a.rs".into(), 3),
                ("src/a.rs".into(), 6),
                ("target/gen.rs".into(), 1)
            ]
        );
        assert_eq!(v.files_searched, 3);
        assert_eq!(v.files_skipped, 2);
        assert!(!v.truncated);
    }

    #[test]
    fn case_include_exclude() {
        let d = tree();
        let mut a = args("fn", d.path());
        a.case_insensitive = true;
        a.include = vec!["*.txt".into()];
        let v = GrepTool::execute(a).unwrap();
        assert_eq!(hits(&v, d.path()), vec![("src/b.txt".into(), 1)]);
        assert_eq!(v.matches[0].text, "FN gamma");
        let mut a = args("fn", d.path());
        a.exclude = vec!["target".into()];
        let v = GrepTool::execute(a).unwrap();
        assert_eq!(hits(&v, d.path()).len(), 2);
        let mut a = args("fn", d.path());
        a.include = vec!["src/*.rs".into()];
        let v = GrepTool::execute(a).unwrap();
        assert_eq!(hits(&v, d.path()).len(), 2);
    }

    #[test]
    fn context_and_render() {
        let d = tree();
        let mut a = args("^fn", &d.path().join("src/a.rs"));
        a.context = 2;
        let v = GrepTool::execute(a).unwrap();
        assert_eq!(v.matches.len(), 2);
        assert_eq!(v.matches[0].before, vec!["one", "two"]);
        assert_eq!(v.matches[0].after, vec!["three", "four"]);
        assert_eq!(v.matches[1].before, vec!["three", "four"]);
        assert!(v.matches[1].after.is_empty());
        let mut a = args("^fn", &d.path().join("src/a.rs"));
        a.context = 2;
        let r = render_text(&a, &v);
        let p = d.path().join("src/a.rs").display().to_string();
        let expected = format!(
            "2 matches in 1 file (1 searched)\n{p}-1-one\n{p}-2-two\n{p}:3:fn alpha() {{}}\n{p}-4-three\n{p}-5-four\n{p}:6:fn beta() {{}}\n"
        );
        assert_eq!(r, expected);
    }

    #[test]
    fn overlapping_context_is_not_repeated() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), "a\nx1\nx2\nb\nc\nd\ne\nx3\n").unwrap();
        let mut a = args("^x", &d.path().join("f"));
        a.context = 1;
        let v = GrepTool::execute(a).unwrap();
        let mut a = args("^x", &d.path().join("f"));
        a.context = 1;
        let r = render_text(&a, &v);
        let p = d.path().join("f").display().to_string();
        let expected = format!(
            "3 matches in 1 file (1 searched)\n{p}-1-a\n{p}:2:x1\n{p}:3:x2\n{p}-4-b\n--\n{p}-7-e\n{p}:8:x3\n"
        );
        assert_eq!(r, expected);
    }

    #[test]
    fn truncation() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (0..50).map(|i| format!("hit {i}\n")).collect();
        std::fs::write(d.path().join("f"), text).unwrap();
        let mut a = args("hit", d.path());
        a.max_matches = 10;
        let v = GrepTool::execute(a).unwrap();
        assert_eq!(v.matches.len(), 10);
        assert!(v.truncated);
        let mut a = args("hit", d.path());
        a.max_matches = 10;
        assert!(render_text(&a, &v).contains("more results"));
        let mut a = args("hit 4", d.path());
        a.max_matches = 11;
        let v = GrepTool::execute(a).unwrap();
        assert_eq!(v.matches.len(), 11);
        assert!(!v.truncated);
    }

    #[test]
    fn failures_and_no_match() {
        let d = tree();
        let e = GrepTool::execute(args("(unclosed", d.path())).unwrap_err();
        assert_eq!(e.code, "invalid_arguments");
        assert!(e.message.contains("regex"), "{}", e.message);
        let mut a = args("x", d.path());
        a.context = 11;
        assert_eq!(GrepTool::execute(a).unwrap_err().code, "invalid_arguments");
        let e = GrepTool::execute(args("x", &d.path().join("nope"))).unwrap_err();
        assert_eq!(e.code, "not_found");
        let v = GrepTool::execute(args("zzz_nothing", d.path())).unwrap();
        assert!(v.matches.is_empty());
        let r = render_text(&args("zzz_nothing", d.path()), &v);
        assert!(r.starts_with("No matches for /zzz_nothing/"), "{r}");
    }
}
