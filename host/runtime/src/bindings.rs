//! Host bindings for every released `toolhost:tool` world (private:
//! generated code never leaks out of this crate), and their conversion into
//! one version-neutral shape the rest of the runtime uses.

use toolhost_contract::{
    Annotations, ContentBlock, EmbeddedResource, PathAccess, PathParam, ResourceContents,
};
use wasmtime::component::{ComponentExportIndex, InstancePre};

/// `toolhost:tool@0.1.0`.
pub(crate) mod v1 {
    wasmtime::component::bindgen!({
        path: "wit/v0.1.0",
        world: "tool-provider",
        exports: { default: async },
    });
    pub(crate) use self::toolhost::tool::types;
}

/// `toolhost:tool@0.2.0`.
pub(crate) mod v2 {
    wasmtime::component::bindgen!({
        path: "wit/v0.2.0",
        world: "tool-provider",
        exports: { default: async },
    });
    pub(crate) use self::toolhost::tool::types;
}

/// `toolhost:tool@0.3.0`: the first version with an import of its own
/// (`context`, served by the store's data in [`crate::sandbox`] through
/// [`crate::context`]).
pub(crate) mod v3 {
    wasmtime::component::bindgen!({
        path: "wit/v0.3.0",
        world: "tool-provider",
        exports: { default: async },
    });
    pub(crate) use self::toolhost::tool::{context, types};
}

/// `toolhost:tool@0.4.0`: the `tools` import (a code runner's calls of the
/// host's tools, served in [`crate::sandbox`] through [`crate::calls`]), in
/// the `code-runner` world; a 0.4.0 `tool-provider` is the same world
/// without it.
pub(crate) mod v4 {
    wasmtime::component::bindgen!({
        path: "wit/v0.4.0",
        world: "code-runner",
        imports: { "toolhost:tool/tools.call": async | trappable },
        exports: { default: async },
    });
    pub(crate) use self::toolhost::tool::{context, tools, types};
}

/// `toolhost:tool@0.5.0`: the `tools` import gains `start` and `wait`, so
/// a code runner's calls run at once (served in [`crate::sandbox`] through
/// [`crate::calls`]).
pub(crate) mod v5 {
    wasmtime::component::bindgen!({
        path: "wit/v0.5.0",
        world: "code-runner",
        imports: {
            "toolhost:tool/tools.call": async | trappable,
            "toolhost:tool/tools.wait": async | trappable,
        },
        exports: { default: async },
    });
    pub(crate) use self::toolhost::tool::{context, tools, types};
}

/// A tool descriptor as any contract version returned it.
pub(crate) use toolhost_worker_wire::DeclaredTool as RawTool;

/// A failure a tool reported, as any contract version returned it.
pub(crate) struct RawFailure {
    pub code: String,
    pub message: String,
    pub info: Option<String>,
}

/// The conversions shared by every version (the types are identical).
macro_rules! common_conversions {
    ($v:ident) => {
        impl From<$v::types::Annotations> for Annotations {
            fn from(a: $v::types::Annotations) -> Annotations {
                Annotations {
                    read_only: a.read_only,
                    destructive: a.destructive,
                    idempotent: a.idempotent,
                    open_world: a.open_world,
                }
            }
        }

        impl From<$v::types::PathParam> for PathParam {
            fn from(p: $v::types::PathParam) -> PathParam {
                use $v::types::PathAccess as A;
                PathParam {
                    pointer: p.pointer,
                    access: match p.access {
                        A::Read => PathAccess::Read,
                        A::List => PathAccess::List,
                        A::Create => PathAccess::Create,
                        A::Overwrite => PathAccess::Overwrite,
                        A::Patch => PathAccess::Patch,
                        A::Write => PathAccess::Write,
                    },
                }
            }
        }

        impl From<$v::types::ToolFailure> for RawFailure {
            fn from(f: $v::types::ToolFailure) -> RawFailure {
                RawFailure {
                    code: f.code,
                    message: f.message,
                    info: f.info,
                }
            }
        }
    };
}

common_conversions!(v1);
common_conversions!(v2);
common_conversions!(v3);
common_conversions!(v4);
common_conversions!(v5);

/// A version's content blocks as the contract's: the blocks every version
/// has (text, image, resource link), then the arms of what that version
/// adds.
macro_rules! content {
    ($v:ident { $($pat:pat => $block:expr,)* }) => {
        impl From<$v::types::ContentBlock> for ContentBlock {
            fn from(b: $v::types::ContentBlock) -> ContentBlock {
                use $v::types::ContentBlock as B;
                match b {
                    B::Text(text) => ContentBlock::Text { text },
                    B::Image(i) => ContentBlock::Image {
                        data: i.data,
                        mime_type: i.mime_type,
                    },
                    B::ResourceLink(l) => ContentBlock::ResourceLink {
                        uri: l.uri,
                        name: l.name,
                        mime_type: l.mime_type,
                        description: l.description,
                    },
                    $($pat => $block,)*
                }
            }
        }
    };
}

content!(v1 {});
content!(v2 {});
/// The arms 0.3.0 added (and 0.4.0 kept).
macro_rules! content_v3 {
    ($v:ident) => {
        content!($v {
            $v::types::ContentBlock::Audio(a) => ContentBlock::Audio {
                data: a.data,
                mime_type: a.mime_type,
            },
            $v::types::ContentBlock::EmbeddedResource(r) => ContentBlock::Resource {
                resource: EmbeddedResource {
                    uri: r.uri,
                    mime_type: r.mime_type,
                    contents: match r.contents {
                        $v::types::ResourceContents::Text(t) => ResourceContents::Text(t),
                        $v::types::ResourceContents::Blob(b) => ResourceContents::Blob(b),
                    },
                },
            },
        });
    };
}
content_v3!(v3);
content_v3!(v4);
content_v3!(v5);

/// A version's descriptor as a [`RawTool`], with what that version adds.
macro_rules! raw_tool {
    ($t:ident, title: $title:expr, urls: $urls:expr, host_renders: $hr:expr) => {
        RawTool {
            name: $t.name,
            description: $t.description,
            input_schema: $t.input_schema,
            output_schema: $t.output_schema,
            annotations: $t.annotations.into(),
            paths: $t.paths.into_iter().map(Into::into).collect(),
            title: $title,
            urls: $urls,
            host_renders: $hr,
        }
    };
}

impl From<v1::types::ToolDescriptor> for RawTool {
    fn from(t: v1::types::ToolDescriptor) -> RawTool {
        raw_tool!(t, title: None, urls: Vec::new(), host_renders: false)
    }
}

impl From<v2::types::ToolDescriptor> for RawTool {
    fn from(t: v2::types::ToolDescriptor) -> RawTool {
        raw_tool!(t, title: t.title, urls: t.urls, host_renders: false)
    }
}

impl From<v3::types::ToolDescriptor> for RawTool {
    fn from(t: v3::types::ToolDescriptor) -> RawTool {
        raw_tool!(t, title: t.title, urls: t.urls, host_renders: t.host_renders)
    }
}

impl From<v4::types::ToolDescriptor> for RawTool {
    fn from(t: v4::types::ToolDescriptor) -> RawTool {
        raw_tool!(t, title: t.title, urls: t.urls, host_renders: t.host_renders)
    }
}

impl From<v5::types::ToolDescriptor> for RawTool {
    fn from(t: v5::types::ToolDescriptor) -> RawTool {
        raw_tool!(t, title: t.title, urls: t.urls, host_renders: t.host_renders)
    }
}

/// The contract version a component exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    /// `toolhost:tool@0.1.0`.
    V1,
    /// `toolhost:tool@0.2.0`.
    V2,
    /// `toolhost:tool@0.3.0`.
    V3,
    /// `toolhost:tool@0.4.0`.
    V4,
    /// `toolhost:tool@0.5.0`.
    V5,
}

impl Version {
    /// Every version this host runs, newest first.
    pub(crate) const ALL: [Version; 5] = [
        Version::V5,
        Version::V4,
        Version::V3,
        Version::V2,
        Version::V1,
    ];

    /// The version number, e.g. `0.2.0`.
    pub(crate) fn number(self) -> &'static str {
        match self {
            Version::V1 => "0.1.0",
            Version::V2 => "0.2.0",
            Version::V3 => "0.3.0",
            Version::V4 => "0.4.0",
            Version::V5 => "0.5.0",
        }
    }
}

/// The `toolhost:tool` contract versions this host runs, newest first.
pub fn contract_versions() -> impl Iterator<Item = &'static str> {
    Version::ALL.into_iter().map(Version::number)
}

/// The contract's functions in one component, found once at load: a call
/// then loads (and type-checks) only the functions it calls, instead of the
/// generated bindings' loading all three on every instantiation.
pub(crate) struct Exports {
    pub list_tools: ComponentExportIndex,
    pub execute: ComponentExportIndex,
    pub render: ComponentExportIndex,
}

/// A component pre-linked against the contract version it exports.
pub(crate) struct ProviderPre<T: 'static> {
    pub pre: InstancePre<T>,
    pub version: Version,
    pub exports: Exports,
}

impl<T: 'static> ProviderPre<T> {
    /// Which contract version the component exports: the newest that fits.
    pub(crate) fn new(pre: InstancePre<T>) -> wasmtime::Result<Self> {
        let version = if v5::CodeRunnerPre::new(pre.clone()).is_ok() {
            Version::V5
        } else if v4::CodeRunnerPre::new(pre.clone()).is_ok() {
            Version::V4
        } else if v3::ToolProviderPre::new(pre.clone()).is_ok() {
            Version::V3
        } else {
            match v2::ToolProviderPre::new(pre.clone()) {
                Ok(_) => Version::V2,
                Err(v2_error) => match v1::ToolProviderPre::new(pre.clone()) {
                    Ok(_) => Version::V1,
                    Err(_) => return Err(v2_error),
                },
            }
        };
        let interface = format!("toolhost:tool/tool@{}", version.number());
        let component = pre.component();
        let iface = component
            .get_export_index(None, &interface)
            .ok_or_else(|| wasmtime::format_err!("no export `{interface}`"))?;
        let func = |name: &str| {
            component
                .get_export_index(Some(&iface), name)
                .ok_or_else(|| wasmtime::format_err!("`{interface}` exports no `{name}`"))
        };
        let exports = Exports {
            list_tools: func("list-tools")?,
            execute: func("execute")?,
            render: func("render")?,
        };
        Ok(ProviderPre {
            pre,
            version,
            exports,
        })
    }

    /// The contract version, e.g. `0.2.0`.
    pub(crate) fn version(&self) -> &'static str {
        self.version.number()
    }
}
