//! The `edit` tool: replaces an exact text fragment in a file.
//!
//! The fragment must match exactly once unless `replace_all` is set. Files
//! whose lines all end in CRLF keep their CRLF endings: the file, `old_text`
//! and `new_text` are compared with LF endings and CRLF is restored on write.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use similar::{ChangeTag, TextDiff};
use toolhost_kit::text::read_text_file;
use toolhost_kit::{Annotations, Content, PathAccess, PathParam, Tool, ToolError};

/// The diff in the value keeps at most this many lines.
pub const MAX_DIFF_LINES: usize = 200;
/// The diff in the value keeps at most this many bytes.
pub const MAX_DIFF_BYTES: usize = 16 * 1024;
/// At most this many match line numbers are listed in an `ambiguous_match` failure.
const MAX_LISTED_MATCHES: usize = 20;

/// Arguments of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// The file to edit; relative paths are resolved against the working directory.
    pub path: String,
    /// The exact text to replace, including whitespace and indentation. It must
    /// occur exactly once unless replace_all is true.
    pub old_text: String,
    /// The replacement text.
    pub new_text: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

/// Value of `edit`.
#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditValue {
    /// The file that was edited (resolved path).
    pub path: String,
    /// Number of occurrences replaced.
    pub replacements: usize,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// Unified diff of the change (3 lines of context; cut when long).
    pub diff: String,
}

/// The `edit` tool.
pub struct EditTool;

impl Tool for EditTool {
    const NAME: &'static str = "edit";
    const DESCRIPTION: &'static str = "Edits a text file by replacing old_text with new_text. \
        old_text must match the file exactly (whitespace and indentation included) and occur \
        exactly once; include enough surrounding lines to make it unique, or set replace_all \
        to replace every occurrence. Returns a unified diff of the change.";
    type Args = EditArgs;
    type Output = EditValue;

    fn title() -> Option<&'static str> {
        Some("Edit a file")
    }

    fn annotations() -> Annotations {
        Annotations::NONE.with_destructive()
    }

    fn paths() -> Vec<PathParam> {
        vec![PathParam::new("/path", PathAccess::Patch)]
    }

    fn execute(args: EditArgs) -> Result<EditValue, ToolError> {
        if args.old_text.is_empty() {
            return Err(ToolError::invalid_arguments(
                "old_text is empty; to write a whole file use the write tool",
            ));
        }
        let path = toolhost_kit::resolve_path(&args.path);
        let text = read_text_file(&path)?;
        let shown = path.display().to_string();
        let edit = plan_edit(
            &text,
            &args.old_text,
            &args.new_text,
            args.replace_all,
            &shown,
        )?;
        std::fs::write(&path, &edit.new_file).map_err(|e| ToolError::io(&e, &path))?;
        Ok(EditValue {
            path: shown,
            replacements: edit.replacements,
            added: edit.added,
            removed: edit.removed,
            diff: edit.diff,
        })
    }

    fn render(_args: &EditArgs, v: &EditValue) -> Option<Vec<Content>> {
        Some(vec![Content::text(render_text(v))])
    }
}

/// The outcome of an edit, before it is written.
#[derive(Debug, PartialEq)]
pub struct PlannedEdit {
    /// The new file content, with the file's line endings.
    pub new_file: String,
    /// Occurrences replaced.
    pub replacements: usize,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// Bounded unified diff.
    pub diff: String,
}

/// Whether every line terminator of `text` is CRLF (and there is at least one).
fn is_crlf(text: &str) -> bool {
    let lf = text.bytes().filter(|&b| b == b'\n').count();
    lf > 0 && text.matches("\r\n").count() == lf
}

/// Plans the replacement of `old` by `new` in `text` (`path` is for messages).
pub fn plan_edit(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    path: &str,
) -> Result<PlannedEdit, ToolError> {
    if old.is_empty() {
        return Err(ToolError::invalid_arguments(
            "old_text is empty; to write a whole file use the write tool",
        ));
    }
    let crlf = is_crlf(text);
    let (work, old, new) = if crlf {
        (
            text.replace("\r\n", "\n"),
            old.replace("\r\n", "\n"),
            new.replace("\r\n", "\n"),
        )
    } else {
        (text.to_string(), old.to_string(), new.to_string())
    };
    if old == new {
        return Err(ToolError::invalid_arguments(
            "old_text and new_text are the same; nothing to change",
        ));
    }
    let starts: Vec<usize> = work.match_indices(old.as_str()).map(|(i, _)| i).collect();
    if starts.is_empty() {
        let mut message = format!(
            "old_text was not found in {path}; it must match the file exactly, including whitespace and indentation (read the file again to check)"
        );
        let trimmed = old.trim();
        if trimmed != old && !trimmed.is_empty() && work.contains(trimmed) {
            message.push_str("; note: it does match once leading/trailing whitespace is removed");
        }
        return Err(ToolError::new("no_match", message));
    }
    if starts.len() > 1 && !replace_all {
        let lines = line_numbers(&work, &starts);
        let listed: Vec<String> = lines
            .iter()
            .take(MAX_LISTED_MATCHES)
            .map(usize::to_string)
            .collect();
        let more = if lines.len() > MAX_LISTED_MATCHES {
            ", …"
        } else {
            ""
        };
        return Err(ToolError::new(
            "ambiguous_match",
            format!(
                "old_text matches {} times in {path} (at lines {}{more}); include more surrounding lines to make it unique, or set replace_all to true",
                starts.len(),
                listed.join(", "),
            ),
        )
        .with_info(serde_json::json!({ "matches": starts.len(), "lines": lines })));
    }
    let replaced = if replace_all {
        work.replace(old.as_str(), &new)
    } else {
        work.replacen(old.as_str(), &new, 1)
    };
    let (added, removed, diff) = diff_summary(&work, &replaced, path);
    let new_file = if crlf {
        replaced.replace('\n', "\r\n")
    } else {
        replaced
    };
    Ok(PlannedEdit {
        new_file,
        replacements: starts.len(),
        added,
        removed,
        diff,
    })
}

/// 1-based line numbers of byte offsets (sorted ascending) in `text`.
fn line_numbers(text: &str, offsets: &[usize]) -> Vec<usize> {
    let mut line = 1;
    let mut pos = 0;
    offsets
        .iter()
        .map(|&at| {
            line += text
                .get(pos..at)
                .map_or(0, |s| s.bytes().filter(|&b| b == b'\n').count());
            pos = at;
            line
        })
        .collect()
}

/// Lines added, lines removed and a bounded unified diff.
pub fn diff_summary(old: &str, new: &str, path: &str) -> (usize, usize, String) {
    let diff = TextDiff::configure()
        .timeout(Duration::from_millis(500))
        .diff_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let full = diff
        .unified_diff()
        .context_radius(3)
        .header(path, path)
        .to_string();
    (added, removed, bound_diff(&full))
}

/// Cuts a diff to [`MAX_DIFF_LINES`] lines and [`MAX_DIFF_BYTES`] bytes.
fn bound_diff(full: &str) -> String {
    let lines: Vec<&str> = full.lines().collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i >= MAX_DIFF_LINES || out.len() + line.len() + 1 > MAX_DIFF_BYTES {
            out.push_str(&format!("… (diff cut: {} more lines)\n", lines.len() - i));
            return out;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Summary line and diff.
pub fn render_text(v: &EditValue) -> String {
    let mut out = format!("+{} \u{2212}{} lines in {}", v.added, v.removed, v.path);
    if v.replacements > 1 {
        out.push_str(&format!(" ({} replacements)", v.replacements));
    }
    out.push('\n');
    out.push_str(&v.diff);
    out
}

toolhost_kit::export_tools!(EditTool);

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str, old: &str, new: &str, all: bool) -> Result<PlannedEdit, ToolError> {
        plan_edit(text, old, new, all, "f.txt")
    }

    #[test]
    fn single_replacement_with_diff() {
        let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let e = plan(&text, "line 10\n", "line ten\nline 10.5\n", false).unwrap();
        assert_eq!(e.replacements, 1);
        assert_eq!((e.added, e.removed), (2, 1));
        assert!(
            e.new_file
                .contains("line 9\nline ten\nline 10.5\nline 11\n")
        );
        assert!(
            e.diff
                .starts_with("--- f.txt\n+++ f.txt\n@@ -7,7 +7,8 @@\n"),
            "{}",
            e.diff
        );
        assert!(
            e.diff
                .contains("\n-line 10\n+line ten\n+line 10.5\n line 11\n")
        );
        // 3 lines of context on each side.
        assert!(e.diff.contains(" line 7\n") && e.diff.contains(" line 13\n"));
        assert!(!e.diff.contains("line 6\n") && !e.diff.contains("line 14"));
    }

    #[test]
    fn ambiguous_names_lines() {
        let text = "a\nfoo\nb\nfoo\nc\nfoo\n";
        let e = plan(text, "foo", "bar", false).unwrap_err();
        assert_eq!(e.code, "ambiguous_match");
        assert!(e.message.contains("matches 3 times"), "{}", e.message);
        assert!(e.message.contains("at lines 2, 4, 6"), "{}", e.message);
        assert_eq!(
            e.info,
            Some(serde_json::json!({"matches": 3, "lines": [2, 4, 6]}))
        );
        let e = plan(text, "foo", "bar", true).unwrap();
        assert_eq!(e.replacements, 3);
        assert_eq!(e.new_file, "a\nbar\nb\nbar\nc\nbar\n");
        assert_eq!((e.added, e.removed), (3, 3));
    }

    #[test]
    fn invalid_and_no_match() {
        assert_eq!(
            plan("abc", "", "x", false).unwrap_err().code,
            "invalid_arguments"
        );
        assert_eq!(
            plan("abc", "b", "b", false).unwrap_err().code,
            "invalid_arguments"
        );
        let e = plan("abc", "zzz", "y", false).unwrap_err();
        assert_eq!(e.code, "no_match");
        let e = plan("    let x = 1;\n", "let x = 1;  ", "let x = 2;", false).unwrap_err();
        assert_eq!(e.code, "no_match");
        assert!(e.message.contains("whitespace is removed"), "{}", e.message);
    }

    #[test]
    fn crlf_preserved() {
        let text = "one\r\ntwo\r\nthree\r\n";
        let e = plan(text, "two\nthree", "2\n3\n3.5", false).unwrap();
        assert_eq!(e.new_file, "one\r\n2\r\n3\r\n3.5\r\n");
        assert!(!e.diff.contains('\r'));
        // old_text given with CRLF matches too.
        let e = plan(text, "one\r\ntwo", "uno\r\ndos", false).unwrap();
        assert_eq!(e.new_file, "uno\r\ndos\r\nthree\r\n");
        // Mixed endings are left as they are.
        let e = plan("a\r\nb\nc\n", "b\n", "B\n", false).unwrap();
        assert_eq!(e.new_file, "a\r\nB\nc\n");
    }

    #[test]
    fn no_trailing_newline() {
        let e = plan("x\ny", "y", "z", false).unwrap();
        assert_eq!(e.new_file, "x\nz");
        assert_eq!((e.added, e.removed), (1, 1));
        assert!(e.diff.contains("No newline at end of file"), "{}", e.diff);
    }

    #[test]
    fn diff_is_bounded() {
        let old: String = (0..1000).map(|i| format!("{i}\n")).collect();
        let new: String = (0..1000).map(|i| format!("x{i}\n")).collect();
        let (added, removed, diff) = diff_summary(&old, &new, "f");
        assert_eq!((added, removed), (1000, 1000));
        assert!(diff.lines().count() <= MAX_DIFF_LINES + 1);
        assert!(diff.len() <= MAX_DIFF_BYTES + 64);
        assert!(diff.contains("diff cut"));
    }

    #[test]
    fn edits_file_and_renders() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.rs");
        std::fs::write(&p, "fn main() {\r\n    old();\r\n}\r\n").unwrap();
        let v = EditTool::execute(EditArgs {
            path: p.display().to_string(),
            old_text: "    old();".into(),
            new_text: "    new();\n    more();".into(),
            replace_all: false,
        })
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "fn main() {\r\n    new();\r\n    more();\r\n}\r\n"
        );
        let r = render_text(&v);
        assert!(
            r.starts_with(&format!("+2 \u{2212}1 lines in {}\n", p.display())),
            "{r}"
        );
        let e = EditTool::execute(EditArgs {
            path: d.path().join("missing").display().to_string(),
            old_text: "a".into(),
            new_text: "b".into(),
            replace_all: false,
        })
        .unwrap_err();
        assert_eq!(e.code, "not_found");
    }
}
