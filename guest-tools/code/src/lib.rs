//! toolhost's code runners: the interpreters behind code mode's reserved
//! `run_code` tool, one component per language.
//!
//! A model writes one script; the script calls the host's tools with
//! `await tools.NAME(...)` and gives one result. A runner component is
//! where the script runs: JavaScript in QuickJS-NG (through rquickjs,
//! [`javascript`]) or Python in Monty ([`python`]), in a fresh interpreter
//! for every call, in a sandbox whose policy grants nothing. Its
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
//! Why Monty for Python: it starts in microseconds, suspends at every call
//! of a host function (so calls and their futures are the host's), and is
//! pure Rust (no CPython to snapshot). What it lacks: a script's own
//! classes cannot inherit, so no exception type of ours; a failed call
//! raises `OSError` (bound as `ToolError`) whose message carries the code.
//!
//! One toolbox runs one language (its `language`): `run_code`'s description
//! declares the API once, in the language the model writes. The host
//! appends those declarations to each runner's description; see the host's
//! `toolhost-toolbox` crate.

pub mod outcome;

#[cfg(feature = "javascript")]
pub mod javascript;
#[cfg(feature = "python")]
pub mod python;

/// The reserved tool's name.
pub const NAME: &str = "run_code";

/// The reserved tool's title.
pub const TITLE: &str = "Run a script that calls tools";

/// The output schema: what the script returned, and what it logged.
pub const OUTPUT_SCHEMA: &str = r#"{"type":"object","properties":{"result":{"description":"What the script returned (null when it returned nothing)."},"console":{"type":"array","items":{"type":"string"},"description":"What the script logged, line by line."}},"required":["result","console"],"additionalProperties":false}"#;

/// The value of a finished script.
pub fn value(outcome: &outcome::Outcome) -> String {
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
        for s in [
            OUTPUT_SCHEMA,
            javascript::INPUT_SCHEMA,
            python::INPUT_SCHEMA,
        ] {
            let _: serde_json::Value = serde_json::from_str(s).expect("a schema is JSON");
        }
        let v = value(&outcome::Outcome {
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
