//! A component declaring the published tool list of one public MCP server
//! (GitHub, Slack, Playwright, Postgres…), as recorded in
//! `tests/discovery/catalog/` (see its `SOURCES.md`): the realistic large
//! toolbox progressive discovery is tested and measured on.
//!
//! Which server it declares is its *mode*: 24 ASCII bytes after the marker
//! [`MARKER`] in its data, a catalog file's stem padded with spaces, or
//! `all`. The build makes the `all` component; tests make the others by
//! replacing those bytes in a copy (`toolhost_guests::catalog_guest`), so
//! one build gives every server, each with its own digest.
//!
//! Every tool does nothing but echo its call: `{"tool": NAME,
//! "arguments": ARGS}` (a tool whose recorded output schema that value
//! would not match declares an open one instead).

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

/// What precedes the mode in the component's data.
pub const MARKER: &[u8] = b"toolhost-catalog-server=";

/// The marker and the built mode, in the data section, byte for byte.
#[used]
static MODE: [u8; 48] = *b"toolhost-catalog-server=all                     ";

include!(concat!(env!("OUT_DIR"), "/catalog.rs"));

/// The mode, read through a volatile load so the compiler cannot fold it.
fn mode() -> String {
    // SAFETY: `MODE` is a valid, aligned, initialized static.
    let all = unsafe { core::ptr::read_volatile(&raw const MODE) };
    String::from_utf8_lossy(&all[MARKER.len()..])
        .trim_end()
        .to_owned()
}

/// The recorded tools this copy declares, as JSON objects.
fn declared() -> Vec<serde_json::Value> {
    let mode = mode();
    SERVERS
        .iter()
        .filter(|(stem, _)| mode == "all" || *stem == mode)
        .filter_map(|(_, json)| serde_json::from_str::<serde_json::Value>(json).ok())
        .flat_map(|server| match server {
            serde_json::Value::Object(mut o) => match o.remove("tools") {
                Some(serde_json::Value::Array(tools)) => tools,
                _ => Vec::new(),
            },
            _ => Vec::new(),
        })
        .collect()
}

/// The echo's output schema: the recorded one may ask for what an echo
/// cannot give, and the host checks every value against it.
const ECHO: &str = r#"{"type":"object","properties":{"tool":{"type":"string"},"arguments":{"type":"object"}},"required":["tool"]}"#;

#[cfg(target_arch = "wasm32")]
mod component {
    #[allow(missing_docs, unsafe_op_in_unsafe_fn, clippy::all)]
    mod bindings {
        wit_bindgen::generate!({
            path: "../../../wit/v0.2.0",
            world: "tool-provider",
        });
    }

    use bindings::exports::toolhost::tool::tool::Guest;
    use bindings::toolhost::tool::types::{Annotations, ContentBlock, ToolDescriptor, ToolFailure};

    struct Catalog;

    impl Guest for Catalog {
        fn list_tools() -> Vec<ToolDescriptor> {
            super::declared()
                .iter()
                .map(|t| {
                    let text = |k: &str| t[k].as_str().map(str::to_owned);
                    // MCP's defaults for the hints a server leaves out.
                    let hint =
                        |k: &str, default: bool| t["annotations"][k].as_bool().unwrap_or(default);
                    let output = &t["outputSchema"];
                    ToolDescriptor {
                        name: text("name").unwrap_or_default(),
                        description: text("description").unwrap_or_default(),
                        input_schema: t["inputSchema"].to_string(),
                        // Only an open recorded schema can describe an echo.
                        output_schema: if output.is_object()
                            && output.get("required").is_none()
                            && output.get("additionalProperties") != Some(&false.into())
                        {
                            output.to_string()
                        } else {
                            super::ECHO.into()
                        },
                        annotations: Annotations {
                            read_only: hint("readOnlyHint", false),
                            destructive: hint("destructiveHint", true),
                            idempotent: hint("idempotentHint", false),
                            open_world: hint("openWorldHint", true),
                        },
                        paths: vec![],
                        title: text("title"),
                        urls: vec![],
                    }
                })
                .collect()
        }

        fn execute(name: String, arguments: String) -> Result<String, ToolFailure> {
            Ok(format!(r#"{{"tool":"{name}","arguments":{arguments}}}"#))
        }

        fn render(_name: String, _arguments: String, _value: String) -> Option<Vec<ContentBlock>> {
            None
        }
    }

    bindings::export!(Catalog with_types_in bindings);
}
