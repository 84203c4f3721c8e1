//! The host assembly: toolbox → components → policies → registry, as every
//! front end uses it.
#![allow(clippy::unwrap_used, missing_docs)]

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{ContentBlock, ToolCall};
use toolhost_pipeline::ApproveAll;
use toolhost_policy::Decision;
use toolhost_tests::{Workspace, guests, shared_cache};
use toolhost_toolbox::{Host, HostConfig, HostError, Toolbox, embedded_default, find_toolbox};

fn host(artifact_capacity: usize) -> Host {
    Host::new(HostConfig {
        cache_dir: Some(shared_cache()),
        max_instances: 16,
        artifact_capacity,
        ..HostConfig::default()
    })
    .unwrap()
}

fn toolbox(ws: &Workspace, text: &str) -> Toolbox {
    std::fs::write(ws.file("toolhost.toml"), text).unwrap();
    find_toolbox(None, ws.path()).unwrap()
}

fn served(h: &Host) -> Vec<String> {
    h.registry()
        .visible(None)
        .iter()
        .map(|t| t.descriptor.name.clone())
        .collect()
}

#[tokio::test]
async fn the_embedded_default_serves_the_builtins_that_can_run() {
    let ws = Workspace::new(&[("a.txt", "alpha\n")]);
    let h = host(1 << 20);
    let report = h.load(&embedded_default(ws.path())).await.unwrap();
    assert_eq!(served(&h), ["edit", "grep", "list", "read", "write"]);
    let decisions: Vec<(String, Decision)> = report
        .served
        .iter()
        .map(|s| (s.name.clone(), s.decision))
        .collect();
    assert!(decisions.contains(&("read".into(), Decision::Allow)));
    assert!(decisions.contains(&("write".into(), Decision::Ask)));
    // fetch has no network allow-list by default, so it can never run.
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].name, "fetch");
    assert!(
        report.skipped[0].reason.contains("network"),
        "{:?}",
        report.skipped
    );
    // `.` of the default policies is the served directory.
    let p = h.session().build();
    let r = p
        .execute(
            ToolCall::new("c1", "read", r#"{"path":"a.txt"}"#),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(r.value().unwrap()["lines"], json!(["alpha"]));
    // Titles of contract 0.2.0 reach the MCP projection.
    let mcp = toolhost_pipeline::advertise::schemas(
        h.registry(),
        None,
        toolhost_pipeline::advertise::Format::Mcp,
    );
    assert_eq!(mcp[3]["title"], "Read a file");
}

#[tokio::test]
async fn clashing_names_are_refused_unless_prefixed() {
    let ws = Workspace::new(&[("a.txt", "alpha\n")]);
    let h = host(1 << 20);
    let tb = toolbox(
        &ws,
        "version = 1\n[[component]]\nsource = \"builtin:read\"\n\n[[component]]\nsource = \"builtin:read\"\n",
    );
    let err = h.load(&tb).await.unwrap_err();
    assert!(matches!(err, HostError::DuplicateTool { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("tool `read` is declared by both builtin:read"),
        "{msg}"
    );
    assert!(
        msg.contains("toolhost.toml:2") && msg.contains("toolhost.toml:5"),
        "{msg}"
    );
    assert!(msg.contains("prefix"), "{msg}");
    assert!(served(&h).is_empty(), "nothing was served");

    let tb = toolbox(
        &ws,
        "version = 1\n[[component]]\nsource = \"builtin:read\"\n\n[[component]]\nsource = \"builtin:read\"\nprefix = \"copy_\"\n",
    );
    h.load(&tb).await.unwrap();
    assert_eq!(served(&h), ["copy_read", "read"]);
    // The prefixed tool is called by its new name and runs the component's `read`.
    let p = h.session().build();
    let r = p
        .execute(
            ToolCall::new("c1", "copy_read", r#"{"path":"a.txt"}"#),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(r.value().unwrap()["lines"], json!(["alpha"]), "{r:?}");
}

#[tokio::test]
async fn a_broken_toolbox_keeps_the_previous_tools_serving() {
    let ws = Workspace::new(&[
        ("junk.wasm", "not a component"),
        ("bad.toml", "version = 1\ndecision = \"perhaps\"\n"),
    ]);
    let h = host(1 << 20);
    h.load(&toolbox(
        &ws,
        "version = 1\n[[component]]\nsource = \"builtin:read\"\n",
    ))
    .await
    .unwrap();
    assert_eq!(served(&h), ["read"]);

    // A component that does not load: the error names the entry's line.
    let broken = toolbox(
        &ws,
        "version = 1\n[[component]]\nsource = \"builtin:list\"\n\n[[component]]\nsource = \"junk.wasm\"\npolicy = \"bad.toml\"\n",
    );
    let err = h.load(&broken).await.unwrap_err().to_string();
    assert!(
        err.contains("toolhost.toml:5") && err.contains("junk.wasm"),
        "{err}"
    );
    assert_eq!(served(&h), ["read"], "the old tools still serve");

    // A policy file that does not parse: its own file:line:column comes through.
    std::fs::copy(guests::TOOL_LIST, ws.file("list.wasm")).unwrap();
    let broken = toolbox(
        &ws,
        "version = 1\n[[component]]\nsource = \"list.wasm\"\npolicy = \"bad.toml\"\n",
    );
    let err = h.load(&broken).await.unwrap_err().to_string();
    assert!(err.contains("toolhost.toml:2"), "{err}");
    assert!(
        err.contains("bad.toml:2:12: unknown variant `perhaps`"),
        "{err}"
    );
    assert_eq!(served(&h), ["read"]);

    // A toolbox file that does not parse is refused before anything loads.
    std::fs::write(
        ws.file("toolhost.toml"),
        "version = 1\n[[component]]\nsorce = \"x\"\n",
    )
    .unwrap();
    let err = find_toolbox(None, ws.path()).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("{}:3:1:", ws.file("toolhost.toml").display())),
        "{err}"
    );
}

/// A flood of huge results keeps the artifact store within its bound: the
/// oldest overflow is evicted, the newest can still be paged.
#[tokio::test]
async fn a_flood_of_huge_results_does_not_grow_the_artifact_store() {
    let ws = Workspace::new(&[]);
    let capacity = 256 * 1024;
    let h = host(capacity);
    let tb = toolbox(
        &ws,
        &format!(
            "version = 1\n[[component]]\nsource = {:?}\n[component.policy]\ndecision = \"allow\"\n[component.policy.limits]\nmax_result_bytes = 1024\n",
            guests::GUEST_HOSTILE
        ),
    );
    h.load(&tb).await.unwrap();
    let p = h
        .session()
        .approver(std::sync::Arc::new(ApproveAll))
        .build();
    let big = "x".repeat(20_000);
    let mut last_link = None;
    for i in 0..100 {
        let r = p
            .execute(
                ToolCall::new(
                    format!("c{i}"),
                    "echo",
                    json!({"blob": big, "i": i}).to_string(),
                ),
                CancellationToken::new(),
            )
            .await;
        assert!(!r.is_error(), "{r:?}");
        assert!(h.artifacts().bytes() <= capacity);
        last_link = r.content().iter().find_map(|b| match b {
            ContentBlock::ResourceLink { uri, .. } => Some(uri.clone()),
            _ => None,
        });
    }
    assert!(
        h.artifacts().evicted() > 80,
        "evicted {}",
        h.artifacts().evicted()
    );
    let uri = last_link.expect("the last result links its overflow");
    let (page, total) = h
        .artifacts()
        .page(&uri, 0, 100)
        .expect("the newest is kept");
    assert!(total > 20_000 && page.len() == 100, "{total}");
    // Every session of the host shares the one bounded store.
    assert!(std::sync::Arc::ptr_eq(p.artifacts(), h.artifacts()));
}
