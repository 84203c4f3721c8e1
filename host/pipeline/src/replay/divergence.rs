//! What went differently from the recording, pointing at the first mismatch.

use super::key::{CallKey, canonical_json};
use serde_json::Value;
use std::fmt;
use toolhost_contract::{Stage, ToolResult};

/// Longest expected/actual text quoted in a report, in bytes.
const CLIP: usize = 240;
/// Most lines of a unified diff quoted in a report.
const DIFF_LINES: usize = 40;

/// Where inside a result two results first differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// One succeeded and the other failed.
    IsError,
    /// The error codes differ.
    Code,
    /// The values differ at this JSON Pointer (`""`: the whole value).
    Value(String),
    /// The number of content blocks differs.
    ContentCount,
    /// This content block (from 0) differs.
    Content(usize),
    /// The committed file effects differ at this JSON Pointer (paths,
    /// kinds, hashes, sizes).
    Effects(String),
    /// What the tool reported while it ran (progress, log messages)
    /// differs at this report (from 0).
    Context(usize),
    /// The decision traces differ at this entry (from 0), in this stage.
    Trace {
        /// The first differing entry.
        index: usize,
        /// Its stage (of the recorded entry, else the live one).
        stage: Option<Stage>,
    },
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::IsError => f.write_str("isError"),
            Field::Code => f.write_str("error code"),
            Field::Value(p) if p.is_empty() => f.write_str("value"),
            Field::Value(p) => write!(f, "value {p}"),
            Field::ContentCount => f.write_str("number of content blocks"),
            Field::Content(i) => write!(f, "content block {i}"),
            Field::Effects(p) => write!(f, "file effects {p}"),
            Field::Context(i) => write!(f, "reported progress or log message {i}"),
            Field::Trace { index, stage } => match stage {
                Some(s) => write!(f, "trace entry {index} ({s:?} stage)"),
                None => write!(f, "trace entry {index}"),
            },
        }
    }
}

/// A recorded call close to a call that was not found.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The entry's index in the cassette.
    pub index: u64,
    /// Its key.
    pub key: CallKey,
    /// Its arguments as canonical JSON, clipped.
    pub arguments: String,
    /// How alike the arguments are, 0 to 1.
    pub similarity: f32,
}

/// One way a session went differently from its recording.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Divergence {
    /// A call that the cassette does not have (strict replay ran nothing).
    NotRecorded {
        /// The live call's position in the session.
        position: u64,
        /// Its key.
        key: CallKey,
        /// Its arguments as canonical JSON, clipped.
        arguments: String,
        /// The nearest recorded calls of the same tool, nearest first.
        candidates: Vec<Candidate>,
    },
    /// A re-run call's result differs from the recorded one.
    Mismatch {
        /// The entry's index in the cassette.
        index: u64,
        /// Its key.
        key: CallKey,
        /// The first field that differs.
        field: Field,
        /// The recorded side, clipped.
        expected: String,
        /// The live side, clipped.
        actual: String,
        /// A unified diff when both sides are multi-line text.
        diff: Option<String>,
    },
    /// The component that runs a tool is not the recorded one.
    Component {
        /// The tool.
        tool: String,
        /// The recorded SHA-256 (`None`: not recorded).
        expected: Option<String>,
        /// The live SHA-256 (`None`: no such tool now).
        actual: Option<String>,
    },
    /// A tool's policy is not the recorded one.
    Policy {
        /// The tool.
        tool: String,
    },
    /// The advertised schemas are not the recorded ones.
    Schemas,
    /// A tool's descriptor (description, schemas, annotations, arguments)
    /// is not the recorded one.
    Descriptor {
        /// The tool.
        tool: String,
    },
    /// Recorded calls that the session never made.
    Unused {
        /// Their indexes and keys.
        entries: Vec<(u64, CallKey)>,
    },
    /// The cassette could not be written.
    Write {
        /// Why.
        message: String,
    },
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Divergence::NotRecorded {
                position,
                key,
                arguments,
                candidates,
            } => {
                writeln!(
                    f,
                    "call at position {position} ({key}) is not in the cassette; arguments: {arguments}"
                )?;
                if candidates.is_empty() {
                    write!(f, "  no recorded call of `{}`", key.tool)
                } else {
                    write!(f, "  nearest recorded calls of `{}`:", key.tool)?;
                    for c in candidates {
                        write!(
                            f,
                            "\n    #{} ({}) {:.0}% alike: {}",
                            c.index,
                            c.key,
                            c.similarity * 100.0,
                            c.arguments
                        )?;
                    }
                    Ok(())
                }
            }
            Divergence::Mismatch {
                index,
                key,
                field,
                expected,
                actual,
                diff,
            } => {
                writeln!(f, "call #{index} ({key}) diverged at {field}")?;
                writeln!(f, "  expected: {expected}")?;
                write!(f, "  actual:   {actual}")?;
                if let Some(d) = diff {
                    write!(f, "\n{d}")?;
                }
                Ok(())
            }
            Divergence::Component {
                tool,
                expected,
                actual,
            } => write!(
                f,
                "tool `{tool}` runs component {} but {} was recorded",
                actual.as_deref().unwrap_or("(none)"),
                expected.as_deref().unwrap_or("(none)")
            ),
            Divergence::Policy { tool } => {
                write!(
                    f,
                    "tool `{tool}` has a different policy from the recorded one"
                )
            }
            Divergence::Schemas => {
                write!(f, "the advertised schemas differ from the recorded ones")
            }
            Divergence::Descriptor { tool } => write!(
                f,
                "tool `{tool}` describes itself differently from the recording (its descriptor digest differs)"
            ),
            Divergence::Unused { entries } => {
                write!(f, "{} recorded call(s) never made:", entries.len())?;
                for (i, k) in entries.iter().take(20) {
                    write!(f, "\n    #{i} ({k})")?;
                }
                if entries.len() > 20 {
                    write!(f, "\n    … and {} more", entries.len() - 20)?;
                }
                Ok(())
            }
            Divergence::Write { message } => write!(f, "the cassette was not written: {message}"),
        }
    }
}

/// Every divergence of a session, in the order found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DivergenceReport {
    /// The divergences.
    pub divergences: Vec<Divergence>,
}

impl DivergenceReport {
    /// Whether nothing diverged.
    pub fn is_empty(&self) -> bool {
        self.divergences.is_empty()
    }
}

impl fmt::Display for DivergenceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} divergence(s) from the cassette",
            self.divergences.len()
        )?;
        for (i, d) in self.divergences.iter().enumerate() {
            write!(f, "\n{}. {d}", i + 1)?;
        }
        Ok(())
    }
}

impl std::error::Error for DivergenceReport {}

/// The first field where `live` differs from `recorded`, with both sides;
/// `None` when they agree. Timings and sandbox metrics are not compared.
pub(crate) fn compare(
    recorded: &ToolResult,
    live: &ToolResult,
) -> Option<(Field, String, String, Option<String>)> {
    let plain = |f: Field, a: String, b: String| Some((f, clip(&a), clip(&b), None));
    if recorded.is_error() != live.is_error() {
        return plain(
            Field::IsError,
            recorded.is_error().to_string(),
            live.is_error().to_string(),
        );
    }
    if recorded.code() != live.code() {
        return plain(
            Field::Code,
            recorded.code().unwrap_or("(none)").to_owned(),
            live.code().unwrap_or("(none)").to_owned(),
        );
    }
    if let (Some(a), Some(b)) = (recorded.value(), live.value())
        && let Some((path, x, y)) = first_difference(a, b, String::new())
    {
        return Some((
            Field::Value(path),
            clip(&canonical_json(x)),
            clip(&canonical_json(y)),
            text_diff(x, y),
        ));
    }
    let (ra, la) = (recorded.content(), live.content());
    if ra.len() != la.len() {
        return plain(
            Field::ContentCount,
            ra.len().to_string(),
            la.len().to_string(),
        );
    }
    for (i, (a, b)) in ra.iter().zip(la).enumerate() {
        if a != b {
            let (a, b) = (
                serde_json::to_value(a).unwrap_or(Value::Null),
                serde_json::to_value(b).unwrap_or(Value::Null),
            );
            let diff = match (a.get("text"), b.get("text")) {
                (Some(x), Some(y)) => text_diff(x, y),
                _ => None,
            };
            return Some((
                Field::Content(i),
                clip(&canonical_json(&a)),
                clip(&canonical_json(&b)),
                diff,
            ));
        }
    }
    // The file effects: what the call changed, hash by hash (the diff's
    // artifact link aside).
    let effects = |r: &ToolResult| {
        let mut e = r
            .meta()
            .extra
            .get("effects")
            .cloned()
            .unwrap_or(Value::Null);
        if let Some(o) = e.as_object_mut() {
            o.remove("diff");
        }
        e
    };
    let (re, le) = (effects(recorded), effects(live));
    if let Some((path, x, y)) = first_difference(&re, &le, String::new()) {
        return plain(Field::Effects(path), canonical_json(x), canonical_json(y));
    }
    let (rc, lc) = (&recorded.meta().context, &live.meta().context);
    for i in 0..rc.len().max(lc.len()) {
        let (a, b) = (rc.get(i), lc.get(i));
        if a != b {
            let show = |e: Option<&toolhost_contract::ContextEvent>| {
                e.map_or_else(
                    || "(none)".to_owned(),
                    |e| serde_json::to_string(e).unwrap_or_default(),
                )
            };
            return plain(Field::Context(i), show(a), show(b));
        }
    }
    let (rt, lt) = (&recorded.meta().trace.entries, &live.meta().trace.entries);
    for i in 0..rt.len().max(lt.len()) {
        let (a, b) = (rt.get(i), lt.get(i));
        if a != b {
            let show = |e: Option<&toolhost_contract::TraceEntry>| {
                e.map_or_else(
                    || "(no entry)".to_owned(),
                    |e| serde_json::to_string(e).unwrap_or_default(),
                )
            };
            let stage = a.or(b).map(|e| e.stage);
            return plain(Field::Trace { index: i, stage }, show(a), show(b));
        }
    }
    None
}

/// The JSON Pointer of the first place where `a` and `b` differ.
fn first_difference<'a>(
    a: &'a Value,
    b: &'a Value,
    at: String,
) -> Option<(String, &'a Value, &'a Value)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => {
                        if let Some(d) = first_difference(p, q, here) {
                            return Some(d);
                        }
                    }
                    (Some(p), None) => return Some((here, p, &Value::Null)),
                    (None, Some(q)) => return Some((here, &Value::Null, q)),
                    (None, None) => {}
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(p, q, format!("{at}/{i}")) {
                    return Some(d);
                }
            }
            if x.len() != y.len() {
                let i = x.len().min(y.len());
                return Some((
                    format!("{at}/{i}"),
                    x.get(i).unwrap_or(&Value::Null),
                    y.get(i).unwrap_or(&Value::Null),
                ));
            }
            None
        }
        _ if a == b => None,
        _ => Some((at, a, b)),
    }
}

/// A unified diff of two strings when either has more than one line.
fn text_diff(a: &Value, b: &Value) -> Option<String> {
    let (Value::String(a), Value::String(b)) = (a, b) else {
        return None;
    };
    if !a.contains('\n') && !b.contains('\n') {
        return None;
    }
    let diff = similar::TextDiff::from_lines(a.as_str(), b.as_str());
    let text = diff
        .unified_diff()
        .context_radius(2)
        .header("recorded", "live")
        .to_string();
    let mut lines: Vec<&str> = text.lines().take(DIFF_LINES + 1).collect();
    if lines.len() > DIFF_LINES {
        lines.truncate(DIFF_LINES);
        lines.push("  …");
    }
    Some(
        lines
            .iter()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// `s` cut to [`CLIP`] bytes on a character boundary.
pub(crate) fn clip(s: &str) -> String {
    if s.len() <= CLIP {
        return s.to_owned();
    }
    let mut end = CLIP;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

/// How alike two texts are, 0 to 1.
pub(crate) fn similarity(a: &str, b: &str) -> f32 {
    similar::TextDiff::from_chars(a, b).ratio()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_contract::{ContentBlock, FailureCode, Meta, ToolSuccess};

    fn ok(value: Value, text: &str) -> ToolResult {
        ToolResult::Success(ToolSuccess {
            value,
            content: vec![ContentBlock::text(text)],
            meta: Meta::default(),
            additional_context: vec![],
            concludes_turn: false,
        })
    }

    #[test]
    fn the_first_differing_value_field_is_named_by_its_pointer() {
        let a = ok(
            json!({"lines": [{"n": 1, "text": "a"}, {"n": 2, "text": "b"}]}),
            "x",
        );
        let b = ok(
            json!({"lines": [{"n": 1, "text": "a"}, {"n": 2, "text": "B"}]}),
            "x",
        );
        let (field, e, a2, _) = compare(&a, &b).unwrap();
        assert_eq!(field, Field::Value("/lines/1/text".into()));
        assert_eq!((e.as_str(), a2.as_str()), ("\"b\"", "\"B\""));
        assert_eq!(compare(&a, &a.clone()), None);
        let c = ok(json!({"a/b": [1]}), "x");
        let d = ok(json!({"a/b": [1, 2]}), "x");
        assert_eq!(compare(&c, &d).unwrap().0, Field::Value("/a~1b/1".into()));
    }

    #[test]
    fn content_differences_carry_a_unified_diff() {
        let a = ok(json!(1), "one\ntwo\nthree\n");
        let b = ok(json!(1), "one\n2\nthree\n");
        let (field, _, _, diff) = compare(&a, &b).unwrap();
        assert_eq!(field, Field::Content(0));
        let diff = diff.unwrap();
        assert!(diff.contains("-two") && diff.contains("+2"), "{diff}");
    }

    #[test]
    fn changed_file_effects_are_a_divergence_naming_the_field() {
        let with = |sha: &str| {
            let mut r = ok(json!(1), "x");
            r.meta_mut().extra.insert(
                "effects".into(),
                json!({"count": 1, "effects": [{"path": "a.txt", "kind": "modified",
                    "after": {"sha256": sha, "size": 3}}], "diff": format!("toolhost://artifacts/{sha}")}),
            );
            r
        };
        assert_eq!(compare(&with("aa"), &with("aa")), None);
        let (field, e, a, _) = compare(&with("aa"), &with("bb")).unwrap();
        assert_eq!(field, Field::Effects("/effects/0/after/sha256".into()));
        assert_eq!((e.as_str(), a.as_str()), ("\"aa\"", "\"bb\""));
        let (field, _, _, _) = compare(&with("aa"), &ok(json!(1), "x")).unwrap();
        assert_eq!(field, Field::Effects(String::new()));
    }

    #[test]
    fn outcome_and_code_come_first() {
        let a = ok(json!(1), "x");
        let b = ToolResult::failure(FailureCode::Timeout, "slow");
        assert_eq!(compare(&a, &b).unwrap().0, Field::IsError);
        let c = ToolResult::failure(FailureCode::Trap, "boom");
        assert_eq!(compare(&b, &c).unwrap().0, Field::Code);
    }

    #[test]
    fn reports_read_as_sentences() {
        let d = Divergence::Mismatch {
            index: 3,
            key: CallKey {
                tool: "read".into(),
                args: "abcdef0123456789".into(),
                n: 0,
            },
            field: Field::Value("/text".into()),
            expected: "\"a\"".into(),
            actual: "\"b\"".into(),
            diff: None,
        };
        let r = DivergenceReport {
            divergences: vec![d],
        }
        .to_string();
        assert!(
            r.contains("call #3 (read#abcdef012345#0) diverged at value /text"),
            "{r}"
        );
        let long = clip(&"é".repeat(200));
        assert!(
            long.starts_with(&"é".repeat(120)) && long.ends_with("… (400 bytes)"),
            "{long}"
        );
    }
}
