//! Tools written in other languages, built from source by their own
//! `build.sh` (`guest-tools/<language>/`), through the whole pipeline as
//! the Rust tools are: normal calls and their rendering, a tool's own
//! error, a path the host denies before the guest runs, a value the host
//! finds off its declared output schema, and a deadline; for the kits on
//! contract 0.3.0, what a tool reports while it runs reaching the host,
//! and (C and Go, whose kits lower the canonical ABI themselves or through
//! wit-bindgen-c) every kind of content block reaching it exactly, and a
//! tool declaring host-renders running in one instance.
#![allow(clippy::unwrap_used, missing_docs)]

use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, Once, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};
use toolhost_contract::{
    Annotations, ContentBlock, ContextEvent, EmbeddedResource, ResourceContents, ToolCall,
    ToolResult,
};
use toolhost_pipeline::{Pipeline, Registration, Registry, Scope, ToolSpec};
use toolhost_policy::{Decision, FsMode, Policy, PolicyBuilder, RenderMode};
use toolhost_runtime::{LoadedComponent, Runtime, RuntimeConfig};
use toolhost_tests::{Workspace, allow_in, build, guests::REPO_ROOT, rendered_by, shared_cache};

/// A guest in another language: its build script's directory and the
/// tool it builds. The component goes to `target/<dir>-guests/tool_<tool>.wasm`
/// and the tool's policy is `guest-tools/<dir>/tools/<tool>/policy.toml`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Guest {
    /// `guest-tools/<dir>`.
    dir: &'static str,
    /// The tool built, `guest-tools/<dir>/tools/<tool>`.
    tool: &'static str,
}

impl Guest {
    /// The component built.
    fn out(&self) -> PathBuf {
        Path::new(REPO_ROOT)
            .join("target")
            .join(format!("{}-guests", self.dir))
            .join(format!("tool_{}.wasm", self.tool))
    }

    /// `guest-tools/<dir>`.
    fn home(&self) -> PathBuf {
        Path::new(REPO_ROOT).join("guest-tools").join(self.dir)
    }
}

const PYTHON: Guest = Guest {
    dir: "python",
    tool: "table",
};

const C: Guest = Guest {
    dir: "c",
    tool: "hash",
};

const JS: Guest = Guest {
    dir: "js",
    tool: "markdown",
};

const GO: Guest = Guest {
    dir: "go",
    tool: "gosource",
};

/// The Go template (`count_lines`), which reports progress on large files.
const GO_TEMPLATE: Guest = Guest {
    dir: "go",
    tool: "template",
};

/// The C kit's test fixture (`blocks`, every kind of content block;
/// `plain`, which declares host-renders).
const C_BLOCKS: Guest = Guest {
    dir: "c",
    tool: "blocks",
};

/// The Go kit's test fixture, the same tools as [`C_BLOCKS`].
const GO_BLOCKS: Guest = Guest {
    dir: "go",
    tool: "blocks",
};

/// Every guest this file builds: a run of the whole file builds them all.
const GUESTS: [Guest; 7] = [C, C_BLOCKS, GO, GO_BLOCKS, GO_TEMPLATE, JS, PYTHON];

/// The guests of one language built so far, and how each build went.
type Builds = Mutex<Vec<(Guest, Result<(), String>)>>;

/// The languages' directories, `guest-tools/<dir>`.
const LANGUAGES: [&str; 4] = ["c", "go", "js", "python"];

/// A language's [`Builds`]. Its builds take turns under this lock (they
/// share its toolchain's install); different languages build at the same
/// time.
fn turn(dir: &str) -> &'static Builds {
    static TURNS: [Builds; 4] = [const { Mutex::new(Vec::new()) }; 4];
    let i = LANGUAGES
        .iter()
        .position(|d| *d == dir)
        .expect("a known language");
    &TURNS[i]
}

/// Builds `g` unless this test binary has, and says how its build went.
fn build_in_turn(g: &Guest) -> Result<(), String> {
    let mut done = turn(g.dir).lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, outcome)) = done.iter().find(|(d, _)| d == g) {
        return outcome.clone();
    }
    let script = g.home().join("build.sh");
    let started = Instant::now();
    let outcome = match Command::new("bash")
        .arg(&script)
        .arg(g.out())
        .arg(g.tool)
        .status()
    {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{} {} failed: {s}", script.display(), g.tool)),
        Err(e) => Err(format!(
            "{} {} did not start: {e}",
            script.display(),
            g.tool
        )),
    };
    eprintln!(
        "{}/{}: build.sh took {:.1} s",
        g.dir,
        g.tool,
        started.elapsed().as_secs_f64()
    );
    done.push((*g, outcome.clone()));
    outcome
}

/// Builds `g` (once per test binary; a build script skips the build when
/// its sources did not change) and returns the component's path.
///
/// A run of the whole file starts every language's builds at its first
/// build, a thread per language: one language's downloads and compiles
/// overlap another's, and a language's tests run while the others still
/// build (one build at a time, a fresh machine left a core idle on every
/// download). A filtered run (`cargo test --test languages python`) builds
/// only what its tests ask for.
fn built(g: &Guest) -> PathBuf {
    static START: Once = Once::new();
    START.call_once(|| {
        if filtered() {
            return;
        }
        for dir in LANGUAGES {
            thread::spawn(move || {
                for g in GUESTS.iter().filter(|g| g.dir == dir) {
                    // A failure is kept for the test that needs the guest.
                    let _ = build_in_turn(g);
                }
            });
        }
    });
    if let Err(e) = build_in_turn(g) {
        panic!("{e}");
    }
    g.out()
}

/// Whether this run names tests to run (libtest's positional arguments),
/// rather than running the whole file.
fn filtered() -> bool {
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            // libtest's options that take a value as the next argument.
            "--test-threads" | "--skip" | "--format" | "--color" | "-Z" | "--logfile"
            | "--shuffle-seed" => {
                args.next();
            }
            a if !a.starts_with('-') => return true,
            _ => {}
        }
    }
    false
}

/// The loaded component, compiled into (or loaded from) the shared cache.
async fn component(g: &Guest) -> Arc<LoadedComponent> {
    // Built before the lock is taken: a test waiting for its language's
    // build does not hold up another language's tests.
    let path = built(g);
    static RT: OnceLock<Runtime> = OnceLock::new();
    static LOADED: tokio::sync::Mutex<Option<HashMap<Guest, Arc<LoadedComponent>>>> =
        tokio::sync::Mutex::const_new(None);
    let mut loaded = LOADED.lock().await;
    let map = loaded.get_or_insert_with(HashMap::new);
    if let Some(c) = map.get(g) {
        return c.clone();
    }
    let rt = RT.get_or_init(|| {
        Runtime::new(RuntimeConfig {
            cache_dir: Some(shared_cache()),
            max_instances: 8,
            ..RuntimeConfig::default()
        })
        .unwrap()
    });
    let started = Instant::now();
    let c = rt.load(&path).await.unwrap();
    eprintln!(
        "{}/{}: loaded in {:.2} s ({:?}), {} bytes",
        g.dir,
        g.tool,
        started.elapsed().as_secs_f64(),
        c.cache_outcome(),
        std::fs::metadata(&path).map_or(0, |m| m.len())
    );
    map.insert(*g, c.clone());
    c
}

/// The guest's shipped policy, `.` being `ws`.
fn shipped_policy(g: &Guest, ws: &Workspace) -> Policy {
    let file = g.home().join("tools").join(g.tool).join("policy.toml");
    Policy::load(&file, ws.path()).unwrap()
}

async fn pipeline(g: &Guest, policy: &Policy) -> (Pipeline, Registration) {
    pipeline_of(&component(g).await, policy)
}

/// A pipeline serving `c` under `policy`.
fn pipeline_of(c: &Arc<LoadedComponent>, policy: &Policy) -> (Pipeline, Registration) {
    let registry = Registry::new();
    let reg = registry
        .register_component(Scope::Global, c, policy)
        .unwrap();
    (Pipeline::builder(registry).build(), reg)
}

/// `g` loaded in a runtime of its own, its epoch ticking every
/// `epoch_tick`, so that its instance count and its epoch are the test's
/// alone (the tests of a binary run at once).
async fn own_runtime(g: &Guest, epoch_tick: Duration) -> (Runtime, Arc<LoadedComponent>) {
    component(g).await; // compiled into the shared cache once
    let rt = Runtime::new(RuntimeConfig {
        cache_dir: Some(shared_cache()),
        epoch_tick,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let c = rt.load(&built(g)).await.unwrap();
    (rt, c)
}

async fn call(p: &Pipeline, tool: &str, args: Value) -> ToolResult {
    p.execute(
        ToolCall::new("lang", tool, args.to_string()),
        Default::default(),
    )
    .await
}

fn value(r: &ToolResult) -> &Value {
    r.value().unwrap_or_else(|| panic!("a value: {r:?}"))
}

/// A progress report, as the host records it in a result.
fn progress(done: u64, total: Option<u64>, message: Option<&str>) -> ContextEvent {
    ContextEvent::Progress {
        done,
        total,
        message: message.map(str::to_owned),
    }
}

/// Paths outside the grant are denied by the host; the guest never runs.
async fn denies_paths_before_the_guest_runs(g: &Guest, tool: &str, ws: &Workspace) {
    let (p, _reg) = pipeline(g, &shipped_policy(g, ws)).await;
    for path in ["/etc/passwd", "../x", "/workspace/../../etc/passwd"] {
        let r = call(&p, tool, json!({ "path": path })).await;
        assert_eq!(r.code(), Some("path_denied"), "{path}: {r:?}");
    }
    assert_eq!(p.dispatches(), 0);
}

/// The same component registered with a stricter output schema than the
/// value it returns: the host, not the guest, checks the value.
async fn checks_values_against_the_declared_schema(
    g: &Guest,
    tool: &str,
    args: Value,
    ws: &Workspace,
) {
    let policy = shipped_policy(g, ws);
    let c = component(g).await;
    let mut d = c.tool(tool).unwrap().clone();
    let mut required = d.output_schema["required"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    required.push(json!("checksum_of_the_universe"));
    d.output_schema["required"] = Value::Array(required);
    let registry = Registry::new();
    let _reg = registry
        .register(
            Scope::Global,
            vec![ToolSpec {
                policy: policy.for_tool(&d.name),
                descriptor: d,
                body: Arc::new(c.clone()),
                source: g.dir.into(),
                deferred: false,
                listed_with_handles: None,
            }],
        )
        .unwrap();
    let p = Pipeline::builder(registry).build();
    let r = call(&p, tool, args).await;
    assert_eq!(r.code(), Some("output_invalid"), "{r:?}");
    assert!(
        r.text().contains("checksum_of_the_universe"),
        "{}",
        r.text()
    );
}

/// A call on `file` (written into a fresh workspace) past a deadline of
/// `timeout_ms` ends as `timeout`, on time.
async fn times_out(g: &Guest, tool: &str, file: (&str, &str), timeout_ms: u64) {
    times_out_in(&component(g).await, tool, file, timeout_ms).await;
}

/// [`times_out`] for `c`, loaded in the runtime the test chose.
async fn times_out_in(c: &Arc<LoadedComponent>, tool: &str, file: (&str, &str), timeout_ms: u64) {
    let ws = Workspace::new(&[file]);
    let policy = build(allow_in(ws.path(), FsMode::ReadOnly).limits(|l| {
        l.timeout_ms = timeout_ms;
        l.fuel = 1_000_000_000_000;
        l.memory_bytes = 512 << 20;
    }));
    let (p, _reg) = pipeline_of(c, &policy);
    let started = Instant::now();
    let r = call(&p, tool, json!({"path": file.0})).await;
    assert_eq!(r.code(), Some("timeout"), "{r:?}");
    assert!(
        started.elapsed().as_secs() < 5,
        "the deadline held: {:?}",
        started.elapsed()
    );
}

/// Text whose length in bytes (16) is neither its length in characters
/// (9) nor in UTF-16 units (10).
const UTF8: &str = "héllo é€😀";

/// Base64 (RFC 4648, padded), written here: each kit has its own.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize])
            } else {
                '='
            });
        }
    }
    out
}

/// What the blocks fixture's `blocks` renders for `text` and a blob of
/// `blob_bytes` pattern bytes (both kits the same: see
/// `guest-tools/<kit>/tools/blocks/`).
fn every_block(text: &str, blob_bytes: usize) -> Vec<ContentBlock> {
    let pattern: Vec<u8> = (0..blob_bytes)
        .map(|i| ((i * 31 + 7) % 256) as u8)
        .collect();
    let resource = |uri: &str, mime_type: Option<&str>, contents| ContentBlock::Resource {
        resource: EmbeddedResource {
            uri: uri.into(),
            mime_type: mime_type.map(Into::into),
            contents,
        },
    };
    vec![
        ContentBlock::text(text),
        ContentBlock::Image {
            data: base64(b"\x89PNG\r\n\x1a\n"),
            mime_type: "image/png".into(),
        },
        ContentBlock::Audio {
            data: base64(b"RIFF\x04\0\0\0WAVE"),
            mime_type: "audio/wav".into(),
        },
        resource(
            "file:///workspace/notes/café.md",
            Some("text/markdown; charset=utf-8"),
            ResourceContents::Text(format!("# Notes ✓\n\n{text}")),
        ),
        resource(
            "blob://pattern",
            Some("application/octet-stream"),
            ResourceContents::Blob(base64(&pattern)),
        ),
        resource("memo://empty", None, ResourceContents::Text(String::new())),
        resource("blob://tiny", None, ResourceContents::Blob("AP8Q".into())),
        ContentBlock::ResourceLink {
            uri: "https://example.com/ü/doc.md".into(),
            name: "doc ✓".into(),
            mime_type: Some("text/markdown".into()),
            description: Some("A linked document — é€😀".into()),
        },
        ContentBlock::ResourceLink {
            uri: "file:///workspace/README".into(),
            name: "README".into(),
            mime_type: None,
            description: None,
        },
    ]
}

/// `content` is `want`, block by block (a failure shows the start of the
/// two blocks, not 100 KB of base64).
fn assert_blocks(content: &[ContentBlock], want: &[ContentBlock]) {
    let head = |b: &ContentBlock| format!("{b:?}").chars().take(400).collect::<String>();
    assert_eq!(
        content.len(),
        want.len(),
        "{:?}",
        content.iter().map(head).collect::<Vec<_>>()
    );
    for (i, (got, want)) in content.iter().zip(want).enumerate() {
        assert!(
            got == want,
            "block {i}:\n{}\nwant\n{}",
            head(got),
            head(want)
        );
    }
}

/// The fixture's `render`, its blocks lowered by the kit and lifted by the
/// host, reaches the content exactly: every kind of block and both cases
/// of every option and of the resource contents, once with non-ASCII text
/// and a blob of 75,000 bytes (100,000 of base64, through the kits'
/// reallocations), once with everything empty.
async fn renders_every_block_kind(g: &Guest) {
    assert_eq!(component(g).await.contract_version(), Some("0.3.0"));
    let ws = Workspace::new(&[]);
    let (p, _reg) = pipeline(g, &shipped_policy(g, &ws)).await;
    for (text, blob_bytes) in [(UTF8, 75_000), ("", 0)] {
        let r = call(
            &p,
            "blocks",
            json!({"text": text, "blob_bytes": blob_bytes}),
        )
        .await;
        assert_eq!(
            value(&r),
            &json!({"text": text, "blob_bytes": blob_bytes}),
            "{r:?}"
        );
        assert_eq!(rendered_by(&r), Some("render"));
        assert_blocks(r.content(), &every_block(text, blob_bytes));
    }
}

/// The fixture's `plain` declares host-renders and `blocks` does not: the
/// host sees both flags (with the rest of the descriptors, lowered the
/// same way), and under the third-party default policy (`render =
/// "isolated"`) a call of `plain` runs in one instance, rendered by the
/// host, where `blocks` takes two.
async fn host_renders_in_one_instance(g: &Guest) {
    let (rt, c) = own_runtime(g, RuntimeConfig::default().epoch_tick).await;
    let blocks = c.tool("blocks").unwrap();
    assert_eq!(
        (
            blocks.title.as_deref(),
            blocks.description.as_str(),
            blocks.annotations,
            blocks.host_renders
        ),
        (
            Some("Every block ✓"),
            "Renders one content block of every kind (a test fixture): é€😀.",
            Annotations {
                read_only: true,
                idempotent: true,
                ..Annotations::default()
            },
            false
        )
    );
    assert_eq!(
        blocks.input_schema["required"],
        json!(["text", "blob_bytes"])
    );
    let plain = c.tool("plain").unwrap();
    assert_eq!(
        (
            plain.title.as_deref(),
            plain.description.as_str(),
            plain.annotations,
            plain.host_renders
        ),
        (
            None,
            "Echoes its text with its length in bytes; the host renders it (a test fixture).",
            Annotations {
                destructive: true,
                open_world: true,
                ..Annotations::default()
            },
            true
        )
    );
    assert!(
        c.tools()
            .iter()
            .all(|d| d.paths.is_empty() && d.urls.is_empty())
    );

    let policy = build(PolicyBuilder::new().decision(Decision::Allow));
    assert_eq!(policy.for_tool("plain").render, RenderMode::Isolated);
    let registry = Registry::new();
    let _reg = registry
        .register_component(Scope::Global, &c, &policy)
        .unwrap();
    let registered = |name| {
        registry
            .resolve(name, None)
            .unwrap()
            .descriptor
            .host_renders
    };
    assert!(registered("plain") && !registered("blocks"));
    let p = Pipeline::builder(registry.clone()).build();

    let before = rt.stats().instances;
    let r = call(&p, "plain", json!({"text": UTF8})).await;
    assert_eq!(rt.stats().instances - before, 1, "{r:?}");
    let v = json!({"text": UTF8, "bytes": UTF8.len()});
    assert_eq!(value(&r), &v, "{r:?}");
    assert_eq!(rendered_by(&r), Some("host"));
    assert_eq!(
        r.content(),
        [ContentBlock::text(
            serde_json::to_string_pretty(&v).unwrap()
        )]
    );
    // Rendering itself, isolated: a second instance.
    let before = rt.stats().instances;
    let r = call(&p, "blocks", json!({"text": UTF8, "blob_bytes": 3})).await;
    assert_eq!(rt.stats().instances - before, 2, "{r:?}");
    assert_eq!(rendered_by(&r), Some("render"));
    assert_blocks(r.content(), &every_block(UTF8, 3));
}

mod python {
    use super::*;

    const CSV: &str = "city,country,population,capital\n\
    Paris,FR,2102650,true\n\
    Lyon,FR,522250,false\n\
    Berlin,DE,3878100,true\n\
    Hamburg,DE,1910160,false\n";

    #[tokio::test]
    async fn python_table_tools_answer_through_the_pipeline_and_render_tables() {
        let ws = Workspace::new(&[("cities.csv", CSV)]);
        let (p, _reg) = pipeline(&PYTHON, &shipped_policy(&PYTHON, &ws)).await;

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
        denies_paths_before_the_guest_runs(&PYTHON, "table_schema", &ws).await;
    }

    #[tokio::test]
    async fn a_value_off_the_declared_output_schema_is_caught_by_the_host() {
        let ws = Workspace::new(&[("cities.csv", CSV)]);
        checks_values_against_the_declared_schema(
            &PYTHON,
            "table_schema",
            json!({"path": "cities.csv"}),
            &ws,
        )
        .await;
    }

    #[tokio::test]
    async fn a_python_call_past_its_deadline_times_out() {
        let mut big = String::from("a,b,c\n");
        for i in 0..200_000 {
            big.push_str(&format!("{i},{},{}\n", i * 7, i % 13));
        }
        times_out(&PYTHON, "table_stats", ("big.csv", &big), 300).await;
    }
}

mod c {
    use super::*;

    const TEXT: &str = "The quick brown fox jumps over the lazy dog";

    #[tokio::test]
    async fn c_hash_tools_answer_through_the_pipeline_and_render_sums() {
        let ws = Workspace::new(&[("fox.txt", TEXT), ("sub/empty.txt", "")]);
        let (p, _reg) = pipeline(&C, &shipped_policy(&C, &ws)).await;

        let r = call(
            &p,
            "hash_file",
            json!({"path": "fox.txt", "algorithm": "sha256"}),
        )
        .await;
        let v = value(&r);
        // The well-known SHA-256 of the pangram.
        assert_eq!(
            v["digest"], "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592",
            "{v}"
        );
        assert_eq!(v["bytes"], TEXT.len());
        assert!(
            r.text().contains(
                "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592  fox.txt"
            ),
            "{}",
            r.text()
        );
        let crc = call(
            &p,
            "hash_file",
            json!({"path": "fox.txt", "algorithm": "crc32"}),
        )
        .await;
        assert_eq!(value(&crc)["digest"], "414fa339", "{crc:?}");

        let tree = call(&p, "hash_tree", json!({"path": "."})).await;
        let v = value(&tree);
        let paths: Vec<&str> = v["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["fox.txt", "sub/empty.txt"], "{v}");
        assert_eq!(
            v["files"][1]["digest"],
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );

        // The tool's own failures, with their codes.
        let missing = call(&p, "hash_file", json!({"path": "nope.txt"})).await;
        assert_eq!(missing.code(), Some("not_found"), "{missing:?}");
        let dir = call(&p, "hash_file", json!({"path": "sub"})).await;
        assert_eq!(dir.code(), Some("is_directory"), "{dir:?}");
        // Arguments off the input schema never reach C.
        let before = p.dispatches();
        let bad = call(
            &p,
            "hash_file",
            json!({"path": "fox.txt", "algorithm": "md5"}),
        )
        .await;
        assert_eq!(bad.code(), Some("invalid_arguments"));
        assert_eq!(p.dispatches(), before);
    }

    /// What the hash tools report while they run (the 0.3.0 `context`
    /// import) reaches the host and is recorded in the result: `hash_tree`
    /// a progress report after each file, `hash_file` one after each
    /// mebibyte of a larger file, of a known total.
    #[tokio::test]
    async fn c_progress_reports_reach_the_host() {
        assert_eq!(component(&C).await.contract_version(), Some("0.3.0"));
        let big = "x".repeat((2 << 20) + 5);
        let ws = Workspace::new(&[
            ("fox.txt", TEXT),
            ("sub/empty.txt", ""),
            ("sub/skipped.c", "int x;\n"),
            ("big.bin", big.as_str()),
        ]);
        let (p, _reg) = pipeline(&C, &shipped_policy(&C, &ws)).await;
        let tree = call(&p, "hash_tree", json!({"path": ".", "glob": "*.txt"})).await;
        assert_eq!(value(&tree)["file_count"], 2, "{tree:?}");
        assert_eq!(
            tree.meta().context,
            [
                progress(1, None, Some("fox.txt")),
                progress(2, None, Some("sub/empty.txt"))
            ]
        );
        let file = call(&p, "hash_file", json!({"path": "big.bin"})).await;
        assert_eq!(value(&file)["bytes"], big.len(), "{file:?}");
        let total = Some(big.len() as u64);
        assert_eq!(
            file.meta().context,
            [
                progress(1 << 20, total, None),
                progress(2 << 20, total, None)
            ]
        );
    }

    #[tokio::test]
    async fn a_path_outside_the_grant_is_denied_before_c_runs() {
        let ws = Workspace::new(&[("fox.txt", TEXT)]);
        denies_paths_before_the_guest_runs(&C, "hash_file", &ws).await;
    }

    #[tokio::test]
    async fn a_value_off_the_declared_output_schema_is_caught_by_the_host() {
        let ws = Workspace::new(&[("fox.txt", TEXT)]);
        checks_values_against_the_declared_schema(&C, "hash_file", json!({"path": "fox.txt"}), &ws)
            .await;
    }

    #[tokio::test]
    async fn c_content_blocks_of_every_kind_reach_the_host_exactly() {
        renders_every_block_kind(&C_BLOCKS).await;
    }

    #[tokio::test]
    async fn a_c_tool_declaring_host_renders_runs_in_one_instance() {
        host_renders_in_one_instance(&C_BLOCKS).await;
    }

    #[tokio::test]
    async fn a_c_call_past_its_deadline_times_out() {
        let big = "0123456789abcdef".repeat(4 << 20); // 64 MiB
        times_out(&C, "hash_file", ("big.bin", &big), 50).await;
    }

    /// `hash_file` asks `context.cancelled` before each chunk: past its
    /// deadline it stops there, and the call times out (a failure a tool
    /// returns after the host told it to stop is that stop). The epoch
    /// ticks only every 10 s here, so nothing but the tool's own check ends
    /// the call on time (without it, the whole file is hashed).
    #[tokio::test]
    async fn a_c_call_past_its_deadline_stops_at_the_tools_own_check() {
        let (_rt, c) = own_runtime(&C, Duration::from_secs(10)).await;
        let big = "0123456789abcdef".repeat(4 << 20); // 64 MiB
        times_out_in(&c, "hash_file", ("big.bin", &big), 50).await;
    }
}

mod js {
    use super::*;

    const DOC: &str = "# Title\n\nSee [setup](#setup), [the guide](guide.md) and [gone](missing.md).\n\n## Setup\n\nText.\n";

    #[tokio::test]
    async fn js_markdown_tools_answer_through_the_pipeline_and_render_outlines() {
        let ws = Workspace::new(&[("doc.md", DOC), ("guide.md", "# Guide\n")]);
        let (p, _reg) = pipeline(&JS, &shipped_policy(&JS, &ws)).await;

        let outline = call(&p, "md_outline", json!({"path": "doc.md"})).await;
        let v = value(&outline);
        assert_eq!(v["count"], 2, "{v}");
        assert_eq!(v["headings"][0]["text"], "Title", "{v}");
        assert_eq!(v["headings"][0]["children"][0]["anchor"], "setup", "{v}");
        assert!(outline.text().contains("Setup"), "{}", outline.text());

        let links = call(&p, "md_links", json!({"path": "doc.md", "check": true})).await;
        assert!(!links.is_error(), "{links:?}");
        assert!(links.text().contains("missing.md"), "{}", links.text());

        let missing = call(&p, "md_outline", json!({"path": "nope.md"})).await;
        assert_eq!(missing.code(), Some("not_found"), "{missing:?}");
        let before = p.dispatches();
        let bad = call(&p, "md_outline", json!({"path": 7})).await;
        assert_eq!(bad.code(), Some("invalid_arguments"));
        assert_eq!(p.dispatches(), before);
    }

    #[tokio::test]
    async fn a_path_outside_the_grant_is_denied_before_js_runs() {
        let ws = Workspace::new(&[("doc.md", DOC)]);
        denies_paths_before_the_guest_runs(&JS, "md_outline", &ws).await;
    }

    #[tokio::test]
    async fn a_value_off_the_declared_output_schema_is_caught_by_the_host() {
        let ws = Workspace::new(&[("doc.md", DOC)]);
        checks_values_against_the_declared_schema(
            &JS,
            "md_outline",
            json!({"path": "doc.md"}),
            &ws,
        )
        .await;
    }

    #[tokio::test]
    async fn a_js_call_past_its_deadline_times_out() {
        // 1.9 MB: under the tool's 2 MiB limit (file_too_large past it).
        let big = "## A heading with [a link](#a-heading)\n\nSome *text* here.\n\n".repeat(30_000);
        times_out(&JS, "md_links", ("big.md", &big), 50).await;
    }
}

mod go {
    use super::*;

    const SRC: &str = "package shapes\n\n// Circle is round.\ntype Circle struct{ R float64 }\n\n// Area of the circle.\nfunc (c *Circle) Area() float64 { return 3 * c.R * c.R }\n";
    const UGLY: &str = "package x\nfunc  f( ) {\n}\n";

    #[tokio::test]
    async fn go_source_tools_answer_through_the_pipeline_and_render() {
        let ws = Workspace::new(&[
            ("shapes.go", SRC),
            ("ugly.go", UGLY),
            ("broken.go", "package x\nfunc ("),
        ]);
        let (p, _reg) = pipeline(&GO, &shipped_policy(&GO, &ws)).await;

        let outline = call(&p, "go_outline", json!({"path": "shapes.go"})).await;
        let v = value(&outline);
        assert_eq!(v["package"], "shapes", "{v}");
        assert_eq!(v["decls"][1]["kind"], "method", "{v}");
        assert_eq!(v["decls"][1]["receiver"], "*Circle", "{v}");
        assert_eq!(v["decls"][1]["doc"], "Area of the circle.", "{v}");
        assert!(
            outline
                .text()
                .contains("7-7  func (c *Circle) Area() float64  // Area of the circle."),
            "{}",
            outline.text()
        );

        let clean = call(&p, "go_format", json!({"path": "shapes.go"})).await;
        assert_eq!(value(&clean)["formatted"], true, "{clean:?}");
        let ugly = call(&p, "go_format", json!({"path": "ugly.go"})).await;
        let v = value(&ugly);
        assert_eq!(v["formatted"], false, "{v}");
        assert_eq!(
            v["diff"],
            "--- a/ugly.go\n+++ b/ugly.go\n@@ -1,3 +1,4 @@\n package x\n-func  f( ) {\n+\n+func f() {\n }\n"
        );
        assert!(ugly.text().contains("```diff"), "{}", ugly.text());

        // The tool's own failures, with their codes.
        let missing = call(&p, "go_outline", json!({"path": "nope.go"})).await;
        assert_eq!(missing.code(), Some("not_found"), "{missing:?}");
        let broken = call(&p, "go_format", json!({"path": "broken.go"})).await;
        assert_eq!(broken.code(), Some("syntax_error"), "{broken:?}");
        // Arguments off the input schema never reach Go.
        let before = p.dispatches();
        let bad = call(&p, "go_outline", json!({"path": "shapes.go", "limit": 0})).await;
        assert_eq!(bad.code(), Some("invalid_arguments"));
        assert_eq!(p.dispatches(), before);
    }

    /// A value of about a megabyte is lowered into a fresh instance for
    /// `render` through the kit's cabi_realloc, which must not start a
    /// collection (that reads the clock, an import, and the component
    /// model forbids leaving the instance there: wasmtime traps).
    #[tokio::test]
    async fn a_large_value_renders_in_a_fresh_go_instance() {
        let mut src = String::from("package big\n");
        for i in 0..5000 {
            src.push_str(&format!(
                "// F{i} is documented at some length, so that the value grows.\nfunc F{i}(a, b int, c string) (int, error) {{ return a + b, nil }}\n"
            ));
        }
        let ws = Workspace::new(&[("big.go", src.as_str())]);
        // The shipped policy renders in the execute instance; this is the
        // case that trapped: a fresh instance for render.
        let policy = build(
            allow_in(ws.path(), FsMode::ReadOnly)
                .render(RenderMode::Isolated)
                .limits(|l| {
                    l.fuel = 20_000_000_000;
                    l.memory_bytes = 256 << 20;
                }),
        );
        let (p, _reg) = pipeline(&GO, &policy).await;
        let r = call(&p, "go_outline", json!({"path": "big.go", "limit": 5000})).await;
        let v = value(&r);
        assert_eq!(v["decls_total"], 5000, "{r:?}");
        assert!(serde_json::to_string(v).unwrap().len() > 1 << 20);
        // Rendered by the tool (the host then bounds what the model reads).
        assert!(
            r.text().starts_with(
                "big.go: package big, 10001 lines\n3-3  func F0(a, b int, c string) (int, error)"
            ),
            "{}",
            &r.text()[..200]
        );
    }

    /// What the template's `count_lines` reports while it runs (the 0.3.0
    /// `context` import, lowered by the kit's hand-written ABI) reaches the
    /// host: progress after each mebibyte, of the file's size.
    #[tokio::test]
    async fn go_progress_reports_reach_the_host() {
        assert_eq!(component(&GO).await.contract_version(), Some("0.3.0"));
        assert_eq!(
            component(&GO_TEMPLATE).await.contract_version(),
            Some("0.3.0")
        );
        let big = format!("{}\n", "x".repeat(1023)).repeat(2560); // 2.5 MiB
        let ws = Workspace::new(&[("big.txt", big.as_str()), ("small.txt", "one\n")]);
        let (p, _reg) = pipeline(&GO_TEMPLATE, &shipped_policy(&GO_TEMPLATE, &ws)).await;
        let r = call(&p, "count_lines", json!({"path": "big.txt"})).await;
        assert_eq!(value(&r)["lines"], 2560, "{r:?}");
        let total = Some(big.len() as u64);
        assert_eq!(
            r.meta().context,
            [
                progress(1 << 20, total, Some("bytes read")),
                progress(2 << 20, total, Some("bytes read"))
            ]
        );
        let small = call(&p, "count_lines", json!({"path": "small.txt"})).await;
        assert_eq!(value(&small)["lines"], 1, "{small:?}");
        assert!(small.meta().context.is_empty(), "{small:?}");
    }

    #[tokio::test]
    async fn a_path_outside_the_grant_is_denied_before_go_runs() {
        let ws = Workspace::new(&[("shapes.go", SRC)]);
        denies_paths_before_the_guest_runs(&GO, "go_outline", &ws).await;
    }

    #[tokio::test]
    async fn a_value_off_the_declared_output_schema_is_caught_by_the_host() {
        let ws = Workspace::new(&[("shapes.go", SRC)]);
        checks_values_against_the_declared_schema(
            &GO,
            "go_outline",
            json!({"path": "shapes.go"}),
            &ws,
        )
        .await;
    }

    #[tokio::test]
    async fn go_content_blocks_of_every_kind_reach_the_host_exactly() {
        renders_every_block_kind(&GO_BLOCKS).await;
    }

    #[tokio::test]
    async fn a_go_tool_declaring_host_renders_runs_in_one_instance() {
        host_renders_in_one_instance(&GO_BLOCKS).await;
    }

    #[tokio::test]
    async fn a_go_call_past_its_deadline_times_out() {
        let big = "func  f( a int ) int {\nreturn a\n}\n".repeat(25_000);
        let big = format!("package big\n{big}");
        times_out(&GO, "go_format", ("big.go", &big), 50).await;
    }
}
