//! Authoring kit for toolhost tool components.
//!
//! A toolhost tool is a typed Rust function over serde types. This crate hides
//! all of the WebAssembly component glue for the `toolhost:tool@0.3.0` contract
//! (`wit/v0.3.0/tool.wit` at the root of the repository): it derives the input and
//! output JSON Schemas from the types with `schemars`, decodes the arguments,
//! encodes the value, maps failures, dispatches by tool name and exports the
//! `tool` interface. A tool crate is a `cdylib` that depends on this crate (plus
//! `serde` and `schemars` for the derives) and ends with [`export_tools!`].
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use toolhost_kit::{Annotations, Content, PathAccess, PathParam, Tool, ToolError};
//!
//! /// Arguments of `size`.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! pub struct SizeArgs {
//!     /// File to measure.
//!     pub path: String,
//! }
//!
//! /// Value of `size`.
//! #[derive(Serialize, Deserialize, JsonSchema)]
//! pub struct SizeValue {
//!     /// Size in bytes.
//!     pub bytes: u64,
//! }
//!
//! /// Tells the size of a file.
//! pub struct SizeTool;
//!
//! impl Tool for SizeTool {
//!     const NAME: &'static str = "size";
//!     const DESCRIPTION: &'static str = "Tells the size of a file in bytes.";
//!     type Args = SizeArgs;
//!     type Output = SizeValue;
//!
//!     fn annotations() -> Annotations {
//!         Annotations::READ_ONLY_IDEMPOTENT
//!     }
//!     fn paths() -> Vec<PathParam> {
//!         vec![PathParam::new("/path", PathAccess::Read)]
//!     }
//!     fn execute(args: SizeArgs) -> Result<SizeValue, ToolError> {
//!         let path = toolhost_kit::resolve_path(&args.path);
//!         let meta = std::fs::metadata(&path).map_err(|e| ToolError::io(&e, &path))?;
//!         Ok(SizeValue { bytes: meta.len() })
//!     }
//!     fn render(_args: &SizeArgs, value: &SizeValue) -> Option<Vec<Content>> {
//!         Some(vec![Content::text(format!("{} bytes", value.bytes))])
//!     }
//! }
//!
//! toolhost_kit::export_tools!(SizeTool);
//!
//! // The same dispatch the component uses, callable natively in tests:
//! let out = toolhost_kit::execute_json::<SizeTool>(r#"{"path": "Cargo.toml"}"#);
//! assert!(out.is_ok());
//! let bad = toolhost_kit::execute_json::<SizeTool>(r#"{"file": "x"}"#).unwrap_err();
//! assert_eq!(bad.code, "invalid_arguments");
//! ```
//!
//! While it runs, a tool may report progress and log messages, and ask
//! whether its caller cancelled, through [`ctx()`]:
//!
//! ```
//! let ctx = toolhost_kit::ctx();
//! for done in 0..3 {
//!     if ctx.cancelled() {
//!         break;
//!     }
//!     ctx.progress(done + 1, Some(3), Some("files searched"));
//! }
//! ctx.log(toolhost_kit::LogLevel::Info, "done");
//! ```
//!
//! The component glue (the `wit-bindgen` bindings and the export) only exists
//! on `target_arch = "wasm32"`; on other targets [`export_tools!`] expands to
//! compile-time checks only, so tool logic is unit-tested natively.

use std::fmt;
use std::path::{Path, PathBuf};

pub use schemars;
pub use serde;
pub use serde_json;

pub mod context;
pub mod text;

pub use context::{Ctx, LogLevel, ctx};

/// The WASI 0.2 bindings (`wasi` crate), for tools that need raw WASI such as
/// `wasi:http` or `wasi:random`. Only on `wasm32`.
#[cfg(target_arch = "wasm32")]
pub use wasi;

/// One tool: a typed function from [`Tool::Args`] to [`Tool::Output`].
///
/// Export one or more tools from a component with [`export_tools!`].
pub trait Tool {
    /// Unique tool name, `[a-z][a-z0-9_]*`, at most 64 bytes (checked at
    /// compile time by [`export_tools!`]).
    const NAME: &'static str;
    /// What the tool does, for the model.
    const DESCRIPTION: &'static str;
    /// The arguments object. Use `#[serde(deny_unknown_fields)]` so that the
    /// input schema says `additionalProperties: false`.
    type Args: serde::de::DeserializeOwned + schemars::JsonSchema;
    /// The canonical value. It is deserialized again for [`Tool::render`],
    /// which runs in a fresh instance.
    type Output: serde::Serialize + serde::de::DeserializeOwned + schemars::JsonSchema;

    /// Behaviour hints (MCP tool annotations).
    fn annotations() -> Annotations;

    /// Arguments that are filesystem paths, checked by the host before the
    /// call. Default: none.
    fn paths() -> Vec<PathParam> {
        vec![]
    }

    /// A short human-readable title, shown by clients. Default: none.
    fn title() -> Option<&'static str> {
        None
    }

    /// Arguments that are URLs the tool requests, as JSON Pointers (e.g.
    /// `/url`): the host checks their host and port against the network
    /// allow-list before the call is approved or run. Default: none.
    fn urls() -> Vec<&'static str> {
        vec![]
    }

    /// Runs the tool.
    fn execute(args: Self::Args) -> Result<Self::Output, ToolError>;

    /// Projects a value to what the model reads; `None` (the default) leaves
    /// rendering to the host. Must be pure.
    fn render(args: &Self::Args, value: &Self::Output) -> Option<Vec<Content>> {
        let _ = (args, value);
        None
    }

    /// Whether the tool leaves all rendering to the host (it does not
    /// override [`Tool::render`]). Say so and the host never calls
    /// `render`: each call then needs one instance instead of two under
    /// the default policy. Default: `false` (the host asks `render`).
    fn host_renders() -> bool {
        false
    }
}

/// Behaviour hints, as in MCP tool annotations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Annotations {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may perform destructive updates.
    pub destructive: bool,
    /// Calling the tool twice with the same arguments has no additional effect.
    pub idempotent: bool,
    /// The tool interacts with an open world of external entities (e.g. the network).
    pub open_world: bool,
}

impl Annotations {
    /// All hints false: the start of the others (`Annotations::NONE
    /// .with_destructive()`), or use it with struct update syntax.
    pub const NONE: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: false,
    };

    /// A tool that looks things up: it changes nothing, and the same
    /// arguments give the same answer (reading, listing, searching files).
    pub const READ_ONLY_IDEMPOTENT: Annotations =
        Annotations::NONE.with_read_only().with_idempotent();

    /// These hints, and [`Annotations::read_only`].
    pub const fn with_read_only(self) -> Annotations {
        Annotations {
            read_only: true,
            ..self
        }
    }

    /// These hints, and [`Annotations::destructive`].
    pub const fn with_destructive(self) -> Annotations {
        Annotations {
            destructive: true,
            ..self
        }
    }

    /// These hints, and [`Annotations::idempotent`].
    pub const fn with_idempotent(self) -> Annotations {
        Annotations {
            idempotent: true,
            ..self
        }
    }

    /// These hints, and [`Annotations::open_world`].
    pub const fn with_open_world(self) -> Annotations {
        Annotations {
            open_world: true,
            ..self
        }
    }
}

/// How a tool uses a path argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathAccess {
    /// Reads a file.
    Read,
    /// Lists or walks a directory (read-only).
    List,
    /// Creates a file that must not exist yet.
    Create,
    /// Replaces the whole content of an existing file.
    Overwrite,
    /// Edits part of an existing file.
    Patch,
    /// Creates or overwrites a file; the host decides which.
    Write,
}

/// A declared path argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathParam {
    /// JSON Pointer (RFC 6901) to the argument, e.g. `/path`.
    pub pointer: &'static str,
    /// How the tool uses the path.
    pub access: PathAccess,
}

impl PathParam {
    /// The argument at `pointer`, used as `access` says.
    pub const fn new(pointer: &'static str, access: PathAccess) -> PathParam {
        PathParam { pointer, access }
    }
}

/// A failure the tool reports itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// Stable snake_case code, e.g. `not_found`.
    pub code: String,
    /// A message the model can act on.
    pub message: String,
    /// Optional details.
    pub info: Option<serde_json::Value>,
}

impl ToolError {
    /// A failure with a code and a message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError {
            code: code.into(),
            message: message.into(),
            info: None,
        }
    }

    /// Adds details.
    pub fn with_info(mut self, info: serde_json::Value) -> Self {
        self.info = Some(info);
        self
    }

    /// `invalid_arguments`: the arguments are well-formed but unusable.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        ToolError::new("invalid_arguments", message)
    }

    /// Maps an I/O error on `path` to a failure: `not_found`,
    /// `permission_denied`, `is_directory`, `not_a_directory`,
    /// `already_exists`, or `io_error` for anything else.
    pub fn io(err: &std::io::Error, path: &Path) -> Self {
        use std::io::ErrorKind as K;
        let p = path.display();
        match err.kind() {
            K::NotFound => ToolError::new("not_found", format!("{p} does not exist")),
            K::PermissionDenied => ToolError::new(
                "permission_denied",
                format!("{p}: permission denied ({err})"),
            ),
            K::IsADirectory => ToolError::new("is_directory", format!("{p} is a directory")),
            K::NotADirectory => ToolError::new(
                "not_a_directory",
                format!("{p}: a component of the path is not a directory"),
            ),
            K::AlreadyExists => ToolError::new("already_exists", format!("{p} already exists")),
            kind => ToolError::new("io_error", format!("{p}: {err}"))
                .with_info(serde_json::json!({ "kind": format!("{kind:?}") })),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}

/// One block of what the model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// An image.
    Image {
        /// Base64 of the image bytes.
        data_base64: String,
        /// For example `image/png`.
        mime_type: String,
    },
    /// A link to a resource the model can ask for separately.
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// A short name.
        name: String,
        /// The resource's media type, when known.
        mime_type: Option<String>,
        /// What the resource is.
        description: Option<String>,
    },
    /// Audio.
    Audio {
        /// Base64 of the audio bytes.
        data_base64: String,
        /// For example `audio/wav`.
        mime_type: String,
    },
    /// A resource's contents, embedded in the result.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its media type, when known.
        mime_type: Option<String>,
        /// Its contents.
        contents: ResourceContents,
    },
}

/// What an embedded resource holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Base64 of binary content.
    Blob(String),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(text.into())
    }
}

/// What a component says about one tool (the native form of the WIT
/// `tool-descriptor`).
#[derive(Debug, Clone, PartialEq)]
pub struct Descriptor {
    /// Tool name.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the arguments, as a JSON document.
    pub input_schema: String,
    /// JSON Schema of the value, as a JSON document.
    pub output_schema: String,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// Declared path arguments.
    pub paths: Vec<PathParam>,
    /// A human-readable title.
    pub title: Option<String>,
    /// Declared URL arguments (JSON Pointers).
    pub urls: Vec<String>,
    /// The tool renders nothing itself.
    pub host_renders: bool,
}

/// The JSON Schema (draft 2020-12, subschemas inlined) of `T`, as a JSON value.
pub fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

/// The descriptor of tool `T`, with its schemas generated from its types.
pub fn describe<T: Tool>() -> Descriptor {
    Descriptor {
        name: T::NAME.to_string(),
        description: T::DESCRIPTION.to_string(),
        input_schema: schema_of::<T::Args>().to_string(),
        output_schema: schema_of::<T::Output>().to_string(),
        annotations: T::annotations(),
        paths: T::paths(),
        title: T::title().map(str::to_owned),
        urls: T::urls().into_iter().map(str::to_owned).collect(),
        host_renders: T::host_renders(),
    }
}

/// Runs tool `T` on an arguments JSON document and returns the value as a
/// JSON document. Arguments that fail to deserialize give `invalid_arguments`
/// with serde's message.
pub fn execute_json<T: Tool>(arguments: &str) -> Result<String, ToolError> {
    let args: T::Args = serde_json::from_str(arguments)
        .map_err(|e| ToolError::invalid_arguments(format!("invalid arguments: {e}")))?;
    let value = T::execute(args)?;
    serde_json::to_string(&value).map_err(|e| {
        ToolError::new(
            "internal_error",
            format!("could not serialize the value: {e}"),
        )
    })
}

/// Renders a value of tool `T` given as JSON documents. `None` when the tool
/// leaves rendering to the host, or when either document does not decode.
pub fn render_json<T: Tool>(arguments: &str, value: &str) -> Option<Vec<Content>> {
    let args: T::Args = serde_json::from_str(arguments).ok()?;
    let value: T::Output = serde_json::from_str(value).ok()?;
    T::render(&args, &value)
}

/// Whether `name` is a valid tool name: `[a-z][a-z0-9_]*`, at most 64 bytes.
pub const fn is_valid_tool_name(name: &str) -> bool {
    let b = name.as_bytes();
    if b.is_empty() || b.len() > 64 || !b[0].is_ascii_lowercase() {
        return false;
    }
    let mut i = 1;
    while i < b.len() {
        let c = b[i];
        if !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_') {
            return false;
        }
        i += 1;
    }
    true
}

/// One tool of a [`Toolset`]: its name and type-erased entry points.
#[derive(Clone, Copy)]
pub struct ToolEntry {
    /// The tool's name.
    pub name: &'static str,
    describe: fn() -> Descriptor,
    execute: fn(&str) -> Result<String, ToolError>,
    render: fn(&str, &str) -> Option<Vec<Content>>,
}

impl ToolEntry {
    /// The entry of tool `T`.
    pub const fn of<T: Tool>() -> Self {
        ToolEntry {
            name: T::NAME,
            describe: describe::<T>,
            execute: execute_json::<T>,
            render: render_json::<T>,
        }
    }
}

impl fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.name)
            .finish()
    }
}

/// The tools of one component, dispatched by name. This is what
/// [`export_tools!`] exports; tests can use it directly.
#[derive(Debug, Clone, Copy)]
pub struct Toolset {
    entries: &'static [ToolEntry],
}

impl Toolset {
    /// A toolset over `entries`.
    pub const fn new(entries: &'static [ToolEntry]) -> Self {
        Toolset { entries }
    }

    fn find(&self, name: &str) -> Option<&ToolEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The descriptors of all tools, in declaration order.
    pub fn list(&self) -> Vec<Descriptor> {
        self.entries.iter().map(|e| (e.describe)()).collect()
    }

    /// Runs tool `name`; `unknown_tool` when there is none.
    pub fn execute(&self, name: &str, arguments: &str) -> Result<String, ToolError> {
        match self.find(name) {
            Some(e) => (e.execute)(arguments),
            None => Err(ToolError::new(
                "unknown_tool",
                format!("this component has no tool named {name:?}"),
            )),
        }
    }

    /// Renders a value of tool `name`; `None` for an unknown tool.
    pub fn render(&self, name: &str, arguments: &str, value: &str) -> Option<Vec<Content>> {
        self.find(name).and_then(|e| (e.render)(arguments, value))
    }
}

/// Whether two of `names` are equal.
pub const fn has_duplicate_names(names: &[&str]) -> bool {
    let mut i = 0;
    while i < names.len() {
        let mut j = i + 1;
        while j < names.len() {
            if str_eq(names[i], names[j]) {
                return true;
            }
            j += 1;
        }
        i += 1;
    }
    false
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Resolves a path argument: absolute paths are returned as they are,
/// relative ones are joined onto the initial working directory the host
/// provides (`wasi:cli/environment.initial-cwd`, normally the guest path of
/// the first granted directory, e.g. `/workspace`), or `/` when it gives none.
/// Tools must use it for every path argument.
pub fn resolve_path(p: &str) -> PathBuf {
    let path = Path::new(p);
    if path.is_absolute() {
        return path.to_path_buf();
    }
    initial_cwd().join(path).components().collect()
}

/// The initial working directory: `wasi:cli/environment.initial-cwd` in a
/// component (or `/` when the host gives none), the process's current
/// directory natively.
pub fn initial_cwd() -> PathBuf {
    #[cfg(target_arch = "wasm32")]
    let cwd = wasi::cli::environment::initial_cwd().map(PathBuf::from);
    #[cfg(not(target_arch = "wasm32"))]
    let cwd = std::env::current_dir().ok();
    match cwd {
        Some(c) if c.is_absolute() => c,
        Some(c) => Path::new("/").join(c),
        None => PathBuf::from("/"),
    }
}

/// Exports one or more [`Tool`] types as the component's `tool` interface.
///
/// Use it once per component, at the crate root:
/// `toolhost_kit::export_tools!(ReadTool, OtherTool);`. It checks tool names
/// and their uniqueness at compile time. On `wasm32` it defines the
/// implementation of the generated bindings and exports it; elsewhere it only
/// checks.
#[macro_export]
macro_rules! export_tools {
    ($($tool:ty),+ $(,)?) => {
        const _: () = {
            $(
                ::core::assert!(
                    $crate::is_valid_tool_name(<$tool as $crate::Tool>::NAME),
                    "tool names must match [a-z][a-z0-9_]* and be at most 64 bytes",
                );
            )+
            ::core::assert!(
                !$crate::has_duplicate_names(&[$(<$tool as $crate::Tool>::NAME),+]),
                "two tools in this component have the same name",
            );
        };

        #[cfg(target_arch = "wasm32")]
        const _: () = {
            static __TOOLHOST_TOOLS: &[$crate::ToolEntry] = &[$($crate::ToolEntry::of::<$tool>()),+];

            struct __ToolhostComponent;

            impl $crate::__glue::Guest for __ToolhostComponent {
                fn list_tools() -> ::std::vec::Vec<$crate::__glue::ToolDescriptor> {
                    $crate::__glue::list_tools($crate::Toolset::new(__TOOLHOST_TOOLS))
                }

                fn execute(
                    name: ::std::string::String,
                    arguments: ::std::string::String,
                ) -> ::core::result::Result<::std::string::String, $crate::__glue::ToolFailure> {
                    $crate::__glue::execute($crate::Toolset::new(__TOOLHOST_TOOLS), &name, &arguments)
                }

                fn render(
                    name: ::std::string::String,
                    arguments: ::std::string::String,
                    value: ::std::string::String,
                ) -> ::core::option::Option<::std::vec::Vec<$crate::__glue::ContentBlock>> {
                    $crate::__glue::render(
                        $crate::Toolset::new(__TOOLHOST_TOOLS),
                        &name,
                        &arguments,
                        &value,
                    )
                }
            }

            $crate::__export_tool_provider_impl!(__ToolhostComponent with_types_in $crate::__glue::bindings);
        };
    };
}

/// The component glue. Not part of the API.
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod __glue {
    use super::{Content, Descriptor, PathAccess, ToolError, Toolset};

    /// Bindings generated from `wit/v0.3.0/tool.wit`.
    #[allow(missing_docs, unsafe_op_in_unsafe_fn, clippy::all)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "../../wit/v0.3.0",
            world: "tool-provider",
            pub_export_macro: true,
            export_macro_name: "__toolhost_export",
            default_bindings_module: "toolhost_kit::__glue::bindings",
        });
    }

    pub use bindings::exports::toolhost::tool::tool::Guest;
    use bindings::toolhost::tool::types as wit;
    pub use bindings::toolhost::tool::types::{ContentBlock, ToolDescriptor, ToolFailure};

    fn descriptor(d: Descriptor) -> ToolDescriptor {
        ToolDescriptor {
            name: d.name,
            description: d.description,
            input_schema: d.input_schema,
            output_schema: d.output_schema,
            annotations: wit::Annotations {
                read_only: d.annotations.read_only,
                destructive: d.annotations.destructive,
                idempotent: d.annotations.idempotent,
                open_world: d.annotations.open_world,
            },
            paths: d
                .paths
                .into_iter()
                .map(|p| wit::PathParam {
                    pointer: p.pointer.to_string(),
                    access: match p.access {
                        PathAccess::Read => wit::PathAccess::Read,
                        PathAccess::List => wit::PathAccess::List,
                        PathAccess::Create => wit::PathAccess::Create,
                        PathAccess::Overwrite => wit::PathAccess::Overwrite,
                        PathAccess::Patch => wit::PathAccess::Patch,
                        PathAccess::Write => wit::PathAccess::Write,
                    },
                })
                .collect(),
            title: d.title,
            urls: d.urls,
            host_renders: d.host_renders,
        }
    }

    fn failure(e: ToolError) -> ToolFailure {
        ToolFailure {
            code: e.code,
            message: e.message,
            info: e.info.map(|v| v.to_string()),
        }
    }

    fn block(c: Content) -> ContentBlock {
        match c {
            Content::Text(t) => ContentBlock::Text(t),
            Content::Image {
                data_base64,
                mime_type,
            } => ContentBlock::Image(wit::Image {
                data: data_base64,
                mime_type,
            }),
            Content::ResourceLink {
                uri,
                name,
                mime_type,
                description,
            } => ContentBlock::ResourceLink(wit::ResourceLink {
                uri,
                name,
                mime_type,
                description,
            }),
            Content::Audio {
                data_base64,
                mime_type,
            } => ContentBlock::Audio(wit::Audio {
                data: data_base64,
                mime_type,
            }),
            Content::Resource {
                uri,
                mime_type,
                contents,
            } => ContentBlock::EmbeddedResource(wit::EmbeddedResource {
                uri,
                mime_type,
                contents: match contents {
                    super::ResourceContents::Text(t) => wit::ResourceContents::Text(t),
                    super::ResourceContents::Blob(b) => wit::ResourceContents::Blob(b),
                },
            }),
        }
    }

    pub fn list_tools(set: Toolset) -> Vec<ToolDescriptor> {
        set.list().into_iter().map(descriptor).collect()
    }

    pub fn execute(set: Toolset, name: &str, arguments: &str) -> Result<String, ToolFailure> {
        set.execute(name, arguments).map_err(failure)
    }

    pub fn render(
        set: Toolset,
        name: &str,
        arguments: &str,
        value: &str,
    ) -> Option<Vec<ContentBlock>> {
        set.render(name, arguments, value)
            .map(|blocks| blocks.into_iter().map(block).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct AddArgs {
        a: i64,
        #[serde(default = "one")]
        b: i64,
    }
    fn one() -> i64 {
        1
    }

    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Sum {
        sum: i64,
    }

    struct Add;
    impl Tool for Add {
        const NAME: &'static str = "add";
        const DESCRIPTION: &'static str = "Adds.";
        type Args = AddArgs;
        type Output = Sum;
        fn annotations() -> Annotations {
            Annotations::NONE.with_read_only()
        }
        fn execute(args: AddArgs) -> Result<Sum, ToolError> {
            if args.a < 0 {
                return Err(ToolError::new("negative", "a is negative")
                    .with_info(serde_json::json!({"a": args.a})));
            }
            Ok(Sum {
                sum: args.a + args.b,
            })
        }
        fn render(args: &AddArgs, value: &Sum) -> Option<Vec<Content>> {
            Some(vec![Content::text(format!(
                "{} + {} = {}",
                args.a, args.b, value.sum
            ))])
        }
    }

    struct Nothing;
    impl Tool for Nothing {
        const NAME: &'static str = "nothing";
        const DESCRIPTION: &'static str = "Nothing.";
        type Args = AddArgs;
        type Output = Sum;
        fn annotations() -> Annotations {
            Annotations::NONE
        }
        fn paths() -> Vec<PathParam> {
            vec![PathParam::new("/a", PathAccess::Read)]
        }
        fn execute(args: AddArgs) -> Result<Sum, ToolError> {
            Ok(Sum { sum: args.a })
        }
    }

    static SET: Toolset = Toolset::new(&[ToolEntry::of::<Add>(), ToolEntry::of::<Nothing>()]);

    export_tools!(Add, Nothing);

    #[test]
    fn names() {
        assert!(is_valid_tool_name("read"));
        assert!(is_valid_tool_name("a_1"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("1a"));
        assert!(!is_valid_tool_name("Read"));
        assert!(!is_valid_tool_name("re-ad"));
        assert!(!is_valid_tool_name(&"a".repeat(65)));
        assert!(!has_duplicate_names(&["a", "b", "c"]));
        assert!(has_duplicate_names(&["a", "b", "a"]));
    }

    #[test]
    fn dispatch() {
        assert_eq!(SET.execute("add", r#"{"a": 2}"#).unwrap(), r#"{"sum":3}"#);
        assert_eq!(
            SET.execute("add", r#"{"a": 2, "b": 5}"#).unwrap(),
            r#"{"sum":7}"#
        );
        let e = SET.execute("nope", "{}").unwrap_err();
        assert_eq!(e.code, "unknown_tool");
        let e = SET.execute("add", r#"{"a": 2, "c": 1}"#).unwrap_err();
        assert_eq!(e.code, "invalid_arguments");
        assert!(e.message.contains("unknown field `c`"), "{}", e.message);
        let e = SET.execute("add", r#"{"a": "x"}"#).unwrap_err();
        assert_eq!(e.code, "invalid_arguments");
        let e = SET.execute("add", r#"{"a": -1}"#).unwrap_err();
        assert_eq!(e.code, "negative");
        assert_eq!(e.info, Some(serde_json::json!({"a": -1})));
    }

    #[test]
    fn render() {
        assert_eq!(
            SET.render("add", r#"{"a": 2}"#, r#"{"sum":3}"#),
            Some(vec![Content::text("2 + 1 = 3")])
        );
        assert_eq!(SET.render("nothing", r#"{"a": 2}"#, r#"{"sum":2}"#), None);
        assert_eq!(SET.render("add", r#"{"a": 2}"#, r#"{"bad":3}"#), None);
        assert_eq!(SET.render("zzz", "{}", "{}"), None);
    }

    #[test]
    fn descriptors() {
        let list = SET.list();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].name, "add");
        assert!(list[0].annotations.read_only);
        assert_eq!(list[1].paths[0].pointer, "/a");
        let input: serde_json::Value = serde_json::from_str(&list[0].input_schema).unwrap();
        assert_eq!(input["type"], "object");
        assert_eq!(input["additionalProperties"], false);
        assert_eq!(input["required"], serde_json::json!(["a"]));
        assert_eq!(input["properties"]["b"]["default"], 1);
        let output: serde_json::Value = serde_json::from_str(&list[0].output_schema).unwrap();
        assert_eq!(output["properties"]["sum"]["type"], "integer");
    }

    #[test]
    fn annotation_and_path_helpers() {
        assert_eq!(
            Annotations::READ_ONLY_IDEMPOTENT,
            Annotations {
                read_only: true,
                idempotent: true,
                ..Annotations::NONE
            }
        );
        let all = Annotations::NONE
            .with_read_only()
            .with_destructive()
            .with_idempotent()
            .with_open_world();
        assert!(all.read_only && all.destructive && all.idempotent && all.open_world);
        assert_eq!(
            PathParam::new("/p", PathAccess::Patch),
            PathParam {
                pointer: "/p",
                access: PathAccess::Patch
            }
        );
    }

    #[test]
    fn io_errors() {
        let p = Path::new("/x/y");
        let e = ToolError::io(&std::io::Error::from(std::io::ErrorKind::NotFound), p);
        assert_eq!(e.code, "not_found");
        assert!(e.message.contains("/x/y"));
        let e = ToolError::io(&std::io::Error::other("weird"), p);
        assert_eq!(e.code, "io_error");
    }

    #[test]
    fn paths() {
        assert_eq!(resolve_path("/a/b"), PathBuf::from("/a/b"));
        let cwd = initial_cwd();
        assert_eq!(resolve_path("a/./b"), cwd.join("a/b"));
        assert_eq!(resolve_path("."), cwd);
        assert_eq!(resolve_path("../x"), cwd.join("../x"));
    }
}
