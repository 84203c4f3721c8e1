//! The `grep` tool: searches text files under a directory for a regular
//! expression, the way ripgrep users expect.
//!
//! - The walk is depth-first in name order (deterministic) and never follows
//!   symbolic links. By default it leaves out what `.gitignore` / `.ignore`
//!   files exclude, hidden entries and `.git` (see [`rules`]); `no_ignore`
//!   and `hidden` bring them back.
//! - Each file is streamed in chunks (see [`search`]): a file of any size is
//!   searched in bounded memory. Binary (NUL byte) and non-UTF-8 files are
//!   skipped, and so is a file with one line over 16 MiB.
//! - Nothing is skipped silently: every file or directory not searched is
//!   counted by reason in the value and summarised in the rendered text.
//! - The search has its own time budget ([`TIME_BUDGET`]), below the policy's
//!   deadline, so a search of a tree too large to finish returns what it found
//!   and says how far it got instead of being killed without an answer.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use regex_automata::meta::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_kit::{Annotations, Content, PathAccess, PathParam, Tool, ToolError};

pub mod matcher;
pub mod rules;
pub mod search;

use rules::{Left, Rules};
use search::{Outcome, Searcher, Skip};

/// Default maximum number of matches.
pub const DEFAULT_MAX_MATCHES: usize = 100;
/// Largest accepted `max_matches`.
pub const MAX_MATCHES: usize = 1000;
/// Largest accepted `context`.
pub const MAX_CONTEXT: usize = 10;
/// Matched and context lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 500;
/// Progress is reported every this many files searched (a big tree only:
/// most searches report nothing).
const PROGRESS_EVERY: usize = 500;

/// The walk stops after visiting this many entries.
pub const MAX_VISITED: usize = 1_000_000;
/// The search stops (and says so) after this much wall-clock time; the
/// shipped policy's deadline is longer, so the answer always gets back.
pub const TIME_BUDGET: Duration = Duration::from_secs(15);
/// Examples of left-out paths kept for the rendered text.
const EXAMPLES: usize = 3;

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
    /// Also search hidden files and directories (names starting with `.`); `.git` is never searched.
    #[serde(default)]
    pub hidden: bool,
    /// Also search files that `.gitignore` / `.ignore` rules exclude (build outputs, dependencies).
    #[serde(default)]
    pub no_ignore: bool,
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

/// Files that were not searched, by reason.
#[derive(Debug, Default, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Skipped {
    /// Binary files (a NUL byte).
    pub binary: usize,
    /// Files that are not valid UTF-8.
    pub not_utf8: usize,
    /// Files with a line over 16 MiB.
    pub long_line: usize,
    /// Files or directories that could not be read.
    pub unreadable: usize,
}

/// Entries left out by rule (not searched, not descended into).
#[derive(Debug, Default, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeftOut {
    /// Entries excluded by `.gitignore` / `.ignore` rules (a directory counts once).
    pub ignored: usize,
    /// Hidden entries (names starting with `.`), `.git` included.
    pub hidden: usize,
    /// A few of the left-out paths, relative to `path`.
    pub examples: Vec<String>,
}

/// Value of `grep`.
#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrepValue {
    /// Matching lines, in walk order (files by path, lines ascending).
    pub matches: Vec<Match>,
    /// Text files searched.
    pub files_searched: usize,
    /// Bytes of text searched.
    pub bytes_searched: u64,
    /// Files not searched (the sum of `skipped`).
    pub files_skipped: usize,
    /// Files not searched, by reason.
    pub skipped: Skipped,
    /// Entries left out by ignore and hidden-file rules.
    pub left_out: LeftOut,
    /// True when more matches exist than were returned.
    pub truncated: bool,
    /// Set when the search stopped before the end of the tree: why, and the
    /// last path it reached. The matches are those found up to there.
    pub stopped: Option<String>,
}

/// The `grep` tool.
pub struct GrepTool;

impl Tool for GrepTool {
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str = "Searches text files under a directory for lines matching \
        a regular expression (Rust regex syntax), like ripgrep. Files excluded by .gitignore or \
        .ignore rules and hidden files are left out unless no_ignore / hidden is set; .git is \
        never searched. Filter files with include/exclude globs (a glob without '/' matches the \
        file name, e.g. \"*.rs\"); ask for context lines around each match. Binary and non-UTF-8 \
        files are skipped and counted; symbolic links are not followed.";
    type Args = GrepArgs;
    type Output = GrepValue;

    fn title() -> Option<&'static str> {
        Some("Search file contents")
    }

    fn annotations() -> Annotations {
        Annotations::READ_ONLY_IDEMPOTENT
    }

    fn paths() -> Vec<PathParam> {
        vec![PathParam::new("/path", PathAccess::List)]
    }

    fn execute(args: GrepArgs) -> Result<GrepValue, ToolError> {
        search_within(args, TIME_BUDGET)
    }

    fn render(args: &GrepArgs, v: &GrepValue) -> Option<Vec<Content>> {
        Some(vec![Content::text(render_text(args, v))])
    }
}

/// Runs a search that stops itself after `budget` of wall-clock time.
fn search_within(args: GrepArgs, budget: Duration) -> Result<GrepValue, ToolError> {
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
    let regex = matcher::compile(&args.pattern, args.case_insensitive)
        .map_err(ToolError::invalid_arguments)?;
    let root = toolhost_kit::resolve_path(&args.path);
    let meta = std::fs::metadata(&root).map_err(|e| ToolError::io(&e, &root))?;
    let mut walk = Walk {
        regex,
        include: Filter::new(&args.include, "include")?,
        exclude: Filter::new(&args.exclude, "exclude")?,
        rules: Rules::new(&root, args.hidden, !args.no_ignore),
        context: args.context,
        max: args.max_matches,
        value: GrepValue {
            matches: vec![],
            files_searched: 0,
            bytes_searched: 0,
            files_skipped: 0,
            skipped: Skipped::default(),
            left_out: LeftOut::default(),
            truncated: false,
            stopped: None,
        },
        visited: 0,
        started: Instant::now(),
        budget,
        buf: vec![],
    };
    if meta.is_dir() {
        walk.dir(&root, "", 0)?;
    } else {
        // A file named explicitly is searched whatever the rules say.
        walk.file(&root);
    }
    let mut value = walk.value;
    value.files_skipped = value.skipped.binary
        + value.skipped.not_utf8
        + value.skipped.long_line
        + value.skipped.unreadable;
    Ok(value)
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

struct Walk {
    regex: Regex,
    include: Filter,
    exclude: Filter,
    rules: Rules,
    context: usize,
    max: usize,
    value: GrepValue,
    visited: usize,
    started: Instant,
    budget: Duration,
    /// The read buffer, shared by every file.
    buf: Vec<u8>,
}

impl Walk {
    fn done(&self) -> bool {
        self.value.truncated || self.value.stopped.is_some()
    }

    /// Stops the walk at `rel` when a budget is spent.
    fn check_budget(&mut self, rel: &str) {
        if self.value.stopped.is_some() {
            return;
        }
        if self.visited > MAX_VISITED {
            self.value.stopped = Some(format!("visited {MAX_VISITED} entries; stopped at {rel}"));
        } else if toolhost_kit::ctx().cancelled() {
            self.value.stopped = Some(format!("cancelled by the caller; stopped at {rel}"));
        } else if self.started.elapsed() > self.budget {
            self.value.stopped = Some(format!(
                "time budget of {} s spent; stopped at {rel}",
                self.budget.as_secs()
            ));
        }
    }

    fn dir(&mut self, dir: &Path, rel: &str, depth: usize) -> Result<(), ToolError> {
        let read = match std::fs::read_dir(dir) {
            Ok(r) => r,
            Err(e) if rel.is_empty() => return Err(ToolError::io(&e, dir)),
            Err(_) => {
                self.value.skipped.unreadable += 1;
                return Ok(());
            }
        };
        let mut items: Vec<(String, bool)> = vec![];
        // The ignore files this directory holds (a link counts when it
        // leads to a file, as `Path::is_file` says).
        let mut ignore_files: Vec<String> = vec![];
        for item in read {
            let Ok(item) = item else {
                self.value.skipped.unreadable += 1;
                continue;
            };
            self.visited += 1;
            let Ok(t) = item.file_type() else {
                self.value.skipped.unreadable += 1;
                continue;
            };
            let name = item.file_name().to_string_lossy().into_owned();
            if Rules::is_ignore_file(&name)
                && (t.is_file() || t.is_symlink() && item.path().is_file())
            {
                ignore_files.push(name.clone());
            }
            if t.is_symlink() || !(t.is_dir() || t.is_file()) {
                continue;
            }
            items.push((name, t.is_dir()));
        }
        self.rules
            .enter_listed(dir, depth, |name| ignore_files.iter().any(|f| f == name));
        items.sort_unstable();
        for (name, is_dir) in items {
            let child_rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            self.check_budget(&child_rel);
            if self.done() {
                break;
            }
            let path = dir.join(&name);
            if let Some(why) = self.rules.check(&path, &name, is_dir) {
                let left = &mut self.value.left_out;
                match why {
                    Left::Ignored => left.ignored += 1,
                    Left::Hidden | Left::Git => left.hidden += 1,
                }
                if left.examples.len() < EXAMPLES {
                    left.examples.push(if is_dir {
                        format!("{child_rel}/")
                    } else {
                        child_rel
                    });
                }
                continue;
            }
            if self.exclude.matches(&name, &child_rel) {
                continue;
            }
            if is_dir {
                self.dir(&path, &child_rel, depth + 1)?;
                self.rules.leave_below(depth);
            } else if self.include.empty || self.include.matches(&name, &child_rel) {
                self.file(&path);
            }
        }
        Ok(())
    }

    fn file(&mut self, path: &Path) {
        let Ok(file) = std::fs::File::open(path) else {
            self.value.skipped.unreadable += 1;
            return;
        };
        let shown = path.display().to_string();
        let outcome = Searcher {
            regex: &self.regex,
            context: self.context,
            max: self.max,
            max_line_chars: MAX_LINE_CHARS,
            matches: &mut self.value.matches,
            truncated: &mut self.value.truncated,
            buf: &mut self.buf,
        }
        .search(file, &shown);
        match outcome {
            Outcome::Searched(bytes) => {
                self.value.files_searched += 1;
                self.value.bytes_searched += bytes;
                if self.value.files_searched.is_multiple_of(PROGRESS_EVERY) {
                    let message = format!(
                        "{} files searched; matches so far: {}",
                        self.value.files_searched,
                        self.value.matches.len()
                    );
                    toolhost_kit::ctx().progress(
                        self.value.files_searched as u64,
                        None,
                        Some(&message),
                    );
                }
            }
            Outcome::Skipped(why) => {
                let s = &mut self.value.skipped;
                *match why {
                    Skip::Binary => &mut s.binary,
                    Skip::NotUtf8 => &mut s.not_utf8,
                    Skip::LongLine => &mut s.long_line,
                    Skip::Unreadable => &mut s.unreadable,
                } += 1;
            }
        }
    }
}

/// What was not searched, one parenthesised line each: skipped files,
/// entries left out by rule, and an early stop. Empty when everything was
/// searched.
pub fn notes(v: &GrepValue) -> String {
    let mut out = String::new();
    let s = &v.skipped;
    let skipped: Vec<String> = [
        (s.binary, "binary"),
        (s.not_utf8, "not UTF-8"),
        (s.long_line, "with a line over 16 MiB"),
        (s.unreadable, "unreadable"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} {why}"))
    .collect();
    if !skipped.is_empty() {
        out.push_str(&format!("(not searched: {})\n", skipped.join(", ")));
    }
    let l = &v.left_out;
    if l.ignored + l.hidden > 0 {
        let (mut parts, mut set) = (vec![], vec![]);
        if l.ignored > 0 {
            parts.push(format!("{} ignored by .gitignore/.ignore", l.ignored));
            set.push("no_ignore");
        }
        if l.hidden > 0 {
            parts.push(format!("{} hidden", l.hidden));
            set.push("hidden");
        }
        out.push_str(&format!(
            "(left out: {}, e.g. {}; set {} to search them)\n",
            parts.join(", "),
            l.examples.join(", "),
            set.join(" or ")
        ));
    }
    if let Some(why) = &v.stopped {
        out.push_str(&format!(
            "(incomplete: {why}; {} searched so far. Narrow path or include to search the rest)\n",
            v.files_searched
        ));
    }
    out
}

/// ripgrep-like rendering: `path:line:text` for matches, `path-line-text`
/// for context, `--` between groups.
pub fn render_text(args: &GrepArgs, v: &GrepValue) -> String {
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {many}")
        }
    };
    let mut out = if v.matches.is_empty() {
        format!(
            "No matches for /{}/ in {} ({} searched{})\n",
            args.pattern,
            args.path,
            plural(v.files_searched, "file", "files"),
            if v.stopped.is_some() {
                "; the search stopped early"
            } else {
                ""
            }
        )
    } else {
        let files = {
            let mut f: Vec<&str> = v.matches.iter().map(|m| m.path.as_str()).collect();
            f.dedup();
            f.len()
        };
        format!(
            "{} in {} ({} searched)\n",
            plural(v.matches.len(), "match", "matches"),
            plural(files, "file", "files"),
            v.files_searched
        )
    };
    out.push_str(&notes(v));
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
            hidden: false,
            no_ignore: false,
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
    fn a_big_tree_reports_progress_and_a_cancelled_search_stops() {
        use toolhost_kit::context::{Report, cancel_for_test, take_reports};
        let d = tempfile::tempdir().unwrap();
        for i in 0..1_100 {
            let text = if i == 7 { "needle\n" } else { "hay\n" };
            std::fs::write(d.path().join(format!("f{i:04}.txt")), text).unwrap();
        }
        take_reports();
        let v = GrepTool::execute(args("needle", d.path())).unwrap();
        assert_eq!(v.files_searched, 1_100);
        let reports = take_reports();
        assert_eq!(reports.len(), 2, "{reports:?}");
        assert!(matches!(
            &reports[1],
            Report::Progress { done: 1_000, total: None, message: Some(m) }
                if m == "1000 files searched; matches so far: 1"
        ));
        cancel_for_test(true);
        let v = GrepTool::execute(args("needle", d.path())).unwrap();
        cancel_for_test(false);
        assert_eq!(v.files_searched, 0);
        assert_eq!(
            v.stopped.as_deref(),
            Some("cancelled by the caller; stopped at f0000.txt")
        );
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
        assert_eq!(v.skipped.binary, 1);
        assert_eq!(v.skipped.not_utf8, 1);
        assert!(!v.truncated);
        assert_eq!(v.stopped, None);
        let r = render_text(&args(r"^fn \w+", d.path()), &v);
        assert!(r.contains("(not searched: 1 binary, 1 not UTF-8)\n"), "{r}");
    }

    #[test]
    fn ignore_rules_hidden_files_and_git_are_left_out_and_said() {
        let d = tree();
        let p = d.path();
        std::fs::create_dir_all(p.join(".git")).unwrap();
        std::fs::write(p.join(".git/config"), "fn in_git\n").unwrap();
        std::fs::write(p.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(p.join(".env"), "fn hidden\n").unwrap();
        let v = GrepTool::execute(args("^fn", p)).unwrap();
        assert_eq!(
            hits(&v, p),
            vec![("src/a.rs".into(), 3), ("src/a.rs".into(), 6)]
        );
        assert_eq!(v.left_out.ignored, 1);
        assert_eq!(v.left_out.hidden, 3, "{:?}", v.left_out);
        assert_eq!(v.left_out.examples, vec![".env", ".git/", ".gitignore"]);
        let r = render_text(&args("^fn", p), &v);
        assert!(
            r.contains("(left out: 1 ignored by .gitignore/.ignore, 3 hidden, e.g. .env, .git/, .gitignore; set no_ignore or hidden to search them)"),
            "{r}"
        );
        let mut a = args("^fn", p);
        a.no_ignore = true;
        a.hidden = true;
        let v = GrepTool::execute(a).unwrap();
        let found: Vec<String> = hits(&v, p).into_iter().map(|(f, _)| f).collect();
        assert_eq!(found, vec![".env", "src/a.rs", "src/a.rs", "target/gen.rs"]);
        assert_eq!(v.left_out.hidden, 1, "only .git stays out");
        // A file named explicitly is searched even when a rule excludes it.
        let v = GrepTool::execute(args("^fn", &p.join("target/gen.rs"))).unwrap();
        assert_eq!(v.matches.len(), 1);
    }

    #[test]
    fn no_match_says_what_was_not_searched() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::write(p.join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir(p.join("build")).unwrap();
        std::fs::write(p.join("build/out.txt"), "needle\n").unwrap();
        std::fs::write(p.join("data.bin"), b"needle\0").unwrap();
        let v = GrepTool::execute(args("needle", p)).unwrap();
        assert!(v.matches.is_empty());
        let r = render_text(&args("needle", p), &v);
        assert!(r.starts_with("No matches for /needle/"), "{r}");
        assert!(r.contains("not searched: 1 binary"), "{r}");
        assert!(r.contains("1 ignored by .gitignore/.ignore"), "{r}");
        assert!(r.contains("build/"), "{r}");
    }

    #[test]
    fn a_search_out_of_time_returns_what_it_found_and_says_where_it_stopped() {
        let d = tree();
        let v = search_within(args("fn", d.path()), Duration::ZERO).unwrap();
        let stopped = v.stopped.clone().unwrap();
        assert!(
            stopped.starts_with("time budget of 0 s spent; stopped at "),
            "{stopped}"
        );
        let r = render_text(&args("fn", d.path()), &v);
        assert!(r.contains("the search stopped early"), "{r}");
        assert!(
            r.contains("(incomplete: time budget of 0 s spent; stopped at "),
            "{r}"
        );
        assert!(r.contains("Narrow path or include"), "{r}");
    }

    #[test]
    fn a_file_larger_than_the_old_limit_is_searched() {
        let d = tempfile::tempdir().unwrap();
        let mut text = "filler line of text\n".repeat(600_000);
        text.push_str("the needle\n");
        assert!(text.len() > 8 << 20);
        std::fs::write(d.path().join("big.log"), &text).unwrap();
        let v = GrepTool::execute(args("needle", d.path())).unwrap();
        assert_eq!(hits(&v, d.path()), vec![("big.log".into(), 600_001)]);
        assert_eq!(v.bytes_searched, text.len() as u64);
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
