//! `toolhost inspect`: a component's imports against a policy's grants.

use super::Context;
use anyhow::bail;
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost::{Host, HostConfig, TerminalProgress};
use toolhost_runtime::ImportVerdict;

/// `toolhost inspect`'s options.
#[derive(Args)]
pub struct InspectArgs {
    /// The component file.
    component: PathBuf,
    /// The policy file (default: deny everything).
    #[arg(long)]
    policy: Option<PathBuf>,
}

/// Shows the component's imports against the policy (files named relative
/// to the current directory).
pub async fn run(ctx: &Context, a: InspectArgs) -> anyhow::Result<()> {
    let base = std::env::current_dir()?;
    inspect(ctx.cache.clone(), &a.component, a.policy.as_deref(), &base).await
}

/// Prints a component's imports against a policy's grants (`inspect`, and
/// `build` after it built); an error when some import is not granted.
pub async fn inspect(
    cache: Option<PathBuf>,
    component: &Path,
    policy: Option<&Path>,
    base: &Path,
) -> anyhow::Result<()> {
    let host = Host::new(HostConfig {
        cache_dir: cache,
        on_compile: Some(Arc::new(TerminalProgress::default())),
        ..HostConfig::default()
    })?;
    let policy = match policy {
        None => toolhost_policy::Policy::deny_all(),
        Some(p) => toolhost_policy::Policy::load(p, base)?,
    };
    let loaded = toolhost_toolbox::load_component_file(host.runtime(), component, &policy).await?;
    out!("component {} (sha256 {})", component.display(), loaded.id());
    out!(
        "compiled in {:?} ({:?})",
        loaded.compile_time(),
        loaded.cache_outcome()
    );
    match loaded.contract_version() {
        Some(v) => out!("kind: toolhost:tool@{v}"),
        None => out!("kind: plain (its exported functions are its tools)"),
    }
    out!(
        "tools: {}",
        loaded
            .tools()
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for u in loaded.unserved() {
        out!("not served: {}: {}", u.function, u.reason);
    }
    let mut denied = false;
    for t in loaded.tools() {
        let tp = policy.for_tool(&t.name);
        out!("\n{} (decision: {:?})", t.name, tp.decision);
        for g in &tp.sandbox.fs {
            out!("  grant {} -> {} ({:?})", g.host.display(), g.guest, g.mode);
        }
        for c in loaded.check_imports(&tp.sandbox) {
            let v = match &c.verdict {
                ImportVerdict::Granted => "granted".to_owned(),
                ImportVerdict::Inert => "linked, grants nothing".to_owned(),
                ImportVerdict::Denied(why) => {
                    denied = true;
                    format!("DENIED: {why}")
                }
            };
            out!("  {:<45} {v}", c.import);
        }
    }
    if denied {
        bail!(
            "some imports are not granted by this policy: grant what the tool needs in the policy (fs, network, env), or stop using it in the tool"
        );
    }
    Ok(())
}
