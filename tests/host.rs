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

fn uncached() -> Host {
    Host::new(HostConfig {
        cache_dir: None,
        max_instances: 8,
        ..HostConfig::default()
    })
    .unwrap()
}

/// The built-ins were compiled when toolhost was built: a host without any
/// cache loads them without compiling.
#[tokio::test]
async fn the_builtins_load_precompiled_without_any_cache() {
    let ws = Workspace::new(&[]);
    let h = uncached();
    h.load(&embedded_default(ws.path())).await.unwrap();
    let components = h.components();
    assert_eq!(components.len(), 6);
    for c in components {
        assert_eq!(
            c.cache_outcome(),
            toolhost_runtime::CacheOutcome::Precompiled,
            "{}",
            c.path().display()
        );
    }
}

/// An embedded artifact this engine refuses (another wasmtime, another
/// CPU, corrupt) is compiled from the component instead.
#[tokio::test]
async fn a_precompiled_artifact_that_does_not_fit_is_compiled_instead() {
    let h = uncached();
    let read = toolhost_builtins::get("read").unwrap();
    let c = h
        .runtime()
        .load_precompiled(
            std::path::Path::new("builtin:read"),
            read.wasm,
            b"not an artifact",
        )
        .await
        .unwrap();
    assert_eq!(c.cache_outcome(), toolhost_runtime::CacheOutcome::Disabled);
    assert_eq!(c.tools()[0].name, "read");
}

/// `Host::start` serves at once what is ready, the rest as it loads; a
/// call to a tool still loading waits for it; a component that fails is
/// named where its tools are asked for, and the others serve.
#[tokio::test]
async fn a_started_host_serves_each_component_when_it_is_ready() {
    let ws = Workspace::new(&[("a.txt", "alpha\n"), ("broken.wasm", "not wasm")]);
    let tb = toolbox(
        &ws,
        &format!(
            "version = 1\n\
             [[component]]\nsource = \"builtin:read\"\n\
             [[component]]\nsource = \"broken.wasm\"\n\
             [component.policy]\ndecision = \"allow\"\n\
             [[component]]\nsource = '{}'\n\
             [component.policy]\ndecision = \"allow\"\n",
            guests::GUEST_HOSTILE
        ),
    );
    let h = std::sync::Arc::new(uncached());
    let changes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = changes.clone();
    let startup = h
        .start(
            tb,
            std::sync::Arc::new(move || {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }),
        )
        .unwrap();
    // The hostile guest compiles (no cache): it is still loading now.
    assert!(h.registry().is_loading());
    // A call to one of its tools waits for it, then runs.
    let p = h
        .session()
        .approver(std::sync::Arc::new(ApproveAll))
        .build();
    let r = p
        .execute(
            ToolCall::new("c1", "echo", r#"{"x":1}"#),
            CancellationToken::new(),
        )
        .await;
    assert!(!r.is_error(), "{r:?}");
    let report = startup.finished().await;
    assert!(!h.registry().is_loading());
    assert!(report.served.iter().any(|s| s.name == "read"));
    assert!(report.served.iter().any(|s| s.name == "echo"));
    assert_eq!(report.failed.len(), 1, "{:?}", report.failed);
    assert!(report.failed[0].0.ends_with("broken.wasm"));
    assert_eq!(changes.load(std::sync::atomic::Ordering::SeqCst), 3);
    // A tool nobody serves: the failed component is named.
    let r = p
        .execute(ToolCall::new("c2", "csv", "{}"), CancellationToken::new())
        .await;
    let message = r.error().unwrap().message.clone();
    assert!(
        message.contains("not loaded: ") && message.contains("broken.wasm"),
        "{message}"
    );
}

/// A started toolbox whose file is missing fails at once, before serving.
#[tokio::test]
async fn a_started_host_refuses_a_missing_component_at_once() {
    let ws = Workspace::new(&[]);
    let tb = toolbox(
        &ws,
        "version = 1\n[[component]]\nsource = \"gone.wasm\"\n[component.policy]\ndecision = \"allow\"\n",
    );
    let h = std::sync::Arc::new(uncached());
    let e = h.start(tb, std::sync::Arc::new(|| {})).unwrap_err();
    assert!(matches!(e, HostError::Load { .. }), "{e}");
    assert!(e.to_string().contains("gone.wasm"), "{e}");
}

/// A tool declared but not served says why, to the model that calls it.
#[tokio::test]
async fn a_tool_that_is_not_served_says_why() {
    let ws = Workspace::new(&[]);
    let h = host(1 << 20);
    h.load(&embedded_default(ws.path())).await.unwrap();
    let p = h.session().build();
    let r = p
        .execute(
            ToolCall::new("c1", "fetch", r#"{"url":"https://example.com/"}"#),
            CancellationToken::new(),
        )
        .await;
    let e = r.error().unwrap();
    assert_eq!(e.code.as_str(), "unknown_tool");
    assert!(
        e.message.starts_with(
            "`fetch` is not served: its component needs what the policy does not grant"
        ) && e.message.contains("network"),
        "{}",
        e.message
    );
}

/// A call cancelled while its tool's component still loads ends
/// `cancelled`, not `unknown_tool`.
#[tokio::test]
async fn a_call_cancelled_while_components_load_is_cancelled() {
    let ws = Workspace::new(&[]);
    let tb = toolbox(
        &ws,
        &format!(
            "version = 1\n[[component]]\nsource = '{}'\n[component.policy]\ndecision = \"allow\"\n",
            guests::GUEST_HOSTILE
        ),
    );
    let h = std::sync::Arc::new(uncached());
    let startup = h.start(tb, std::sync::Arc::new(|| {})).unwrap();
    assert!(h.registry().is_loading());
    let p = h.session().build();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let r = p.execute(ToolCall::new("c1", "echo", "{}"), cancel).await;
    assert_eq!(
        r.error().map(|e| e.code.as_str().to_owned()).as_deref(),
        Some("cancelled"),
        "{r:?}"
    );
    startup.finished().await;
}

/// A search while components are still loading never answers from part of
/// the toolbox in silence: one that does not wait names what is still
/// loading (and the model can search again); one that waits for the load
/// finds the tools that came, and names nothing.
#[tokio::test]
async fn a_search_during_a_load_says_what_is_still_loading() {
    use toolhost_toolbox::search;
    let ws = Workspace::new(&[("a.txt", "alpha\n")]);
    let tb = toolbox(
        &ws,
        &format!(
            "version = 1\n\
             [[component]]\nsource = \"builtin:read\"\n\
             [[component]]\nsource = '{}'\n\
             [component.policy]\ndecision = \"allow\"\n",
            guests::GUEST_HOSTILE
        ),
    );
    let h = std::sync::Arc::new(uncached());
    let startup = h.start(tb, std::sync::Arc::new(|| {})).unwrap();
    // The hostile guest compiles (no cache): it is still loading now.
    assert!(h.registry().is_loading());
    let (registry, mode) = (h.registry(), h.registry().mode());
    let cancel = CancellationToken::new();
    let names = |v: &serde_json::Value| -> Vec<String> {
        v["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["name"].as_str())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let now = std::time::Duration::ZERO;
    let hasty = search::answer(registry, mode, "echo", 5, Default::default(), now, &cancel)
        .await
        .unwrap();
    assert!(!names(&hasty).contains(&"echo".to_owned()), "{hasty}");
    let loading = &hasty["loading"];
    assert!(
        loading["components"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c.as_str() == Some(guests::GUEST_HOSTILE))),
        "{hasty}"
    );
    assert!(
        loading["note"]
            .as_str()
            .is_some_and(|n| n.contains("again")),
        "{hasty}"
    );
    let patient = std::time::Duration::from_secs(300);
    let settled = search::answer(
        registry,
        mode,
        "echo",
        5,
        Default::default(),
        patient,
        &cancel,
    )
    .await
    .unwrap();
    assert!(names(&settled).contains(&"echo".to_owned()), "{settled}");
    assert!(settled.get("loading").is_none(), "{settled}");
    let _ = startup.finished().await;
}

/// `search_tools` shows a tool as the caller's `tools/list` does: the
/// built-ins' `baseline` argument only where the host issues baseline
/// handles.
#[tokio::test]
async fn search_tools_shows_the_baseline_argument_only_where_handles_are_issued() {
    let ws = Workspace::new(&[("a.txt", "alpha\n")]);
    // Every tool past `defer_over = 0` is deferred: `search_tools` serves.
    let tb = toolbox(
        &ws,
        "version = 1\ndefer_over = 0\n\
         [[component]]\nsource = \"builtin:edit\"\nadvertise = \"deferred\"\n",
    );
    let h = uncached();
    h.load(&tb).await.unwrap();
    let search = |p: toolhost_pipeline::Pipeline| async move {
        let r = p
            .execute(
                ToolCall::new("s", "search_tools", r#"{"query": "edit a file"}"#),
                CancellationToken::new(),
            )
            .await;
        let value = r.value().cloned().unwrap_or_else(|| panic!("{r:?}"));
        let edit = value["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == "edit").cloned())
            .unwrap_or_else(|| panic!("edit is found: {value}"));
        edit["inputSchema"]["properties"].get("baseline").is_some()
    };
    let plain = h
        .session()
        .approver(std::sync::Arc::new(ApproveAll))
        .build();
    assert!(!search(plain).await, "no handles, no baseline argument");
    let key = toolhost_pipeline::baseline::HandleKey::from_secret(&[7; 32]).unwrap();
    let sealed = h
        .session()
        .approver(std::sync::Arc::new(ApproveAll))
        .baseline_handles(key)
        .build();
    assert!(search(sealed).await, "handles: the baseline argument");
}

/// Code mode's `run_code` declares the tools its scripts call as the host
/// lists them: `edit`'s `baseline` argument only where the host issues
/// baseline handles.
#[tokio::test]
async fn run_code_declares_the_baseline_argument_only_where_handles_are_issued() {
    use toolhost_pipeline::advertise::{Format, schemas_listed};
    let ws = Workspace::new(&[("a.txt", "alpha\n")]);
    let tb = toolbox(
        &ws,
        "version = 1\nmode = \"code\"\n[[component]]\nsource = \"builtin:edit\"\n",
    );
    let h = uncached();
    h.load(&tb).await.unwrap();
    let run_code = |handles: bool| {
        let listed = schemas_listed(h.registry(), None, Format::Mcp, handles);
        let t = listed
            .iter()
            .find(|t| t["name"] == "run_code")
            .cloned()
            .unwrap_or_else(|| panic!("run_code is listed: {listed:?}"));
        t["description"].as_str().unwrap_or_default().to_owned()
    };
    let (plain, sealed) = (run_code(false), run_code(true));
    assert!(
        plain.contains("function edit(") && sealed.contains("function edit("),
        "{plain}"
    );
    assert!(
        !plain.contains("baseline"),
        "no handles, no baseline: {plain}"
    );
    assert!(
        sealed.contains("baseline"),
        "handles: the baseline argument: {sealed}"
    );
}
