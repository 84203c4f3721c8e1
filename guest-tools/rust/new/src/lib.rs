//! `{{name}}`: counts the lines and bytes of a file. A toolhost tool
//! component (contract `toolhost:tool@0.3.0`); `toolhost build` builds it.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_kit::{Annotations, Content, PathAccess, PathParam, Tool, ToolError};

/// The arguments. The kit derives the input schema from this type (doc
/// comments become descriptions), and the host checks every call against
/// it before the tool runs: change the schema here.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)] // additionalProperties: false, so a misspelt argument is refused
pub struct Args {
    /// The file, relative to the working directory or absolute.
    pub path: String,
}

/// The value, for programs and the model; the output schema comes from it.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Counts {
    /// The file, as given.
    pub path: String,
    /// Lines: newline characters, plus a last line without one.
    pub lines: u64,
    /// Size in bytes.
    pub bytes: u64,
}

/// The tool.
pub struct CountTool;

impl Tool for CountTool {
    const NAME: &'static str = "{{name}}";
    const DESCRIPTION: &'static str = "Counts the lines and bytes of a file.";
    type Args = Args;
    type Output = Counts;

    fn annotations() -> Annotations {
        // It changes nothing, and the same file gives the same answer.
        Annotations::READ_ONLY_IDEMPOTENT
    }

    fn paths() -> Vec<PathParam> {
        // The host checks this argument against the policy's grants first.
        vec![PathParam::new("/path", PathAccess::Read)]
    }

    fn execute(args: Args) -> Result<Counts, ToolError> {
        // A component has no working directory: resolve every path argument
        // as the host's checks did (relative to /workspace).
        let resolved = toolhost_kit::resolve_path(&args.path);
        // not_found, is_directory, permission_denied, ...: stable codes
        // naming the path as the caller gave it.
        let fail = |e: io::Error| ToolError::io(&e, Path::new(&args.path));
        let file = File::open(&resolved).map_err(fail)?;
        let (lines, bytes) = count(file).map_err(fail)?;
        Ok(Counts {
            path: args.path,
            lines,
            bytes,
        })
    }

    // What the model reads. It runs in a fresh instance, from the value alone.
    fn render(_args: &Args, v: &Counts) -> Option<Vec<Content>> {
        let text = format!("{} lines, {} bytes in {}", v.lines, v.bytes, v.path);
        Some(vec![Content::text(text)])
    }
}

/// The lines and bytes of what `reader` yields, read 64 KiB at a time so
/// that a file of any size takes constant memory.
pub fn count(mut reader: impl Read) -> io::Result<(u64, u64)> {
    let mut buf = vec![0; 64 * 1024];
    let (mut lines, mut bytes, mut last) = (0, 0, b'\n');
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        // The kit's counter uses wasm SIMD, 16 bytes an instruction.
        lines += toolhost_kit::text::count_newlines(&buf[..n]) as u64;
        bytes += n as u64;
        last = buf[n - 1];
    }
    // A last line without a newline is a line too.
    Ok((lines + u64::from(last != b'\n'), bytes))
}

// The component's tools (one or more types), checked at compile time.
toolhost_kit::export_tools!(CountTool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_and_bytes() {
        assert_eq!(count(&b""[..]).unwrap(), (0, 0));
        assert_eq!(count(&b"one\ntwo\n"[..]).unwrap(), (2, 8));
        assert_eq!(count(&b"one\ntwo"[..]).unwrap(), (2, 7));
        assert_eq!(count(&b"\n\n"[..]).unwrap(), (2, 2));
        // Across the 64 KiB reads.
        assert_eq!(
            count("x\n".repeat(100_000).as_bytes()).unwrap(),
            (100_000, 200_000)
        );
    }

    // The same dispatch the component runs: JSON in, JSON (or a failure)
    // out. `cargo test` runs in the project's directory.
    #[test]
    fn runs_as_in_the_component() {
        let value = toolhost_kit::execute_json::<CountTool>(r#"{"path": "Cargo.toml"}"#).unwrap();
        let counts: Counts = toolhost_kit::serde_json::from_str(&value).unwrap();
        assert_eq!(counts.path, "Cargo.toml");
        assert!(counts.lines > 10 && counts.bytes > 100);

        let err =
            toolhost_kit::execute_json::<CountTool>(r#"{"path": "missing.txt"}"#).unwrap_err();
        assert_eq!(err.code, "not_found");
        let err = toolhost_kit::execute_json::<CountTool>(r#"{"file": "x"}"#).unwrap_err();
        assert_eq!(err.code, "invalid_arguments");
        let err = toolhost_kit::execute_json::<CountTool>(r#"{"path": "src"}"#).unwrap_err();
        assert_eq!(err.code, "is_directory");
    }

    #[test]
    fn renders_one_line() {
        let v = Counts {
            path: "notes.txt".into(),
            lines: 12,
            bytes: 345,
        };
        let args = Args {
            path: v.path.clone(),
        };
        let content = CountTool::render(&args, &v).unwrap();
        assert!(
            matches!(content.as_slice(), [Content::Text(t)] if t == "12 lines, 345 bytes in notes.txt")
        );
    }
}
