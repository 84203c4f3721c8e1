//! toolhost's code runner: the interpreter behind code mode's reserved
//! `run_code` tool.
//!
//! A model writes one JavaScript script; the script calls the host's tools
//! with `await tools.NAME(args)` and returns one result. This component is
//! where the script runs: QuickJS-NG (through rquickjs), in a fresh
//! runtime for every call, in a sandbox whose policy grants nothing. Its
//! one way out is the contract's `tools` import (`toolhost:tool@0.4.0`,
//! world `code-runner`): a tool's name and JSON arguments out, the tool's
//! value or its failure back. The host runs each such call through its
//! whole pipeline as a child of the `run_code` call, so a script can do
//! nothing a direct call could not, and is asked about nothing less.
//!
//! Why QuickJS: against Boa 0.22 (pure Rust) it ran string and regular
//! expression work 75–200 times faster (Boa's `indexOf` from a position
//! and `split` are quadratic: splitting 140 KB into lines took 1.2 s),
//! at the same start-up (0.4 ms) and a fifth of the size (820 KB).
//!
//! The host appends the typed API of the tools a script may call to the
//! description below; see the host's `toolhost-toolbox` crate.

pub mod script;

/// The reserved tool's name.
pub const NAME: &str = "run_code";

/// The reserved tool's title.
pub const TITLE: &str = "Run a script that calls tools";

/// What the model reads first; the host appends the API.
pub const DESCRIPTION: &str = "Runs JavaScript that calls the tools declared below and returns one result. \
The script is the body of an async function: `return` gives the result (any JSON value), \
`await tools.NAME({...})` calls a tool and gives its value (the typed object declared below, \
never text), and a failed call throws a `ToolError` with `code`, `message` and `tool` \
(catch it to go on). `console.log` lines come back with the result. \
Every call is checked, limited and approved exactly as if made directly; \
file changes of the whole script are committed together when it returns, and none when it throws. \
Prefer one script over many calls: read, filter and summarize inside it, and return only what you need.";

/// The input schema: the script.
pub const INPUT_SCHEMA: &str = r#"{"type":"object","properties":{"code":{"type":"string","description":"JavaScript: the body of an async function. Use `await tools.NAME({...})` and `return` a JSON value.","minLength":1}},"required":["code"],"additionalProperties":false}"#;

/// The output schema: what the script returned, and what it logged.
pub const OUTPUT_SCHEMA: &str = r#"{"type":"object","properties":{"result":{"description":"What the script returned (null when it returned nothing)."},"console":{"type":"array","items":{"type":"string"},"description":"What the script logged, line by line."}},"required":["result","console"],"additionalProperties":false}"#;

/// The value of a finished script.
pub fn value(outcome: &script::Outcome) -> String {
    let result: serde_json::Value =
        serde_json::from_str(&outcome.result).unwrap_or(serde_json::Value::Null);
    serde_json::json!({"result": result, "console": outcome.console}).to_string()
}

/// What the model reads of a value: the result (a string as it is, any
/// other value as indented JSON), after the console lines when there are
/// any. `None` when the value is not one this runner made.
pub fn render(value: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(value).ok()?;
    let result = match v.get("result")? {
        serde_json::Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).ok()?,
    };
    let console: Vec<&str> = v
        .get("console")?
        .as_array()?
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    if console.is_empty() {
        return Some(result);
    }
    Some(format!(
        "console:\n{}\n\nresult:\n{result}",
        console.join("\n")
    ))
}

#[cfg(target_arch = "wasm32")]
mod component;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schemas_are_json_and_the_value_fits_them() {
        for s in [INPUT_SCHEMA, OUTPUT_SCHEMA] {
            let _: serde_json::Value = serde_json::from_str(s).expect("a schema is JSON");
        }
        let v = value(&script::Outcome {
            result: r#"{"a":1}"#.into(),
            console: vec!["hi".into()],
        });
        assert_eq!(v, r#"{"result":{"a":1},"console":["hi"]}"#);
    }

    #[test]
    fn rendering_puts_the_console_before_the_result() {
        assert_eq!(
            render(r#"{"result":"plain","console":[]}"#).as_deref(),
            Some("plain")
        );
        assert_eq!(
            render(r#"{"result":{"n":2},"console":["a","b"]}"#).as_deref(),
            Some("console:\na\nb\n\nresult:\n{\n  \"n\": 2\n}")
        );
        assert_eq!(render("not json"), None);
    }
}
