//! Session scripts: the calls of a scripted agent session, as JSON Lines.
//!
//! ```text
//! # comments and blank lines are skipped
//! {"tool": "read", "arguments": {"path": "src/greet.rs"}, "note": "read the file"}
//! {"tool": "read", "arguments": "{not json"}
//! ```
//! `arguments` is the JSON the model sends, or a string sent as is (so a
//! script can hold malformed arguments too).

use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// One scripted call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    /// The tool.
    pub tool: String,
    /// The arguments (a string is sent as is).
    #[serde(default)]
    pub arguments: Value,
    /// What the call is for (shown by the demo).
    #[serde(default)]
    pub note: Option<String>,
}

impl ScriptCall {
    /// The arguments as the model would send them.
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(raw) => raw.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }
}

/// A script could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The script.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a call.
    #[error("{path}:{line}: not a script call: {message}")]
    Malformed {
        /// The script.
        path: String,
        /// 1-based line number.
        line: usize,
        /// Why.
        message: String,
    },
}

/// Reads a script file.
pub fn read_script(path: &Path) -> Result<Vec<ScriptCall>, ScriptError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Io {
        path: path.display().to_string(),
        source,
    })?;
    parse_script(&text, path)
}

/// Parses script text (`path` names it in errors).
pub fn parse_script(text: &str, path: &Path) -> Result<Vec<ScriptCall>, ScriptError> {
    let mut calls = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let call = serde_json::from_str(t).map_err(|e| ScriptError::Malformed {
            path: path.display().to_string(),
            line: i + 1,
            message: e.to_string(),
        })?;
        calls.push(call);
    }
    Ok(calls)
}

/// Copies a scripted session's starting workspace (directories and
/// regular files; anything else is skipped) from `from` into `to`.
pub fn copy_workspace(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_workspace(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_skip_comments_keep_raw_arguments_and_name_bad_lines() {
        let text = "# a session\n\n{\"tool\":\"read\",\"arguments\":{\"path\":\"a\"}}\n{\"tool\":\"read\",\"arguments\":\"{oops\"}\n";
        let calls = parse_script(text, Path::new("s.jsonl")).expect("parses");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments_text(), r#"{"path":"a"}"#);
        assert_eq!(calls[1].arguments_text(), "{oops");
        let err = parse_script("{\"tool\":\"x\",\"args\":{}}", Path::new("s.jsonl"))
            .expect_err("unknown field");
        assert!(err.to_string().starts_with("s.jsonl:1: "), "{err}");
    }
}
