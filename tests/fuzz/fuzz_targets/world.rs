//! The world the call-checking fuzz targets share: six tools shaped like
//! the built-ins (every `path-access` kind, a URL argument), a sandbox with
//! a read-write and a read-only grant over a tree of hostile symlinks, and
//! [`check_call`], which runs the stages between an emitted call and
//! dispatch with the oracles of `arguments.rs` on every outcome.

use serde_json::{Value, json};
use std::os::unix::fs::symlink;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;
use toolhost_contract::{ErrorCode, FailureCode, PathAccess, ToolDescriptor, ToolFailure};
use toolhost_policy::{FsMode, PolicyBuilder, Sandbox};
use toolhost_stages::args::{ParsedArguments, parse_arguments};
use toolhost_stages::baseline::{self, Baselines, HandleKey};
use toolhost_stages::paths::{ResolvedPath, check_paths};
use toolhost_stages::summary::{MAX_SUMMARY_BYTES, approval_summary};
use toolhost_stages::{network, schema};

/// The tools, the sandbox and the session's baselines.
pub struct World {
    /// Canonical roots of the two grants.
    roots: Vec<PathBuf>,
    sandbox: Sandbox,
    /// Each tool with its compiled input schema.
    pub tools: Vec<(ToolDescriptor, jsonschema::Validator)>,
    baselines: Baselines,
    /// The key handles are sealed with.
    handles: HandleKey,
}

fn tool(name: &str, properties: Value, required: &[&str], paths: Value, urls: &[&str]) -> Value {
    json!({
        "name": name,
        "description": name,
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        },
        "outputSchema": {"type": "object"},
        "annotations": {"readOnly": false, "destructive": false, "idempotent": false, "openWorld": false},
        "paths": paths,
        "urls": urls,
    })
}

/// The world, built once per process.
pub fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let tmp = std::env::temp_dir();
        remove_stale_trees(&tmp);
        let base = tmp.join(format!("{TREE_PREFIX}{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (ws, ro, outside) = (base.join("ws"), base.join("ro"), base.join("outside"));
        for d in [&ws, &ws.join("sub"), &ro, &outside] {
            std::fs::create_dir_all(d).expect("tree");
        }
        for (f, text) in [
            (ws.join("a.txt"), "one\ntwo\n"),
            (ws.join("sub/b.txt"), "b\n"),
            (ro.join("c.txt"), "c\n"),
            (outside.join("secret.txt"), "secret\n"),
        ] {
            std::fs::write(f, text).expect("tree");
        }
        let links: [(&str, PathBuf); 10] = [
            ("link_in", "sub".into()),
            ("link_file", "sub/b.txt".into()),
            ("link_out", "../outside".into()),
            ("link_secret", "../outside/secret.txt".into()),
            ("link_abs", outside.clone()),
            ("link_ro", "../ro".into()),
            ("dangling", "nowhere".into()),
            ("dangling_out", "../outside/new.txt".into()),
            ("loop1", "loop2".into()),
            ("loop2", "loop1".into()),
        ];
        for (name, to) in links {
            symlink(to, ws.join(name)).expect("link");
        }
        symlink("../ws/a.txt", ro.join("link_ws")).expect("link");
        symlink("..", ws.join("sub/up")).expect("link");
        let policy = PolicyBuilder::new()
            .grant(&ws, "/workspace", FsMode::ReadWrite)
            .grant(&ro, "/ro", FsMode::ReadOnly)
            .network("example.com:443")
            .network("127.0.0.1:*")
            .build()
            .expect("policy");
        let sandbox = policy.component().sandbox;
        let s = json!({"type": "string", "maxLength": 4096});
        let n = json!({"type": "integer", "minimum": 0});
        let specs = [
            tool("read", json!({"path": s, "offset": n, "limit": n}), &["path"],
                 json!([{"pointer": "/path", "access": "read"}]), &[]),
            tool("list", json!({"path": s, "depth": n}), &[],
                 json!([{"pointer": "/path", "access": "list"}]), &[]),
            tool("write", json!({"path": s, "content": {"type": "string"}}), &["path", "content"],
                 json!([{"pointer": "/path", "access": "write"}]), &[]),
            tool("create", json!({"path": s, "content": {"type": "string"}}), &["path"],
                 json!([{"pointer": "/path", "access": "create"}]), &[]),
            tool("edit", json!({"path": s, "old_text": {"type": "string"}, "new_text": {"type": "string"},
                                "to": s}), &["path", "old_text", "new_text"],
                 json!([{"pointer": "/path", "access": "patch"}, {"pointer": "/to", "access": "overwrite"}]), &[]),
            tool("fetch", json!({"url": {"type": "string", "maxLength": 2048}, "save": s}), &["url"],
                 json!([{"pointer": "/save", "access": "write"}]), &["/url"]),
        ];
        let tools = specs
            .into_iter()
            .map(|v| {
                let d: ToolDescriptor = serde_json::from_value(v).expect("descriptor");
                let validator = jsonschema::validator_for(&d.input_schema).expect("schema");
                (d, validator)
            })
            .collect();
        let roots = [&ws, &ro].iter().map(|r| r.canonicalize().expect("root")).collect();
        World {
            roots,
            sandbox,
            tools,
            baselines: Baselines::default(),
            handles: HandleKey::from_secret(&[0; 32]).expect("32 bytes are enough"),
        }
    })
}

/// The trees live in `$TMPDIR/<TREE_PREFIX><pid>`.
const TREE_PREFIX: &str = "toolhost-fuzz-arguments-";

/// Removes the trees of earlier runs whose process is gone (a fuzzer ends
/// by exiting, so nothing removes its own).
fn remove_stale_trees(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(TREE_PREFIX)) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// `path` with `.` and `..` removed lexically (no filesystem access).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Where `p` really is, following every symlink as the kernel would; for a
/// path that does not exist, where it would be created.
fn real_location(host: &Path) -> Option<PathBuf> {
    if let Ok(p) = host.canonicalize() {
        return Some(p);
    }
    let parent = host.parent()?.canonicalize().ok()?;
    let name = host.file_name()?;
    match std::fs::read_link(host) {
        // A dangling symlink: creating the file creates its target.
        Ok(to) => Some(lexical(&parent.join(to))),
        Err(_) => Some(parent.join(name)),
    }
}

fn check_allowed(w: &World, r: &ResolvedPath) {
    let root_index = w
        .sandbox
        .fs
        .iter()
        .position(|g| g.guest == r.grant.guest)
        .expect("the resolved grant is one of the sandbox's");
    assert!(
        r.guest == r.grant.guest || r.guest.starts_with(&format!("{}/", r.grant.guest)),
        "{r:?}"
    );
    if r.access.is_write() {
        assert_eq!(
            r.grant.mode,
            FsMode::ReadWrite,
            "write allowed in a read-only grant: {r:?}"
        );
    }
    let host = r.grant.host.join(&r.relative);
    let root = &w.roots[root_index];
    // A loop or a too-deep chain is refused by the kernel as well: nothing
    // to check there.
    if let Some(real) = real_location(&host) {
        assert!(
            real.starts_with(root),
            "{:?} allowed, but it is {real:?}, outside {root:?}",
            r.guest
        );
    }
}

/// Runs the stages a call passes before dispatch (parse, schema, paths,
/// baselines, URLs, approval summary) on `raw`, asserting every oracle;
/// returns the arguments the call would be dispatched with, or the failure
/// it gets.
pub fn check_call(w: &World, tool: usize, raw: &str) -> Result<Value, ToolFailure> {
    let (tool, validator) = &w.tools[tool];
    let mut args = match parse_arguments(raw) {
        ParsedArguments::Json(args) => args,
        ParsedArguments::Raw(_) => {
            return Err(ToolFailure::new(FailureCode::InvalidArguments, "not JSON"));
        }
    };
    // The host's `baseline` argument, taken out before the schema sees the
    // arguments (as the pipeline does when it issues handles).
    let handles = if baseline::takes_handles(tool) {
        let handles = baseline::presented(&args)
            .map_err(|why| ToolFailure::new(FailureCode::InvalidArguments, why))?;
        if let Some(o) = args.as_object_mut() {
            o.remove(baseline::BASELINE_ARG);
        }
        handles
    } else {
        Vec::new()
    };
    let errors = schema::errors(validator, &args, "arguments");
    if !errors.is_empty() {
        assert!(errors.len() <= schema::MAX_SCHEMA_ERRORS);
        return Err(ToolFailure::new(
            FailureCode::InvalidArguments,
            errors.join("; "),
        ));
    }
    let paths = check_paths(tool, &args, &w.sandbox).inspect_err(|f| {
        assert!(
            matches!(
                f.code,
                ErrorCode::Host(
                    FailureCode::PathDenied
                        | FailureCode::PathConflict
                        | FailureCode::InvalidArguments
                )
            ),
            "{f:?}"
        );
    })?;
    for r in &paths {
        check_allowed(w, r);
    }
    let presented = baseline::Presented {
        key: Some(&w.handles),
        principal: "fuzz",
        now_ms: 1_800_000_000_000,
        handles: &handles,
    };
    w.baselines.check_with(&paths, presented).inspect_err(|f| {
        assert_eq!(f.code, ErrorCode::Host(FailureCode::StaleBaseline), "{f:?}");
    })?;
    let allowed = network::check_urls(tool, &args, &w.sandbox).inspect_err(|f| {
        assert!(
            matches!(
                f.code,
                ErrorCode::Host(FailureCode::NetworkDenied | FailureCode::InvalidArguments)
            ),
            "{f:?}"
        );
    })?;
    for authority in allowed {
        let (host, port) = authority.rsplit_once(':').expect("host:port");
        let host = host.trim_start_matches('[').trim_end_matches(']');
        assert!(
            w.sandbox.allows_network(host, port.parse().expect("port")),
            "{authority}"
        );
    }
    let summary = approval_summary(&tool.name, &args, &paths);
    assert!(
        summary.len() <= MAX_SUMMARY_BYTES,
        "{} bytes",
        summary.len()
    );
    // Baselines are recorded as after a successful call, for reads only: a
    // write or patch never runs here.
    if paths
        .iter()
        .all(|p| matches!(p.access, PathAccess::Read | PathAccess::List))
    {
        let issued = w
            .baselines
            .record_with(&paths, Some(&w.handles), "fuzz", 1_800_000_000_000);
        // A handle just issued opens for the file it names.
        for (guest, h) in &issued {
            assert!(h.starts_with("bh1."), "{h}");
            assert!(paths.iter().any(|p| p.guest == *guest), "{guest}");
        }
    }
    Ok(args)
}
