//! Code mode through the host assembly, as a front end uses it: a toolbox
//! with `mode = "both"`, the built-in tools under their default policies,
//! and `run_code` scripts whose every tool call is a whole pipeline call:
//! checked, approved, limited, staged in one transaction, recorded.
//!
//! Every guarantee is tested in both languages (`javascript::` and
//! `python::`), each test with its script written in each.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use toolhost_contract::{ContextEvent, ContextSink, SessionEvent, ToolCall, ToolResult};
use toolhost_pipeline::replay::{Layer, Mode, Replay};
use toolhost_pipeline::{
    Approval, ApprovalRequest, Approver, Handoff, Pipeline, Reach, SessionLog, read_log,
};
use toolhost_tests::{Workspace, shared_cache};
use toolhost_toolbox::{Host, HostConfig, find_toolbox};

/// The built-ins in code mode: `read`, `grep`, `list` allowed; `write`
/// asks after a staged run (its effects); `edit` asks from its arguments.
const TOOLBOX: &str = r#"version = 1
mode = "both"

[[component]]
source = "builtin:read"
[[component]]
source = "builtin:grep"
[[component]]
source = "builtin:list"
[[component]]
source = "builtin:write"
[[component]]
source = "builtin:edit"
"#;

/// The language a test's scripts are written in.
#[derive(Clone, Copy, PartialEq)]
enum Lang {
    Js,
    Py,
}

impl Lang {
    /// The script of this language.
    fn pick<'a>(self, js: &'a str, py: &'a str) -> String {
        match self {
            Lang::Js => js.to_owned(),
            // What a Python script uses to read a ToolError's code.
            Lang::Py => format!("{PY_CODE}{py}"),
        }
    }

    /// `toolbox` in this language (its `language` said).
    fn toolbox(self, toolbox: &str) -> String {
        match self {
            Lang::Js => toolbox.to_owned(),
            Lang::Py => {
                toolbox.replacen("version = 1\n", "version = 1\nlanguage = \"python\"\n", 1)
            }
        }
    }

    /// The built-in code runner of this language.
    fn runner(self) -> &'static str {
        match self {
            Lang::Js => "builtin:code",
            Lang::Py => "builtin:code_python",
        }
    }

    /// How its declarations spell a tool `name`.
    fn declared(self, name: &str) -> String {
        match self {
            Lang::Js => format!("function {name}("),
            Lang::Py => format!("async def {name}("),
        }
    }
}

/// A ToolError's code in Python: its message starts with `[code]`.
const PY_CODE: &str = "def code(e):\n    return str(e)[1:].split(']')[0]\n";

/// Each named test, once in each language.
macro_rules! in_both_languages {
    ($($test:ident),* $(,)?) => {
        mod javascript {
            $( #[tokio::test] async fn $test() { super::$test(super::Lang::Js).await } )*
        }
        mod python {
            $( #[tokio::test] async fn $test() { super::$test(super::Lang::Py).await } )*
        }
    };
}

in_both_languages!(
    a_script_reads_and_greps_and_returns_a_summary_with_its_calls_logged,
    a_denied_path_is_a_catchable_error_and_deny_comes_before_ask,
    a_scripts_writes_are_one_transaction_committed_with_it,
    a_read_only_grant_reads_the_scripts_writes_and_changes_nothing,
    a_script_that_throws_after_two_writes_leaves_the_tree_byte_identical,
    a_failed_call_goes_back_to_its_savepoint_and_the_script_goes_on,
    approvals_inside_a_script_reach_the_approver_and_a_decline_is_catchable,
    declining_a_scripts_effects_discards_all_of_them,
    callers_say_who_may_call_a_tool,
    the_runner_is_assembled_last_under_its_reserved_name,
    a_script_that_spins_ends_fuel_exhausted_or_timeout_with_nothing_committed,
    hostile_scripts_are_contained_with_their_codes,
    a_script_may_make_at_most_its_policys_tool_calls,
    a_script_reaches_no_tool_its_caller_could_not,
    a_script_that_waits_for_an_answer_goes_on_from_its_checkpoint,
    a_script_is_recorded_and_verified_call_by_call,
    what_a_scripts_calls_report_reaches_the_client_live_as_the_scripts_own,
    independent_calls_run_at_once,
    a_call_that_may_write_runs_alone_between_the_calls_before_and_after_it,
    at_most_the_policys_parallel_calls_run_at_once,
    calls_made_at_once_are_recorded_and_verified_in_the_order_they_were_made,
);

struct Fixture {
    ws: Workspace,
    host: Host,
    _journal: tempfile::TempDir,
}

async fn fixture(toolbox: &str) -> Fixture {
    let ws = Workspace::new(&[
        ("notes.txt", "alpha\nTODO: first\nomega\n"),
        ("src/a.rs", "fn a() {}\n// TODO: a\n// TODO: b\n"),
        ("src/b.rs", "fn b() {}\n"),
    ]);
    std::fs::write(ws.file("toolhost.toml"), toolbox).unwrap();
    let journal = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig {
        cache_dir: Some(shared_cache()),
        max_instances: 8,
        journal_dir: Some(journal.path().to_owned()),
        ..HostConfig::default()
    })
    .unwrap();
    host.load(&find_toolbox(None, ws.path()).unwrap())
        .await
        .unwrap();
    Fixture {
        ws,
        host,
        _journal: journal,
    }
}

/// An approver that answers from a list and remembers what it was asked.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<Approval>>,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Scripted {
    fn answering(answers: impl IntoIterator<Item = Approval>) -> Arc<Scripted> {
        Arc::new(Scripted {
            answers: Mutex::new(answers.into_iter().collect()),
            asked: Mutex::default(),
        })
    }
    fn asked(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl Approver for Scripted {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        self.asked.lock().unwrap().push(request.clone());
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Approval::Denied("no answer left in the test".into()))
    }
}

/// `TOOLBOX` with `lang`'s code runner under a policy of these `limits`
/// (lines of its `[limits]`).
fn with_runner_limits(lang: Lang, limits: &str) -> String {
    lang.toolbox(&format!(
        "{TOOLBOX}[[component]]\nsource = \"{}\"\n[component.policy]\ndecision = \"allow\"\ncallers = \"model\"\ncall_tools = true\n[component.policy.limits]\n{limits}\n",
        lang.runner()
    ))
}

/// A session log in a directory of its own (kept while the first lives).
struct Log {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    log: Arc<SessionLog>,
}

impl Log {
    fn new() -> Log {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let log = Arc::new(SessionLog::open(&path).unwrap());
        Log {
            _dir: dir,
            path,
            log,
        }
    }

    fn events(&self) -> Vec<SessionEvent> {
        read_log(&self.path).unwrap().events
    }
}

async fn run(p: &Pipeline, id: &str, code: &str) -> ToolResult {
    p.execute(
        ToolCall::new(id, "run_code", json!({ "code": code }).to_string()),
        CancellationToken::new(),
    )
    .await
}

/// What the script returned.
fn result(r: &ToolResult) -> Value {
    assert!(!r.is_error(), "the script failed: {}", r.text());
    r.value().expect("a value")["result"].clone()
}

fn code(r: &ToolResult) -> String {
    r.error()
        .map(|e| e.code.as_str().to_owned())
        .unwrap_or_else(|| panic!("expected a failure, got {}", r.text()))
}

/// The inner calls the result lists: (tool, code).
fn calls(r: &ToolResult) -> Vec<(String, Option<String>)> {
    r.meta().extra["calls"]["list"]
        .as_array()
        .expect("the calls")
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap().to_owned(),
                c["code"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// Every file of the tree and its bytes.
fn tree(ws: &Workspace) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(ws.path(), ws.path(), &mut out);
    out
}

async fn a_script_reads_and_greps_and_returns_a_summary_with_its_calls_logged(lang: Lang) {
    let f = fixture(&lang.toolbox(TOOLBOX)).await;
    let log = Log::new();
    let p = f.host.session().session_log(log.log.clone()).build();
    let r = run(
        &p,
        "c1",
        &lang.pick(
            r#"const hits = await tools.grep({pattern: "TODO", path: "."});
const perFile = {};
for (const m of hits.matches) perFile[m.path] = (perFile[m.path] || 0) + 1;
const notes = await tools.read({path: "notes.txt"});
console.log("files with TODOs:", Object.keys(perFile).length);
return {perFile, firstLine: notes.lines[0]};"#,
            r#"hits = await tools.grep(pattern="TODO", path=".")
per_file = {}
for m in hits["matches"]:
    per_file[m["path"]] = per_file.get(m["path"], 0) + 1
notes = await tools.read(path="notes.txt")
print("files with TODOs:", len(per_file))
{"perFile": per_file, "firstLine": notes["lines"][0]}"#,
        ),
    )
    .await;
    assert_eq!(
        result(&r),
        json!({"perFile": {"/workspace/notes.txt": 1, "/workspace/src/a.rs": 2}, "firstLine": "alpha"})
    );
    assert_eq!(
        r.value().unwrap()["console"],
        json!(["files with TODOs: 2"])
    );
    assert!(
        r.text()
            .starts_with("console:\nfiles with TODOs: 2\n\nresult:\n"),
        "{}",
        r.text()
    );
    assert_eq!(
        calls(&r),
        [("grep".to_owned(), None), ("read".to_owned(), None)]
    );
    // The log: the script's call, then each inner call naming it as parent.
    let events = log.events();
    let called: Vec<(String, Option<String>)> = events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ToolCall(c) => Some((c.tool.clone(), c.parent.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        called,
        [
            ("run_code".to_owned(), None),
            ("grep".to_owned(), Some("c1".to_owned())),
            ("read".to_owned(), Some("c1".to_owned())),
        ]
    );
    let results = events
        .iter()
        .filter(|e| matches!(e, SessionEvent::ToolResult(_)))
        .count();
    assert_eq!(results, 3, "a result event for each call");
}

async fn a_denied_path_is_a_catchable_error_and_deny_comes_before_ask(lang: Lang) {
    let f = fixture(&lang.toolbox(TOOLBOX)).await;
    let approver = Scripted::answering([]);
    let p = f.host.session().approver(approver.clone()).build();
    let r = run(
        &p,
        "c1",
        &lang.pick(
            r#"const codes = [];
for (const call of [
  () => tools.read({path: "/etc/passwd"}),
  () => tools.edit({path: "../outside.txt", old_text: "a", new_text: "b"}),
  () => tools.read({path: 7}),
  () => tools.shell({cmd: "rm -rf /"}),
]) {
  try { await call(); codes.push("ran"); } catch (e) { codes.push([e.name, e.code, e.tool]); }
}
return codes;"#,
            r#"codes = []
for name, args in [
    ("read", {"path": "/etc/passwd"}),
    ("edit", {"path": "../outside.txt", "old_text": "a", "new_text": "b"}),
    ("read", {"path": 7}),
    ("shell", {"cmd": "rm -rf /"}),
]:
    try:
        await getattr(tools, name)(args)
        codes.append("ran")
    except ToolError as e:
        codes.append(["ToolError" if isinstance(e, ToolError) else "?", code(e), str(e).split(":")[0].split("tools.")[1]])
codes"#,
        ),
    )
    .await;
    assert_eq!(
        result(&r),
        json!([
            ["ToolError", "path_denied", "read"],
            ["ToolError", "path_denied", "edit"],
            ["ToolError", "invalid_arguments", "read"],
            ["ToolError", "unknown_tool", "shell"],
        ])
    );
    // The edit (an `ask` tool) was refused before anyone was asked.
    assert!(approver.asked().is_empty(), "{:?}", approver.asked());
}

async fn a_scripts_writes_are_one_transaction_committed_with_it(lang: Lang) {
    let f = fixture(&lang.toolbox(TOOLBOX)).await;
    // `write` approves its effects: one approval, for the whole script.
    let approver = Scripted::answering([Approval::Approved]);
    let p = f.host.session().approver(approver.clone()).build();
    let before = tree(&f.ws);
    let r = run(
        &p,
        "c1",
        &lang.pick(
            r#"await tools.write({path: "new.txt", content: "one\n"});
const seen = await tools.read({path: "new.txt"});
await tools.write({path: "notes.txt", content: "rewritten\n", baseline: undefined}).catch(e => e.code);
const listed = await tools.list({path: "."});
return {seen: seen.lines, listed: listed.entries.map(e => e.path)};"#,
            r#"await tools.write(path="new.txt", content="one\n")
seen = await tools.read(path="new.txt")
try:
    await tools.write(path="notes.txt", content="rewritten\n")
except ToolError as e:
    pass
listed = await tools.list(path=".")
{"seen": seen["lines"], "listed": [e["path"] for e in listed["entries"]]}"#,
        ),
    )
    .await;
    let value = result(&r);
    assert_eq!(
        value["seen"],
        json!(["one"]),
        "a call sees the script's staged writes"
    );
    assert!(
        value["listed"]
            .as_array()
            .unwrap()
            .contains(&json!("new.txt")),
        "{value}"
    );
    // Committed together, after one approval that showed the whole diff.
    let asked = approver.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].call_id, "c1");
    assert_eq!(asked[0].tool, "run_code");
    assert!(asked[0].summary.contains("new.txt"), "{}", asked[0].summary);
    assert_eq!(f.ws.read("new.txt"), "one\n");
    let mut after = tree(&f.ws);
    after.remove("new.txt");
    assert_eq!(
        after.get("notes.txt"),
        before.get("notes.txt"),
        "notes.txt was never read, so its overwrite was refused (stale_baseline)"
    );
    // One journal entry: undo reverts the whole script.
    let journal = f.host.journal();
    let entries = journal.entries().unwrap();
    assert_eq!(entries.len(), 1);
    journal.undo(None, None).unwrap();
    assert_eq!(tree(&f.ws), before);
}

async fn a_read_only_grant_reads_the_scripts_writes_and_changes_nothing(lang: Lang) {
    // The hostile guest's file tools, granted the workspace read-only:
    // in a script that wrote there, they read through its staged changes,
    // and every change they try through that grant is refused.
    let toolbox = format!(
        "{TOOLBOX}[[component]]\nsource = {:?}\nprefix = \"h_\"\n[component.policy]\ndecision = \"allow\"\n[[component.policy.fs]]\nhost = \".\"\nguest = \"/workspace\"\nmode = \"ro\"\n",
        toolhost_tests::guests::GUEST_HOSTILE
    );
    let f = fixture(&lang.toolbox(&toolbox)).await;
    let approver = Scripted::answering([Approval::Approved]);
    let p = f.host.session().approver(approver.clone()).build();
    let before = tree(&f.ws);
    let r = run(
        &p,
        "c1",
        &lang.pick(
            r#"await tools.write({path: "new.txt", content: "staged\n"});
const out = {seen: (await tools.h_read_file({path: "/workspace/new.txt"})).content};
const tries = [
  ["h_write_file", {path: "/workspace/notes.txt", content: "x"}],
  ["h_truncate", {path: "/workspace/new.txt"}],
  ["h_rename", {from: "/workspace/new.txt", to: "/workspace/moved.txt"}],
];
for (const [t, a] of tries) {
  try { await tools[t](a); out[t] = "ran"; } catch (e) { out[t] = e.code; }
}
return out;"#,
            r#"await tools.write(path="new.txt", content="staged\n")
out = {"seen": (await tools.h_read_file(path="/workspace/new.txt"))["content"]}
tries = [
    ("h_write_file", {"path": "/workspace/notes.txt", "content": "x"}),
    ("h_truncate", {"path": "/workspace/new.txt"}),
    ("h_rename", {"from": "/workspace/new.txt", "to": "/workspace/moved.txt"}),
]
for t, a in tries:
    try:
        await getattr(tools, t)(a)
        out[t] = "ran"
    except ToolError as e:
        out[t] = code(e)
out"#,
        ),
    )
    .await;
    let value = result(&r);
    assert_eq!(value["seen"], "staged\n", "{value}");
    for t in ["h_write_file", "h_truncate", "h_rename"] {
        assert_eq!(value[t], "io_error", "{t}: {value}");
    }
    // Only the script's own write is committed.
    let mut after = tree(&f.ws);
    assert_eq!(after.remove("new.txt"), Some(b"staged\n".to_vec()));
    assert_eq!(after, before);
}

async fn a_script_that_throws_after_two_writes_leaves_the_tree_byte_identical(lang: Lang) {
    let f = fixture(&lang.toolbox(TOOLBOX)).await;
    let approver = Scripted::answering([Approval::Approved, Approval::Approved]);
    let p = f.host.session().approver(approver.clone()).build();
    let before = tree(&f.ws);
    let r = run(
        &p,
        "c1",
        &lang.pick(
            r#"await tools.write({path: "one.txt", content: "1\n"});
const notes = await tools.read({path: "notes.txt"});
await tools.edit({path: "notes.txt", old_text: "alpha", new_text: "ALPHA"});
throw new Error("changed my mind");"#,
            r#"await tools.write(path="one.txt", content="1\n")
notes = await tools.read(path="notes.txt")
await tools.edit(path="notes.txt", old_text="alpha", new_text="ALPHA")
raise RuntimeError("changed my mind")"#,
        ),
    )
    .await;
    assert_eq!(code(&r), "script_error");
    assert!(r.text().contains("changed my mind"), "{}", r.text());
    assert_eq!(tree(&f.ws), before);
    assert!(f.host.journal().entries().unwrap().is_empty());
    // The edit was asked about (from its arguments), the script's effects
    // never were: it threw first.
    assert_eq!(approver.asked().len(), 1);
    assert_eq!(approver.asked()[0].tool, "edit");
}

async fn a_failed_call_goes_back_to_its_savepoint_and_the_script_goes_on(lang: Lang) {
    let f = fixture(&lang.toolbox(
        &TOOLBOX.replace(
            "source = \"builtin:edit\"",
            "source = \"builtin:edit\"\n[component.policy]\ndecision = \"allow\"\n[[component.policy.fs]]\nhost = \".\"\nguest = \"/workspace\"\nmode = \"rw\"",
        ),
    ))
    .await;
    let approver = Scripted::answering([Approval::Approved]);
    let p = f.host.session().approver(approver).build();
    let r = run(
        &p,
        "c1",
        &lang.pick(
            r#"await tools.read({path: "notes.txt"});
await tools.edit({path: "notes.txt", old_text: "alpha", new_text: "ALPHA"});
let failed;
try {
  await tools.edit({path: "notes.txt", old_text: "not there", new_text: "x"});
} catch (e) { failed = e.code; }
const now = await tools.read({path: "notes.txt"});
return {failed, first: now.lines[0]};"#,
            r#"await tools.read(path="notes.txt")
await tools.edit(path="notes.txt", old_text="alpha", new_text="ALPHA")
failed = None
try:
    await tools.edit(path="notes.txt", old_text="not there", new_text="x")
except ToolError as e:
    failed = code(e)
now = await tools.read(path="notes.txt")
{"failed": failed, "first": now["lines"][0]}"#,
        ),
    )
    .await;
    let v = result(&r);
    assert_eq!(v["first"], "ALPHA");
    assert!(v["failed"].is_string(), "{v}");
    assert_eq!(f.ws.read("notes.txt"), "ALPHA\nTODO: first\nomega\n");
    let codes: Vec<Option<String>> = calls(&r).into_iter().map(|(_, c)| c).collect();
    assert_eq!(codes.len(), 4);
    assert!(codes[2].is_some(), "{codes:?}");
}

async fn approvals_inside_a_script_reach_the_approver_and_a_decline_is_catchable(lang: Lang) {
    let f = fixture(&lang.toolbox(TOOLBOX)).await;
    let approver = Scripted::answering([Approval::Denied("not now".into()), Approval::Approved]);
    let p = f.host.session().approver(approver.clone()).build();
    let r = run(
        &p,
        "c1",
        &lang.pick(
            r#"await tools.read({path: "notes.txt"});
let declined;
try {
  await tools.edit({path: "notes.txt", old_text: "alpha", new_text: "no"});
} catch (e) { declined = e.code; }
await tools.edit({path: "notes.txt", old_text: "omega", new_text: "OMEGA"});
return declined;"#,
            r#"await tools.read(path="notes.txt")
declined = None
try:
    await tools.edit(path="notes.txt", old_text="alpha", new_text="no")
except ToolError as e:
    declined = code(e)
await tools.edit(path="notes.txt", old_text="omega", new_text="OMEGA")
declined"#,
        ),
    )
    .await;
    assert_eq!(result(&r), json!("approval_denied"));
    let asked = approver.asked();
    assert_eq!(asked.len(), 2);
    for a in &asked {
        assert_eq!(a.call_id, "c1", "asked as part of the call the client made");
        assert_eq!(a.tool, "edit");
        assert!(a.reason.contains("`run_code` script"), "{}", a.reason);
    }
    assert!(
        asked[0].summary.contains("notes.txt"),
        "{}",
        asked[0].summary
    );
    assert_eq!(f.ws.read("notes.txt"), "alpha\nTODO: first\nOMEGA\n");
}

async fn declining_a_scripts_effects_discards_all_of_them(lang: Lang) {
    let f = fixture(&lang.toolbox(TOOLBOX)).await;
    let approver = Scripted::answering([Approval::Denied("no".into())]);
    let p = f.host.session().approver(approver.clone()).build();
    let before = tree(&f.ws);
    let r = run(
        &p,
        "c1",
        &lang.pick(
            r#"await tools.write({path: "x.txt", content: "x\n"});
await tools.write({path: "y.txt", content: "y\n"});
return "wrote two";"#,
            r#"await tools.write(path="x.txt", content="x\n")
await tools.write(path="y.txt", content="y\n")
"wrote two""#,
        ),
    )
    .await;
    assert_eq!(code(&r), "approval_denied");
    let asked = approver.asked();
    assert_eq!(asked.len(), 1, "one question for the whole script");
    assert!(
        asked[0].summary.contains("x.txt") && asked[0].summary.contains("y.txt"),
        "{}",
        asked[0].summary
    );
    assert_eq!(tree(&f.ws), before);
}

/// Only `secret_read` (its policy: `callers = "code"`) and
/// `direct_read` (`callers = "model"`), beside the built-ins.
const CALLERS: &str = r#"version = 1
mode = "both"

[[component]]
source = "builtin:read"
[[component]]
source = "builtin:read"
prefix = "secret_"
[component.policy]
decision = "allow"
callers = "code"
[[component.policy.fs]]
host = "."
guest = "/workspace"
[[component]]
source = "builtin:read"
prefix = "direct_"
[component.policy]
decision = "allow"
callers = "model"
[[component.policy.fs]]
host = "."
guest = "/workspace"
"#;

async fn callers_say_who_may_call_a_tool(lang: Lang) {
    let f = fixture(&lang.toolbox(CALLERS)).await;
    let p = f.host.session().build();
    // Direct: the code-only tool is refused, the model's is not.
    let r = p
        .execute(
            ToolCall::new("d1", "secret_read", r#"{"path":"notes.txt"}"#),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(code(&r), "denied");
    assert!(
        r.text().contains("only be called from a script"),
        "{}",
        r.text()
    );
    let r = p
        .execute(
            ToolCall::new("d2", "direct_read", r#"{"path":"notes.txt"}"#),
            CancellationToken::new(),
        )
        .await;
    assert!(!r.is_error(), "{}", r.text());
    // From a script: the other way round, and no script runs a script.
    let r = run(
        &p,
        "c1",
        &lang.pick(
            r#"const out = {};
for (const t of ["secret_read", "direct_read", "run_code"]) {
  try { await tools[t]({path: "notes.txt", code: "return 1"}); out[t] = "ran"; }
  catch (e) { out[t] = e.code; }
}
return out;"#,
            r#"out = {}
for t in ["secret_read", "direct_read", "run_code"]:
    try:
        await getattr(tools, t)(path="notes.txt", code="1")
        out[t] = "ran"
    except ToolError as e:
        out[t] = code(e)
out"#,
        ),
    )
    .await;
    let v = result(&r);
    assert_eq!(v["direct_read"], "denied");
    assert_eq!(v["run_code"], "denied");
    // (secret_read's schema refuses the stray `code` argument.)
    assert_eq!(v["secret_read"], "invalid_arguments");
    let r = run(
        &p,
        "c2",
        &lang.pick(
            r#"return (await tools.secret_read({path: "notes.txt"})).lines[0];"#,
            r#"(await tools.secret_read(path="notes.txt"))["lines"][0]"#,
        ),
    )
    .await;
    assert_eq!(result(&r), json!("alpha"));
    // What the model is offered: run_code declares secret_read, not direct_read.
    let listed: Vec<String> = f
        .host
        .registry()
        .advertised(None)
        .iter()
        .map(|t| t.descriptor.name.clone())
        .collect();
    assert_eq!(listed, ["direct_read", "read", "run_code"]);
    let run_code = f.host.registry().resolve("run_code", None).unwrap();
    let d = &run_code.descriptor.description;
    assert!(
        d.contains(&lang.declared("secret_read")) && !d.contains(&lang.declared("direct_read")),
        "{d}"
    );
    assert!(
        run_code.descriptor.annotations.read_only,
        "only readers are callable"
    );
}

#[tokio::test]
async fn code_only_tools_are_not_served_in_native_mode() {
    let f = fixture(&CALLERS.replace("mode = \"both\"", "mode = \"native\"")).await;
    let names: Vec<String> = f
        .host
        .registry()
        .visible(None)
        .iter()
        .map(|t| t.descriptor.name.clone())
        .collect();
    assert_eq!(names, ["direct_read", "read"]);
    let skipped = f.host.report().skipped;
    assert!(
        skipped
            .iter()
            .any(|s| s.name == "secret_read" && s.reason.contains("mode = \"native\"")),
        "{skipped:?}"
    );
}

/// The runner listed first, with a prefix.
const RUNNER_FIRST: &str = "version = 1\nmode = \"both\"\n\n[[component]]\nsource = \"RUNNER\"\nprefix = \"x_\"\n[[component]]\nsource = \"builtin:read\"\n";

async fn the_runner_is_assembled_last_under_its_reserved_name(lang: Lang) {
    // Wherever it is listed, its description declares the tools listed
    // after it, and a prefix is ignored (with a warning).
    let runner_first = RUNNER_FIRST.replace("RUNNER", lang.runner());
    let f = fixture(&runner_first).await;
    let registry = f.host.registry();
    let run_code = registry.resolve("run_code", None).unwrap();
    let d = &run_code.descriptor.description;
    assert!(d.contains(&lang.declared("read")), "{d}");
    assert!(registry.resolve("x_run_code", None).is_none());
    let warnings = f.host.report().warnings;
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with(&format!("{} (", lang.runner()))
                && w.contains("toolhost.toml:4): a prefix is ignored")),
        "{warnings:?}"
    );
    // A native toolbox that names it only warns.
    let f = fixture(&runner_first.replace("mode = \"both\"", "mode = \"native\"")).await;
    assert!(f.host.registry().resolve("run_code", None).is_none());
    let warnings = f.host.report().warnings;
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("is listed, but the toolbox's mode is native")),
        "{warnings:?}"
    );
    // Named twice, it clashes with itself like any tool.
    let ws = Workspace::new(&[]);
    let twice = format!(
        "{runner_first}[[component]]\nsource = \"{}\"\n",
        lang.runner()
    );
    std::fs::write(ws.file("toolhost.toml"), twice).unwrap();
    let host = Host::new(HostConfig {
        cache_dir: Some(shared_cache()),
        ..HostConfig::default()
    })
    .unwrap();
    let err = host
        .load(&find_toolbox(None, ws.path()).unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "tool `run_code` is declared by both {}",
            lang.runner()
        )) && err.contains("(code mode's reserved tool)"),
        "{err}"
    );
}

async fn a_script_that_spins_ends_fuel_exhausted_or_timeout_with_nothing_committed(lang: Lang) {
    for (limits, expected) in [
        ("fuel = 2_000_000_000", "fuel_exhausted"),
        ("fuel = 500_000_000_000\ntimeout_ms = 300", "timeout"),
    ] {
        let f = fixture(&with_runner_limits(lang, limits)).await;
        let approver = Scripted::answering([Approval::Approved]);
        let p = f.host.session().approver(approver.clone()).build();
        let before = tree(&f.ws);
        let r = run(
            &p,
            "c1",
            &lang.pick(
                r#"await tools.write({path: "spun.txt", content: "x\n"});
while (true) {}"#,
                r#"await tools.write(path="spun.txt", content="x\n")
while True:
    pass"#,
            ),
        )
        .await;
        assert_eq!(code(&r), expected, "{}", r.text());
        assert_eq!(tree(&f.ws), before, "{expected}");
        assert!(
            approver.asked().is_empty(),
            "{expected}: nothing to approve"
        );
    }
}

async fn hostile_scripts_are_contained_with_their_codes(lang: Lang) {
    let f = fixture(&lang.toolbox(TOOLBOX)).await;
    let log = Log::new();
    let p = f.host.session().session_log(log.log.clone()).build();
    // The bridge poisoned, and a parent forged in the arguments: the host
    // still gets the name and arguments as written, and names the parent.
    let r = run(
        &p,
        "c1",
        &lang.pick(
            r#"Object.prototype.toJSON = function () { return {path: "/etc/shadow"}; };
JSON.stringify = () => '{"path":"/etc/shadow"}';
Promise.prototype.then = function () { throw new Error("hijacked"); };
let forged;
try { await tools.read({path: "notes.txt", parent: "someone-else", _meta: {parent: "x"}}); }
catch (e) { forged = e.code; }
delete Object.prototype.toJSON;
const ok = await tools.read({path: "notes.txt"});
return {forged, first: ok.lines[0]};"#,
            r#"dict = list
len = lambda v: 0
getattr = None
ToolError = None
forged = None
try:
    await tools.read(path="notes.txt", parent="someone-else", _meta={"parent": "x"})
except OSError as e:
    forged = code(e)
ok = await tools.read(path="notes.txt")
{"forged": forged, "first": ok["lines"][0]}"#,
        ),
    )
    .await;
    // Object.prototype.toJSON turned the arguments into /etc/shadow: the
    // host refused that path; the forged keys are not in read's schema.
    let v = result(&r);
    assert!(
        v["forged"] == "invalid_arguments" || v["forged"] == "path_denied",
        "{v}"
    );
    assert_eq!(v["first"], "alpha");
    let events = log.events();
    for e in &events {
        if let SessionEvent::ToolCall(c) = e
            && c.tool == "read"
        {
            assert_eq!(c.parent.as_deref(), Some("c1"));
        }
    }
    // Huge outputs: the console is bounded in the runner, the result by
    // the host (the rest kept as an artifact).
    let r = run(
        &p,
        "c2",
        &lang.pick(
            r#"for (let i = 0; i < 20000; i++) console.log("spam ".repeat(40));
return "x".repeat(200000);"#,
            r#"for i in range(20000):
    print("spam " * 40)
"x" * 200000"#,
        ),
    )
    .await;
    assert!(!r.is_error(), "{}", r.text());
    let console = r.value().unwrap()["console"].as_array().unwrap().len();
    assert!(console < 400, "{console} console lines kept");
    assert!(r.text().len() < 40_000, "{}", r.text().len());
    assert!(
        r.meta().extra.contains_key("truncated"),
        "{:?}",
        r.meta().extra
    );
    // Deep recursion: a catchable RangeError, or the host's stack limit.
    let r = run(
        &p,
        "c3",
        &lang.pick(
            r#"function f(n) { return n === 0 ? 0 : 1 + f(n - 1); }
try { return f(1e7); } catch (e) { return e.name; }"#,
            r#"def f(n):
    return 0 if n == 0 else 1 + f(n - 1)
try:
    r = f(10 ** 7)
except RecursionError as e:
    r = "RangeError"
r"#,
        ),
    )
    .await;
    if r.is_error() {
        assert_eq!(code(&r), "stack_overflow");
    } else {
        assert_eq!(result(&r), json!("RangeError"));
    }
    // Memory: the policy's bound.
    let r = run(
        &p,
        "c4",
        &lang.pick(
            r#"const a = []; while (true) a.push("x".repeat(1 << 20) + a.length);"#,
            r#"a = []
while True:
    a.append("x" * (1 << 20) + str(len(a)))"#,
        ),
    )
    .await;
    assert!(
        ["memory_limit", "script_error"].contains(&code(&r).as_str()),
        "{}",
        r.text()
    );
}

async fn a_script_may_make_at_most_its_policys_tool_calls(lang: Lang) {
    let f = fixture(&with_runner_limits(lang, "max_tool_calls = 3")).await;
    let p = f.host.session().build();
    let r = run(
        &p,
        "c1",
        &lang.pick(
            r#"const out = [];
for (let i = 0; i < 5; i++) {
  try { await tools.list({path: "."}); out.push("ok"); } catch (e) { out.push(e.code); }
}
return out;"#,
            r#"out = []
for i in range(5):
    try:
        await tools.list(path=".")
        out.append("ok")
    except ToolError as e:
        out.append(code(e))
out"#,
        ),
    )
    .await;
    assert_eq!(
        result(&r),
        json!(["ok", "ok", "ok", "tool_call_limit", "tool_call_limit"])
    );
}

/// A caller's reach (an OAuth token's scopes): a script reaches no more.
struct NoWrites;
impl Reach for NoWrites {
    fn refuse(&self, tool: &str) -> Option<toolhost_contract::ToolFailure> {
        (tool == "write").then(|| {
            toolhost_contract::ToolFailure::new(
                toolhost_contract::FailureCode::Denied,
                "`write` needs a scope this caller lacks",
            )
        })
    }
}

async fn a_script_reaches_no_tool_its_caller_could_not(lang: Lang) {
    let f = fixture(&lang.toolbox(TOOLBOX)).await;
    let p = f.host.session().approver(Scripted::answering([])).build();
    let r = p
        .execute_handed(
            ToolCall::new(
                "c1",
                "run_code",
                json!({"code": lang.pick(
                    r#"try { await tools.write({path: "w.txt", content: "w"}); return "wrote"; } catch (e) { return e.code; }"#,
                    "try:\n    await tools.write(path=\"w.txt\", content=\"w\")\n    r = \"wrote\"\nexcept ToolError as e:\n    r = code(e)\nr",
                )}).to_string(),
            ),
            CancellationToken::new(),
            None,
            Handoff {
                reach: Some(Arc::new(NoWrites)),
                ..Handoff::default()
            },
        )
        .await;
    assert_eq!(result(&r), json!("denied"));
    assert!(!f.ws.file("w.txt").exists());
}

async fn a_script_that_waits_for_an_answer_goes_on_from_its_checkpoint(lang: Lang) {
    let f = fixture(&lang.toolbox(TOOLBOX)).await;
    // (Python's has no clock or randomness: Monty's are the host's, and
    // it grants them none.)
    let script = &lang.pick(
        r#"await tools.write({path: "first.txt", content: "staged before the question\n"});
const n = (await tools.read({path: "notes.txt"})).totalLines;
await tools.edit({path: "notes.txt", old_text: "omega", new_text: "OMEGA " + Math.random()});
return {n, now: Date.now()};"#,
        r#"await tools.write(path="first.txt", content="staged before the question\n")
n = (await tools.read(path="notes.txt"))["totalLines"]
await tools.edit(path="notes.txt", old_text="omega", new_text="OMEGA 0." + str(n))
{"n": n}"#,
    );
    let log = Log::new();
    // First request: the edit asks; the client will ask its user and come
    // back (MCP 2026-07-28), so the approver says "pending".
    let first = Scripted::answering([Approval::Pending("asked".into())]);
    let p1 = f
        .host
        .session()
        .approver(first.clone())
        .session_log(log.log.clone())
        .build();
    let r = run(&p1, "c1", script).await;
    assert_eq!(code(&r), "approval_pending", "{}", r.text());
    let resume = r.error().unwrap().info.as_ref().unwrap()["resume"]
        .as_str()
        .expect("where the script stopped")
        .to_owned();
    assert_eq!(first.asked().len(), 1);
    assert_eq!(first.asked()[0].tool, "edit");
    assert!(
        !f.ws.file("first.txt").exists(),
        "nothing is committed while it waits"
    );
    let dispatched_before = p1.dispatches();
    // The retry, in another session (a stateless request): the answer
    // approves the edit; the write and the read are not run again, nobody
    // is asked about them, and the write staged before the question is
    // committed with the rest (approved once, at the end).
    let second = Scripted::answering([Approval::Approved, Approval::Approved]);
    let p2 = f
        .host
        .session()
        .approver(second.clone())
        .session_log(log.log.clone())
        .build();
    let mut call = ToolCall::new("c2", "run_code", json!({ "code": script }).to_string());
    call.resume = Some(resume.clone());
    let r = p2.execute(call, CancellationToken::new()).await;
    let v = result(&r);
    assert_eq!(v["n"], 3);
    let asked: Vec<String> = second.asked().iter().map(|a| a.tool.clone()).collect();
    assert_eq!(
        asked,
        ["edit", "run_code"],
        "the edit, then the script's effects"
    );
    assert_eq!(f.ws.read("first.txt"), "staged before the question\n");
    assert!(
        f.ws.read("notes.txt").contains("OMEGA 0."),
        "{}",
        f.ws.read("notes.txt")
    );
    // Only the edit (and the script itself) ran in the retry: write and
    // read were answered from the checkpoint.
    let inner: Vec<String> = log
        .events()
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ToolCall(c) if c.parent.as_deref() == Some("c2") => Some(c.tool.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(inner, ["edit"]);
    assert!(dispatched_before >= 3);
    assert_eq!(p2.dispatches(), 2, "the runner and the edit");
    // The same reference again (a replayed state) or for another script:
    // refused, nothing runs.
    let other = Scripted::answering([Approval::Approved]);
    let p3 = f.host.session().approver(other).build();
    let mut call = ToolCall::new(
        "c3",
        "run_code",
        json!({"code": lang.pick("return 1", "1")}).to_string(),
    );
    call.resume = Some(resume);
    let r = p3.execute(call, CancellationToken::new()).await;
    assert_eq!(code(&r), "approval_denied", "{}", r.text());
}

async fn a_script_is_recorded_and_verified_call_by_call(lang: Lang) {
    let f = fixture(&lang.toolbox(TOOLBOX)).await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("script.cassette.jsonl");
    let script = &lang.pick(
        r#"const a = await tools.read({path: "src/a.rs"});
const l = await tools.list({path: "src"});
return {lines: a.totalLines, files: l.entries.length, r: Math.random(), t: Date.now()};"#,
        r#"a = await tools.read(path="src/a.rs")
l = await tools.list(path="src")
{"lines": a["totalLines"], "files": len(l["entries"])}"#,
    );
    let recorded = recorded_verified_played(&f, &cassette, script).await;
    assert_eq!(recorded["lines"], 3);
    // A file an inner call read changed: the divergence names that call.
    std::fs::write(f.ws.file("src/a.rs"), "changed\n").unwrap();
    let verify = Replay::open(&cassette, Mode::Replay, Layer::Verify).unwrap();
    let p = f.host.session().cassette(verify.clone()).build();
    let _ = run(&p, "c1", script).await;
    let report = verify.finish().expect_err("a divergence").to_string();
    assert!(report.contains("read#"), "{report}");
}

#[tokio::test]
async fn hostile_python_scripts_are_contained_with_their_codes() {
    let f = fixture(&Lang::Py.toolbox(TOOLBOX)).await;
    let log = Log::new();
    let p = f.host.session().session_log(log.log.clone()).build();
    // Introspection and the ways out of a CPython sandbox: each is a
    // catchable error here, and none reaches a tool or the host.
    let r = run(
        &p,
        "c1",
        r#"attempts = {
    "subclasses": lambda: ().__class__.__bases__[0].__subclasses__(),
    "tools_class": lambda: tools.__class__.__init__.__globals__,
    "tools_dict": lambda: tools.__dict__,
    "import_os": lambda: __import__("os").system("id"),
    "open": lambda: open("/etc/passwd").read(),
    "eval": lambda: eval("1 + 1"),
    "exec": lambda: exec("x = 1"),
    "globals": lambda: globals()["tools"],
    "frame": lambda: (lambda: 0).__code__.co_consts,
}
out = {}
for name, attempt in attempts.items():
    try:
        out[name] = "escaped: " + repr(attempt())
    except Exception as e:
        out[name] = type(e).__name__
out"#,
    )
    .await;
    let v = result(&r);
    for (name, outcome) in v.as_object().unwrap() {
        assert!(
            !outcome.as_str().unwrap().starts_with("escaped"),
            "{name}: {outcome}"
        );
    }
    let r = run(
        &p,
        "c2",
        "import os\ntry:\n    r = os.getenv('HOME') or os.listdir('/')\nexcept Exception as e:\n    r = type(e).__name__\nr",
    )
    .await;
    assert!(
        r.is_error() || result(&r).is_string(),
        "the environment is not the host's: {}",
        r.text()
    );
    if !r.is_error() {
        assert_ne!(result(&r), json!(std::env::var("HOME").unwrap_or_default()));
    }
    // The bridge's names rebound: the script breaks itself, never the host.
    let r = run(
        &p,
        "c3",
        "tools = None\nOSError = None\nawait tools.read(path='notes.txt')",
    )
    .await;
    assert_eq!(code(&r), "script_error", "{}", r.text());
    // Huge integers, memory bombs, an endless generator: each ends with a
    // stable code, and the host serves the next script.
    for (id, script) in [
        ("c4", "10 ** 10 ** 9"),
        ("c5", "'x' * (1 << 40)"),
        ("c6", "a = []\nwhile True:\n    a.append([0] * 100000)"),
        (
            "c7",
            "def g():\n    while True:\n        yield 1\nlist(g())",
        ),
    ] {
        let r = run(&p, id, script).await;
        let c = code(&r);
        assert!(
            ["script_error", "memory_limit", "fuel_exhausted", "timeout"].contains(&c.as_str()),
            "{script}: {c}: {}",
            r.text()
        );
    }
    let r = run(&p, "c8", "(await tools.read(path='notes.txt'))['lines'][0]").await;
    assert_eq!(result(&r), json!("alpha"));
    // No inner call but the two reads reached the host.
    let inner: Vec<String> = log
        .events()
        .iter()
        .filter_map(|e| match e {
            SessionEvent::ToolCall(c) if c.parent.is_some() => Some(c.tool.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(inner, ["read"], "{inner:?}");
}

#[tokio::test]
async fn a_named_runner_and_the_language_cannot_disagree() {
    let ws = Workspace::new(&[]);
    let toolbox = "version = 1\nmode = \"code\"\nlanguage = \"python\"\n\n[[component]]\nsource = \"builtin:read\"\n[[component]]\nsource = \"builtin:code\"\n";
    std::fs::write(ws.file("toolhost.toml"), toolbox).unwrap();
    let err = find_toolbox(None, ws.path()).unwrap_err().to_string();
    assert!(
        err.contains("toolhost.toml:7:1: `builtin:code` runs javascript, but the toolbox's `language` is python"),
        "{err}"
    );
    // Unsaid, the language is the named runner's.
    std::fs::write(
        ws.file("toolhost.toml"),
        toolbox
            .replace("language = \"python\"\n", "")
            .replace("builtin:code", "builtin:code_python"),
    )
    .unwrap();
    let tb = find_toolbox(None, ws.path()).unwrap();
    assert_eq!(tb.language, toolhost_policy::Language::Python);
}

/// A sink that keeps what it is given (a front end's relay to its client).
#[derive(Debug, Default)]
struct Collect(Mutex<Vec<ContextEvent>>);

impl ContextSink for Collect {
    fn emit(&self, event: &ContextEvent) {
        self.0.lock().unwrap().push(event.clone());
    }
}

async fn what_a_scripts_calls_report_reaches_the_client_live_as_the_scripts_own(lang: Lang) {
    // The conformance fixtures report while they run: progress 0, 50, 100
    // of 100; three log lines.
    let toolbox = format!(
        "{TOOLBOX}[[component]]\nsource = {:?}\n[component.policy]\ndecision = \"allow\"\n",
        toolhost_tests::guests::GUEST_CONFORMANCE
    );
    let f = fixture(&lang.toolbox(&toolbox)).await;
    let p = f.host.session().build();
    let sink = Arc::new(Collect::default());
    let code = lang.pick(
        "await tools.test_tool_with_progress({});\nawait tools.test_tool_with_logging({});\nreturn 'done';",
        "await tools.test_tool_with_progress()\nawait tools.test_tool_with_logging()\n'done'",
    );
    let r = p
        .execute_with(
            ToolCall::new("c1", "run_code", json!({ "code": code }).to_string()),
            CancellationToken::new(),
            Some(sink.clone()),
        )
        .await;
    assert_eq!(result(&r), json!("done"));
    let events = sink.0.lock().unwrap().clone();
    let progress: Vec<(u64, String)> = events
        .iter()
        .filter_map(|e| match e {
            ContextEvent::Progress { done, message, .. } => {
                Some((*done, message.clone().unwrap_or_default()))
            }
            ContextEvent::Log { .. } => None,
        })
        .collect();
    // One sequence for the script, growing; each step names its call and
    // carries the call's own numbers.
    assert_eq!(
        progress,
        [
            (1, "tools.test_tool_with_progress#1: 0/100".to_owned()),
            (2, "tools.test_tool_with_progress#1: 50/100".to_owned()),
            (3, "tools.test_tool_with_progress#1: 100/100".to_owned()),
        ],
        "{events:?}"
    );
    let logs: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            ContextEvent::Log { message, .. } => Some(message.clone()),
            ContextEvent::Progress { .. } => None,
        })
        .collect();
    assert_eq!(
        logs,
        [
            "tools.test_tool_with_logging#2: Tool execution started",
            "tools.test_tool_with_logging#2: Tool processing data",
            "tools.test_tool_with_logging#2: Tool execution completed",
        ],
        "{events:?}"
    );
}

/// The inner calls' log events of script call `parent`, in order:
/// `call N` and `result N` (N its index).
fn inner_events(log: &Log, parent: &str) -> Vec<String> {
    let prefix = format!("{parent}#");
    log.events()
        .iter()
        .filter_map(|e| {
            let index = e.call_id().strip_prefix(&prefix)?;
            Some(match e {
                SessionEvent::ToolCall(_) => format!("call {index}"),
                SessionEvent::ToolResult(_) => format!("result {index}"),
            })
        })
        .collect()
}

/// `TOOLBOX` with the conformance fixtures (`test_tool_with_progress`
/// takes 100 ms), under `limits` for the runner when some are given.
fn with_fixtures(lang: Lang, limits: Option<&str>) -> String {
    let base = match limits {
        Some(l) => with_runner_limits(lang, l),
        None => lang.toolbox(TOOLBOX),
    };
    format!(
        "{base}[[component]]\nsource = {:?}\n[component.policy]\ndecision = \"allow\"\n",
        toolhost_tests::guests::GUEST_CONFORMANCE
    )
}

async fn independent_calls_run_at_once(lang: Lang) {
    let f = fixture(&with_fixtures(lang, None)).await;
    let log = Log::new();
    let p = f.host.session().session_log(log.log.clone()).build();
    let r = run(
        &p,
        "c1",
        &lang.pick(
            "const [a, b, c] = await Promise.all([\n\
               tools.test_tool_with_progress({}), tools.test_tool_with_progress({}), tools.read({path: 'notes.txt'})]);\n\
             return [a.ok, b.ok, c.lines[0]];",
            "import asyncio\n\
             a, b, c = await asyncio.gather(\n\
             \x20   tools.test_tool_with_progress(), tools.test_tool_with_progress(), tools.read(path='notes.txt'))\n\
             [a['ok'], b['ok'], c['lines'][0]]",
        ),
    )
    .await;
    assert_eq!(result(&r), json!([true, true, "alpha"]));
    // All three started before the first (100 ms long) ended; numbered in
    // the order the script made them, whatever order they ended in.
    let events = inner_events(&log, "c1");
    assert_eq!(&events[..3], ["call 1", "call 2", "call 3"], "{events:?}");
    assert_eq!(events.len(), 6, "{events:?}");
    let names: Vec<String> = calls(&r).into_iter().map(|(t, _)| t).collect();
    assert_eq!(
        names,
        ["test_tool_with_progress", "test_tool_with_progress", "read"],
        "listed in the order they were made"
    );
}

async fn a_call_that_may_write_runs_alone_between_the_calls_before_and_after_it(lang: Lang) {
    let f = fixture(&with_fixtures(lang, None)).await;
    let approver = Scripted::answering([Approval::Approved]);
    let log = Log::new();
    let p = f
        .host
        .session()
        .approver(approver)
        .session_log(log.log.clone())
        .build();
    // A read started before the write never sees it; one started after it
    // always does, however the calls are timed.
    let r = run(
        &p,
        "c1",
        &lang.pick(
            "const [before, wrote, after] = await Promise.all([\n\
               tools.read({path: 'w.txt'}).then(() => 'seen', e => e.code),\n\
               tools.write({path: 'w.txt', content: 'written\\n'}),\n\
               tools.read({path: 'w.txt'})]);\n\
             return [before, after.lines[0]];",
            // (A tool call starts when it is made; a coroutine of the
            // script's own, when the loop runs it.)
            "import asyncio\n\
             first = tools.read(path='w.txt')\n\
             wrote, after = await asyncio.gather(\n\
             \x20   tools.write(path='w.txt', content='written\\n'), tools.read(path='w.txt'))\n\
             try:\n\
             \x20   await first\n\
             \x20   b = 'seen'\n\
             except ToolError as e:\n\
             \x20   b = code(e)\n\
             [b, after['lines'][0]]",
        ),
    )
    .await;
    assert_eq!(result(&r), json!(["not_found", "written"]));
    assert_eq!(f.ws.read("w.txt"), "written\n");
    // The write started after the first read ended, and the second read
    // after the write ended.
    let events = inner_events(&log, "c1");
    let at = |e: &str| events.iter().position(|x| x == e).unwrap();
    assert!(at("result 1") < at("call 2"), "{events:?}");
    assert!(at("result 2") < at("call 3"), "{events:?}");
}

async fn at_most_the_policys_parallel_calls_run_at_once(lang: Lang) {
    let f = fixture(&with_fixtures(lang, Some("max_parallel_calls = 1"))).await;
    let log = Log::new();
    let p = f.host.session().session_log(log.log.clone()).build();
    let r = run(
        &p,
        "c1",
        &lang.pick(
            "await Promise.all([tools.test_tool_with_progress({}), tools.test_tool_with_progress({})]);\nreturn 1;",
            "import asyncio\nawait asyncio.gather(tools.test_tool_with_progress(), tools.test_tool_with_progress())\n1",
        ),
    )
    .await;
    assert_eq!(result(&r), json!(1));
    assert_eq!(
        inner_events(&log, "c1"),
        ["call 1", "result 1", "call 2", "result 2"]
    );
}

async fn calls_made_at_once_are_recorded_and_verified_in_the_order_they_were_made(lang: Lang) {
    let f = fixture(&with_fixtures(lang, None)).await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("parallel.cassette.jsonl");
    // The slow call first: it ends last, whatever the run.
    let script = lang.pick(
        "const [p, a, b] = await Promise.all([tools.test_tool_with_progress({}), \
         tools.read({path: 'src/a.rs'}), tools.read({path: 'src/b.rs'})]);\n\
         return [p.ok, a.totalLines, b.totalLines];",
        "import asyncio\n\
         p, a, b = await asyncio.gather(tools.test_tool_with_progress(), \
         tools.read(path='src/a.rs'), tools.read(path='src/b.rs'))\n\
         [p['ok'], a['totalLines'], b['totalLines']]",
    );
    let recorded = recorded_verified_played(&f, &cassette, &script).await;
    assert_eq!(recorded, json!([true, 3, 1]));
}

/// `script` recorded into `cassette` (deterministic), verified against it
/// (the script and each call run again, the same), then played back whole
/// (nothing runs); what it returned.
async fn recorded_verified_played(f: &Fixture, cassette: &std::path::Path, script: &str) -> Value {
    let record = Replay::open(cassette, Mode::Record, Layer::Cassette).unwrap();
    let p = f
        .host
        .session()
        .deterministic(7)
        .cassette(record.clone())
        .build();
    let recorded = result(&run(&p, "c1", script).await);
    record.assert_no_divergence();
    drop(p);
    let verify = Replay::open(cassette, Mode::Replay, Layer::Verify).unwrap();
    let p = f.host.session().cassette(verify.clone()).build();
    assert_eq!(result(&run(&p, "c1", script).await), recorded);
    verify.assert_no_divergence();
    drop(p);
    let replay = Replay::open(cassette, Mode::Replay, Layer::Cassette).unwrap();
    let p = f.host.session().cassette(replay.clone()).build();
    assert_eq!(result(&run(&p, "c1", script).await), recorded);
    assert_eq!(p.dispatches(), 0, "played back whole: nothing runs");
    replay.assert_no_divergence();
    recorded
}
