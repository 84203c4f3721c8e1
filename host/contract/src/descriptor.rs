//! What a tool declares about itself.

use crate::visible::{Escaped, escape_json, escape_string};
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
    /// The tool renders nothing itself (contract 0.3.0): the host renders
    /// its value and never calls its `render`, so a call needs one
    /// instance whatever the policy's render mode.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_renders: bool,
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
    /// The component declares more tools than its bound.
    #[error(
        "it declares {count} tools, more than `descriptors.max_tools` = {limit} allows (a bound on what a component may put into every client's context)"
    )]
    TooManyTools {
        /// How many it declared.
        count: usize,
        /// The bound.
        limit: u64,
    },
    /// One text of a tool is larger than its bound.
    #[error(
        "tool `{tool}`: its {what} is {bytes} bytes, more than `descriptors.{key}` = {limit} allows"
    )]
    TooLarge {
        /// The tool.
        tool: String,
        /// `description`, `title`, `input schema` or `output schema`.
        what: &'static str,
        /// The policy key of the bound.
        key: &'static str,
        /// Its size.
        bytes: usize,
        /// The bound.
        limit: u64,
    },
    /// All the component's descriptors together are larger than the bound.
    #[error(
        "its tool descriptors take {bytes} bytes or more, more than `descriptors.max_total_bytes` = {limit} allows"
    )]
    TooLargeInAll {
        /// The size counted when the bound was passed.
        bytes: usize,
        /// The bound.
        limit: u64,
    },
}

/// Default [`DescriptorLimits::max_tools`]: the largest public MCP servers
/// list about two hundred tools (ToolAPI 193, ToolPipe 135), and clients
/// already warn past forty; five times the largest is never met by an
/// honest component, and a thousand small tools load in milliseconds.
pub const DEFAULT_MAX_TOOLS: u64 = 1_024;
/// Default [`DescriptorLimits::max_description_bytes`]: published tool
/// descriptions run from one line to a few KiB; 16 KiB leaves room for
/// the long ones, and is what a model reads of one tool at most.
pub const DEFAULT_MAX_DESCRIPTION_BYTES: u64 = 16 * 1024;
/// Default [`DescriptorLimits::max_schema_bytes`]: hand-written input
/// schemas are a few KiB, generated ones for large APIs tens of KiB;
/// 256 KiB leaves room for those.
pub const DEFAULT_MAX_SCHEMA_BYTES: u64 = 256 * 1024;
/// Default [`DescriptorLimits::max_total_bytes`]: what one component may
/// put into every client's `tools/list` at most. A thousand small tools
/// advertise about 270 KiB; 1 MiB is about 250,000 tokens of context, already
/// more than most models hold.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 1024 * 1024;

/// Bounds on what one component may declare about its tools, checked at
/// load before anything it declared is parsed. Past one, the component is
/// not served: cutting a description would change what it says, and
/// cutting a schema would change what it accepts, so toolhost refuses
/// rather than cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DescriptorLimits {
    /// Tools per component.
    pub max_tools: u64,
    /// Bytes of one description (and of one title).
    pub max_description_bytes: u64,
    /// Bytes of one input or output schema, as declared.
    pub max_schema_bytes: u64,
    /// Bytes of every descriptor of the component together.
    pub max_total_bytes: u64,
}

impl Default for DescriptorLimits {
    /// The `DEFAULT_MAX_*` constants.
    fn default() -> Self {
        DescriptorLimits {
            max_tools: DEFAULT_MAX_TOOLS,
            max_description_bytes: DEFAULT_MAX_DESCRIPTION_BYTES,
            max_schema_bytes: DEFAULT_MAX_SCHEMA_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
        }
    }
}

/// What one declared tool weighs, before it is parsed.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeclaredSizes<'a> {
    /// The tool's name.
    pub name: &'a str,
    /// Bytes of its description.
    pub description: usize,
    /// Bytes of its title.
    pub title: usize,
    /// Bytes of its input schema.
    pub input_schema: usize,
    /// Bytes of its output schema.
    pub output_schema: usize,
    /// Bytes of its path and URL pointers.
    pub pointers: usize,
}

impl DescriptorLimits {
    /// Checks the number of tools a component declares.
    pub fn check_count(&self, count: usize) -> Result<(), DescriptorError> {
        if count as u64 > self.max_tools {
            return Err(DescriptorError::TooManyTools {
                count,
                limit: self.max_tools,
            });
        }
        Ok(())
    }

    /// Checks one tool's texts, and adds its size to `total`, the size of
    /// the component's descriptors so far.
    pub fn check_tool(
        &self,
        sizes: &DeclaredSizes<'_>,
        total: &mut usize,
    ) -> Result<(), DescriptorError> {
        let too_large = |what, key, bytes: usize, limit: u64| {
            (bytes as u64 > limit).then(|| DescriptorError::TooLarge {
                tool: sizes.name.to_owned(),
                what,
                key,
                bytes,
                limit,
            })
        };
        let checks = [
            too_large(
                "description",
                "max_description_bytes",
                sizes.description,
                self.max_description_bytes,
            ),
            too_large(
                "title",
                "max_description_bytes",
                sizes.title,
                self.max_description_bytes,
            ),
            too_large(
                "input schema",
                "max_schema_bytes",
                sizes.input_schema,
                self.max_schema_bytes,
            ),
            too_large(
                "output schema",
                "max_schema_bytes",
                sizes.output_schema,
                self.max_schema_bytes,
            ),
        ];
        if let Some(e) = checks.into_iter().flatten().next() {
            return Err(e);
        }
        *total = total
            .saturating_add(sizes.name.len())
            .saturating_add(sizes.description)
            .saturating_add(sizes.title)
            .saturating_add(sizes.input_schema)
            .saturating_add(sizes.output_schema)
            .saturating_add(sizes.pointers);
        if *total as u64 > self.max_total_bytes {
            return Err(DescriptorError::TooLargeInAll {
                bytes: *total,
                limit: self.max_total_bytes,
            });
        }
        Ok(())
    }
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
            host_renders: false,
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

    /// Escapes what a person cannot see (see [`crate::visible`]) in every
    /// text the descriptor advertises: description, title, every string
    /// of both schemas (keys too) and the argument pointers, which name
    /// schema keys. What was escaped is returned.
    pub fn escape_invisible(&mut self) -> Escaped {
        let mut found = Escaped::default();
        escape_string(&mut self.description, &mut found);
        if let Some(t) = &mut self.title {
            escape_string(t, &mut found);
        }
        escape_json(&mut self.input_schema, &mut found);
        escape_json(&mut self.output_schema, &mut found);
        for p in &mut self.paths {
            escape_string(&mut p.pointer, &mut found);
        }
        for u in &mut self.urls {
            escape_string(u, &mut found);
        }
        found
    }

    /// The descriptor's pin: `sha256:` and the SHA-256 of the canonical
    /// JSON of everything it advertises or the host acts on (name, title,
    /// description, schemas, annotations, path and URL arguments). Equal
    /// descriptors have equal digests whatever order their schema keys
    /// came in.
    pub fn digest(&self) -> String {
        let v = serde_json::to_value(self).unwrap_or(Value::Null);
        format!("sha256:{}", crate::canonical_sha256(&v))
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

    #[test]
    fn the_digest_pins_what_is_advertised_not_key_order() {
        let a = raw("x", r#"{"type":"object","properties":{"a":{},"b":{}}}"#).unwrap();
        let b = raw("x", r#"{"properties":{"b":{},"a":{}},"type":"object"}"#).unwrap();
        assert_eq!(a.digest(), b.digest());
        assert!(a.digest().starts_with("sha256:") && a.digest().len() == 71);
        let mut c = a.clone();
        c.description.push('.');
        assert_ne!(a.digest(), c.digest());
        let mut d = a.clone();
        d.annotations.destructive = true;
        assert_ne!(a.digest(), d.digest());
    }

    #[test]
    fn limits_name_the_bound_and_the_size() {
        let limits = DescriptorLimits {
            max_tools: 2,
            max_description_bytes: 10,
            max_schema_bytes: 100,
            max_total_bytes: 150,
        };
        assert!(limits.check_count(2).is_ok());
        assert_eq!(
            limits.check_count(3).unwrap_err().to_string(),
            "it declares 3 tools, more than `descriptors.max_tools` = 2 allows (a bound on what a component may put into every client's context)"
        );
        let mut total = 0;
        let sizes = DeclaredSizes {
            name: "t",
            description: 11,
            ..Default::default()
        };
        assert_eq!(
            limits
                .check_tool(&sizes, &mut total)
                .unwrap_err()
                .to_string(),
            "tool `t`: its description is 11 bytes, more than `descriptors.max_description_bytes` = 10 allows"
        );
        let sizes = DeclaredSizes {
            name: "t",
            input_schema: 90,
            ..Default::default()
        };
        assert!(limits.check_tool(&sizes, &mut total).is_ok());
        assert!(matches!(
            limits.check_tool(&sizes, &mut total),
            Err(DescriptorError::TooLargeInAll {
                bytes: 182,
                limit: 150
            })
        ));
    }
}
