//! `toolhost tools`: what is served, how the model is offered it, and what
//! cannot run; or `search_tools`' answer to a query.

use super::{Context, ToolSet};
use clap::{Args, ValueEnum};
use toolhost_pipeline::advertise::{self, Format};
use toolhost_policy::Mode as ToolboxMode;

/// `toolhost tools`' options.
#[derive(Args)]
pub struct ToolsArgs {
    #[command(flatten)]
    tools: ToolSet,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: ToolsFormat,
    /// Run `search_tools`' search instead: the tools QUERY is about,
    /// best first (deferred or not).
    #[arg(long, value_name = "QUERY")]
    search: Option<String>,
    /// Most tools `--search` shows.
    #[arg(long, default_value_t = toolhost_toolbox::search::DEFAULT_LIMIT, requires = "search")]
    limit: u64,
}

/// How `tools` prints: a table for people, or a provider's JSON schemas.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ToolsFormat {
    Table,
    Mcp,
    Openai,
    Anthropic,
}

/// Lists the tools (or searches them) in the format asked for.
pub async fn run(ctx: &Context, a: ToolsArgs) -> anyhow::Result<()> {
    let ToolsArgs {
        tools,
        format,
        search,
        limit,
    } = a;
    let host = ctx.host(&tools).await?;
    let registry = host.registry();
    let mode = registry.mode();
    if let Some(query) = search {
        // A one-shot search has no later search to rank better: it waits
        // for the model (fetched once into the store), or says it ranks by
        // words alone.
        host.start_search_model();
        registry.model_resolved().await;
        if let toolhost_pipeline::ModelState::Unavailable(why) = registry.model_state() {
            eprintln!(
                "toolhost: ranked by words alone (BM25): the search model could not be had: {why}"
            );
        }
        let found =
            toolhost_toolbox::search::find(registry, mode, &query, limit.max(1) as usize, None);
        if format == ToolsFormat::Table {
            if found.is_empty() {
                out!("no tool matches {query:?}");
            }
            for (i, t) in found.iter().enumerate() {
                out!(
                    "{:>2}. {}{}  {}",
                    i + 1,
                    t.descriptor.name,
                    if t.deferred { " (deferred)" } else { "" },
                    t.descriptor.description.lines().next().unwrap_or("")
                );
            }
        } else {
            let value = toolhost_toolbox::search::value(
                &found,
                mode,
                registry.language(),
                &registry.availability().loading,
                // `toolhost tools` lists tools without handles too.
                false,
            );
            out!("{}", serde_json::to_string_pretty(&value)?);
        }
        return Ok(());
    }
    let fmt = match format {
        ToolsFormat::Table => {
            let report = host.report();
            out!("mode: {mode} ({})", mode_line(mode));
            out!("{}", toolhost_toolbox::walls_line(&report));
            let deferred = report.served.iter().filter(|s| s.deferred).count();
            if deferred > 0 {
                out!(
                    "deferred: {deferred} of {} tools, not in tools/list: `{}` finds them, and they are called by name",
                    report.served.len(),
                    toolhost_toolbox::search::NAME
                );
            }
            for s in &report.served {
                let Some(t) = registry.resolve(&s.name, None) else {
                    continue;
                };
                let d = &t.descriptor;
                out!(
                    "{:<14} {:<6} {}",
                    d.name,
                    format!("{:?}", s.decision).to_lowercase(),
                    d.description.lines().next().unwrap_or("")
                );
                let paths: Vec<String> = d
                    .paths
                    .iter()
                    .map(|p| format!("{}:{:?}", p.pointer, p.access).to_lowercase())
                    .collect();
                out!(
                    "{:<21} from {} ({}); {}; read_only={} destructive={} idempotent={} open_world={} paths=[{}]",
                    "",
                    s.component,
                    s.isolation.as_str(),
                    callers_line(mode, &t.policy, s.deferred),
                    d.annotations.read_only,
                    d.annotations.destructive,
                    d.annotations.idempotent,
                    d.annotations.open_world,
                    paths.join(", ")
                );
            }
            for s in &report.skipped {
                out!("{:<14} {:<6} not served: {}", s.name, "-", s.reason);
            }
            for w in &report.warnings {
                out!("warning: {w}");
            }
            for p in report.provenance.values() {
                out!(
                    "\n{}: locked to {}{}; signed: {}",
                    p.source,
                    p.manifest
                        .as_ref()
                        .map_or_else(String::new, |m| format!("manifest {m}, ")),
                    format_args!("component {}", p.component),
                    p.signer
                );
            }
            if let Some(s) = host.recovery().staging.summary() {
                out!("\nstaging: {s}");
            }
            return Ok(());
        }
        ToolsFormat::Mcp => Format::Mcp,
        ToolsFormat::Openai => Format::OpenAi,
        ToolsFormat::Anthropic => Format::Anthropic,
    };
    let out = advertise::schemas(registry, None, fmt);
    out!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// What the model is offered in `mode`, in a few words.
fn mode_line(mode: ToolboxMode) -> &'static str {
    match mode {
        ToolboxMode::Native => "the model is offered every tool it may call, each with its schema",
        ToolboxMode::Code => {
            "the model is offered run_code, whose scripts call the tools; tools only the model may call are offered too"
        }
        ToolboxMode::Both => "the model is offered run_code and every tool it may call",
    }
}

/// What each caller sees of a tool: whether the model is offered it (or
/// may only call it by name), and whether scripts may call it.
fn callers_line(mode: ToolboxMode, policy: &toolhost_policy::ToolPolicy, deferred: bool) -> String {
    if policy.sandbox.call_tools {
        return "model: listed; code: no (a script cannot start a script)".into();
    }
    let callers = policy.callers;
    let model = match (callers.model(), mode.lists(callers)) {
        (true, true) if deferred => "by name (deferred: found by search_tools)",
        (true, true) => "listed",
        (true, false) => "by name (not listed: scripts call it)",
        (false, _) => "no",
    };
    let code = match (callers.code(), mode.runs_code()) {
        (true, true) => "yes",
        (true, false) => "no (mode native runs no scripts)",
        (false, _) => "no (callers = \"model\")",
    };
    format!("model: {model}; code: {code}")
}
