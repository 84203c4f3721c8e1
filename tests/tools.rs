//! The tool set through the whole pipeline, against temp directories and a
//! local HTTP server.
#![allow(clippy::unwrap_used, missing_docs)]

use serde_json::{Value, json};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolhost_contract::{ToolCall, ToolResult};
use toolhost_pipeline::{ApproveAll, Pipeline, Registration, Registry, Scope};
use toolhost_policy::{Decision, FsMode, Policy, PolicyBuilder};
use toolhost_runtime::LoadedComponent;
use toolhost_tests::{Workspace, allow_in, build};

struct Session {
    pipeline: Pipeline,
    _regs: Vec<Registration>,
    n: std::sync::atomic::AtomicU32,
}

impl Session {
    async fn new(components: Vec<Arc<LoadedComponent>>, policy: Policy) -> Session {
        let registry = Registry::new();
        let regs = components
            .iter()
            .map(|c| {
                registry
                    .register_component(Scope::Global, c, &policy)
                    .unwrap()
            })
            .collect();
        Session {
            pipeline: Pipeline::builder(registry)
                .approver(Arc::new(ApproveAll))
                .build(),
            _regs: regs,
            n: Default::default(),
        }
    }

    async fn call(&self, tool: &str, args: Value) -> ToolResult {
        let n = self.n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let r = self
            .pipeline
            .execute(
                ToolCall::new(format!("c{n}"), tool, args.to_string()),
                Default::default(),
            )
            .await;
        if let Some(v) = r.value() {
            // Independently of the pipeline: the value validates against the output schema.
            let t = self.pipeline.registry().resolve(tool, None).unwrap();
            assert!(
                jsonschema::is_valid(&t.descriptor.output_schema, v),
                "{tool}: {v}"
            );
        }
        r
    }
}

async fn fs_session(ws: &Workspace, mode: FsMode) -> Session {
    let comps = vec![
        toolhost_tests::read().await,
        toolhost_tests::write().await,
        toolhost_tests::edit().await,
        toolhost_tests::list().await,
        toolhost_tests::grep().await,
    ];
    Session::new(comps, build(allow_in(ws.path(), mode))).await
}

fn ok(r: &ToolResult) -> &Value {
    r.value()
        .unwrap_or_else(|| panic!("expected success: {r:?}"))
}

#[tokio::test]
async fn read_handles_text_edge_cases() {
    let ws = Workspace::new(&[
        ("empty.txt", ""),
        ("no_newline.txt", "a\nb"),
        ("crlf.txt", "one\r\ntwo\r\n"),
        (
            "many.txt",
            &(1..=30).map(|i| format!("{i}\n")).collect::<String>(),
        ),
    ]);
    std::fs::write(ws.file("latin1.txt"), b"caf\xe9\n").unwrap();
    std::fs::write(ws.file("bin.dat"), b"\x00\x01\x02").unwrap();
    let s = fs_session(&ws, FsMode::ReadOnly).await;
    assert_eq!(
        ok(&s.call("read", json!({"path": "empty.txt"})).await)["totalLines"],
        0
    );
    let v = s.call("read", json!({"path": "no_newline.txt"})).await;
    assert_eq!(ok(&v)["lines"], json!(["a", "b"]));
    let v = s.call("read", json!({"path": "crlf.txt"})).await;
    assert_eq!(ok(&v)["lines"], json!(["one", "two"]));
    let v = s
        .call(
            "read",
            json!({"path": "many.txt", "offset": 11, "limit": 5}),
        )
        .await;
    assert_eq!(ok(&v)["lines"], json!(["11", "12", "13", "14", "15"]));
    assert_eq!(ok(&v)["totalLines"], 30);
    assert!(v.text().contains("    11\t11"), "{}", v.text());
    assert_eq!(
        s.call("read", json!({"path": "latin1.txt"})).await.code(),
        Some("not_utf8")
    );
    assert_eq!(
        s.call("read", json!({"path": "bin.dat"})).await.code(),
        Some("binary_file")
    );
    assert_eq!(
        s.call("read", json!({"path": "missing.txt"})).await.code(),
        Some("not_found")
    );
    assert_eq!(
        s.call("read", json!({"path": "/etc/passwd"})).await.code(),
        Some("path_denied")
    );
    assert_eq!(
        s.call("read", json!({"path": 7})).await.code(),
        Some("invalid_arguments")
    );
}

#[tokio::test]
async fn write_creates_and_overwrites_and_is_confined() {
    let ws = Workspace::new(&[("a.txt", "old\n")]);
    let s = fs_session(&ws, FsMode::ReadWrite).await;
    let r = s
        .call("write", json!({"path": "new.txt", "content": "x\ny\n"}))
        .await;
    assert_eq!(ok(&r)["created"], true);
    assert_eq!(ws.read("new.txt"), "x\ny\n");
    assert_eq!(
        s.call("write", json!({"path": "a.txt", "content": "new\n"}))
            .await
            .code(),
        Some("stale_baseline")
    );
    ok(&s.call("read", json!({"path": "a.txt"})).await);
    let r = s
        .call("write", json!({"path": "a.txt", "content": "new\n"}))
        .await;
    assert_eq!(ok(&r)["created"], false);
    assert_eq!(ws.read("a.txt"), "new\n");
    let r = s
        .call("write", json!({"path": "../outside.txt", "content": "x"}))
        .await;
    assert_eq!(r.code(), Some("path_denied"));
    assert!(!ws.path().parent().unwrap().join("outside.txt").exists());
    let ro = fs_session(&ws, FsMode::ReadOnly).await;
    assert_eq!(
        ro.call("write", json!({"path": "n2.txt", "content": "x"}))
            .await
            .code(),
        Some("path_denied")
    );
}

#[tokio::test]
async fn edit_replaces_exactly_once_or_says_why_not() {
    let ws = Workspace::new(&[
        ("a.rs", "let x = 1;\nlet y = 2;\nlet x = 1;\n"),
        ("crlf.txt", "a\r\nb\r\n"),
    ]);
    let s = fs_session(&ws, FsMode::ReadWrite).await;
    ok(&s.call("read", json!({"path": "a.rs"})).await);
    let r = s
        .call(
            "edit",
            json!({"path": "a.rs", "old_text": "let x = 1;", "new_text": "let x = 3;"}),
        )
        .await;
    assert_eq!(r.code(), Some("ambiguous_match"));
    assert!(r.text().contains("lines 1, 3"), "{}", r.text());
    let r = s
        .call(
            "edit",
            json!({"path": "a.rs", "old_text": "nope", "new_text": "x"}),
        )
        .await;
    assert_eq!(r.code(), Some("no_match"));
    let r = s.call("edit", json!({"path": "a.rs", "old_text": "let y = 2;", "new_text": "let y = 20;\nlet z = 3;"})).await;
    let v = ok(&r);
    assert_eq!(
        (v["added"].as_u64(), v["removed"].as_u64()),
        (Some(2), Some(1))
    );
    assert!(r.text().contains("+let z = 3;"), "{}", r.text());
    let r = s
        .call("edit", json!({"path": "a.rs", "old_text": "let x = 1;", "new_text": "let x = 9;", "replace_all": true}))
        .await;
    assert_eq!(ok(&r)["replacements"], 2);
    assert_eq!(
        ws.read("a.rs"),
        "let x = 9;\nlet y = 20;\nlet z = 3;\nlet x = 9;\n"
    );
    ok(&s.call("read", json!({"path": "crlf.txt"})).await);
    ok(&s
        .call(
            "edit",
            json!({"path": "crlf.txt", "old_text": "b", "new_text": "c"}),
        )
        .await);
    assert_eq!(ws.read("crlf.txt"), "a\r\nc\r\n");
}

#[tokio::test]
async fn list_and_grep_walk_the_workspace() {
    let ws = Workspace::new(&[
        ("src/lib.rs", "pub fn alpha() {}\n// TODO: beta\n"),
        ("src/main.rs", "fn main() { alpha(); }\n"),
        ("docs/notes.md", "alpha notes\n"),
    ]);
    let s = fs_session(&ws, FsMode::ReadOnly).await;
    let r = s
        .call("list", json!({"path": ".", "glob": "**/*.rs"}))
        .await;
    let paths: Vec<&str> = ok(&r)["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["src/lib.rs", "src/main.rs"]);
    let r = s.call("list", json!({"path": ".", "glob": "*.py"})).await;
    assert_eq!(ok(&r)["entries"], json!([]));
    let r = s
        .call(
            "grep",
            json!({"pattern": "alpha", "path": ".", "include": ["*.rs"]}),
        )
        .await;
    assert_eq!(ok(&r)["matches"].as_array().unwrap().len(), 2);
    let r = s
        .call(
            "grep",
            json!({"pattern": "alpha", "path": ".", "max_matches": 1}),
        )
        .await;
    assert_eq!(ok(&r)["truncated"], true);
    let r = s
        .call(
            "grep",
            json!({"pattern": "TODO", "path": ".", "context": 1}),
        )
        .await;
    assert_eq!(ok(&r)["matches"][0]["before"], json!(["pub fn alpha() {}"]));
    assert_eq!(
        s.call("grep", json!({"pattern": "(", "path": "."}))
            .await
            .code(),
        Some("invalid_arguments")
    );
    assert_eq!(
        s.call("list", json!({"path": "/"})).await.code(),
        Some("path_denied")
    );
}

#[tokio::test]
async fn read_and_grep_stream_files_larger_than_the_memory_limit() {
    // A 40 MB log under a 16 MiB memory limit: the whole file never fits.
    let ws = Workspace::new(&[]);
    let lines = 1_000_000;
    let mut text = String::with_capacity(40 << 20);
    for i in 1..=lines {
        text.push_str(&format!("{i:>10} INFO request served in 3 ms\n"));
    }
    text.push_str("the needle at the end\n");
    std::fs::write(ws.path().join("big.log"), &text).unwrap();
    assert!(text.len() > 32 << 20);
    let policy = allow_in(ws.path(), FsMode::ReadOnly).limits(|l| l.memory_bytes = 16 << 20);
    let comps = vec![toolhost_tests::read().await, toolhost_tests::grep().await];
    let s = Session::new(comps, build(policy)).await;

    let r = s
        .call(
            "read",
            json!({"path": "big.log", "offset": 1_000_000, "limit": 2}),
        )
        .await;
    let v = ok(&r);
    assert_eq!(
        v["lines"],
        json!([
            "   1000000 INFO request served in 3 ms",
            "the needle at the end"
        ])
    );
    assert_eq!(v["totalLines"], lines + 1);
    assert_eq!(v["nextOffset"], Value::Null);
    let r = s.call("read", json!({"path": "big.log", "tail": 1})).await;
    assert_eq!(ok(&r)["offset"], lines + 1);
    assert_eq!(ok(&r)["lines"], json!(["the needle at the end"]));

    let r = s
        .call("grep", json!({"pattern": "needle", "path": "."}))
        .await;
    let v = ok(&r);
    assert_eq!(v["matches"][0]["line"], lines + 1);
    assert_eq!(v["filesSkipped"], 0);
    assert_eq!(v["bytesSearched"], text.len());
}

#[tokio::test]
async fn grep_leaves_out_ignored_and_hidden_files_and_says_so() {
    let ws = Workspace::new(&[
        (".gitignore", "target/\n"),
        ("src/lib.rs", "const KEY: &str = \"needle\";\n"),
        ("target/debug/out.rs", "needle in a build output\n"),
        (".env", "needle=1\n"),
        ("data.bin", "needle\u{0}\n"),
    ]);
    let s = fs_session(&ws, FsMode::ReadOnly).await;
    let r = s
        .call("grep", json!({"pattern": "needle", "path": "."}))
        .await;
    let v = ok(&r);
    assert_eq!(v["matches"].as_array().unwrap().len(), 1);
    assert_eq!(v["leftOut"]["ignored"], 1);
    assert_eq!(v["leftOut"]["hidden"], 2);
    assert_eq!(v["skipped"]["binary"], 1);
    let text = r.text();
    assert!(text.contains("(not searched: 1 binary)"), "{text}");
    assert!(
        text.contains("1 ignored by .gitignore/.ignore, 2 hidden, e.g. .env, .gitignore, target/"),
        "{text}"
    );
    let r = s
        .call(
            "grep",
            json!({"pattern": "needle", "path": ".", "no_ignore": true, "hidden": true}),
        )
        .await;
    assert_eq!(ok(&r)["matches"].as_array().unwrap().len(), 3);
}

/// Serves a few canned responses on 127.0.0.1 until the test ends.
async fn serve() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        for _ in 0..32 {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (ctype, body) = match path.as_str() {
                    "/page" => ("text/html", "<html><head><style>x{}</style></head><body><h1>Title</h1><p>Hello &amp; welcome</p><script>evil()</script></body></html>".to_owned()),
                    "/big" => ("text/plain", "z".repeat(50_000)),
                    "/img" => ("image/png", "\u{89}PNG".to_owned()),
                    _ => ("text/plain", "plain text".to_owned()),
                };
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    port
}

#[tokio::test]
async fn fetch_goes_through_the_egress_allow_list() {
    let port = serve().await;
    let policy = build(
        PolicyBuilder::new()
            .decision(Decision::Allow)
            .network(format!("127.0.0.1:{port}")),
    );
    let s = Session::new(vec![toolhost_tests::fetch().await], policy).await;
    let r = s
        .call(
            "fetch",
            json!({"url": format!("http://127.0.0.1:{port}/page")}),
        )
        .await;
    let text = ok(&r)["text"].as_str().unwrap().to_owned();
    assert!(
        text.contains("Title") && text.contains("Hello & welcome"),
        "{text}"
    );
    assert!(!text.contains("evil()") && !text.contains("x{}"), "{text}");
    let r = s
        .call(
            "fetch",
            json!({"url": format!("http://127.0.0.1:{port}/big"), "max_bytes": 1000}),
        )
        .await;
    assert_eq!(
        (ok(&r)["truncated"].as_bool(), ok(&r)["bytes"].as_u64()),
        (Some(true), Some(1000))
    );
    let r = s
        .call(
            "fetch",
            json!({"url": format!("http://127.0.0.1:{port}/img")}),
        )
        .await;
    assert_eq!(r.code(), Some("unsupported_content"));
    // Another port on the same host is not on the list.
    let r = s
        .call(
            "fetch",
            json!({"url": format!("http://127.0.0.1:{}/page", port.wrapping_add(1))}),
        )
        .await;
    assert_eq!(r.code(), Some("network_denied"));
    assert!(
        r.text()
            .contains(&format!("127.0.0.1:{}", port.wrapping_add(1))),
        "{}",
        r.text()
    );
    let r = s
        .call("fetch", json!({"url": "https://example.com/"}))
        .await;
    assert_eq!(r.code(), Some("network_denied"));
    assert!(r.text().contains("example.com:443"));
}
