//! Canonical JSON and the replay key of a call.

use crate::call::{FrozenCall, ParsedArguments};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use toolhost_contract::sha256_hex;

/// `v` as canonical JSON: object keys sorted (by their UTF-8 bytes) at every
/// level, no insignificant whitespace. Two values that are equal as JSON
/// have the same canonical text, whatever order their keys came in.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// SHA-256 (hex) of `v`'s canonical JSON.
pub fn canonical_sha256(v: &Value) -> String {
    sha256_hex(canonical_json(v).as_bytes())
}

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

/// The hash part of a call's key.
pub(crate) fn arguments_hash(call: &FrozenCall) -> String {
    match call.arguments() {
        ParsedArguments::Json(v) => canonical_sha256(v),
        ParsedArguments::Raw(r) => sha256_hex(format!("raw\0{r}").as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
