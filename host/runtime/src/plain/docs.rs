//! The WIT doc comments a component carries: its top-level `package-docs`
//! custom section, as wit-component (`PackageMetadata`) writes it and
//! wassette's build injects it. A component's binary type has no docs and
//! no package name, so the section's entries are matched by name: a
//! world's functions and types, and each interface's by its short name.
//!
//! What the section says is the publisher's text: it is bounded, read
//! leniently (a section this host cannot read only loses the docs, never
//! the component), and goes through the same descriptor checks as any
//! description a component declares.

use serde::Deserialize;
use std::collections::BTreeMap;

/// The custom section's name.
const SECTION: &str = "package-docs";
/// Largest section read: docs past it are the publisher's mistake or an
/// attack on the loader, and the component is served without them.
const MAX_SECTION_BYTES: usize = 4 << 20;

/// The docs of one package, as the section holds them (format versions 0
/// and 1; unknown fields are ignored, so a later format still gives what
/// this one knows).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PackageDocs {
    #[serde(default)]
    worlds: BTreeMap<String, WorldDocs>,
    #[serde(default)]
    interfaces: BTreeMap<String, InterfaceDocs>,
}

#[derive(Debug, Default, Deserialize)]
struct WorldDocs {
    /// Inline interfaces imported, or exported when no import shares the name.
    #[serde(default)]
    interfaces: BTreeMap<String, InterfaceDocs>,
    /// Inline interfaces exported (format 1).
    #[serde(default)]
    interface_exports: BTreeMap<String, InterfaceDocs>,
    #[serde(default)]
    types: BTreeMap<String, TypeDocs>,
    /// Functions imported, or exported when no import shares the name.
    #[serde(default)]
    funcs: BTreeMap<String, FuncDocs>,
    /// Functions exported (format 1).
    #[serde(default)]
    func_exports: BTreeMap<String, FuncDocs>,
    /// Docs on `export an-interface;` lines of the world.
    #[serde(default)]
    interface_export_docs: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
struct InterfaceDocs {
    #[serde(default)]
    docs: Option<String>,
    #[serde(default)]
    funcs: BTreeMap<String, FuncDocs>,
    #[serde(default)]
    types: BTreeMap<String, TypeDocs>,
}

/// A function's docs: a bare string (format 0) or an object (format 1).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum FuncDocs {
    Bare(Option<String>),
    Full {
        #[serde(default)]
        docs: Option<String>,
    },
}

impl FuncDocs {
    fn text(&self) -> Option<&str> {
        match self {
            FuncDocs::Bare(d) | FuncDocs::Full { docs: d } => d.as_deref(),
        }
    }
}

/// A named type's docs, and its items' (record fields, variant and enum
/// cases, flags).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TypeDocs {
    #[serde(default)]
    docs: Option<String>,
    #[serde(default)]
    items: BTreeMap<String, String>,
}

impl TypeDocs {
    /// The type's own docs.
    pub(crate) fn docs(&self) -> Option<&str> {
        nonempty(self.docs.as_deref())
    }

    /// The docs of one of its items.
    pub(crate) fn item(&self, name: &str) -> Option<&str> {
        nonempty(self.items.get(name).map(String::as_str))
    }
}

/// Where an export's docs are looked up: the world's own items, or an
/// interface's (by the short name of an exported interface, `time` of
/// `local:time-server/time@0.1.0`, or the name of an inline one).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scope<'a> {
    /// Functions and types at the world's top level.
    World,
    /// An exported interface.
    Interface(&'a str),
}

impl PackageDocs {
    /// The docs in `component`'s top-level `package-docs` section, if it
    /// has one this host can read.
    pub(crate) fn of(component: &[u8]) -> Option<PackageDocs> {
        let data = top_level_custom_section(component, SECTION)?;
        if data.len() > MAX_SECTION_BYTES {
            tracing::info!(
                bytes = data.len(),
                "the component's package-docs section is too large; serving it without its docs"
            );
            return None;
        }
        match data.split_first() {
            Some((0 | 1, json)) => match serde_json::from_slice(json) {
                Ok(docs) => Some(docs),
                Err(e) => {
                    tracing::info!(error = %e, "the component's package-docs section is not readable; serving it without its docs");
                    None
                }
            },
            _ => {
                tracing::info!(
                    "the component's package-docs section has a format this host does not know"
                );
                None
            }
        }
    }

    /// The docs of function `func` in `scope`.
    pub(crate) fn function(&self, scope: Scope<'_>, func: &str) -> Option<&str> {
        let found = match scope {
            Scope::World => self.worlds.values().find_map(|w| {
                w.func_exports
                    .get(func)
                    .or_else(|| w.funcs.get(func))
                    .and_then(FuncDocs::text)
            }),
            Scope::Interface(name) => self
                .interfaces(name)
                .into_iter()
                .find_map(|i| i.funcs.get(func).and_then(FuncDocs::text)),
        };
        nonempty(found)
    }

    /// The docs of the interface `name` itself.
    pub(crate) fn interface(&self, name: &str) -> Option<&str> {
        let own = self
            .interfaces(name)
            .into_iter()
            .find_map(|i| i.docs.as_deref());
        let on_export = || {
            self.worlds.values().find_map(|w| {
                w.interface_export_docs
                    .iter()
                    .find(|(k, _)| short_name(k) == name)
                    .map(|(_, v)| v.as_str())
            })
        };
        nonempty(own.or_else(on_export))
    }

    /// The docs of the named type `name` in `scope`.
    pub(crate) fn named_type(&self, scope: Scope<'_>, name: &str) -> Option<&TypeDocs> {
        match scope {
            Scope::World => self.worlds.values().find_map(|w| w.types.get(name)),
            Scope::Interface(i) => self
                .interfaces(i)
                .into_iter()
                .find_map(|d| d.types.get(name)),
        }
    }

    /// Every docs entry of interface `name`: the package's, and the
    /// worlds' inline ones.
    fn interfaces(&self, name: &str) -> Vec<&InterfaceDocs> {
        let mut found: Vec<&InterfaceDocs> = self.interfaces.get(name).into_iter().collect();
        for w in self.worlds.values() {
            found.extend(w.interface_exports.get(name));
            found.extend(w.interfaces.get(name));
        }
        found
    }
}

/// `None` for missing or blank docs.
fn nonempty(s: Option<&str>) -> Option<&str> {
    s.map(str::trim).filter(|s| !s.is_empty())
}

/// The short name of an interface's export name: `time` of
/// `local:time-server/time@0.1.0`, or the name itself for an inline one.
pub(crate) fn short_name(export: &str) -> &str {
    let name = export.split('@').next().unwrap_or(export);
    name.rsplit('/').next().unwrap_or(name)
}

/// The contents of the first top-level custom section named `name`:
/// the sections of a component or module are walked by their sizes, so
/// nested modules and components (and their sections) are skipped, never
/// parsed.
fn top_level_custom_section<'a>(bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
    // Magic and version/layer.
    let mut at = bytes.get(8..)?;
    if bytes.get(..4)? != b"\0asm" {
        return None;
    }
    while let Some((&id, rest)) = at.split_first() {
        let (size, rest) = leb_u32(rest)?;
        let size = usize::try_from(size).ok()?;
        let contents = rest.get(..size)?;
        at = &rest[size..];
        if id != 0 {
            continue;
        }
        let (len, after) = leb_u32(contents)?;
        let len = usize::try_from(len).ok()?;
        if after.get(..len)? == name.as_bytes() {
            return Some(&after[len..]);
        }
    }
    None
}

/// An unsigned LEB128 `u32` and the bytes after it.
fn leb_u32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let mut value: u32 = 0;
    for (i, &b) in bytes.iter().enumerate().take(5) {
        value |= u32::from(b & 0x7f).checked_shl(7 * i as u32)?;
        if b & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component header, then `sections` as (id, contents).
    fn binary(sections: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut out = b"\0asm\x0d\0\x01\0".to_vec();
        for (id, contents) in sections {
            out.push(*id);
            let mut n = contents.len();
            loop {
                let byte = (n & 0x7f) as u8;
                n >>= 7;
                out.push(if n == 0 { byte } else { byte | 0x80 });
                if n == 0 {
                    break;
                }
            }
            out.extend_from_slice(contents);
        }
        out
    }

    fn custom(name: &str, data: &[u8]) -> Vec<u8> {
        let mut c = vec![name.len() as u8];
        c.extend_from_slice(name.as_bytes());
        c.extend_from_slice(data);
        c
    }

    #[test]
    fn docs_are_found_past_other_sections_and_matched_by_name() {
        let json = br#"{"worlds":{"fs":{"docs":"A world.","func_exports":{"read-file":{"docs":"Reads a file."}},"types":{"entry":{"docs":"One entry.","items":{"size":"Bytes."}}}}},"interfaces":{"time":{"docs":"Clocks.","funcs":{"now":"The time."}}}}"#;
        let mut data = vec![1];
        data.extend_from_slice(json);
        // A nested module's bytes (id 1) that hold the name are skipped.
        let bytes = binary(&[
            (1, custom("package-docs", b"\x01{}")),
            (0, custom("name", b"x")),
            (0, custom(SECTION, &data)),
        ]);
        let docs = PackageDocs::of(&bytes).expect("read");
        assert_eq!(
            docs.function(Scope::World, "read-file"),
            Some("Reads a file.")
        );
        assert_eq!(
            docs.function(Scope::Interface("time"), "now"),
            Some("The time.")
        );
        assert_eq!(docs.function(Scope::Interface("time"), "later"), None);
        assert_eq!(docs.interface("time"), Some("Clocks."));
        let entry = docs.named_type(Scope::World, "entry").expect("type");
        assert_eq!(entry.docs(), Some("One entry."));
        assert_eq!(entry.item("size"), Some("Bytes."));
    }

    #[test]
    fn an_unreadable_section_loses_only_the_docs() {
        for data in [&b"\x07{}"[..], b"\x01not json", b""] {
            let bytes = binary(&[(0, custom(SECTION, data))]);
            assert!(PackageDocs::of(&bytes).is_none());
        }
        // A truncated binary.
        let mut bytes = binary(&[(0, custom(SECTION, b"\x01{}"))]);
        bytes.truncate(bytes.len() - 1);
        assert!(PackageDocs::of(&bytes).is_none());
        assert!(PackageDocs::of(b"not wasm").is_none());
    }

    #[test]
    fn short_names_drop_the_package_and_version() {
        assert_eq!(short_name("local:time-server/time@0.1.0"), "time");
        assert_eq!(short_name("wasi:cli/run@0.2.6"), "run");
        assert_eq!(short_name("inline"), "inline");
    }
}
