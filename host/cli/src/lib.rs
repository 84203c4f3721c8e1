//! Shared set-up for toolhost front ends (the CLI, the demo, tests): load a
//! component with its policy into a registry, and approvers for a terminal.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use toolhost::Host;
//! let host = Host::new(None)?;
//! let _reg = host.add_component("tool_read.wasm".as_ref(), Some("policies/read.toml".as_ref())).await?;
//! # Ok(()) }
//! ```

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_pipeline::{Approval, ApprovalRequest, Approver, Registration, Registry, Scope};
use toolhost_policy::Policy;
use toolhost_runtime::{LoadedComponent, Runtime, RuntimeConfig};

/// A runtime and a registry.
#[derive(Debug, Clone)]
pub struct Host {
    /// The sandbox runtime.
    pub runtime: Runtime,
    /// The tool registry.
    pub registry: Registry,
}

/// The default compiled-component cache: `$XDG_CACHE_HOME/toolhost` or
/// `~/.cache/toolhost`.
pub fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("toolhost"))
}

impl Host {
    /// A host whose compiled components are cached in `cache_dir`.
    pub fn new(cache_dir: Option<PathBuf>) -> anyhow::Result<Host> {
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir,
            ..RuntimeConfig::default()
        })?;
        Ok(Host {
            runtime,
            registry: Registry::new(),
        })
    }

    /// Loads a policy file; relative grants are relative to the current directory.
    pub fn policy(path: Option<&Path>) -> anyhow::Result<Policy> {
        match path {
            None => Ok(Policy::deny_all()),
            Some(p) => {
                let cwd = std::env::current_dir()?;
                Ok(Policy::load(p, &cwd)?)
            }
        }
    }

    /// Loads a component and registers its tools globally under `policy`.
    pub async fn add_component(
        &self,
        component: &Path,
        policy: Option<&Path>,
    ) -> anyhow::Result<(Arc<LoadedComponent>, Registration)> {
        let policy = Host::policy(policy)?;
        self.add_with_policy(component, &policy).await
    }

    /// Loads a component and registers its tools globally under `policy`.
    pub async fn add_with_policy(
        &self,
        component: &Path,
        policy: &Policy,
    ) -> anyhow::Result<(Arc<LoadedComponent>, Registration)> {
        let loaded = self
            .runtime
            .load(component)
            .await
            .with_context(|| format!("loading {}", component.display()))?;
        let reg = self
            .registry
            .register_component(Scope::Global, &loaded, policy)?;
        Ok((loaded, reg))
    }
}

/// Asks on the terminal (stdin/stderr); anything but `y` denies.
#[derive(Debug, Default)]
pub struct TerminalApprover;

#[async_trait::async_trait]
impl Approver for TerminalApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let prompt = format!(
            "approve {}? {}\n  {}\n[y/N] ",
            request.tool, request.reason, request.summary
        );
        let answer = tokio::task::spawn_blocking(move || {
            use std::io::Write;
            eprint!("{prompt}");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|_| line)
        })
        .await;
        match answer {
            Ok(Ok(line)) if line.trim().eq_ignore_ascii_case("y") => Approval::Approved,
            _ => Approval::Denied("not approved at the terminal".into()),
        }
    }
}
