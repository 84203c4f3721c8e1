//! No panic on arbitrary input, for the pipeline's own parsers:
//!
//! - argument parsing + schema validation + path checks of a registered
//!   tool, through [`Pipeline::execute`], with arguments as arbitrary
//!   strings, arbitrary JSON (nesting included) and mutations of the corpus
//!   in `tests/corpus/arguments/`: every call gets a typed result, only valid
//!   arguments reach the body, and the session log records every call;
//! - the session-log reader ([`read_log`]), on arbitrary bytes and on
//!   mutations of `tests/corpus/session_log/`: events or a typed error that
//!   names a line of the file, never a panic.

#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../../../tests/corpus/mutate.rs"]
mod mutate;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use toolhost_contract::{PathAccess, PathParam, ToolCall, ToolDescriptor};
use toolhost_pipeline::{
    Invocation, LogError, Pipeline, Registry, Scope, SessionLog, ToolBody, ToolSpec, read_log,
};
use toolhost_policy::{Decision, FsMode, PolicyBuilder};
use toolhost_runtime::{Execution, ExecutionReport};

const INPUT_SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "n": {"type": "integer", "minimum": 0},
    "tags": {"type": "array", "items": {"type": "string"}},
    "opts": {"type": "object"}
  },
  "required": ["path"],
  "additionalProperties": false
}"#;

/// Records the arguments that reached it.
struct Body(Arc<Mutex<Vec<String>>>);

#[async_trait::async_trait]
impl ToolBody for Body {
    async fn execute(&self, input: Invocation<'_>) -> Execution {
        self.0.lock().unwrap().push(input.arguments.to_owned());
        Execution::new(Ok("{}".into()), ExecutionReport::default())
    }
}

/// Arbitrary JSON, nested up to a few levels, with keys the schema knows.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        "(\\.\\./|/|[a-z]|\u{0}){0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("path".to_owned()),
                    Just("n".to_owned()),
                    Just("tags".to_owned()),
                    Just("opts".to_owned()),
                    "[a-z]{0,4}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arguments(corpus: Vec<Vec<u8>>) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => json_value().prop_map(|v| v.to_string()),
        2 => mutate::mutated(corpus, 4).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        1 => any::<String>(),
        1 => (1usize..200_000, 0usize..3).prop_map(|(depth, kind)| match kind {
            0 => format!("{}{}", "[".repeat(depth), "]".repeat(depth)),
            1 => format!("{}1{}", "{\"opts\":".repeat(depth), "}".repeat(depth)),
            _ => "[".repeat(depth),
        }),
    ]
}

#[test]
fn arbitrary_arguments_get_a_typed_result() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    let log_path = dir.path().join("session.jsonl");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let descriptor = ToolDescriptor::from_raw(
        "probe".into(),
        "probe".into(),
        INPUT_SCHEMA,
        r#"{"type":"object"}"#,
        Default::default(),
        vec![PathParam {
            pointer: "/path".into(),
            access: PathAccess::Read,
        }],
    )
    .unwrap();
    let policy = PolicyBuilder::new()
        .decision(Decision::Allow)
        .grant(dir.path(), "/workspace", FsMode::ReadOnly)
        .build()
        .unwrap()
        .component();
    let registry = Registry::new();
    let _registration = registry
        .register(
            Scope::Global,
            vec![ToolSpec {
                descriptor,
                policy,
                body: Arc::new(Body(seen.clone())),
                source: "test".into(),
                deferred: false,
                listed_with_handles: None,
            }],
        )
        .unwrap();
    let pipeline = Pipeline::builder(registry)
        .session_log(Arc::new(SessionLog::open(&log_path).unwrap()))
        .build();
    let schema: Value = serde_json::from_str(INPUT_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let corpus: Vec<Vec<u8>> = mutate::corpus("arguments")
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    let mut calls = 0usize;
    let mut ok = 0usize;
    // The corpus itself first, then generated inputs.
    let mut check = |args: String| -> Result<(), TestCaseError> {
        calls += 1;
        let before = seen.lock().unwrap().len();
        let call = ToolCall::new(format!("c{calls}"), "probe", args.clone());
        let result = rt.block_on(pipeline.execute(call, CancellationToken::new()));
        let reached: Vec<String> = seen.lock().unwrap()[before..].to_vec();
        if result.is_error() {
            let code = result.code().unwrap_or("").to_owned();
            prop_assert!(
                [
                    "invalid_arguments",
                    "path_denied",
                    "path_conflict",
                    "repeated_failure"
                ]
                .contains(&code.as_str()),
                "unexpected code {code} for {:?}",
                args.chars().take(200).collect::<String>()
            );
            prop_assert!(!result.text().is_empty());
            prop_assert!(reached.is_empty(), "a refused call reached the body");
        } else {
            ok += 1;
            prop_assert_eq!(reached.len(), 1);
            let got: Value = serde_json::from_str(&reached[0]).unwrap();
            prop_assert!(validator.is_valid(&got), "invalid arguments ran: {got}");
        }
        Ok(())
    };
    for a in &corpus {
        check(String::from_utf8_lossy(a).into_owned()).unwrap();
    }
    let mut runner = TestRunner::new(Config {
        cases: 600,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = arguments(corpus.clone());
    // `check` is FnMut; the runner wants Fn.
    let check = Mutex::new(check);
    runner
        .run(&strategy, |args| (check.lock().unwrap())(args))
        .unwrap();
    // Both outcomes were exercised, and every call is on record, in order.
    assert!(ok >= 1, "no generated call succeeded");
    let log = read_log(&log_path).unwrap();
    assert_eq!(log.torn_tail, None);
    assert_eq!(log.events.len(), 2 * calls);
}

/// The lines of a log reader error, checked against the input.
fn check_read(bytes: &[u8], path: &std::path::Path) -> Result<(), TestCaseError> {
    std::fs::write(path, bytes).unwrap();
    match read_log(path) {
        Ok(contents) => {
            let lines = bytes.split(|b| *b == b'\n').count();
            prop_assert!(contents.events.len() <= lines);
            if let Some(t) = contents.torn_tail {
                prop_assert!(!bytes.ends_with(b"\n"), "torn tail {t:?} of a complete log");
            }
        }
        Err(LogError::Malformed { line, reason, .. }) => {
            let lines = bytes.split(|b| *b == b'\n').count();
            prop_assert!(line >= 1 && line <= lines, "line {line} of {lines}");
            prop_assert!(!reason.is_empty());
        }
        Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
    }
    Ok(())
}

#[test]
fn the_session_log_reader_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let corpus: Vec<Vec<u8>> = mutate::corpus("session_log")
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    for c in &corpus {
        check_read(c, &path).unwrap();
    }
    // Specific corpus entries, specific outcomes.
    let entry = |name: &str| {
        let (_, b) = mutate::corpus("session_log")
            .into_iter()
            .find(|(p, _)| p.ends_with(name))
            .unwrap();
        std::fs::write(&path, b).unwrap();
        read_log(&path)
    };
    assert_eq!(entry("good.jsonl").unwrap().events.len(), 2);
    let torn = entry("torn_tail.jsonl").unwrap();
    assert_eq!((torn.events.len(), torn.torn_tail.is_some()), (1, true));
    assert!(matches!(
        entry("malformed_middle.jsonl"),
        Err(LogError::Malformed { line: 2, .. })
    ));
    assert!(
        matches!(
            entry("deep.jsonl"),
            Ok(c) if c.events.is_empty() && c.torn_tail.is_none()
        ) || matches!(
            entry("deep.jsonl"),
            Err(LogError::Malformed { line: 1, .. })
        )
    );
    let mut runner = TestRunner::new(Config {
        cases: 1000,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = prop_oneof![
        3 => mutate::mutated(corpus, 6),
        1 => proptest::collection::vec(any::<u8>(), 0..512),
    ];
    runner
        .run(&strategy, |bytes| check_read(&bytes, &path))
        .unwrap();
}
