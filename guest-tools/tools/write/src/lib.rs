//! The `write` tool: creates a text file or replaces its whole content.
//!
//! The parent directory must exist (it is not created). Whether an existing
//! file may be overwritten is the host's decision (path access `write`).

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_kit::text::count_lines;
use toolhost_kit::{Annotations, Content, PathAccess, PathParam, Tool, ToolError};

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// The file to write; relative paths are resolved against the working directory.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// Value of `write`.
#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteValue {
    /// The file that was written (resolved path).
    pub path: String,
    /// True when the file did not exist before.
    pub created: bool,
    /// Bytes written.
    pub bytes: u64,
    /// Lines written.
    pub lines: usize,
}

/// The `write` tool.
pub struct WriteTool;

impl Tool for WriteTool {
    const NAME: &'static str = "write";
    const DESCRIPTION: &'static str = "Writes a text file: creates it, or replaces its whole content \
        when it exists. The parent directory must already exist. \
        To change part of an existing file, prefer the edit tool.";
    type Args = WriteArgs;
    type Output = WriteValue;

    fn title() -> Option<&'static str> {
        Some("Write a file")
    }

    fn annotations() -> Annotations {
        Annotations::NONE.with_destructive().with_idempotent()
    }

    fn paths() -> Vec<PathParam> {
        vec![PathParam::new("/path", PathAccess::Write)]
    }

    fn execute(args: WriteArgs) -> Result<WriteValue, ToolError> {
        let path = toolhost_kit::resolve_path(&args.path);
        if path.file_name().is_none() {
            return Err(ToolError::invalid_arguments(format!(
                "{} does not name a file",
                path.display()
            )));
        }
        check_parent(&path)?;
        let created = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                return Err(ToolError::new(
                    "is_directory",
                    format!("{} is a directory", path.display()),
                ));
            }
            Ok(_) => false,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(ToolError::io(&e, &path)),
        };
        std::fs::write(&path, &args.content).map_err(|e| ToolError::io(&e, &path))?;
        Ok(WriteValue {
            path: path.display().to_string(),
            created,
            bytes: args.content.len() as u64,
            lines: count_lines(&args.content),
        })
    }

    fn render(_args: &WriteArgs, v: &WriteValue) -> Option<Vec<Content>> {
        Some(vec![Content::text(render_text(v))])
    }
}

fn check_parent(path: &Path) -> Result<(), ToolError> {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    match std::fs::metadata(parent) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(ToolError::new(
            "not_a_directory",
            format!("{} is not a directory", parent.display()),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ToolError::new(
            "not_found",
            format!(
                "parent directory {} does not exist; directories are not created automatically",
                parent.display()
            ),
        )),
        Err(e) => Err(ToolError::io(&e, parent)),
    }
}

/// The one-line summary of a write.
pub fn render_text(v: &WriteValue) -> String {
    format!(
        "{} {} ({} line{}, {} byte{})",
        if v.created { "Created" } else { "Overwrote" },
        v.path,
        v.lines,
        if v.lines == 1 { "" } else { "s" },
        v.bytes,
        if v.bytes == 1 { "" } else { "s" },
    )
}

toolhost_kit::export_tools!(WriteTool);

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, content: &str) -> Result<WriteValue, ToolError> {
        WriteTool::execute(WriteArgs {
            path: path.display().to_string(),
            content: content.to_string(),
        })
    }

    #[test]
    fn create_then_overwrite() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.txt");
        let v = write(&p, "one\ntwo\nthree\n").unwrap();
        assert!(v.created);
        assert_eq!((v.lines, v.bytes), (3, 14));
        assert_eq!(
            render_text(&v),
            format!("Created {} (3 lines, 14 bytes)", p.display())
        );
        let v = write(&p, "x").unwrap();
        assert!(!v.created);
        assert_eq!((v.lines, v.bytes), (1, 1));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "x");
        assert!(render_text(&v).starts_with("Overwrote "));
        let v = write(&p, "").unwrap();
        assert_eq!((v.lines, v.bytes), (0, 0));
        assert_eq!(std::fs::read(&p).unwrap(), b"");
    }

    #[test]
    fn failures() {
        let d = tempfile::tempdir().unwrap();
        let e = write(&d.path().join("nope/x.txt"), "a").unwrap_err();
        assert_eq!(e.code, "not_found");
        assert!(e.message.contains("parent directory"), "{}", e.message);
        assert!(!d.path().join("nope").exists());
        std::fs::create_dir(d.path().join("sub")).unwrap();
        assert_eq!(
            write(&d.path().join("sub"), "a").unwrap_err().code,
            "is_directory"
        );
        std::fs::write(d.path().join("file"), "a").unwrap();
        assert_eq!(
            write(&d.path().join("file/x"), "a").unwrap_err().code,
            "not_a_directory"
        );
    }
}
