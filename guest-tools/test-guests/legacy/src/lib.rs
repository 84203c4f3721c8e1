//! A component of the released `toolhost:tool@0.1.0` contract, written
//! against the raw bindings (no kit): one tool, `echo_v1`, that returns its
//! `text` argument. The host must keep loading and running 0.1.0 components.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

#[cfg(target_arch = "wasm32")]
mod component {
    #[allow(missing_docs, unsafe_op_in_unsafe_fn, clippy::all)]
    mod bindings {
        wit_bindgen::generate!({
            path: "../../../wit/v0.1.0",
            world: "tool-provider",
        });
    }

    use bindings::exports::toolhost::tool::tool::Guest;
    use bindings::toolhost::tool::types::{Annotations, ContentBlock, ToolDescriptor, ToolFailure};

    struct Legacy;

    impl Guest for Legacy {
        fn list_tools() -> Vec<ToolDescriptor> {
            vec![ToolDescriptor {
                name: "echo_v1".into(),
                description: "Returns its text (a contract 0.1.0 tool).".into(),
                input_schema: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}"#.into(),
                output_schema: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#.into(),
                annotations: Annotations {
                    read_only: true,
                    destructive: false,
                    idempotent: true,
                    open_world: false,
                },
                paths: vec![],
            }]
        }

        fn execute(name: String, arguments: String) -> Result<String, ToolFailure> {
            if name != "echo_v1" {
                return Err(ToolFailure {
                    code: "unknown_tool".into(),
                    message: format!("no tool `{name}`"),
                    info: None,
                });
            }
            Ok(arguments)
        }

        fn render(_name: String, _arguments: String, value: String) -> Option<Vec<ContentBlock>> {
            Some(vec![ContentBlock::Text(format!("echo: {value}"))])
        }
    }

    bindings::export!(Legacy with_types_in bindings);
}
