//! Shared support for toolhost's integration tests: one runtime per test
//! binary, loaded guest components, temp workspaces and policies.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use tokio::sync::OnceCell;
use toolhost_policy::{Decision, FsMode, Policy, PolicyBuilder};
use toolhost_runtime::{LoadedComponent, Runtime, RuntimeConfig};

pub use toolhost_guests as guests;

pub mod process;

/// Who rendered `r`'s content, as its trace says: `render` (the tool) or
/// `host`.
pub fn rendered_by(r: &toolhost_contract::ToolResult) -> Option<&str> {
    r.meta()
        .trace
        .entries
        .iter()
        .find(|e| e.stage == toolhost_contract::Stage::Render)
        .map(|e| e.by.as_ref())
}

/// One runtime (one engine, one epoch ticker) per test binary.
pub fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        let cache =
            std::env::temp_dir().join(format!("toolhost-test-cache-{}", std::process::id()));
        Runtime::new(RuntimeConfig {
            cache_dir: Some(cache),
            max_instances: 32,
            ..RuntimeConfig::default()
        })
        .expect("runtime")
    })
}

async fn load_once(
    cell: &'static OnceCell<Arc<LoadedComponent>>,
    path: &str,
) -> Arc<LoadedComponent> {
    cell.get_or_init(|| async {
        runtime()
            .load(Path::new(path))
            .await
            .expect("load component")
    })
    .await
    .clone()
}

macro_rules! component {
    ($fn:ident, $const:ident) => {
        /// The loaded component (loaded once per test binary).
        pub async fn $fn() -> Arc<LoadedComponent> {
            static CELL: OnceCell<Arc<LoadedComponent>> = OnceCell::const_new();
            load_once(&CELL, guests::$const).await
        }
    };
}
component!(hostile, GUEST_HOSTILE);
component!(read, TOOL_READ);
component!(write, TOOL_WRITE);
component!(edit, TOOL_EDIT);
component!(list, TOOL_LIST);
component!(grep, TOOL_GREP);
component!(fetch, TOOL_FETCH);
component!(legacy, GUEST_LEGACY);
component!(hostile_net, GUEST_HOSTILE_NET);
component!(replay, GUEST_REPLAY);
component!(replay_changed, GUEST_REPLAY_CHANGED);
component!(conformance, GUEST_CONFORMANCE);

/// A temporary workspace directory with files in it.
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    pub fn new(files: &[(&str, &str)]) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        Workspace { dir }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.file(name)).unwrap()
    }
}

/// An allow policy granting `dir` at `/workspace` with `mode`.
pub fn allow_in(dir: &Path, mode: FsMode) -> PolicyBuilder {
    PolicyBuilder::new()
        .decision(Decision::Allow)
        .grant(dir.to_str().unwrap(), "/workspace", mode)
}

/// Builds a policy or panics with its error.
pub fn build(b: PolicyBuilder) -> Policy {
    b.build().expect("policy")
}

/// The compiled-component cache shared by every test process
/// ([`guests::test_cache_dir`]).
pub fn shared_cache() -> PathBuf {
    guests::test_cache_dir()
}
