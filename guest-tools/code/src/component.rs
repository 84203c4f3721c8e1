//! The component glue: the `code-runner` world of `toolhost:tool@0.5.0`,
//! around the one language this component is built with.

use crate::outcome::{Failure, Host};

#[cfg(all(feature = "javascript", feature = "python"))]
compile_error!("a runner component is built with one language: `javascript` or `python`");
#[cfg(all(feature = "javascript", not(feature = "python")))]
use crate::javascript as language;
#[cfg(all(feature = "python", not(feature = "javascript")))]
use crate::python as language;

wit_bindgen::generate!({
    path: "../../wit/v0.5.0",
    world: "code-runner",
});

use exports::toolhost::tool::tool::{ContentBlock, Guest, ToolDescriptor, ToolFailure};
use toolhost::tool::tools;
use toolhost::tool::types::Annotations;

struct Runner;

impl Guest for Runner {
    fn list_tools() -> Vec<ToolDescriptor> {
        vec![ToolDescriptor {
            name: crate::NAME.into(),
            description: language::DESCRIPTION.into(),
            input_schema: language::INPUT_SCHEMA.into(),
            output_schema: crate::OUTPUT_SCHEMA.into(),
            // The host sets these from the tools a script may call.
            annotations: Annotations {
                read_only: false,
                destructive: true,
                idempotent: false,
                open_world: true,
            },
            paths: Vec::new(),
            title: Some(crate::TITLE.into()),
            urls: Vec::new(),
            host_renders: false,
        }]
    }

    fn execute(name: String, arguments: String) -> Result<String, ToolFailure> {
        if name != crate::NAME {
            return Err(failure(Failure {
                code: "unknown_tool".into(),
                message: format!("this component runs `{}`, not `{name}`", crate::NAME),
                info: None,
            }));
        }
        let args: serde_json::Value = serde_json::from_str(&arguments).map_err(|e| {
            failure(Failure {
                code: "invalid_arguments".into(),
                message: format!("the arguments are not JSON: {e}"),
                info: None,
            })
        })?;
        let Some(code) = args.get("code").and_then(serde_json::Value::as_str) else {
            return Err(failure(Failure {
                code: "invalid_arguments".into(),
                message: "`code` (the script) is missing".into(),
                info: None,
            }));
        };
        language::run(code, Box::new(Tools))
            .map(|outcome| crate::value(&outcome))
            .map_err(failure)
    }

    fn render(_name: String, _arguments: String, value: String) -> Option<Vec<ContentBlock>> {
        crate::render(&value).map(|text| vec![ContentBlock::Text(text)])
    }
}

/// The host's tools, through the contract's `tools` import.
struct Tools;

impl Host for Tools {
    fn start(&mut self, name: &str, arguments: &str) -> u32 {
        tools::start(name, arguments)
    }

    fn wait(&mut self, handles: &[u32]) -> Vec<(u32, Result<String, Failure>)> {
        tools::wait(handles)
            .into_iter()
            .map(|(h, outcome)| {
                let outcome = outcome.map_err(|f| Failure {
                    code: f.code,
                    message: f.message,
                    info: f.info.and_then(|i| serde_json::from_str(&i).ok()),
                });
                (h, outcome)
            })
            .collect()
    }
}

fn failure(f: Failure) -> ToolFailure {
    ToolFailure {
        code: f.code,
        message: f.message,
        info: f.info.map(|i| i.to_string()),
    }
}

export!(Runner);
