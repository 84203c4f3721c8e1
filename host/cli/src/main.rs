//! `toolhost`: serve sandboxed tool components to agents over MCP, and call
//! them through the full pipeline from a shell.

mod commands;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use commands::{
    Context, author, call, cassette, inspect, journal, log, pins, serve, supply, tools,
};
use std::path::PathBuf;
use toolhost::default_cache_dir;
use toolhost_toolbox::default_journal_dir;

#[derive(Parser)]
#[command(
    name = "toolhost",
    version,
    about = "A sandbox host for LLM-agent tools: the model can ask; the host decides."
)]
struct Cli {
    /// Compiled-component cache directory (default: ~/.cache/toolhost).
    #[arg(long, global = true)]
    cache_dir: Option<PathBuf>,
    /// Compile components on every load instead of caching them.
    #[arg(long, global = true)]
    no_cache: bool,
    /// Where committed file changes are journaled, for crash recovery and
    /// undo (default: CACHE_DIR/journal). On the file system of the files
    /// the tools change, pre-images are hard links instead of copies.
    #[arg(long, global = true, value_name = "DIR")]
    journal: Option<PathBuf>,
    /// Flush each commit of file changes to disk step by step (fsync), so
    /// it stays all or nothing across a power loss, not only a crash.
    #[arg(long, global = true)]
    sync_commits: bool,
    /// Export each call's spans (parented to the client's W3C trace
    /// context) by OTLP over HTTP to this traces endpoint, e.g.
    /// http://127.0.0.1:4318/v1/traces (also: OTEL_EXPORTER_OTLP_ENDPOINT,
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). Default: no export.
    #[arg(long, global = true, value_name = "URL")]
    otlp_endpoint: Option<String>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the tools to an agent over MCP (stdio by default).
    ///
    /// Every call goes through the whole pipeline. Each client connection
    /// is its own session. `ask` decisions are sent to the client as
    /// elicitation requests; a client that cannot answer gets a denial.
    /// Logs go to stderr (TOOLHOST_LOG=info for more).
    ///
    /// Client configuration: {"command": "toolhost", "args": ["serve"]}
    Serve(serve::ServeArgs),
    /// Call one tool through the whole pipeline.
    Call(call::CallArgs),
    /// Run a scripted session deterministically and record it to a cassette.
    ///
    /// The script is JSON Lines, one call per line:
    /// {"tool": "read", "arguments": {"path": "a.txt"}} (arguments may
    /// also be a string, sent as is).
    Record(cassette::RecordArgs),
    /// Replay a cassette's calls and report any divergence (exit 1).
    ///
    /// By default each result comes from the cassette, with no tool run;
    /// --verify re-runs every call in its recorded environment and compares.
    Replay(cassette::ReplayArgs),
    /// List the tools served, and those that cannot run under their policy.
    ///
    /// A toolbox serving more than `defer_over` tools advertises only its
    /// eager ones and `search_tools`; the others are marked `deferred`
    /// here, left out of `--format mcp` and `openai` (as `tools/list`
    /// leaves them out), and carry `defer_loading` in `--format anthropic`.
    Tools(tools::ToolsArgs),
    /// Start a tool project: a tool with input and output schemas, a
    /// policy, tests and a README, from a kit language's template, in the
    /// directory NAME.
    ///
    /// Then, in it: `toolhost build`, `toolhost call NAME --args …`,
    /// `toolhost dev`.
    New(author::NewArgs),
    /// Build the tool project (here, or --dir) with its language's kit
    /// and pinned toolchain, installed into the cache the first time; then
    /// show the component's imports against its policy.
    Build(author::BuildArgs),
    /// Serve the tool project over MCP (stdio, or --http), building it
    /// again whenever its sources change; clients see the new tools at
    /// once (hot reload).
    ///
    /// Client configuration: {"command": "toolhost", "args": ["dev", "--dir", "/path/to/project"]}
    Dev(author::DevArgs),
    /// Show a component's imports against a policy's grants.
    Inspect(inspect::InspectArgs),
    /// Resolve the toolbox's remote components and pin them in its lock
    /// file (`toolhost.lock` beside `toolhost.toml`).
    ///
    /// Tags are resolved to manifest digests, the components pulled into
    /// the store (every blob's digest and size checked) and their
    /// signatures verified against the toolbox's [[trust]] rules. Only
    /// sources not yet locked (or whose pin no longer matches) are
    /// resolved; `serve`, `call` and `tools` never resolve a tag. The pins
    /// kept are checked as serving checks them, under the trust rules as
    /// they are now: any that no longer passes is named, and lock fails.
    Lock(pins::LockArgs),
    /// Move pins on purpose: resolve remote components again (those whose
    /// source contains NAME, or all) and print what changed: digest,
    /// signer, imports and declared tools, old and new.
    Update(pins::UpdateArgs),
    /// Add a third-party component: fetch it, show what it imports and
    /// declares, write the least policy that runs it (placeholders: it
    /// grants nothing until you fill them in), append it to the toolbox and
    /// lock it. The publisher's own idea of a policy is never applied.
    Add(supply::AddArgs),
    /// Policies: `toolhost policy suggest SOURCE` (the least policy that
    /// runs a component), `toolhost policy import policy.yaml` (a wassette
    /// policy as toolhost's).
    Policy(supply::PolicyArgs),
    /// Push a component to an OCI registry as a Wasm artifact (the CNCF TAG
    /// Runtime layout), annotated with its tools and contract version.
    Publish(supply::PublishArgs),
    /// Pretty-print a session log, or every replica's log in a directory
    /// merged in time order.
    Log(log::LogArgs),
    /// List the calls whose file changes were committed, oldest first, with
    /// what each changed (the journal keeps them for undo).
    History(journal::HistoryArgs),
    /// Revert a committed call's file changes (the newest call's by
    /// default), refusing with `conflict` if any of its files changed since.
    Undo(journal::UndoArgs),
    /// Re-apply a call's file changes that `undo` reverted (the newest
    /// undone call by default).
    Redo(journal::RedoArgs),
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> anyhow::Result<std::process::ExitCode> {
    // A worker process (see toolhost-worker) before anything else: no
    // logging set up, no runtime, no environment read.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == toolhost_worker::WORKER_ARG)
    {
        return Ok(toolhost_worker::worker_main());
    }
    toolhost_worker::workers_run_this_binary();
    serving_main().map(|()| std::process::ExitCode::SUCCESS)
}

#[tokio::main]
async fn serving_main() -> anyhow::Result<()> {
    let ran = run().await;
    // No call runs any more: this process's staging areas go (a killed
    // host's are removed by the next start).
    toolhost_effects::StagingArea::release_all();
    match ran {
        Err(e) if is_broken_pipe(&e) => Ok(()),
        other => other,
    }
}

/// Parses the command line and runs its command.
async fn run() -> anyhow::Result<()> {
    // `--version` names the build's parts, known only at run time; `-V`
    // stays one line.
    let cli = Cli::from_arg_matches(
        &Cli::command()
            .long_version(toolhost::version::long().leak() as &str)
            .get_matches(),
    )
    .unwrap_or_else(|e| e.exit());
    let telemetry = toolhost::telemetry::init(
        cli.otlp_endpoint.as_deref(),
        tokio::runtime::Handle::current(),
    )?;
    let ran = dispatch(cli).await;
    telemetry.shutdown().await;
    ran
}

/// Runs the command `cli` names.
async fn dispatch(cli: Cli) -> anyhow::Result<()> {
    let ctx = Context {
        journal_dir: cli
            .journal
            .clone()
            .or_else(|| cli.cache_dir.as_ref().map(|d| d.join("journal")))
            .or_else(default_journal_dir),
        cache: if cli.no_cache {
            None
        } else {
            cli.cache_dir.clone().or_else(default_cache_dir)
        },
        cache_dir: cli.cache_dir,
        sync_commits: cli.sync_commits,
    };
    match cli.cmd {
        Cmd::Serve(a) => serve::run(&ctx, a).await,
        Cmd::Dev(a) => author::dev(&ctx, a).await,
        Cmd::Call(a) => call::run(&ctx, a).await,
        Cmd::Record(a) => cassette::record(&ctx, a).await,
        Cmd::Replay(a) => cassette::replay(&ctx, a).await,
        Cmd::Tools(a) => tools::run(&ctx, a).await,
        Cmd::Inspect(a) => inspect::run(&ctx, a).await,
        Cmd::New(a) => author::new(&ctx, a),
        Cmd::Build(a) => author::build(&ctx, a).await,
        Cmd::Lock(a) => pins::lock(&ctx, a).await,
        Cmd::Update(a) => pins::update(&ctx, a).await,
        Cmd::Add(a) => supply::add(&ctx, a).await,
        Cmd::Policy(a) => supply::policy(&ctx, a).await,
        Cmd::Publish(a) => supply::publish(&ctx, a).await,
        Cmd::History(a) => journal::history(&ctx, a),
        Cmd::Undo(a) => journal::undo(&ctx, a),
        Cmd::Redo(a) => journal::redo(&ctx, a),
        Cmd::Log(a) => log::run(a),
    }
}
