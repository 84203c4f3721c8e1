//! Plain components: the WebAssembly components that already exist
//! (wassette's, and any other that exports ordinary functions), served as
//! tools without being written for `toolhost:tool`.
//!
//! The host tells the kinds apart by the component's own type: one that
//! exports a `toolhost:tool/tool` interface implements the contract;
//! any other is plain. Every function a plain component exports, at its
//! world's top level and in each exported interface, is a tool:
//!
//! - **Names.** The function's WIT name with `-` as `_` (`get-weather`
//!   is `get_weather`). Only where two functions would get one name is
//!   each interface function's name prefixed by its interface's short
//!   name (`time_now`), and where that still collides, by its whole name
//!   (`local_clock_time_now`). Versions never enter a name, so a tool keeps
//!   its name across versions of the component.
//! - **Descriptions** come from the WIT doc comments the component
//!   carries ([`docs`]); without them, a line naming the function and its
//!   interface.
//! - **Schemas** for the arguments (one property per parameter) and the
//!   value come from the WIT types ([`schema`]); calls convert between
//!   JSON and component values exactly as they say ([`value`]).
//! - **Results.** A function returning `result<T, E>` succeeds with `T`
//!   and fails with `E`: a stable code (the case of an `enum` or
//!   `variant` error, else `tool_error`) and the error value in `info`.
//! - **Not served**, each with its reason: functions that take or return
//!   resources (or WASI 0.3 streams and futures), which cannot cross
//!   JSON; a resource's constructors and methods; the entry points of
//!   WASI worlds a component may also export (`wasi:cli/run`,
//!   `wasi:http/incoming-handler`); and componentize-py's start-up hook
//!   (`exports#init`), which every component it builds carries.
//!
//! Annotations and path or URL arguments cannot come from a component
//! that knows nothing of them: its policy states them per tool.

pub(crate) mod docs;
mod schema;
mod value;

use crate::bindings::RawTool;
use docs::{PackageDocs, Scope};
use serde_json::{Value, json};
use std::collections::HashMap;
use toolhost_contract::{Annotations, ErrorCode, FailureCode, ToolFailure, valid_name};
use wasmtime::Engine;
use wasmtime::component::types::{ComponentFunc, ComponentItem, ResourceType};
use wasmtime::component::{Component, ComponentExportIndex, Type, Val};

pub(crate) use value::ArgError;

/// A function a plain component exports that is not served, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unserved {
    /// The function as WIT names it: `open`, or `files#open` in the
    /// exported interface `files`.
    pub function: String,
    /// Why it is not served.
    pub reason: String,
}

/// A served function: its tool's name, where it is, and its types.
pub(crate) struct Function {
    /// The tool's name.
    pub tool: String,
    /// Where the instance exports it.
    pub index: ComponentExportIndex,
    /// Its parameters, in order.
    pub params: Vec<(String, Type)>,
    /// Its result's type, if it returns one.
    pub result: Option<Type>,
}

/// A plain component's functions, read from its type at load.
pub(crate) struct Plain {
    functions: Vec<Function>,
    unserved: Vec<Unserved>,
}

impl std::fmt::Debug for Plain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plain")
            .field(
                "functions",
                &self.functions.iter().map(|f| &f.tool).collect::<Vec<_>>(),
            )
            .field("unserved", &self.unserved)
            .finish()
    }
}

/// Where a function was found.
struct Candidate {
    /// The exported interface, `None` at the world's top level.
    interface: Option<String>,
    /// Its WIT name.
    name: String,
    ty: ComponentFunc,
    index: ComponentExportIndex,
    /// Index into the scopes (the names of the types around it).
    scope: usize,
}

/// The named types and resources of one scope.
#[derive(Default)]
struct ScopeNames {
    types: Vec<(String, Type)>,
    resources: Vec<(String, ResourceType)>,
}

impl Plain {
    /// Whether `component` implements the `toolhost:tool` contract (it
    /// exports a `toolhost:tool/tool` interface of any version), rather
    /// than being plain.
    pub(crate) fn is_contract(component: &Component, engine: &Engine) -> bool {
        component
            .component_type()
            .exports(engine)
            .any(|(name, _)| name.starts_with("toolhost:tool/tool@"))
    }

    /// A plain component's functions, and the descriptors of those
    /// served (with `docs`' descriptions where it has them).
    pub(crate) fn read(
        component: &Component,
        engine: &Engine,
        docs: Option<&PackageDocs>,
    ) -> (Plain, Vec<RawTool>) {
        let ty = component.component_type();
        let mut scopes = vec![ScopeNames::default()];
        let mut candidates = Vec::new();
        let mut unserved = Vec::new();
        for (name, export) in ty.exports(engine) {
            match export.ty {
                ComponentItem::ComponentFunc(f) => {
                    if let Some(index) = component.get_export_index(None, name) {
                        candidates.push(Candidate {
                            interface: None,
                            name: name.to_owned(),
                            ty: f,
                            index,
                            scope: 0,
                        });
                    }
                }
                ComponentItem::Type(t) => scopes[0].types.push((name.to_owned(), t)),
                ComponentItem::Resource(r) => scopes[0].resources.push((name.to_owned(), r)),
                ComponentItem::ComponentInstance(instance) => {
                    let Some(at) = component.get_export_index(None, name) else {
                        continue;
                    };
                    let wasi = name.starts_with("wasi:");
                    // componentize-py's own start-up hook (`init(app-name,
                    // symbols, stub-wasi)`), which every component it builds
                    // exports beside the world's, in an interface `exports`.
                    let toolchain = name == "exports"
                        && instance.get_export(engine, "init").is_some()
                        && instance.get_export(engine, "symbols").is_some();
                    let scope = scopes.len();
                    let mut names = ScopeNames::default();
                    for (fname, item) in instance.exports(engine) {
                        match item.ty {
                            ComponentItem::ComponentFunc(_) if toolchain => {
                                unserved.push(Unserved {
                                    function: qualified(Some(name), fname),
                                    reason: "componentize-py's start-up entry point, not a tool"
                                        .into(),
                                })
                            }
                            ComponentItem::ComponentFunc(_) if wasi => unserved.push(Unserved {
                                function: qualified(Some(name), fname),
                                reason: "an entry point of a WASI world (`wasi:` interfaces are \
                                         what a host runs a command or a proxy by), not a tool"
                                    .into(),
                            }),
                            ComponentItem::ComponentFunc(f) => {
                                if let Some(index) = component.get_export_index(Some(&at), fname) {
                                    candidates.push(Candidate {
                                        interface: Some(name.to_owned()),
                                        name: fname.to_owned(),
                                        ty: f,
                                        index,
                                        scope,
                                    });
                                }
                            }
                            ComponentItem::Type(t) => names.types.push((fname.to_owned(), t)),
                            ComponentItem::Resource(r) => {
                                names.resources.push((fname.to_owned(), r));
                            }
                            _ => {}
                        }
                    }
                    scopes.push(names);
                }
                ComponentItem::CoreFunc(_)
                | ComponentItem::Module(_)
                | ComponentItem::Component(_) => {}
            }
        }

        // Described first: a function not served takes no name.
        let mut described = Vec::new();
        for c in candidates {
            let qualified_name = qualified(c.interface.as_deref(), &c.name);
            let scope_names = &scopes[c.scope];
            let doc_scope = match &c.interface {
                None => Scope::World,
                Some(i) => Scope::Interface(docs::short_name(i)),
            };
            let names = schema::Names {
                types: &scope_names.types,
                resources: &scope_names.resources,
                scope: doc_scope,
                docs,
            };
            match describe(&c, &names) {
                Ok(d) => described.push((c, d)),
                Err(reason) => unserved.push(Unserved {
                    function: qualified_name,
                    reason,
                }),
            }
        }

        let names = tool_names(&described);
        let mut functions = Vec::with_capacity(described.len());
        let mut tools = Vec::with_capacity(described.len());
        for ((c, d), name) in described.into_iter().zip(names) {
            let tool = match name {
                Ok(n) => n,
                Err(reason) => {
                    unserved.push(Unserved {
                        function: qualified(c.interface.as_deref(), &c.name),
                        reason,
                    });
                    continue;
                }
            };
            let description = description(docs, c.interface.as_deref(), &c.name);
            tools.push(RawTool {
                name: tool.clone(),
                description,
                input_schema: d.input.to_string(),
                output_schema: d.output.to_string(),
                annotations: Annotations::default(),
                paths: Vec::new(),
                title: None,
                urls: Vec::new(),
                host_renders: true,
            });
            functions.push(Function {
                tool,
                index: c.index,
                params: c.ty.params().map(|(n, t)| (n.to_owned(), t)).collect(),
                result: c.ty.results().next(),
            });
        }
        (
            Plain {
                functions,
                unserved,
            },
            tools,
        )
    }

    /// The served function behind tool `name`.
    pub(crate) fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.tool == name)
    }

    /// The functions not served, with why.
    pub(crate) fn unserved(&self) -> &[Unserved] {
        &self.unserved
    }

    /// Drops the functions whose descriptors a load refused (past the
    /// descriptor bounds), recording why.
    pub(crate) fn refuse(&mut self, tool: &str, reason: String) {
        if let Some(at) = self.functions.iter().position(|f| f.tool == tool) {
            self.functions.remove(at);
            self.unserved.push(Unserved {
                function: tool.to_owned(),
                reason,
            });
        }
    }
}

/// A function's two schemas.
struct Described {
    input: Value,
    output: Value,
}

/// The schemas of `c`, or why it is not served.
fn describe(c: &Candidate, names: &schema::Names<'_>) -> Result<Described, String> {
    if let Some(resource) = resource_function(&c.name) {
        return Err(format!(
            "{resource}: resources cannot cross JSON, so neither can their functions"
        ));
    }
    if c.ty.async_() {
        return Err("an async function (WASI 0.3): this host runs WASI 0.2 components".to_owned());
    }
    let mut builder = schema::Builder::new(names);
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (name, ty) in c.ty.params() {
        let s = builder
            .schema(&ty)
            .map_err(|r| format!("its parameter `{name}`: {r}"))?;
        if !matches!(ty, Type::Option(_)) {
            required.push(Value::from(name));
        }
        properties.insert(name.to_owned(), s);
    }
    let input = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    let mut builder = schema::Builder::new(names);
    let output = match c.ty.results().next() {
        None => json!({"type": "null"}),
        // A `result` is the call's success or failure: the value is `ok`'s.
        Some(Type::Result(r)) => {
            if let Some(err) = r.err() {
                // Checked for what cannot cross JSON, like the value.
                builder
                    .schema(&err)
                    .map_err(|r| format!("its error type: {r}"))?;
            }
            match r.ok() {
                Some(ok) => builder
                    .schema(&ok)
                    .map_err(|r| format!("its result: {r}"))?,
                None => json!({"type": "null"}),
            }
        }
        Some(ty) => builder
            .schema(&ty)
            .map_err(|r| format!("its result: {r}"))?,
    };
    Ok(Described { input, output })
}

/// `Some("a method of the resource `file`")` for a resource's
/// constructor, method or static function (`[method]file.read`).
fn resource_function(name: &str) -> Option<String> {
    let (kind, rest) = name.strip_prefix('[')?.split_once(']')?;
    let resource = rest.split('.').next().unwrap_or(rest);
    Some(match kind {
        "constructor" => format!("the constructor of the resource `{resource}`"),
        "method" => format!("a method of the resource `{resource}`"),
        "static" => format!("a static function of the resource `{resource}`"),
        other => format!("a `[{other}]` function"),
    })
}

/// How a function is named in messages: `open`, or `files#open`.
fn qualified(interface: Option<&str>, name: &str) -> String {
    match interface {
        Some(i) => format!("{i}#{name}"),
        None => name.to_owned(),
    }
}

/// A WIT name as tool-name text: lowercase, `-` and other separators as `_`.
fn snake(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '_',
        })
        .collect()
}

/// Each described function's tool name (see the module docs), or why it
/// has none.
fn tool_names(described: &[(Candidate, Described)]) -> Vec<Result<String, String>> {
    let plain: Vec<String> = described.iter().map(|(c, _)| snake(&c.name)).collect();
    let counts = count(&plain);
    // Colliding interface functions take their interface's short name.
    let short: Vec<String> = described
        .iter()
        .zip(&plain)
        .map(|((c, _), p)| match &c.interface {
            Some(i) if counts[p.as_str()] > 1 => format!("{}_{p}", snake(docs::short_name(i))),
            _ => p.clone(),
        })
        .collect();
    let counts = count(&short);
    // Still colliding (two interfaces of one short name): the whole name.
    let full: Vec<String> = described
        .iter()
        .zip(short.iter().zip(&plain))
        .map(|((c, _), (s, p))| match &c.interface {
            Some(i) if counts[s.as_str()] > 1 => {
                let whole = i.split('@').next().unwrap_or(i);
                format!("{}_{p}", snake(whole))
            }
            _ => s.clone(),
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    full.into_iter()
        .map(|name| {
            if !valid_name(&name) {
                Err(format!(
                    "its tool name `{name}` is not [a-z][a-z0-9_]* of at most 64 bytes"
                ))
            } else if !seen.insert(name.clone()) {
                Err(format!(
                    "its tool name `{name}` is taken by another function"
                ))
            } else {
                Ok(name)
            }
        })
        .collect()
}

fn count(names: &[String]) -> HashMap<&str, usize> {
    let mut counts = HashMap::new();
    for n in names {
        *counts.entry(n.as_str()).or_insert(0) += 1;
    }
    counts
}

/// The function's description: its docs, else a line that names it and
/// its interface (with the interface's docs, when it has them).
fn description(docs: Option<&PackageDocs>, interface: Option<&str>, name: &str) -> String {
    let scope = match interface {
        None => Scope::World,
        Some(i) => Scope::Interface(docs::short_name(i)),
    };
    if let Some(text) = docs.and_then(|d| d.function(scope, name)) {
        return text.to_owned();
    }
    match interface {
        None => format!("Calls the component's function `{name}`."),
        Some(i) => {
            let short = docs::short_name(i);
            let mut s = format!("Calls `{name}` of the component's interface `{i}`.");
            if let Some(about) = docs.and_then(|d| d.interface(short)) {
                s.push_str(&format!(" The interface: {about}"));
            }
            s
        }
    }
}

/// The call's arguments as the function's parameters.
pub(crate) fn arguments(f: &Function, arguments: &str) -> Result<Vec<Val>, ArgError> {
    let args: Value = if arguments.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(arguments).map_err(|e| ArgError {
            pointer: String::new(),
            message: format!("the arguments are not JSON: {e}"),
        })?
    };
    value::arguments(&args, &f.params)
}

/// A failed conversion of the arguments, as the call's failure.
pub(crate) fn invalid(e: &ArgError) -> ToolFailure {
    ToolFailure::new(FailureCode::InvalidArguments, e.to_string())
        .with_info(json!({"pointer": e.pointer}))
}

/// What the function returned, as the call's value or failure.
pub(crate) fn outcome(f: &Function, results: &[Val]) -> Result<String, ToolFailure> {
    let (Some(ty), Some(v)) = (&f.result, results.first()) else {
        return Ok("null".to_owned());
    };
    match (ty, v) {
        (Type::Result(rt), Val::Result(r)) => match r {
            Ok(ok) => Ok(match (ok, rt.ok()) {
                (Some(v), Some(t)) => value::to_json(v, &t).to_string(),
                _ => "null".to_owned(),
            }),
            Err(err) => Err(failure(err.as_deref(), rt.err())),
        },
        _ => Ok(value::to_json(v, ty).to_string()),
    }
}

/// Most bytes of an error value quoted in a failure's message.
const MESSAGE_QUOTE: usize = 1024;

/// A function's `err` as a failure: the case of an `enum` or `variant`
/// error as its code (when it makes one), else `tool_error`; the error
/// value in `info`.
fn failure(err: Option<&Val>, ty: Option<Type>) -> ToolFailure {
    let (Some(v), Some(t)) = (err, ty) else {
        return ToolFailure::new(
            FailureCode::ToolError,
            "the function returned an error (with no value)",
        );
    };
    let json = value::to_json(v, &t);
    let case = match v {
        Val::Enum(c) | Val::Variant(c, _) => Some(c.as_str()),
        _ => None,
    };
    let code = case.map_or(ErrorCode::Host(FailureCode::ToolError), |c| {
        ErrorCode::from_tool(&snake(c))
    });
    let message = match (v, &json) {
        (Val::String(s), _) => s.clone(),
        (Val::Variant(c, Some(_)), Value::Object(o)) => match o.get(c.as_str()) {
            Some(Value::String(s)) => format!("{c}: {s}"),
            Some(other) => format!("{c}: {}", quote(&other.to_string())),
            None => c.clone(),
        },
        (Val::Enum(c) | Val::Variant(c, None), _) => {
            format!("the function returned the error `{c}`")
        }
        _ => quote(&json.to_string()),
    };
    ToolFailure {
        code,
        message,
        info: Some(json!({ "error": json })),
    }
}

/// `s`, cut to [`MESSAGE_QUOTE`] bytes on a character boundary.
fn quote(s: &str) -> String {
    if s.len() <= MESSAGE_QUOTE {
        return s.to_owned();
    }
    let end = s.floor_char_boundary(MESSAGE_QUOTE);
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_functions_are_named_for_their_resource() {
        assert_eq!(
            resource_function("[method]file.read").as_deref(),
            Some("a method of the resource `file`")
        );
        assert_eq!(
            resource_function("[constructor]file").as_deref(),
            Some("the constructor of the resource `file`")
        );
        assert_eq!(resource_function("read"), None);
    }

    #[test]
    fn wit_names_become_tool_names() {
        assert_eq!(snake("get-weather"), "get_weather");
        assert_eq!(snake("get-URL"), "get_url");
        assert_eq!(snake("v2-list"), "v2_list");
    }
}
