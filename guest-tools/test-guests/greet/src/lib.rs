//! `greet` behind the `toolhost:tool` contract: the plain test component's
//! `greet` (`wit/test-plain`), the same work with the contract's JSON in
//! and out, so the benchmarks compare what the host spends on a plain
//! component's call with what it spends on a contract component's. It
//! renders nothing itself, as the host renders a plain component's value.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_kit::{Annotations, Tool, ToolError};

/// Arguments of `greet`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GreetArgs {
    /// Who to greet.
    pub name: String,
}

/// Greets someone by name.
pub struct Greet;

impl Tool for Greet {
    const NAME: &'static str = "greet";
    const DESCRIPTION: &'static str = "Greets someone by name.";
    type Args = GreetArgs;
    type Output = String;

    fn annotations() -> Annotations {
        Annotations::READ_ONLY_IDEMPOTENT
    }

    fn execute(args: GreetArgs) -> Result<String, ToolError> {
        Ok(format!("Hello, {}!", args.name))
    }

    fn host_renders() -> bool {
        true
    }
}

toolhost_kit::export_tools!(Greet);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greets() {
        let out = toolhost_kit::execute_json::<Greet>(r#"{"name": "Ana"}"#);
        assert_eq!(out.ok().as_deref(), Some("\"Hello, Ana!\""));
    }
}
