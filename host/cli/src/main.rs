//! `toolhost`: call sandboxed tool components through the full pipeline.

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolhost::{Host, TerminalApprover, default_cache_dir};
use toolhost_contract::{SessionEvent, ToolCall};
use toolhost_pipeline::advertise::{self, Format};
use toolhost_pipeline::{ApproveAll, Pipeline, SessionLog, read_log};
use toolhost_runtime::ImportVerdict;

#[derive(Parser)]
#[command(
    name = "toolhost",
    version,
    about = "A sandbox host for LLM-agent tools"
)]
struct Cli {
    /// Compiled-component cache directory (default: ~/.cache/toolhost).
    #[arg(long, global = true)]
    cache_dir: Option<PathBuf>,
    /// Compile components on every load instead of caching them.
    #[arg(long, global = true)]
    no_cache: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Call one tool through the whole pipeline.
    Call {
        /// The component file.
        component: PathBuf,
        /// The tool's name.
        tool: String,
        /// The arguments, as the model would emit them (raw JSON text).
        #[arg(long, default_value = "")]
        args: String,
        /// The policy file (default: deny everything).
        #[arg(long)]
        policy: Option<PathBuf>,
        /// Print the whole result as JSON.
        #[arg(long)]
        json: bool,
        /// Append the call and result events to this session log.
        #[arg(long)]
        log: Option<PathBuf>,
        /// Approve every `ask` without prompting.
        #[arg(long)]
        yes: bool,
    },
    /// List a component's tools.
    Tools {
        /// The component file.
        component: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: ToolsFormat,
    },
    /// Show a component's imports against a policy's grants.
    Inspect {
        /// The component file.
        component: PathBuf,
        /// The policy file (default: deny everything).
        #[arg(long)]
        policy: Option<PathBuf>,
    },
    /// Pretty-print a session log.
    Log {
        /// The log file.
        file: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ToolsFormat {
    Table,
    Mcp,
    Openai,
    Anthropic,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOLHOST_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let cache = if cli.no_cache {
        None
    } else {
        cli.cache_dir.or_else(default_cache_dir)
    };
    match cli.cmd {
        Cmd::Call {
            component,
            tool,
            args,
            policy,
            json,
            log,
            yes,
        } => {
            let host = Host::new(cache)?;
            let (_c, _reg) = host.add_component(&component, policy.as_deref()).await?;
            let mut b = Pipeline::builder(host.registry.clone());
            if yes {
                b = b.approver(Arc::new(ApproveAll));
            } else if std::io::stdin().is_terminal() {
                b = b.approver(Arc::new(TerminalApprover));
            }
            if let Some(path) = log {
                b = b.session_log(Arc::new(SessionLog::open(&path)?));
            }
            let pipeline = b.build();
            let cancel = CancellationToken::new();
            let on_ctrl_c = cancel.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    on_ctrl_c.cancel();
                }
            });
            let result = pipeline
                .execute(ToolCall::new("cli-1", tool, args), cancel)
                .await;
            if json {
                println!("{}", serde_json::to_string_pretty(&result)?);
            } else {
                if let Some(e) = result.error() {
                    eprintln!("error [{}]", e.code);
                }
                println!("{}", result.text());
            }
            if result.is_error() {
                std::process::exit(1);
            }
        }
        Cmd::Tools { component, format } => {
            let host = Host::new(cache)?;
            let (_c, _reg) = host
                .add_with_policy(&component, &toolhost_policy::Policy::deny_all())
                .await?;
            let fmt = match format {
                ToolsFormat::Table => {
                    for t in host.registry.visible(None) {
                        let d = &t.descriptor;
                        let paths: Vec<String> = d
                            .paths
                            .iter()
                            .map(|p| format!("{}:{:?}", p.pointer, p.access).to_lowercase())
                            .collect();
                        println!(
                            "{:<12} {}",
                            d.name,
                            d.description.lines().next().unwrap_or("")
                        );
                        println!(
                            "{:<12} read_only={} destructive={} idempotent={} open_world={} paths=[{}]",
                            "",
                            d.annotations.read_only,
                            d.annotations.destructive,
                            d.annotations.idempotent,
                            d.annotations.open_world,
                            paths.join(", ")
                        );
                    }
                    return Ok(());
                }
                ToolsFormat::Mcp => Format::Mcp,
                ToolsFormat::Openai => Format::OpenAi,
                ToolsFormat::Anthropic => Format::Anthropic,
            };
            let out = advertise::schemas(&host.registry, None, fmt);
            println!("{}", serde_json::to_string_pretty(&out)?);
        }
        Cmd::Inspect { component, policy } => {
            let host = Host::new(cache)?;
            let loaded = host.runtime.load(&component).await?;
            let policy = Host::policy(policy.as_deref())?;
            println!("component {} (sha256 {})", component.display(), loaded.id());
            println!(
                "compiled in {:?} ({:?})",
                loaded.compile_time(),
                loaded.cache_outcome()
            );
            println!(
                "tools: {}",
                loaded
                    .tools()
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let mut denied = false;
            for t in loaded.tools() {
                let tp = policy.for_tool(&t.name);
                println!("\n{} (decision: {:?})", t.name, tp.decision);
                for g in &tp.sandbox.fs {
                    println!("  grant {} -> {} ({:?})", g.host.display(), g.guest, g.mode);
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
                    println!("  {:<45} {v}", c.import);
                }
            }
            if denied {
                bail!("some imports are not granted by this policy");
            }
        }
        Cmd::Log { file } => {
            let contents =
                read_log(&file).with_context(|| format!("reading {}", file.display()))?;
            for ev in &contents.events {
                match ev {
                    SessionEvent::ToolCall(c) => {
                        println!("→ {} {} {}", c.call_id, c.tool, c.arguments);
                    }
                    SessionEvent::ToolResult(r) => {
                        let status = r
                            .code
                            .as_deref()
                            .map_or("ok".to_owned(), |c| format!("error [{c}]"));
                        println!(
                            "← {} {} {} ({} µs)",
                            r.call_id, r.tool, status, r.timings.total_us
                        );
                        if let Some(d) = r.trace.denial() {
                            println!(
                                "    decided by {:?}/{}: {}",
                                d.stage,
                                d.by,
                                d.note.as_deref().unwrap_or("")
                            );
                        }
                        for b in &r.content {
                            if let toolhost_contract::ContentBlock::Text { text } = b {
                                for line in text.lines().take(20) {
                                    println!("    {line}");
                                }
                            }
                        }
                    }
                }
            }
            if let Some(t) = contents.torn_tail {
                println!("(a torn last line of {} bytes was skipped)", t.len());
            }
        }
    }
    Ok(())
}
