//! What a tool declares about itself.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a tool uses a path argument (mirrors `path-access` in the WIT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathAccess {
    /// Reads a file.
    Read,
    /// Lists or walks a directory.
    List,
    /// Creates a file that must not exist.
    Create,
    /// Replaces an existing file.
    Overwrite,
    /// Edits part of an existing file.
    Patch,
    /// Create or overwrite, decided by the host at the path stage.
    Write,
}

impl PathAccess {
    /// Whether this access modifies the filesystem.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            PathAccess::Create | PathAccess::Overwrite | PathAccess::Patch | PathAccess::Write
        )
    }
}

/// A declared path argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathParam {
    /// JSON Pointer to the argument, e.g. `/path`.
    pub pointer: String,
    /// How the tool uses it.
    pub access: PathAccess,
}

/// Behaviour hints (MCP tool annotations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Does not modify its environment.
    pub read_only: bool,
    /// May perform destructive updates.
    pub destructive: bool,
    /// Repeating the call has no additional effect (the host may retry it).
    pub idempotent: bool,
    /// Talks to an open world (e.g. the network).
    pub open_world: bool,
}

/// A tool's full declaration, as the host keeps it. Only an allow-listed
/// projection of it is ever shown to a model (see the pipeline's
/// advertisement module).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    /// Unique name, `[a-z][a-z0-9_]*`, at most 64 bytes.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
    /// JSON Schema of the canonical value.
    pub output_schema: Value,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// Declared path arguments.
    pub paths: Vec<PathParam>,
    /// A human-readable title (contract 0.2.0; `None` for 0.1.0 components).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Declared URL arguments, as JSON Pointers (contract 0.2.0): the host
    /// checks each URL's host and port against the network allow-list before
    /// anyone is asked to approve the call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
}

/// Why a component's declaration of a tool was refused at load.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DescriptorError {
    /// The name is not `[a-z][a-z0-9_]*` of at most 64 bytes.
    #[error("tool name `{0}` is not [a-z][a-z0-9_]* of at most 64 bytes")]
    BadName(String),
    /// A schema is not a JSON object.
    #[error("tool `{tool}`: {which} schema is not a JSON object: {reason}")]
    BadSchema {
        /// The tool.
        tool: String,
        /// `input` or `output`.
        which: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A path or URL pointer is not a JSON Pointer.
    #[error("tool `{tool}`: argument pointer `{pointer}` must start with `/`")]
    BadPointer {
        /// The tool.
        tool: String,
        /// The pointer.
        pointer: String,
    },
    /// Two tools of one component share a name.
    #[error("tool `{0}` is declared twice")]
    Duplicate(String),
}

/// Whether `name` is a valid tool name.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.as_bytes()[0].is_ascii_lowercase()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl ToolDescriptor {
    /// Builds a descriptor from the raw strings a component returned,
    /// checking the name, that both schemas are JSON objects (the input
    /// schema of type `object`) and that path pointers are well formed.
    pub fn from_raw(
        name: String,
        description: String,
        input_schema: &str,
        output_schema: &str,
        annotations: Annotations,
        paths: Vec<PathParam>,
    ) -> Result<ToolDescriptor, DescriptorError> {
        if !valid_name(&name) {
            return Err(DescriptorError::BadName(name));
        }
        let parse = |which: &'static str, text: &str| -> Result<Value, DescriptorError> {
            let bad = |reason: String| DescriptorError::BadSchema {
                tool: name.clone(),
                which,
                reason,
            };
            let v: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
            if !v.is_object() {
                return Err(bad("not an object".into()));
            }
            Ok(v)
        };
        let input_schema = parse("input", input_schema)?;
        let output_schema = parse("output", output_schema)?;
        if input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(DescriptorError::BadSchema {
                tool: name,
                which: "input",
                reason: "arguments must be described as `\"type\": \"object\"`".into(),
            });
        }
        if let Some(p) = paths.iter().find(|p| !p.pointer.starts_with('/')) {
            return Err(DescriptorError::BadPointer {
                tool: name,
                pointer: p.pointer.clone(),
            });
        }
        Ok(ToolDescriptor {
            name,
            description,
            input_schema,
            output_schema,
            annotations,
            paths,
            title: None,
            urls: Vec::new(),
        })
    }

    /// Adds what contract 0.2.0 declares beyond 0.1.0: a title and the
    /// URL arguments (each a JSON Pointer).
    pub fn with_v2(
        mut self,
        title: Option<String>,
        urls: Vec<String>,
    ) -> Result<ToolDescriptor, DescriptorError> {
        if let Some(p) = urls.iter().find(|p| !p.starts_with('/')) {
            return Err(DescriptorError::BadPointer {
                tool: self.name,
                pointer: p.clone(),
            });
        }
        self.title = title.filter(|t| !t.trim().is_empty());
        self.urls = urls;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(name: &str, input: &str) -> Result<ToolDescriptor, DescriptorError> {
        ToolDescriptor::from_raw(
            name.into(),
            "d".into(),
            input,
            "{}",
            Annotations::default(),
            vec![],
        )
    }

    #[test]
    fn names_and_schemas_are_checked() {
        assert!(raw("read_file2", r#"{"type":"object"}"#).is_ok());
        assert!(matches!(
            raw("Read", "{}"),
            Err(DescriptorError::BadName(_))
        ));
        assert!(matches!(raw("", "{}"), Err(DescriptorError::BadName(_))));
        assert!(matches!(
            raw("x", "[1]"),
            Err(DescriptorError::BadSchema { which: "input", .. })
        ));
        assert!(matches!(
            raw("x", r#"{"type":"string"}"#),
            Err(DescriptorError::BadSchema { .. })
        ));
        assert!(matches!(
            raw("x", "{"),
            Err(DescriptorError::BadSchema { .. })
        ));
    }
}
