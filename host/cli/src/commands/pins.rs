//! `toolhost lock` and `toolhost update`: the toolbox's remote components
//! pinned in its lock file, and pins moved on purpose.

use super::supply;
use super::{Context, ToolSet};
use anyhow::bail;
use clap::Args;
use std::path::Path;
use toolhost_toolbox::Moving;

/// `toolhost lock`'s options.
#[derive(Args)]
pub struct LockArgs {
    #[command(flatten)]
    tools: ToolSet,
}

/// `toolhost update`'s options.
#[derive(Args)]
pub struct UpdateArgs {
    /// Parts of the sources to update (default: every remote source).
    names: Vec<String>,
    #[command(flatten)]
    tools: ToolSet,
}

/// Pins what is not pinned yet, and checks the pins kept.
pub async fn lock(ctx: &Context, a: LockArgs) -> anyhow::Result<()> {
    let tb = a.tools.toolbox(&a.tools.served_dir()?)?;
    if !tb.has_remote() {
        out!("{}: no remote components to lock", tb.origin);
        return Ok(());
    }
    let store = toolhost_toolbox::remote::open_store(None)?;
    let rt = supply::runtime(ctx.cache.clone())?;
    let changes = toolhost_toolbox::remote::lock(&tb, &store, &Moving::Unlocked, &rt).await?;
    for c in &changes {
        out!(
            "locked {} → {} ({})",
            c.source,
            c.after.manifest.as_ref().unwrap_or(&c.after.component),
            c.after.signer
        );
    }
    let remote = tb
        .components
        .iter()
        .filter(|c| c.source.is_remote())
        .count();
    // Pins kept from before are checked as serving will check them,
    // under the trust rules as they are now.
    let stale = toolhost_toolbox::remote::stale_pins(&tb, &store).await?;
    for s in &stale {
        eprintln!(
            "{}:{}: {s}\n  to re-pin it once it passes (signed as its trust rule asks, or the rule changed): toolhost update {}",
            tb.origin, s.line, s.source
        );
    }
    if !stale.is_empty() {
        bail!(
            "{} of the {} remote component(s) pinned in {} no longer pass; `toolhost call` and `serve` refuse them",
            stale.len(),
            remote,
            tb.lock_path().display()
        );
    }
    out!(
        "{}: {} remote component(s) pinned, {} newly",
        tb.lock_path().display(),
        remote,
        changes.len()
    );
    Ok(())
}

/// Resolves the named sources again and prints what moved.
pub async fn update(ctx: &Context, a: UpdateArgs) -> anyhow::Result<()> {
    let tb = a.tools.toolbox(&a.tools.served_dir()?)?;
    let store = toolhost_toolbox::remote::open_store(None)?;
    let rt = supply::runtime(ctx.cache.clone())?;
    let changes =
        toolhost_toolbox::remote::lock(&tb, &store, &Moving::Update(a.names), &rt).await?;
    if changes.is_empty() {
        out!("no pin moved: every remote component still resolves to what is locked");
    }
    for c in &changes {
        out!("{}", c.source);
        let before = c.before.as_ref();
        let field = |old: Option<String>, new: String| match old {
            Some(o) if o == new => format!("{new} (unchanged)"),
            Some(o) => format!("{o} → {new}"),
            None => format!("(none) → {new}"),
        };
        out!(
            "  manifest:  {}",
            field(
                before.and_then(|b| b.manifest.as_ref().map(|m| m.to_string())),
                c.after
                    .manifest
                    .as_ref()
                    .map_or("-".into(), |m| m.to_string())
            )
        );
        out!(
            "  component: {}",
            field(
                before.map(|b| b.component.to_string()),
                c.after.component.to_string()
            )
        );
        out!(
            "  signer:    {}",
            field(before.map(|b| b.signer.clone()), c.after.signer.clone())
        );
        // The component before, from the store (it may have left).
        let old = match before.map(|b| store.get(&b.component)) {
            Some(Ok(Some(bytes))) => rt.load_bytes(Path::new("component"), bytes).await.ok(),
            _ => None,
        };
        let names = |c: &toolhost_runtime::LoadedComponent| -> Vec<String> {
            c.tools().iter().map(|t| t.name.clone()).collect()
        };
        let new = &c.component;
        out!(
            "  imports:   {}",
            diff_list(
                old.as_ref().map_or(&[][..], |o| o.imports()),
                new.imports(),
                old.is_some()
            )
        );
        out!(
            "  tools:     {}",
            diff_list(
                &old.as_deref().map(names).unwrap_or_default(),
                &names(new),
                old.is_some()
            )
        );
        // What the model will read from now on, tool by tool.
        if let Some(old) = &old {
            let lines = toolhost_toolbox::descriptors::diff(old.tools(), new.tools());
            if lines.is_empty() {
                out!("  descriptors: unchanged");
            } else {
                out!("  descriptors:");
                for line in lines {
                    out!("    {line}");
                }
            }
        }
    }
    Ok(())
}

/// `a, b (+c −d)`: the new list, and what was added and removed.
fn diff_list(old: &[String], new: &[String], had_old: bool) -> String {
    let added: Vec<&String> = new.iter().filter(|n| !old.contains(n)).collect();
    let removed: Vec<&String> = old.iter().filter(|o| !new.contains(o)).collect();
    let mut text = new.join(", ");
    if had_old && (!added.is_empty() || !removed.is_empty()) {
        let mut parts: Vec<String> = added.iter().map(|a| format!("+{a}")).collect();
        parts.extend(removed.iter().map(|r| format!("−{r}")));
        text.push_str(&format!(" ({})", parts.join(" ")));
    } else if had_old {
        text.push_str(" (unchanged)");
    }
    text
}
