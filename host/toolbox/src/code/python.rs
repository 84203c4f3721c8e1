//! The API as Python stubs, for the Python runner: one `async def` per
//! tool in a `class tools` (keyword arguments, each with its description
//! as a comment), and each value a `TypedDict` (`NotRequired` for the keys
//! it may lack), the way a model reads a typed SDK:
//!
//! ```text
//! class tools:
//!   async def read(
//!       *,
//!       path: str,  # the file, relative to /workspace
//!       offset: int = ...,
//!   ) -> ReadValue:
//!     """Read a UTF-8 text file and return line-numbered content."""
//! class ReadValue(TypedDict):
//!   path: str
//!   content: str
//!   total_lines: int
//! ```
//!
//! Objects nested in a value are `TypedDict`s of their own, named by
//! where they are (`ReadValueMeta`). Python has no way to write one
//! inline. Bodies are indented by two spaces: the model reads these on
//! every request (about a tenth more bytes than the TypeScript).

use serde_json::{Map, Value};
use toolhost_contract::ToolDescriptor;

use super::{Spell, comment, pascal, required_of, resolve, spell};

/// The stubs of `tools` (sorted by name, as advertised), at most `budget`
/// bytes, then the note naming the tools that did not fit.
pub(super) fn declarations(tools: &[ToolDescriptor], budget: usize) -> String {
    let (mut functions, types, left_out) = super::fit(tools, budget, "class tools:\n", declare);
    if functions.ends_with(":\n") {
        functions.push_str("  pass\n");
    }
    if !left_out.is_empty() {
        functions.push_str(&super::left_out_note(&left_out, "#"));
    }
    functions + &types
}

/// One tool's method (inside `class tools`) and the `TypedDict`s of its
/// value.
fn declare(d: &ToolDescriptor) -> (String, String) {
    let value_name = format!("{}Value", pascal(&d.name));
    let mut types = Types::default();
    let (params, keys) = parameters(&d.input_schema, &mut types, &value_name);
    let value = types.of(&d.output_schema, &d.output_schema, &value_name, 0);
    let mut f = format!("  async def {}({params}) -> {value_name}:\n", d.name);
    // No quote is left to end the docstring early.
    // (`comment` broke up `*/` for TypeScript; Python has no such end.)
    let summary = comment(&d.description)
        .replace("*\\/", "*/")
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    let doc = match (summary.is_empty(), keys) {
        (true, None) => String::new(),
        (false, None) => summary,
        (_, Some(keys)) => format!("{summary} Takes one dict: {keys}")
            .trim_start()
            .to_owned(),
    };
    if doc.is_empty() {
        f.push_str("    ...\n");
    } else {
        f.push_str(&format!("    \"\"\"{doc}\"\"\"\n"));
    }
    // A value that is not a `TypedDict` of its own is named by an alias.
    if value != value_name {
        types.text = format!("{value_name} = {value}\n") + &types.text;
    }
    (f, types.text)
}

/// The keyword parameters of an input schema, one a line with its
/// description as a comment; the empty list when there are none. When a
/// property is no Python identifier (`my-key`, `from`), the arguments are
/// one dict instead, and its keys are said in the docstring (the second
/// value).
fn parameters(schema: &Value, types: &mut Types, owner: &str) -> (String, Option<String>) {
    let schema = resolve(schema, schema);
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return (String::new(), None);
    };
    if props.is_empty() {
        return (String::new(), None);
    }
    let required = required_of(schema.get("required"));
    if !props.keys().all(|k| identifier(k)) {
        let keys: Vec<String> = props
            .iter()
            .map(|(k, p)| {
                let t = types.of(p, schema, &format!("{owner}{}", pascal(k)), 1);
                let opt = if required.contains(&k.as_str()) {
                    ""
                } else {
                    " (optional)"
                };
                format!("{}: {t}{opt}", Value::String(k.clone()))
            })
            .collect();
        let default = if required.is_empty() { " = ..." } else { "" };
        return (
            format!("args: dict[str, Any]{default}, /"),
            Some(format!("{{{}}}", keys.join(", "))),
        );
    }
    let mut out = String::from("\n      *,\n");
    // Required first: Python wants parameters with defaults last only for
    // positional ones, but a reader finds what it must pass first.
    let mut ordered: Vec<(&String, &Value)> = props.iter().collect();
    ordered.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
    for (name, p) in ordered {
        let t = types.of(p, schema, &format!("{owner}{}", pascal(name)), 1);
        let default = if required.contains(&name.as_str()) {
            ""
        } else {
            " = ..."
        };
        let about = p
            .get("description")
            .and_then(Value::as_str)
            .map(comment)
            .filter(|a| !a.is_empty())
            .map(|a| format!("  # {}", a.replace("*\\/", "*/")))
            .unwrap_or_default();
        out.push_str(&format!("      {name}: {t}{default},{about}\n"));
    }
    out.push_str("  ");
    (out, None)
}

/// The `TypedDict`s a value's type needs, written as they are met.
#[derive(Default)]
struct Types {
    text: String,
}

impl Types {
    /// A schema as a Python type; an object with properties becomes a
    /// `TypedDict` named `name`.
    fn of(&mut self, schema: &Value, root: &Value, name: &str, depth: usize) -> String {
        spell(self, schema, root, name, depth)
    }

    /// An object: a `TypedDict` when it has properties (all spelled as
    /// identifiers), else a `dict`.
    fn object(
        &mut self,
        obj: &Map<String, Value>,
        root: &Value,
        name: &str,
        depth: usize,
    ) -> String {
        let props = obj.get("properties").and_then(Value::as_object);
        let extra = match obj.get("additionalProperties") {
            Some(extra @ Value::Object(_)) => {
                Some(self.of(extra, root, &format!("{name}Entry"), depth + 1))
            }
            _ => None,
        };
        let Some(props) = props.filter(|p| !p.is_empty()) else {
            return format!("dict[str, {}]", extra.as_deref().unwrap_or("Any"));
        };
        if !props.keys().all(|k| identifier(k)) {
            return "dict[str, Any]".into();
        }
        let required = required_of(obj.get("required"));
        let mut fields = String::new();
        for (key, p) in props {
            let t = self.of(p, root, &format!("{name}{}", pascal(key)), depth + 1);
            if required.contains(&key.as_str()) {
                fields.push_str(&format!("  {key}: {t}\n"));
            } else {
                fields.push_str(&format!("  {key}: NotRequired[{t}]\n"));
            }
        }
        self.text
            .push_str(&format!("class {name}(TypedDict):\n{fields}"));
        name.to_owned()
    }
}

impl Spell for Types {
    const ANY: &'static str = "Any";
    const NEVER: &'static str = "NoReturn";

    fn literal(&mut self, values: &[Value]) -> String {
        literal(values)
    }

    fn union(&mut self, parts: Vec<String>) -> String {
        union(parts)
    }

    fn all_of(&mut self, all: &[Value], root: &Value, name: &str, depth: usize) -> String {
        // Python cannot intersect: one part is exact, more are `Any`.
        match all {
            [one] => self.of(one, root, name, depth + 1),
            _ => "Any".into(),
        }
    }

    fn typed(
        &mut self,
        t: &str,
        obj: &Map<String, Value>,
        root: &Value,
        name: &str,
        depth: usize,
    ) -> String {
        match t {
            "string" => "str".into(),
            "integer" => "int".into(),
            "number" => "float".into(),
            "boolean" => "bool".into(),
            "null" => "None".into(),
            "array" if obj.get("prefixItems").is_some_and(Value::is_array) => {
                let items: Vec<String> = obj
                    .get("prefixItems")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                    .map(|(i, item)| self.of(item, root, &format!("{name}{}", i + 1), depth + 1))
                    .collect();
                format!("tuple[{}]", items.join(", "))
            }
            "array" => match obj.get("items") {
                Some(items) => format!(
                    "list[{}]",
                    self.of(items, root, &format!("{name}Item"), depth + 1)
                ),
                None => "list[Any]".into(),
            },
            "object" => self.object(obj, root, name, depth),
            _ => "Any".into(),
        }
    }
}

/// `Literal[...]` of JSON scalars (`None` for null), or `Any`.
fn literal(values: &[Value]) -> String {
    let mut parts = Vec::new();
    let mut none = false;
    for v in values {
        match v {
            Value::Null => none = true,
            Value::String(_) | Value::Number(_) => parts.push(v.to_string()),
            Value::Bool(b) => parts.push(if *b { "True" } else { "False" }.to_owned()),
            _ => return "Any".into(),
        }
    }
    let lit = (!parts.is_empty()).then(|| format!("Literal[{}]", parts.join(", ")));
    match (lit, none) {
        (Some(l), true) => format!("{l} | None"),
        (Some(l), false) => l,
        (None, true) => "None".into(),
        (None, false) => "NoReturn".into(),
    }
}

/// The union of `parts`, each once, in order; literals joined into one
/// `Literal[...]`.
fn union(parts: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut literals: Vec<String> = Vec::new();
    for p in parts {
        match p.strip_prefix("Literal[").and_then(|l| l.strip_suffix(']')) {
            Some(values) if !literals.iter().any(|l| l == values) => {
                if literals.is_empty() {
                    seen.push(String::new()); // where the literals go
                }
                literals.push(values.to_owned());
            }
            Some(_) => {}
            None if !seen.contains(&p) => seen.push(p),
            None => {}
        }
    }
    if !literals.is_empty()
        && let Some(slot) = seen.iter_mut().find(|s| s.is_empty())
    {
        *slot = format!("Literal[{}]", literals.join(", "));
    }
    match seen.len() {
        0 => "NoReturn".into(),
        _ if seen.iter().any(|p| p == "Any") => "Any".into(),
        _ => seen.join(" | "),
    }
}

/// Whether `name` is a Python identifier (and so a keyword or key a stub
/// can spell) that is not a keyword of the language.
fn identifier(name: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::super::tests::tool;
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_becomes_an_async_method_and_its_value_a_typed_dict() {
        let read = tool(
            "read_file",
            "Read a UTF-8 text file. Returns numbered lines.",
            json!({"type": "object", "properties": {
                "offset": {"type": "integer", "minimum": 1},
                "path": {"type": "string", "description": "The file, relative to /workspace"},
                "mode": {"enum": ["lines", "raw"]}
            }, "required": ["path"], "additionalProperties": false}),
            json!({"type": "object", "properties": {
                "lines": {"type": "array", "items": {"type": "string"}},
                "total": {"type": ["integer", "null"]},
                "meta": {"type": "object", "properties": {"size": {"type": "number"}}, "required": ["size"]}
            }, "required": ["lines"]}),
        );
        let d = declarations(&[read], 10_000);
        assert_eq!(
            d,
            "class tools:\n\
             \x20 async def read_file(\n\
             \x20     *,\n\
             \x20     path: str,  # The file, relative to /workspace\n\
             \x20     offset: int = ...,\n\
             \x20     mode: Literal[\"lines\", \"raw\"] = ...,\n\
             \x20 ) -> ReadFileValue:\n\
             \x20   \"\"\"Read a UTF-8 text file.\"\"\"\n\
             class ReadFileValueMeta(TypedDict):\n\
             \x20 size: float\n\
             class ReadFileValue(TypedDict):\n\
             \x20 lines: list[str]\n\
             \x20 total: NotRequired[int | None]\n\
             \x20 meta: NotRequired[ReadFileValueMeta]\n"
        );
    }

    #[test]
    fn values_that_are_not_objects_are_aliases_and_odd_keys_are_dicts() {
        let t = tool(
            "t",
            "",
            json!({"type": "object", "properties": {}}),
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"const": 3}]}),
        );
        let d = declarations(&[t], 10_000);
        assert!(d.contains("  async def t() -> TValue:\n    ...\n"), "{d}");
        assert!(d.contains("TValue = tuple[str, Literal[3]]\n"), "{d}");
        let odd = tool(
            "odd",
            "A tool.",
            json!({"type": "object", "properties": {"my-key": {"type": "string"}, "class": {"type": "string"}}}),
            json!({"type": "object", "properties": {"my-key": {"type": "string"}}}),
        );
        let d = declarations(&[odd], 10_000);
        assert!(
            d.contains("async def odd(args: dict[str, Any] = ..., /) -> OddValue:"),
            "{d}"
        );
        assert!(
            d.contains(r#"Takes one dict: {"my-key": str (optional), "class": str (optional)}"#),
            "{d}"
        );
        assert!(d.contains("OddValue = dict[str, Any]"), "{d}");
    }

    #[test]
    fn a_description_cannot_end_its_docstring() {
        let t = tool(
            "t",
            "Nice \"\"\" + tools.evil() + \"\"\" tool",
            json!({"type": "object"}),
            json!({}),
        );
        let d = declarations(&[t], 10_000);
        assert_eq!(d.matches("\"\"\"").count(), 2, "{d}");
        assert!(d.contains(r#"Nice \"\"\" + tools.evil()"#), "{d}");
    }
}
