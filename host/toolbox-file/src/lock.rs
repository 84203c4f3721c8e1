//! The lock file, `toolhost.lock`, beside the toolbox: what each remote
//! component resolved to when it was locked (`toolhost lock`, `add`,
//! `update`). Serving never resolves a tag: it runs the bytes the lock names
//! or nothing.
//!
//! ```toml
//! # toolhost.lock: written by `toolhost lock`; `toolhost update` moves a pin.
//! version = 1
//!
//! [[component]]
//! source = "oci://ghcr.io/acme/csv:1.2"
//! manifest = "sha256:…"      # the manifest the tag named (OCI sources)
//! component = "sha256:…"     # the component's bytes
//! signer = "key sha256:…"    # who signed it, as verified ("unsigned" when no rule required it)
//!
//! [component.tools]           # each tool's descriptor digest (name, title,
//! read_csv = "sha256:…"       # description, schemas, annotations, arguments)
//! ```
//!
//! A served component must declare exactly the descriptors its entry pins;
//! `toolhost update` shows how they changed before it pins new ones.
//!
//! Unknown keys are errors naming the line, as in every toolhost file.

use crate::remote::Digest;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use toml::Spanned;
use toolhost_policy::{PolicyError, line_column};

/// The only `version` of lock files.
pub const LOCK_VERSION: i64 = 1;

/// A parsed lock file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockFile {
    /// One entry per locked source, in file order.
    pub entries: Vec<LockEntry>,
}

/// What one remote source is pinned to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockEntry {
    /// The source as the toolbox writes it.
    pub source: String,
    /// The manifest digest its tag resolved to (OCI sources).
    pub manifest: Option<Digest>,
    /// The SHA-256 of the component's bytes.
    pub component: Digest,
    /// The signer that was verified, or `unsigned`.
    pub signer: String,
    /// Each tool's descriptor digest, by name (`None`: a lock written
    /// before descriptors were pinned; `toolhost lock` pins them).
    pub tools: Option<BTreeMap<String, Digest>>,
    /// 1-based line in the lock file (0 for an entry not read from one).
    pub line: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLock {
    version: Spanned<i64>,
    component: Option<Vec<Spanned<RawEntry>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    source: String,
    manifest: Option<Spanned<String>>,
    component: Spanned<String>,
    signer: String,
    tools: Option<BTreeMap<String, Spanned<String>>>,
}

impl LockFile {
    /// Parses a lock file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<LockFile, PolicyError> {
        let raw: RawLock =
            toml::from_str(text).map_err(|e| PolicyError::from_toml(origin, text, &e))?;
        if *raw.version.get_ref() != LOCK_VERSION {
            return Err(PolicyError::at(
                origin,
                text,
                raw.version.span(),
                format!(
                    "unsupported lock file version {}, expected {LOCK_VERSION}",
                    raw.version.get_ref()
                ),
            ));
        }
        let mut entries: Vec<LockEntry> = Vec::new();
        for entry in raw.component.unwrap_or_default() {
            let (line, _) = line_column(text, entry.span().start);
            let entry = entry.into_inner();
            let digest = |d: &Spanned<String>| {
                Digest::parse(d.get_ref()).map_err(|m| PolicyError::at(origin, text, d.span(), m))
            };
            let manifest = entry.manifest.as_ref().map(digest).transpose()?;
            let component = digest(&entry.component)?;
            let tools = entry
                .tools
                .as_ref()
                .map(|t| {
                    t.iter()
                        .map(|(name, d)| Ok((name.clone(), digest(d)?)))
                        .collect::<Result<BTreeMap<_, _>, PolicyError>>()
                })
                .transpose()?;
            if entries.iter().any(|e| e.source == entry.source) {
                return Err(PolicyError::new(
                    origin,
                    format!("line {line}: `{}` is locked twice", entry.source),
                ));
            }
            entries.push(LockEntry {
                source: entry.source,
                manifest,
                component,
                signer: entry.signer,
                tools,
                line,
            });
        }
        Ok(LockFile { entries })
    }

    /// Reads the lock file at `path`; `None` when there is none.
    pub fn load(path: &Path) -> Result<Option<LockFile>, PolicyError> {
        let origin = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => LockFile::parse(&text, &origin).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(PolicyError::new(
                &origin,
                format!("cannot read lock file: {e}"),
            )),
        }
    }

    /// The entry of `source` (as the toolbox writes it).
    pub fn get(&self, source: &str) -> Option<&LockEntry> {
        self.entries.iter().find(|e| e.source == source)
    }

    /// Sets `entry`, in place of the one for its source.
    pub fn set(&mut self, entry: LockEntry) {
        match self.entries.iter_mut().find(|e| e.source == entry.source) {
            Some(e) => *e = entry,
            None => self.entries.push(entry),
        }
    }

    /// Keeps only the entries of `sources`.
    pub fn retain_sources(&mut self, sources: &[String]) {
        self.entries.retain(|e| sources.contains(&e.source));
    }

    /// The file's text: entries sorted by source, so a lock changes only
    /// where a pin did.
    pub fn render(&self) -> String {
        let mut entries: Vec<&LockEntry> = self.entries.iter().collect();
        entries.sort_by(|a, b| a.source.cmp(&b.source));
        let mut out = String::from(
            "# toolhost.lock: written by `toolhost lock`; `toolhost update` moves a pin on purpose.\n\
             # It pins every remote component of the toolbox beside it. Do not edit by hand.\n",
        );
        out.push_str(&format!("version = {LOCK_VERSION}\n"));
        for e in entries {
            out.push_str("\n[[component]]\n");
            out.push_str(&format!("source = {}\n", quote(&e.source)));
            if let Some(m) = &e.manifest {
                out.push_str(&format!("manifest = {}\n", quote(m.as_str())));
            }
            out.push_str(&format!("component = {}\n", quote(e.component.as_str())));
            out.push_str(&format!("signer = {}\n", quote(&e.signer)));
            if let Some(tools) = &e.tools {
                out.push_str("\n[component.tools]\n");
                for (name, digest) in tools {
                    // Tool names are bare keys; anything else is quoted.
                    let bare = !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                    let key = if bare { name.clone() } else { quote(name) };
                    out.push_str(&format!("{key} = {}\n", quote(digest.as_str())));
                }
            }
        }
        out
    }

    /// Writes the file atomically (a temporary file renamed into place).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension(format!("lock.{}.tmp", std::process::id()));
        std::fs::write(&tmp, self.render())?;
        std::fs::rename(&tmp, path)
    }
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    fn entry(source: &str) -> LockEntry {
        LockEntry {
            source: source.into(),
            manifest: Some(Digest::parse(D1).expect("digest")),
            component: Digest::parse(D2).expect("digest"),
            signer: "unsigned".into(),
            tools: Some([("echo".to_owned(), Digest::parse(D1).expect("digest"))].into()),
            line: 0,
        }
    }

    #[test]
    fn a_lock_round_trips_sorted() {
        let mut lock = LockFile::default();
        lock.set(entry("oci://r.io/b:1"));
        lock.set(entry("oci://r.io/a:\"1\""));
        let text = lock.render();
        let parsed = LockFile::parse(&text, "toolhost.lock").expect("parses");
        let sources: Vec<&str> = parsed.entries.iter().map(|e| e.source.as_str()).collect();
        assert_eq!(sources, ["oci://r.io/a:\"1\"", "oci://r.io/b:1"]);
        assert_eq!(parsed.get("oci://r.io/b:1").map(|e| e.line), Some(14));
        assert_eq!(
            parsed.get("oci://r.io/a:\"1\"").map(|e| &e.component),
            Some(&Digest::parse(D2).expect("digest"))
        );
        assert_eq!(
            parsed.entries,
            lock.entries
                .iter()
                .rev()
                .cloned()
                .map(|mut e| {
                    e.line = parsed.get(&e.source).map_or(0, |p| p.line);
                    e
                })
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn bad_locks_name_the_line() {
        let e = LockFile::parse("version = 2\n", "l").unwrap_err();
        assert_eq!(
            e.to_string(),
            "l:1:11: unsupported lock file version 2, expected 1"
        );
        let e = LockFile::parse(
            "version = 1\n[[component]]\nsource = \"x\"\ncomponent = \"sha256:1\"\nsigner = \"unsigned\"\n",
            "l",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("l:4:13: "), "{e}");
        let e = LockFile::parse(
            &format!("version = 1\n[[component]]\nsource = \"x\"\ncomponent = \"{D1}\"\nsigner = \"s\"\nextra = 1\n"),
            "l",
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `extra`"), "{e}");
    }
}
