//! The authoring commands: `toolhost new` starts a tool project, `build`
//! builds it with its kit, and `dev` serves it, building again as its
//! sources change.

use super::inspect::inspect;
use super::serve::{self, ServeArgs};
use super::{Context, dir_or_cwd};
use anyhow::{Context as _, bail};
use clap::Args;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolhost::{Host, HostConfig, find_toolbox};

/// `toolhost new`'s options.
#[derive(Args)]
pub struct NewArgs {
    /// The project's name, which is also the tool's (`word-count`
    /// names the tool `word_count`).
    name: String,
    /// The kit language: rust, python, js, c or go.
    #[arg(long)]
    lang: toolhost::author::Lang,
    /// Where to create the project (default: the current directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// `toolhost build`'s options.
#[derive(Args)]
pub struct BuildArgs {
    /// The project's directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// `toolhost dev`'s options.
#[derive(Args)]
pub struct DevArgs {
    /// The project's directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Serve streamable HTTP at this address instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
}

/// Creates the project and says what to do next.
pub fn new(ctx: &Context, a: NewArgs) -> anyhow::Result<()> {
    let parent = dir_or_cwd(a.dir)?;
    let made = toolhost::author::create(&a.name, a.lang, &parent, &ctx.kits_cache()?)?;
    out!(
        "created {} ({} tool `{}`)",
        made.dir.display(),
        made.lang,
        made.tool
    );
    out!("next:");
    out!("  cd {}", made.dir.display());
    out!("  toolhost build");
    out!(
        "  toolhost call {} --args '{{\"path\": \"README.md\"}}'",
        made.tool
    );
    out!("  toolhost dev        # serve it over MCP, rebuilt as you edit");
    Ok(())
}

/// Builds the project, shows its imports against its policy, and loads it
/// as `serve` would.
pub async fn build(ctx: &Context, a: BuildArgs) -> anyhow::Result<()> {
    let dir = dir_or_cwd(a.dir)?;
    let project = toolhost::author::project_of(&dir)?;
    let built = toolhost::author::build(&project, &ctx.kits_cache()?)?;
    report_build(&built);
    inspect(
        ctx.cache.clone(),
        &project.component,
        Some(&project.dir.join("policy.toml")),
        &project.dir,
    )
    .await?;
    // Loaded as `serve` loads it: what a host refuses (a schema
    // that does not compile, a name it cannot serve) fails here.
    let host = Host::new(HostConfig {
        cache_dir: ctx.cache.clone(),
        ..HostConfig::default()
    })?;
    let report = host
        .load(&find_toolbox(None, &project.dir)?)
        .await
        .with_context(|| {
            format!(
                "{} built, but toolhost would not serve it: fix what is named above in the tool's declaration",
                project.component.display()
            )
        })?;
    if let Some((origin, why)) = report.failed.first() {
        bail!("{origin} built, but toolhost would not serve it: {why}");
    }
    for t in &report.skipped {
        eprintln!(
            "warning: {} can never run under its policy: {}",
            t.name, t.reason
        );
    }
    out!(
        "\nserved as: {}",
        report
            .served
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// Builds the project, then serves it exactly as `toolhost serve --dir DIR`
/// does while a watcher builds it again on every change (`serve` reloads
/// the component the build replaced).
pub async fn dev(ctx: &Context, a: DevArgs) -> anyhow::Result<()> {
    let dir = dir_or_cwd(a.dir)?;
    watch(&dir, ctx.kits_cache()?)?;
    serve::run(ctx, ServeArgs::project(dir, a.http)).await
}

/// What `build` (and `dev`, on each rebuild) says it built.
fn report_build(built: &toolhost::author::Built) {
    let path = &built.project.component;
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or_default();
    eprintln!(
        "built {} ({} tool `{}`, {} KiB) in {:.1} s",
        path.display(),
        built.project.lang,
        built.project.tool,
        size.div_ceil(1024),
        built.elapsed.as_secs_f64()
    );
}

/// `dev`'s build before serving, and its watcher: every half second it
/// compares the project's sources with the last build's and builds again
/// when they changed.
fn watch(dir: &Path, kits: PathBuf) -> anyhow::Result<()> {
    let project = toolhost::author::project_of(dir)?;
    let mut last = toolhost::author::fingerprint(dir);
    report_build(&toolhost::author::build(&project, &kits)?);
    std::thread::Builder::new()
        .name("dev-rebuild".into())
        .spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(500));
                let now = toolhost::author::fingerprint(&project.dir);
                if now == last {
                    continue;
                }
                last = now;
                eprintln!("{}: sources changed, building", project.dir.display());
                match toolhost::author::build(&project, &kits) {
                    Ok(built) => {
                        report_build(&built);
                    }
                    Err(e) => eprintln!("build failed, still serving the last build: {e}"),
                }
            }
        })?;
    Ok(())
}
