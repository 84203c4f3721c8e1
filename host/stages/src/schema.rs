//! Schema errors as the model reads them: a few violations, each located.

use crate::summary::clip;
use serde_json::Value;

/// Most schema errors quoted in one failure message.
pub const MAX_SCHEMA_ERRORS: usize = 5;

/// At most [`MAX_SCHEMA_ERRORS`] schema violations of `instance`, each as
/// `location: message` (a message clipped to 200 bytes); the root is named
/// `root`. Empty when the instance is valid.
pub fn errors(validator: &jsonschema::Validator, instance: &Value, root: &str) -> Vec<String> {
    if validator.is_valid(instance) {
        // The common case, without collecting error paths.
        return Vec::new();
    }
    validator
        .iter_errors(instance)
        .take(MAX_SCHEMA_ERRORS)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { root.to_owned() } else { at };
            format!("{at}: {}", clip(&e.to_string(), 200))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_are_few_located_and_clipped() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 1}},
            "required": ["a"],
        });
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(errors(&v, &json!({"a": 1}), "arguments").is_empty());
        let e = errors(&v, &json!({"b": "x".repeat(1000)}), "arguments");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e.iter().any(|m| m.starts_with("arguments: ")), "{e:?}");
        assert!(e.iter().any(|m| m.starts_with("/b: ")), "{e:?}");
        assert!(e.iter().all(|m| m.len() < 260), "{e:?}");
        let many: serde_json::Map<_, _> = (0..20).map(|i| (format!("k{i}"), json!(1))).collect();
        let strict = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let v = jsonschema::validator_for(&strict).unwrap();
        assert!(errors(&v, &Value::Object(many), "value").len() <= MAX_SCHEMA_ERRORS);
    }
}
