//! A policy's declarations on a component's tools: the path and URL
//! arguments and the annotations a plain component cannot state itself
//! (and a policy may add to any component's), checked against each tool's
//! own arguments before anything is served. A declared path that named no
//! argument would be checked on no call, so it refuses the component.

use serde_json::Value;
use toolhost_contract::ToolDescriptor;
use toolhost_policy::{Policy, PolicyError};

/// `tools` with what `policy` declares about them applied, or the first
/// declaration that does not fit its tool.
pub(crate) fn apply(
    tools: &[ToolDescriptor],
    policy: &Policy,
) -> Result<Vec<ToolDescriptor>, PolicyError> {
    for (name, declared) in policy.declarations() {
        if !tools.iter().any(|t| t.name == name) {
            let place = declared
                .paths
                .first()
                .map(|(_, p)| p)
                .or_else(|| declared.urls.first().map(|(_, p)| p));
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            let message = format!(
                "`tools.{name}` declares what the tool `{name}` takes, but the component has no such tool (its tools: {})",
                names.join(", ")
            );
            return Err(match place {
                Some(p) => p.error(message),
                None => PolicyError::new("policy", message),
            });
        }
    }
    tools
        .iter()
        .map(|t| {
            let mut d = t.clone();
            let Some(declared) = policy.declaration(&t.name) else {
                return Ok(d);
            };
            for (p, place) in &declared.paths {
                match argument(&t.input_schema, &p.pointer) {
                    Some(s) if is_string(s) => {}
                    Some(_) => {
                        return Err(place.error(format!(
                            "`tools.{}.paths`: `{}` is not a string argument, so it is not a path",
                            t.name, p.pointer
                        )));
                    }
                    None => return Err(place.error(no_argument(t, "paths", &p.pointer))),
                }
                if !d.paths.iter().any(|q| q.pointer == p.pointer) {
                    d.paths.push(p.clone());
                }
            }
            for (u, place) in &declared.urls {
                if argument(&t.input_schema, u).is_none() {
                    return Err(place.error(no_argument(t, "urls", u)));
                }
                if !d.urls.contains(u) {
                    d.urls.push(u.clone());
                }
            }
            declared.annotate(&mut d.annotations);
            Ok(d)
        })
        .collect()
}

fn no_argument(t: &ToolDescriptor, key: &str, pointer: &str) -> String {
    let args: Vec<&str> = t
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    format!(
        "`tools.{}.{key}`: `{pointer}` names no argument of `{}` (its arguments: {})",
        t.name,
        t.name,
        if args.is_empty() {
            "none".to_owned()
        } else {
            args.join(", ")
        }
    )
}

/// The schema of the argument at `pointer` (through `properties`, and
/// into the non-null side of an `option`), if the schema has it.
fn argument<'a>(schema: &'a Value, pointer: &str) -> Option<&'a Value> {
    let mut at = schema;
    for segment in pointer.strip_prefix('/')?.split('/') {
        let key = segment.replace("~1", "/").replace("~0", "~");
        at = properties_of(at)?.get(&key)?;
    }
    Some(at)
}

/// The `properties` of an object schema, or of an `anyOf` alternative.
fn properties_of(schema: &Value) -> Option<&serde_json::Map<String, Value>> {
    if let Some(p) = schema.get("properties").and_then(Value::as_object) {
        return Some(p);
    }
    schema
        .get("anyOf")
        .and_then(Value::as_array)?
        .iter()
        .find_map(properties_of)
}

/// Whether values of `schema` may be strings (directly, or as an
/// `anyOf` alternative: an optional path).
fn is_string(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        _ => schema
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|alts| alts.iter().any(is_string)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_contract::{Annotations, PathAccess};

    fn tool() -> ToolDescriptor {
        ToolDescriptor::from_raw(
            "read_file".into(),
            "Reads a file.".into(),
            &json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "limit": {"type": "integer"},
                    "options": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"base": {"type": "string"}}}]},
                },
            })
            .to_string(),
            "{}",
            Annotations::default(),
            Vec::new(),
        )
        .expect("descriptor")
    }

    fn policy(text: &str) -> Policy {
        Policy::parse(text, "p.toml", std::path::Path::new("/")).expect("policy")
    }

    #[test]
    fn declarations_add_paths_urls_and_hints() {
        let p = policy(
            "version = 1\n[tools.read_file]\npaths = [{ pointer = \"/path\", access = \"read\" }, { pointer = \"/options/base\", access = \"list\" }]\nannotations = { read_only = true }\n",
        );
        let out = apply(&[tool()], &p).expect("applies");
        assert_eq!(out[0].paths.len(), 2);
        assert_eq!(out[0].paths[0].access, PathAccess::Read);
        assert_eq!(out[0].paths[1].pointer, "/options/base");
        assert!(out[0].annotations.read_only);
        assert!(!out[0].annotations.destructive);
    }

    #[test]
    fn a_declaration_that_fits_no_argument_names_its_line() {
        let p = policy(
            "version = 1\n[tools.read_file]\npaths = [{ pointer = \"/pth\", access = \"read\" }]\n",
        );
        let e = apply(&[tool()], &p).expect_err("no such argument");
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("`/pth` names no argument"), "{e}");
        assert!(
            e.message.contains("limit, options, path") || e.message.contains("path"),
            "{e}"
        );
        let p = policy(
            "version = 1\n[tools.read_file]\npaths = [{ pointer = \"/limit\", access = \"read\" }]\n",
        );
        let e = apply(&[tool()], &p).expect_err("not a string");
        assert!(e.message.contains("not a string argument"), "{e}");
        let p = policy("version = 1\n[tools.write_file]\nurls = [\"/url\"]\n");
        let e = apply(&[tool()], &p).expect_err("no such tool");
        assert!(e.message.contains("no such tool"), "{e}");
    }
}
