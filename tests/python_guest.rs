//! A tool written in Python (`guest-tools/python`, built from source with
//! componentize-py by its `build.sh`) through the whole pipeline, as the
//! Rust tools are: normal calls and their rendering, a tool's own error, a
//! path the host denies before Python runs, a value the host finds off its
//! declared output schema, and a deadline.
#![allow(clippy::unwrap_used, missing_docs)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use tokio::sync::OnceCell;
use toolhost_contract::{ToolCall, ToolResult};
use toolhost_pipeline::{Pipeline, Registration, Registry, Scope, ToolSpec};
use toolhost_policy::{FsMode, Policy};
use toolhost_runtime::{LoadedComponent, Runtime, RuntimeConfig};
use toolhost_tests::{Workspace, allow_in, build, guests::REPO_ROOT, shared_cache};

const CSV: &str = "city,country,population,capital\n\
Paris,FR,2102650,true\n\
Lyon,FR,522250,false\n\
Berlin,DE,3878100,true\n\
Hamburg,DE,1910160,false\n";

/// Builds the component (once per test binary; `build.sh` skips the build
/// when its sources did not change) and returns its path.
fn component_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let out = Path::new(REPO_ROOT).join("target/python-guests/tool_table.wasm");
        let started = std::time::Instant::now();
        let status = Command::new("bash")
            .arg(Path::new(REPO_ROOT).join("guest-tools/python/build.sh"))
            .arg(&out)
            .status()
            .expect("running guest-tools/python/build.sh");
        assert!(status.success(), "guest-tools/python/build.sh failed");
        eprintln!(
            "python guest: build.sh took {:.1} s",
            started.elapsed().as_secs_f64()
        );
        out
    })
}

/// The loaded component, compiled into (or loaded from) the shared cache.
async fn component() -> Arc<LoadedComponent> {
    static RT: OnceLock<Runtime> = OnceLock::new();
    static CELL: OnceCell<Arc<LoadedComponent>> = OnceCell::const_new();
    CELL.get_or_init(|| async {
        let rt = RT.get_or_init(|| {
            Runtime::new(RuntimeConfig {
                cache_dir: Some(shared_cache()),
                max_instances: 8,
                ..RuntimeConfig::default()
            })
            .unwrap()
        });
        let started = std::time::Instant::now();
        let c = rt.load(component_path()).await.unwrap();
        eprintln!(
            "python guest: loaded in {:.2} s ({:?}), {} bytes",
            started.elapsed().as_secs_f64(),
            c.cache_outcome(),
            std::fs::metadata(component_path()).map_or(0, |m| m.len())
        );
        c
    })
    .await
    .clone()
}

/// The shipped policy of the component, `.` being `ws`.
fn shipped_policy(ws: &Workspace) -> Policy {
    let file = Path::new(REPO_ROOT).join("guest-tools/python/tools/table/policy.toml");
    Policy::load(&file, ws.path()).unwrap()
}

async fn pipeline(policy: &Policy) -> (Pipeline, Registration) {
    let registry = Registry::new();
    let reg = registry
        .register_component(Scope::Global, &component().await, policy)
        .unwrap();
    (Pipeline::builder(registry).build(), reg)
}

async fn call(p: &Pipeline, tool: &str, args: Value) -> ToolResult {
    p.execute(
        ToolCall::new("py", tool, args.to_string()),
        Default::default(),
    )
    .await
}

fn value(r: &ToolResult) -> &Value {
    r.value().unwrap_or_else(|| panic!("a value: {r:?}"))
}

#[tokio::test]
async fn python_table_tools_answer_through_the_pipeline_and_render_tables() {
    let ws = Workspace::new(&[("cities.csv", CSV)]);
    let (p, _reg) = pipeline(&shipped_policy(&ws)).await;

    let schema = call(&p, "table_schema", json!({"path": "cities.csv"})).await;
    let v = value(&schema);
    assert_eq!(v["rows"], 4, "{v}");
    let types: Vec<(&str, &str)> = v["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        types,
        [
            ("city", "string"),
            ("country", "string"),
            ("population", "integer"),
            ("capital", "boolean")
        ]
    );
    // The content is the tool's own rendering (a table), not the host's JSON.
    let text = schema.text();
    assert!(text.contains("| population | integer |"), "{text}");

    let filtered = call(
        &p,
        "table_filter",
        json!({"path": "/workspace/cities.csv", "where": [{"column": "country", "op": "eq", "value": "DE"}], "columns": ["city", "population"]}),
    )
    .await;
    let v = value(&filtered);
    assert_eq!(v["matched"], 2, "{v}");
    assert_eq!(
        v["rows"],
        json!([{"city": "Berlin", "population": 3878100}, {"city": "Hamburg", "population": 1910160}])
    );

    let stats = call(
        &p,
        "table_stats",
        json!({"path": "cities.csv", "columns": ["population"]}),
    )
    .await;
    assert!(!stats.is_error(), "{stats:?}");
    assert!(stats.text().contains("population"), "{}", stats.text());

    // The tool's own failure, with its code.
    let unknown = call(
        &p,
        "table_filter",
        json!({"path": "cities.csv", "columns": ["prize"]}),
    )
    .await;
    assert_eq!(unknown.code(), Some("unknown_column"), "{unknown:?}");
    // Arguments off the input schema never reach Python.
    let before = p.dispatches();
    let bad = call(
        &p,
        "table_filter",
        json!({"path": "cities.csv", "limit": 5000}),
    )
    .await;
    assert_eq!(bad.code(), Some("invalid_arguments"));
    assert_eq!(p.dispatches(), before);
}

#[tokio::test]
async fn a_path_outside_the_grant_is_denied_before_python_runs() {
    let ws = Workspace::new(&[("cities.csv", CSV)]);
    let (p, _reg) = pipeline(&shipped_policy(&ws)).await;
    for path in [
        "/etc/passwd",
        "../cities.csv",
        "/workspace/../../etc/passwd",
    ] {
        let r = call(&p, "table_schema", json!({ "path": path })).await;
        assert_eq!(r.code(), Some("path_denied"), "{path}: {r:?}");
    }
    assert_eq!(p.dispatches(), 0);
}

#[tokio::test]
async fn a_value_off_the_declared_output_schema_is_caught_by_the_host() {
    let ws = Workspace::new(&[("cities.csv", CSV)]);
    let policy = shipped_policy(&ws);
    let c = component().await;
    // The same component, registered with a stricter output schema than
    // the value it returns: the host, not the tool, checks the value.
    let mut d = c.tool("table_schema").unwrap().clone();
    d.output_schema["required"] = json!(["rows", "columns", "checksum"]);
    let registry = Registry::new();
    let _reg = registry
        .register(
            Scope::Global,
            vec![ToolSpec {
                policy: policy.for_tool(&d.name),
                descriptor: d,
                body: Arc::new(c.clone()),
                source: "python".into(),
            }],
        )
        .unwrap();
    let p = Pipeline::builder(registry).build();
    let r = call(&p, "table_schema", json!({"path": "cities.csv"})).await;
    assert_eq!(r.code(), Some("output_invalid"), "{r:?}");
    assert!(r.text().contains("checksum"), "{}", r.text());
}

#[tokio::test]
async fn a_python_call_past_its_deadline_times_out() {
    let mut big = String::from("a,b,c\n");
    for i in 0..200_000 {
        big.push_str(&format!("{i},{},{}\n", i * 7, i % 13));
    }
    let ws = Workspace::new(&[("big.csv", &big)]);
    let policy = build(allow_in(ws.path(), FsMode::ReadOnly).limits(|l| {
        l.timeout_ms = 300;
        l.fuel = 1_000_000_000_000;
        l.memory_bytes = 512 << 20;
    }));
    let (p, _reg) = pipeline(&policy).await;
    let started = std::time::Instant::now();
    let r = call(&p, "table_stats", json!({"path": "big.csv"})).await;
    assert_eq!(r.code(), Some("timeout"), "{r:?}");
    assert!(
        started.elapsed().as_secs() < 5,
        "the deadline held: {:?}",
        started.elapsed()
    );
}
