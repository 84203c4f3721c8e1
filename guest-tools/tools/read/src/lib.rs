//! The `read` tool: reads a window of lines from a UTF-8 text file.
//!
//! Lines are split on `\n` with a trailing `\r` dropped (CRLF files read like
//! LF files); a missing final newline is fine. Lines longer than
//! [`MAX_LINE_CHARS`] characters are cut, and counted in `truncatedLines`.
//!
//! The file is streamed (see [`scan`]): memory is bounded by the window asked
//! for, not by the file, so any line range of a file of any size can be read.
//! `tail` reads the last lines in one pass over the file.

use std::fs::File;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_kit::text::truncate_chars;
use toolhost_kit::{Annotations, Content, PathAccess, PathParam, Tool, ToolError};

pub mod scan;

/// Default (and maximum useful) number of lines returned.
pub const DEFAULT_LIMIT: usize = 2000;
/// Largest accepted `limit` and `tail`.
pub const MAX_LIMIT: usize = 10_000;
/// Lines longer than this many characters are cut.
pub const MAX_LINE_CHARS: usize = 2000;

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The file to read; relative paths are resolved against the working directory.
    pub path: String,
    /// 1-based number of the first line to return.
    #[serde(default = "default_offset")]
    #[schemars(range(min = 1))]
    pub offset: usize,
    /// Maximum number of lines to return.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: usize,
    /// Return the last this many lines instead (like `tail -n`); not combined with offset.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
    pub tail: Option<usize>,
}

fn default_offset() -> usize {
    1
}
fn default_limit() -> usize {
    DEFAULT_LIMIT
}

/// Value of `read`.
#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadValue {
    /// The file that was read (resolved path).
    pub path: String,
    /// 1-based number of the first line in `lines`.
    pub offset: usize,
    /// The lines, without their line terminators.
    pub lines: Vec<String>,
    /// Number of lines in the whole file.
    pub total_lines: usize,
    /// How many of `lines` were cut at 2000 characters.
    pub truncated_lines: usize,
    /// The offset that continues the reading, or null at the end of the file.
    pub next_offset: Option<usize>,
}

/// The `read` tool.
pub struct ReadTool;

impl Tool for ReadTool {
    const NAME: &'static str = "read";
    const DESCRIPTION: &'static str = "Reads a UTF-8 text file and returns its lines. \
        Use offset (1-based line number) and limit (default 2000) to page through large files, \
        or tail to get the last lines. Files of any size can be read this way. \
        Lines longer than 2000 characters are truncated. Binary and non-UTF-8 files are refused.";
    type Args = ReadArgs;
    type Output = ReadValue;

    fn title() -> Option<&'static str> {
        Some("Read a file")
    }

    fn annotations() -> Annotations {
        Annotations::READ_ONLY_IDEMPOTENT
    }

    fn paths() -> Vec<PathParam> {
        vec![PathParam::new("/path", PathAccess::Read)]
    }

    fn execute(args: ReadArgs) -> Result<ReadValue, ToolError> {
        if args.offset == 0 {
            return Err(ToolError::invalid_arguments(
                "offset is 1-based: the first line is offset=1",
            ));
        }
        if args.limit == 0 || args.limit > MAX_LIMIT {
            return Err(ToolError::invalid_arguments(format!(
                "limit must be between 1 and {MAX_LIMIT}"
            )));
        }
        if let Some(tail) = args.tail {
            if tail == 0 || tail > MAX_LIMIT {
                return Err(ToolError::invalid_arguments(format!(
                    "tail must be between 1 and {MAX_LIMIT}"
                )));
            }
            if args.offset != 1 {
                return Err(ToolError::invalid_arguments(
                    "give either offset (a window from the start) or tail (the last lines), not both",
                ));
            }
        }
        let path = toolhost_kit::resolve_path(&args.path);
        let meta = std::fs::metadata(&path).map_err(|e| ToolError::io(&e, &path))?;
        if meta.is_dir() {
            return Err(ToolError::new(
                "is_directory",
                format!("{} is a directory, not a file", path.display()),
            ));
        }
        let mut file = File::open(&path).map_err(|e| ToolError::io(&e, &path))?;
        let io = |e: std::io::Error| ToolError::io(&e, &path);
        let window = match args.tail {
            Some(n) => scan::tail(&mut file, n).map_err(io)?,
            None => scan::window(&mut file, args.offset - 1, args.limit).map_err(io)?,
        };
        if let Some(at) = window.binary_at {
            return Err(toolhost_kit::text::not_text_error(
                &path,
                toolhost_kit::text::NotText::Binary(at as usize),
            ));
        }
        let total = window.total_lines;
        if args.offset > total && !(total == 0 && args.offset == 1) {
            return Err(offset_past_end(&path, args.offset, total));
        }
        let first = window.first + 1;
        let mut truncated_lines = 0;
        let mut lines = Vec::with_capacity(window.lines.len());
        for (k, raw) in window.lines.iter().enumerate() {
            let (text, cut) = decode_line(&path, first + k, raw)?;
            let text = if first + k == 1 {
                text.strip_prefix('\u{feff}').unwrap_or(text)
            } else {
                text
            };
            let (kept, over) = truncate_chars(text, MAX_LINE_CHARS);
            truncated_lines += usize::from(cut || over);
            lines.push(kept.to_string());
        }
        let end = first - 1 + lines.len();
        Ok(ReadValue {
            path: path.display().to_string(),
            offset: first,
            lines,
            total_lines: total,
            truncated_lines,
            next_offset: (end < total).then_some(end + 1),
        })
    }

    fn render(_args: &ReadArgs, v: &ReadValue) -> Option<Vec<Content>> {
        Some(vec![Content::text(render_text(v))])
    }
}

/// A raw line as text: the `\r` of a CRLF dropped, a character split by the
/// scan's cut dropped (the line is reported as cut), `not_utf8` for invalid
/// bytes.
fn decode_line<'a>(
    path: &Path,
    number: usize,
    raw: &'a scan::RawLine,
) -> Result<(&'a str, bool), ToolError> {
    let mut bytes = raw.bytes.as_slice();
    if !raw.cut {
        bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok((text, raw.cut)),
        Err(e) if raw.cut && e.error_len().is_none() => Ok((
            std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
            true,
        )),
        Err(e) => Err(ToolError::new(
            "not_utf8",
            format!(
                "{} is not valid UTF-8 (line {number}, byte {} of the line)",
                path.display(),
                e.valid_up_to() + 1
            ),
        )),
    }
}

fn offset_past_end(path: &Path, offset: usize, total: usize) -> ToolError {
    ToolError::new(
        "offset_out_of_range",
        format!(
            "offset {} is past the end of {} ({} line{}){}",
            offset,
            path.display(),
            total,
            if total == 1 { "" } else { "s" },
            if total > 0 {
                format!("; use an offset between 1 and {total}")
            } else {
                String::new()
            }
        ),
    )
    .with_info(serde_json::json!({ "totalLines": total }))
}

/// `cat -n`-style rendering of a value, with a trailer when lines remain.
pub fn render_text(v: &ReadValue) -> String {
    if v.total_lines == 0 {
        return format!("({} is empty)", v.path);
    }
    let last = v.offset + v.lines.len().saturating_sub(1);
    let width = last.to_string().len().max(6);
    let mut out = String::new();
    for (i, line) in v.lines.iter().enumerate() {
        out.push_str(&format!("{:>width$}\t{}\n", v.offset + i, line));
    }
    let mut notes = vec![];
    if let Some(next) = v.next_offset {
        notes.push(format!(
            "lines {}-{} of {}; use offset={} to continue",
            v.offset, last, v.total_lines, next
        ));
    } else if v.offset > 1 {
        notes.push(format!(
            "lines {}-{} of {}; end of file",
            v.offset, last, v.total_lines
        ));
    }
    if v.truncated_lines > 0 {
        notes.push(format!(
            "{} line{} cut at {MAX_LINE_CHARS} characters",
            v.truncated_lines,
            if v.truncated_lines == 1 { "" } else { "s" }
        ));
    }
    if !notes.is_empty() {
        out.push_str(&format!("({})\n", notes.join("; ")));
    }
    out
}

toolhost_kit::export_tools!(ReadTool);

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn read(dir: &Path, name: &str, offset: usize, limit: usize) -> Result<ReadValue, ToolError> {
        ReadTool::execute(ReadArgs {
            path: dir.join(name).display().to_string(),
            offset,
            limit,
            tail: None,
        })
    }

    fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            std::fs::write(dir.path().join(name), content).unwrap();
        }
        dir
    }

    #[test]
    fn plain_crlf_and_no_trailing_newline() {
        let d = dir_with(&[
            ("lf", b"a\nb\nc\n"),
            ("crlf", b"a\r\nb\r\nc\r\n"),
            ("nonl", b"a\nb\nc"),
        ]);
        for name in ["lf", "crlf", "nonl"] {
            let v = read(d.path(), name, 1, 2000).unwrap();
            assert_eq!(v.lines, vec!["a", "b", "c"], "{name}");
            assert_eq!(v.total_lines, 3);
            assert_eq!(v.next_offset, None);
        }
    }

    #[test]
    fn empty_file() {
        let d = dir_with(&[("empty", b"")]);
        let v = read(d.path(), "empty", 1, 2000).unwrap();
        assert_eq!(v.total_lines, 0);
        assert!(v.lines.is_empty());
        assert!(render_text(&v).contains("is empty"));
        let e = read(d.path(), "empty", 2, 2000).unwrap_err();
        assert_eq!(e.code, "offset_out_of_range");
    }

    #[test]
    fn window_and_render() {
        let text: String = (1..=300).map(|i| format!("line {i}\n")).collect();
        let d = dir_with(&[("big", text.as_bytes())]);
        let v = read(d.path(), "big", 1, 120).unwrap();
        assert_eq!(v.lines.len(), 120);
        assert_eq!(v.next_offset, Some(121));
        let r = render_text(&v);
        assert!(r.starts_with("     1\tline 1\n"), "{r}");
        assert!(
            r.ends_with("(lines 1-120 of 300; use offset=121 to continue)\n"),
            "{r}"
        );
        let v = read(d.path(), "big", 250, 2000).unwrap();
        assert_eq!(v.lines.first().map(String::as_str), Some("line 250"));
        assert_eq!(v.lines.len(), 51);
        assert_eq!(v.next_offset, None);
        assert!(render_text(&v).contains("lines 250-300 of 300; end of file"));
        let e = read(d.path(), "big", 301, 10).unwrap_err();
        assert_eq!(e.code, "offset_out_of_range");
        assert!(e.message.contains("300 lines"), "{}", e.message);
    }

    #[test]
    fn tail_reads_the_last_lines() {
        let text: String = (1..=300).map(|i| format!("line {i}\n")).collect();
        let d = dir_with(&[("big", text.as_bytes()), ("bin", b"a\n\0\n")]);
        let tail = |name: &str, n: usize, offset: usize| {
            ReadTool::execute(ReadArgs {
                path: d.path().join(name).display().to_string(),
                offset,
                limit: DEFAULT_LIMIT,
                tail: Some(n),
            })
        };
        let v = tail("big", 2, 1).unwrap();
        assert_eq!(v.lines, vec!["line 299", "line 300"]);
        assert_eq!((v.offset, v.total_lines, v.next_offset), (299, 300, None));
        assert!(render_text(&v).contains("lines 299-300 of 300; end of file"));
        assert_eq!(tail("big", 2, 5).unwrap_err().code, "invalid_arguments");
        assert_eq!(tail("big", 0, 1).unwrap_err().code, "invalid_arguments");
        assert_eq!(tail("bin", 1, 1).unwrap_err().code, "binary_file");
    }

    #[test]
    fn invalid_utf8_is_reported_with_its_line() {
        let d = dir_with(&[("mixed", b"ok\ncaf\xe9\nok\n")]);
        let v = read(d.path(), "mixed", 3, 1).unwrap();
        assert_eq!(v.lines, vec!["ok"]);
        let e = read(d.path(), "mixed", 1, 10).unwrap_err();
        assert_eq!(e.code, "not_utf8");
        assert!(e.message.contains("line 2"), "{}", e.message);
    }

    #[test]
    fn long_lines_are_cut() {
        let long = format!("{}\nshort\n", "é".repeat(2500));
        let d = dir_with(&[("long", long.as_bytes())]);
        let v = read(d.path(), "long", 1, 10).unwrap();
        assert_eq!(v.lines[0].chars().count(), MAX_LINE_CHARS);
        assert_eq!(v.truncated_lines, 1);
        assert!(render_text(&v).contains("1 line cut at 2000 characters"));
    }

    #[test]
    fn failures() {
        let d = dir_with(&[("bin", b"ab\0cd"), ("latin1", b"caf\xe9\n")]);
        std::fs::create_dir(d.path().join("sub")).unwrap();
        assert_eq!(
            read(d.path(), "bin", 1, 10).unwrap_err().code,
            "binary_file"
        );
        assert_eq!(
            read(d.path(), "latin1", 1, 10).unwrap_err().code,
            "not_utf8"
        );
        assert_eq!(
            read(d.path(), "missing", 1, 10).unwrap_err().code,
            "not_found"
        );
        assert_eq!(
            read(d.path(), "sub", 1, 10).unwrap_err().code,
            "is_directory"
        );
        assert_eq!(
            read(d.path(), "bin", 0, 10).unwrap_err().code,
            "invalid_arguments"
        );
    }

    #[test]
    fn json_defaults_and_schema() {
        let d = dir_with(&[("f", b"x\ny\n")]);
        let args = serde_json::json!({ "path": d.path().join("f") }).to_string();
        let out = toolhost_kit::execute_json::<ReadTool>(&args).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["offset"], 1);
        assert_eq!(v["totalLines"], 2);
        assert_eq!(v["lines"], serde_json::json!(["x", "y"]));
        let desc = toolhost_kit::describe::<ReadTool>();
        let input: serde_json::Value = serde_json::from_str(&desc.input_schema).unwrap();
        assert_eq!(input["additionalProperties"], false);
        assert_eq!(input["required"], serde_json::json!(["path"]));
        assert_eq!(input["properties"]["limit"]["default"], 2000);
        let e = toolhost_kit::execute_json::<ReadTool>(r#"{"path": "x", "bogus": 1}"#).unwrap_err();
        assert_eq!(e.code, "invalid_arguments");
    }
}
