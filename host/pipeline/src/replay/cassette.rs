//! The cassette file: JSON Lines, versioned, one header then one line per
//! call, in position order.
//!
//! ```text
//! {"type":"header","format":"toolhost-cassette","version":1,"seed":7,"components":{..},"policies":{..},"schemas":".."}
//! {"type":"call","index":0,"position":1,"key":{"tool":"read","args":"9f..","n":0},"arguments":{..},"valueSha256":"..","contentSha256":"..","result":{..}}
//! ```
//!
//! Unlike the session log, a cassette keeps each result's **value** (the
//! log keeps only its hash): replay returns it. Treat a cassette like the
//! files the tools read.

use super::key::{CallKey, canonical_sha256};
use crate::advertise::{Format, schemas};
use crate::registry::Registry;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use toolhost_contract::ToolResult;

/// The `format` of every cassette header.
pub const FORMAT: &str = "toolhost-cassette";

/// The cassette format version this build writes and reads.
pub const VERSION: u32 = 1;

/// The first line: what the recording was made with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// The format version ([`VERSION`]).
    pub version: u32,
    /// The deterministic session seed.
    pub seed: u64,
    /// Tool name → SHA-256 of the component that runs it (tools that are
    /// not components are absent).
    pub components: BTreeMap<String, String>,
    /// Tool name → SHA-256 of its resolved policy's canonical JSON (host
    /// paths of directory grants left out).
    pub policies: BTreeMap<String, String>,
    /// SHA-256 of the advertised MCP schemas' canonical JSON.
    pub schemas: String,
    /// Tool name → its descriptor's digest ([`toolhost_contract::ToolDescriptor::digest`]):
    /// what each tool said about itself when the recording was made.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub descriptors: BTreeMap<String, String>,
}

impl Header {
    /// The header of a recording of `registry`'s global tools with `seed`.
    pub fn describe(registry: &Registry, seed: u64) -> Header {
        let mut components = BTreeMap::new();
        let mut policies = BTreeMap::new();
        let mut descriptors = BTreeMap::new();
        for t in registry.visible(None) {
            let name = t.descriptor.name.clone();
            descriptors.insert(name.clone(), t.digest.clone());
            if let Some(id) = t.body.component_id() {
                components.insert(name.clone(), id.to_owned());
            }
            policies.insert(name, policy_digest(&t.policy));
        }
        let advertised = Value::Array(schemas(registry, None, Format::Mcp));
        Header {
            format: FORMAT.into(),
            version: VERSION,
            seed,
            components,
            policies,
            schemas: canonical_sha256(&advertised),
            descriptors,
        }
    }
}

/// SHA-256 of a policy's canonical JSON without the host side of its
/// directory grants, so a recording made in one checkout verifies in
/// another (the guest paths, modes and limits are what a tool observes).
fn policy_digest(policy: &toolhost_policy::ToolPolicy) -> String {
    let mut v = serde_json::to_value(policy).unwrap_or(Value::Null);
    if let Some(fs) = v.pointer_mut("/sandbox/fs").and_then(Value::as_array_mut) {
        for grant in fs {
            if let Some(g) = grant.as_object_mut() {
                g.remove("host");
            }
        }
    }
    canonical_sha256(&v)
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    /// Its place in the cassette, from 0.
    pub index: u64,
    /// The call's position in the recorded session (its virtual
    /// environment derives from it).
    pub position: u64,
    /// The replay key.
    pub key: CallKey,
    /// For a call a script made: the key of the call that ran the script
    /// (played back whole, it plays its calls too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<CallKey>,
    /// The arguments, when they were JSON.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub arguments: Value,
    /// The raw argument text, when it was not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
    /// SHA-256 of the value's canonical JSON, when the call succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_sha256: Option<String>,
    /// SHA-256 of the content blocks' canonical JSON.
    pub content_sha256: String,
    /// The final result, as the caller got it.
    pub result: ToolResult,
}

impl Entry {
    /// The arguments as the model sent them: the raw text, or the JSON.
    pub fn argument_text(&self) -> String {
        self.raw_arguments
            .clone()
            .unwrap_or_else(|| self.arguments.to_string())
    }

    /// The entry for `call`'s `result` (`parent`: the key of the call
    /// whose script made it).
    pub fn new(
        index: u64,
        position: u64,
        key: CallKey,
        parent: Option<CallKey>,
        call: &crate::FrozenCall,
        result: ToolResult,
    ) -> Entry {
        let (value_sha256, content_sha256) = hashes(&result);
        let (arguments, raw_arguments) = match call.arguments() {
            crate::ParsedArguments::Json(v) => (v.clone(), None),
            crate::ParsedArguments::Raw(r) => (Value::Null, Some(r.clone())),
        };
        Entry {
            index,
            position,
            key,
            parent,
            arguments,
            raw_arguments,
            value_sha256,
            content_sha256,
            result,
        }
    }
}

/// The value's and the content's hashes over canonical JSON.
fn hashes(result: &ToolResult) -> (Option<String>, String) {
    let content = serde_json::to_value(result.content()).unwrap_or(Value::Null);
    (
        result.value().map(canonical_sha256),
        canonical_sha256(&content),
    )
}

/// One line of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
#[allow(clippy::large_enum_variant)]
pub enum Line {
    /// The first line.
    Header(Header),
    /// A recorded call.
    Call(Entry),
}

/// A cassette read from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// Its header.
    pub header: Header,
    /// Its calls, in order.
    pub entries: Vec<Entry>,
}

/// A cassette could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file could not be opened, read or written.
    #[error("cassette {path}: {source}")]
    Io {
        /// The cassette.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not what the format says.
    #[error("cassette {path}:{line}: {message}")]
    Malformed {
        /// The cassette.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl Recording {
    /// Reads a cassette, checking the header, the order of the entries and
    /// every hash (a hand-edited value is caught here, naming its line).
    pub fn read(path: &Path) -> Result<Recording, CassetteError> {
        let text = std::fs::read_to_string(path).map_err(|source| CassetteError::Io {
            path: path.to_owned(),
            source,
        })?;
        Recording::parse(&text, path)
    }

    /// Parses cassette text (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Recording, CassetteError> {
        let bad = |line: usize, message: String| CassetteError::Malformed {
            path: path.to_owned(),
            line,
            message,
        };
        let mut header = None;
        let mut entries: Vec<Entry> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            if raw.trim().is_empty() {
                continue;
            }
            let line: Line = serde_json::from_str(raw).map_err(|e| bad(n, e.to_string()))?;
            match (line, &header) {
                (Line::Header(h), None) => {
                    if h.format != FORMAT {
                        return Err(bad(n, format!("format is `{}`, not `{FORMAT}`", h.format)));
                    }
                    if h.version != VERSION {
                        return Err(bad(
                            n,
                            format!(
                                "format version {} is not supported (this build reads version {VERSION})",
                                h.version
                            ),
                        ));
                    }
                    header = Some(h);
                }
                (Line::Header(_), Some(_)) => return Err(bad(n, "a second header".into())),
                (Line::Call(_), None) => {
                    return Err(bad(n, "a call before the header".into()));
                }
                (Line::Call(e), Some(_)) => {
                    if e.index != entries.len() as u64 {
                        return Err(bad(
                            n,
                            format!("index {} where {} was expected", e.index, entries.len()),
                        ));
                    }
                    let (value, content) = hashes(&e.result);
                    if value != e.value_sha256 {
                        return Err(bad(n, "the value does not match valueSha256".into()));
                    }
                    if content != e.content_sha256 {
                        return Err(bad(n, "the content does not match contentSha256".into()));
                    }
                    entries.push(e);
                }
            }
        }
        let header = header.ok_or_else(|| bad(1, "no header".into()))?;
        Ok(Recording { header, entries })
    }
}

/// Appends lines to a cassette, one `write` per line, flushed each time.
#[derive(Debug)]
pub(crate) struct Writer {
    path: PathBuf,
    file: std::fs::File,
}

impl Writer {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path) -> Result<Writer, CassetteError> {
        Writer::open(path, false)
    }

    /// Opens `path` to append.
    pub fn append(path: &Path) -> Result<Writer, CassetteError> {
        Writer::open(path, true)
    }

    fn open(path: &Path, append: bool) -> Result<Writer, CassetteError> {
        let mut o = std::fs::OpenOptions::new();
        if append {
            o.append(true);
        } else {
            o.write(true).create(true).truncate(true);
        }
        let file = o.open(path).map_err(|source| CassetteError::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(Writer {
            path: path.to_owned(),
            file,
        })
    }

    /// Writes one line.
    pub fn write(&mut self, line: &Line) -> Result<(), CassetteError> {
        let mut text = serde_json::to_string(line).map_err(|e| CassetteError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        text.push('\n');
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|source| CassetteError::Io {
                path: self.path.clone(),
                source,
            })
    }
}
