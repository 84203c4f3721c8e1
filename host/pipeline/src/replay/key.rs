//! The replay key of a call (over the contract's canonical JSON).

use crate::call::{FrozenCall, ParsedArguments};
use serde::{Deserialize, Serialize};
use std::fmt;
use toolhost_contract::sha256_hex;
pub use toolhost_contract::{canonical_json, canonical_sha256};

/// Which recorded call a live call is: the tool, a hash of its canonical
/// arguments, and how many calls with the same tool and arguments came
/// before it. It does not depend on the client's request id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CallKey {
    /// The tool asked for.
    pub tool: String,
    /// SHA-256 of the canonical arguments (of the raw text when they are
    /// not JSON).
    pub args: String,
    /// The occurrence of this (tool, arguments) pair, from 0.
    pub n: u32,
}

impl fmt::Display for CallKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = self.args.get(..12).unwrap_or(&self.args);
        write!(f, "{}#{short}#{}", self.tool, self.n)
    }
}

/// The arguments of `call` for a report: canonical JSON, or the raw text.
pub(crate) fn arguments_text(call: &FrozenCall) -> String {
    match call.arguments() {
        ParsedArguments::Json(v) => canonical_json(v),
        ParsedArguments::Raw(r) => r.clone(),
    }
}

/// The hash part of a call's key: SHA-256 of the canonical arguments (of
/// the raw text when they are not JSON).
pub(crate) fn arguments_hash(arguments: &ParsedArguments) -> String {
    match arguments {
        ParsedArguments::Json(v) => canonical_sha256(v),
        ParsedArguments::Raw(r) => sha256_hex(format!("raw\0{r}").as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[{"d":1,"c":2}],"x":"é"}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":"é","y":[{"c":2,"d":1}]},"b":1}"#).unwrap();
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":"é","y":[{"c":2,"d":1}]},"b":1}"#
        );
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_ne!(canonical_sha256(&a), canonical_sha256(&json!({"b": 2})));
        assert_eq!(canonical_json(&json!("a\"b\n")), r#""a\"b\n""#);
        // Scalars and keys are written as serde_json writes them.
        let scalars = json!([1.5, -0.0, 1e300, u64::MAX, -7, null, true, "\u{1}é\\\t"]);
        for s in scalars.as_array().unwrap() {
            assert_eq!(canonical_json(s), s.to_string());
            let key = s.to_string();
            assert_eq!(
                canonical_json(&json!({ key.clone(): 1 })),
                format!("{{{}:1}}", Value::String(key))
            );
        }
        // Hashed as written: the same as hashing the text.
        for v in [a, scalars, json!({})] {
            assert_eq!(
                canonical_sha256(&v),
                sha256_hex(canonical_json(&v).as_bytes())
            );
        }
    }

    #[test]
    fn a_key_prints_short() {
        let k = CallKey {
            tool: "read".into(),
            args: "0123456789abcdef".into(),
            n: 2,
        };
        assert_eq!(k.to_string(), "read#0123456789ab#2");
    }
}
