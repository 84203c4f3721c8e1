//! Defensive argument parsing: an emitted argument string never fails to
//! parse; what is not JSON stays raw, for the schema stage to refuse with a
//! message the model can read.

use serde_json::Value;

/// The arguments after defensive parsing.
#[derive(Debug, Clone, PartialEq)]
pub enum ParsedArguments {
    /// Valid JSON (an empty string parses as `{}`).
    Json(Value),
    /// Not JSON: kept raw so schema validation rejects it with a readable message.
    Raw(String),
}

/// Parses a raw argument string. Never fails: an empty (or blank) string
/// becomes `{}`, because models routinely emit nothing for a tool without
/// parameters; anything unparseable stays raw.
pub fn parse_arguments(raw: &str) -> ParsedArguments {
    if raw.trim().is_empty() {
        return ParsedArguments::Json(Value::Object(Default::default()));
    }
    match serde_json::from_str(raw) {
        Ok(v) => ParsedArguments::Json(v),
        Err(_) => ParsedArguments::Raw(raw.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parsing_is_defensive() {
        assert_eq!(parse_arguments(""), ParsedArguments::Json(json!({})));
        assert_eq!(parse_arguments("  \n"), ParsedArguments::Json(json!({})));
        assert_eq!(
            parse_arguments(r#"{"a":1}"#),
            ParsedArguments::Json(json!({"a": 1}))
        );
        assert_eq!(
            parse_arguments("{oops"),
            ParsedArguments::Raw("{oops".into())
        );
        assert_eq!(
            parse_arguments("\u{0}\u{ffff}"),
            ParsedArguments::Raw("\u{0}\u{ffff}".into())
        );
    }
}
