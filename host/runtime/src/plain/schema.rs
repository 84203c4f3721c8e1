//! WIT types as JSON Schema: what a plain component's function takes and
//! gives, in the JSON its calls carry ([`super::value`] converts exactly
//! as these schemas say).
//!
//! | WIT | JSON |
//! |---|---|
//! | `bool` | boolean |
//! | `u8` … `s32` | integer within the type's range |
//! | `u64`, `s64` | integer; a decimal string too, since beyond ±2^53 a double (a JavaScript client's number) would round it: values past ±2^53 come back as strings |
//! | `f32`, `f64` | number, or `"NaN"`, `"Infinity"`, `"-Infinity"` |
//! | `char` | a string of one character |
//! | `string` | string |
//! | `list<u8>` | base64 string (an array of bytes is accepted too) |
//! | `list<T>` | array |
//! | `tuple<…>` | array of fixed length |
//! | `record` | object, one property per field (an `option` field may be left out) |
//! | `variant` | `"case"`, or `{"case": payload}` |
//! | `enum` | `"case"` |
//! | `flags` | array of the set flags' names |
//! | `option<T>` | `null` or `T` (`{"some": T}` when `T` is itself an option) |
//! | `result<T, E>` | `{"ok": T}` or `{"err": E}` (`null` for a missing type) |
//!
//! Resources, futures, streams and maps cannot cross JSON: a function
//! that takes or returns one is not served. Generation is bounded in
//! depth and size: WIT types are never recursive, but a chain of tuples
//! of tuples doubles at every level, so a type that would expand past the
//! bound is refused before it is built.

use super::docs::{PackageDocs, Scope, TypeDocs};
use serde_json::{Map, Value, json};
use wasmtime::component::Type;
use wasmtime::component::types::ResourceType;

/// Deepest nesting of types served.
pub(crate) const MAX_DEPTH: usize = 64;
/// Most schema nodes one function's input or output may expand to.
pub(crate) const MAX_NODES: usize = 20_000;

/// Largest integer a double holds exactly: past it, 64-bit values travel
/// as strings.
pub(crate) const EXACT_IN_DOUBLE: u64 = (1 << 53) - 1;

/// Why a type has no schema here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// It holds a type that cannot cross JSON (its WIT name).
    Unsupported(String),
    /// It nests deeper than [`MAX_DEPTH`].
    TooDeep,
    /// It expands past [`MAX_NODES`].
    TooLarge,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Unsupported(what) => write!(f, "{what} cannot cross JSON"),
            Refusal::TooDeep => write!(f, "its types nest deeper than {MAX_DEPTH} levels"),
            Refusal::TooLarge => {
                write!(f, "its types expand to more than {MAX_NODES} schema nodes")
            }
        }
    }
}

/// The names the component gives its types and resources in one scope
/// (a world's top level, or one exported interface): a type in a
/// function's signature is matched to its name structurally, for its
/// title and docs.
pub(crate) struct Names<'a> {
    /// Named types of the scope.
    pub types: &'a [(String, Type)],
    /// Named resources of the scope.
    pub resources: &'a [(String, ResourceType)],
    /// Where docs are looked up.
    pub scope: Scope<'a>,
    /// The component's docs, if it carries them.
    pub docs: Option<&'a PackageDocs>,
}

impl Names<'_> {
    /// The name of `ty`, and its docs: for the kinds of type a name
    /// tells apart (a record, variant, enum or flags; `type size = u64`
    /// would otherwise name every `u64`).
    fn of(&self, ty: &Type) -> Option<(&str, Option<&TypeDocs>)> {
        if !matches!(
            ty,
            Type::Record(_) | Type::Variant(_) | Type::Enum(_) | Type::Flags(_)
        ) {
            return None;
        }
        let (name, _) = self.types.iter().find(|(_, t)| t == ty)?;
        let docs = self.docs.and_then(|d| d.named_type(self.scope, name));
        Some((name.as_str(), docs))
    }

    /// How a resource handle reads in a message: `own<file>`.
    fn handle(&self, kind: &str, r: &ResourceType) -> String {
        match self.resources.iter().find(|(_, t)| t == r) {
            Some((name, _)) => format!("a resource handle (`{kind}<{name}>`)"),
            None => format!("a resource handle (`{kind}<…>`)"),
        }
    }
}

/// Builds schemas for one function, counting nodes against the bound.
pub(crate) struct Builder<'a> {
    names: &'a Names<'a>,
    nodes: usize,
}

impl<'a> Builder<'a> {
    /// A builder for types of the scope `names` describes.
    pub(crate) fn new(names: &'a Names<'a>) -> Builder<'a> {
        Builder { names, nodes: 0 }
    }

    /// The schema of `ty`.
    pub(crate) fn schema(&mut self, ty: &Type) -> Result<Value, Refusal> {
        self.build(ty, 0)
    }

    /// Counts `n` more nodes (a long list of names counts an eighth a
    /// name), refusing past the bound.
    fn count(&mut self, n: usize) -> Result<(), Refusal> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_NODES {
            return Err(Refusal::TooLarge);
        }
        Ok(())
    }

    fn build(&mut self, ty: &Type, depth: usize) -> Result<Value, Refusal> {
        if depth > MAX_DEPTH {
            return Err(Refusal::TooDeep);
        }
        self.count(1)?;
        let d = depth + 1;
        let mut schema = match ty {
            Type::Bool => json!({"type": "boolean"}),
            Type::U8 => int(0, u8::MAX),
            Type::U16 => int(0, u16::MAX),
            Type::U32 => int(0, u32::MAX),
            Type::S8 => int(i8::MIN, i8::MAX),
            Type::S16 => int(i16::MIN, i16::MAX),
            Type::S32 => int(i32::MIN, i32::MAX),
            Type::U64 => wide_int(json!(0), json!(u64::MAX), "^[0-9]{1,20}$"),
            Type::S64 => wide_int(json!(i64::MIN), json!(i64::MAX), "^-?[0-9]{1,19}$"),
            Type::Float32 | Type::Float64 => json!({
                "anyOf": [{"type": "number"}, {"enum": ["NaN", "Infinity", "-Infinity"]}]
            }),
            Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
            Type::String => json!({"type": "string"}),
            Type::List(l) => {
                let elem = l.ty();
                if elem == Type::U8 {
                    json!({
                        "type": ["string", "array"],
                        "contentEncoding": "base64",
                        "description": "bytes, as base64 (or an array of byte values)",
                        "items": {"type": "integer", "minimum": 0, "maximum": 255},
                    })
                } else {
                    json!({"type": "array", "items": self.build(&elem, d)?})
                }
            }
            Type::Tuple(t) => {
                let items = t
                    .types()
                    .map(|t| self.build(&t, d))
                    .collect::<Result<Vec<_>, _>>()?;
                let n = items.len();
                json!({
                    "type": "array",
                    "prefixItems": items,
                    "items": false,
                    "minItems": n,
                    "maxItems": n,
                })
            }
            Type::Record(r) => {
                let docs = self.names.of(ty).and_then(|(_, d)| d);
                let mut properties = Map::new();
                let mut required = Vec::new();
                for f in r.fields() {
                    let mut s = self.build(&f.ty, d)?;
                    if let Some(text) = docs.and_then(|d| d.item(f.name)) {
                        describe(&mut s, text);
                    }
                    if !matches!(f.ty, Type::Option(_)) {
                        required.push(Value::from(f.name));
                    }
                    properties.insert(f.name.to_owned(), s);
                }
                json!({
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": false,
                })
            }
            Type::Variant(v) => {
                let docs = self.names.of(ty).and_then(|(_, d)| d);
                let mut cases = Vec::new();
                for c in v.cases() {
                    let mut s = match &c.ty {
                        None => json!({"const": c.name}),
                        Some(t) => single_key(c.name, self.build(t, d)?),
                    };
                    if let Some(text) = docs.and_then(|d| d.item(c.name)) {
                        describe(&mut s, text);
                    }
                    cases.push(s);
                }
                json!({"oneOf": cases})
            }
            Type::Enum(e) => {
                let names: Vec<&str> = e.names().collect();
                self.count(names.len() / 8)?;
                let mut s = json!({"type": "string", "enum": names});
                let docs = self.names.of(ty).and_then(|(_, d)| d);
                if let Some(docs) = docs {
                    let cases: Vec<String> = names
                        .iter()
                        .filter_map(|n| docs.item(n).map(|t| format!("`{n}`: {}", one_line(t))))
                        .collect();
                    if !cases.is_empty() {
                        describe(&mut s, &cases.join("; "));
                    }
                }
                s
            }
            Type::Flags(f) => {
                let names: Vec<&str> = f.names().collect();
                self.count(names.len() / 8)?;
                json!({
                    "type": "array",
                    "items": {"type": "string", "enum": names},
                    "uniqueItems": true,
                })
            }
            Type::Option(o) => {
                let inner = o.ty();
                let some = self.build(&inner, d)?;
                if matches!(inner, Type::Option(_)) {
                    json!({"anyOf": [{"type": "null"}, single_key("some", some)]})
                } else {
                    json!({"anyOf": [{"type": "null"}, some]})
                }
            }
            Type::Result(r) => {
                let ok = match r.ok() {
                    Some(t) => self.build(&t, d)?,
                    None => json!({"type": "null"}),
                };
                let err = match r.err() {
                    Some(t) => self.build(&t, d)?,
                    None => json!({"type": "null"}),
                };
                json!({"oneOf": [single_key("ok", ok), single_key("err", err)]})
            }
            Type::Own(r) => return Err(Refusal::Unsupported(self.names.handle("own", r))),
            Type::Borrow(r) => return Err(Refusal::Unsupported(self.names.handle("borrow", r))),
            Type::Future(_) => return Err(Refusal::Unsupported("a `future` (WASI 0.3)".into())),
            Type::Stream(_) => return Err(Refusal::Unsupported("a `stream` (WASI 0.3)".into())),
            Type::ErrorContext => {
                return Err(Refusal::Unsupported("an `error-context` (WASI 0.3)".into()));
            }
            Type::Map(_) => return Err(Refusal::Unsupported("a `map`".into())),
            Type::FixedLengthList(_) => {
                return Err(Refusal::Unsupported("a fixed-length list".into()));
            }
        };
        if let Some((name, docs)) = self.names.of(ty) {
            schema["title"] = Value::from(name);
            if let Some(text) = docs.and_then(TypeDocs::docs) {
                describe(&mut schema, text);
            }
        }
        Ok(schema)
    }
}

/// An integer schema with its range.
fn int<T: Into<i64>>(min: T, max: T) -> Value {
    json!({"type": "integer", "minimum": min.into(), "maximum": max.into()})
}

/// A 64-bit integer: a number in range, or its decimal string.
fn wide_int(min: Value, max: Value, pattern: &str) -> Value {
    json!({
        "type": ["integer", "string"],
        "minimum": min,
        "maximum": max,
        "pattern": pattern,
        "description": "a 64-bit integer; past ±9007199254740991 written as a decimal string",
    })
}

/// `{"key": schema}`, the key required and alone.
fn single_key(key: &str, schema: Value) -> Value {
    json!({
        "type": "object",
        "properties": {key: schema},
        "required": [key],
        "additionalProperties": false,
    })
}

/// Puts `text` into `schema`'s description, before what it says already.
fn describe(schema: &mut Value, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let merged = match schema.get("description").and_then(Value::as_str) {
        Some(own) => format!("{text} ({own})"),
        None => text.to_owned(),
    };
    schema["description"] = Value::from(merged);
}

/// The first line of `s`.
fn one_line(s: &str) -> &str {
    s.lines().next().unwrap_or("").trim()
}
