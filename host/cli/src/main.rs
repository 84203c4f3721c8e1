//! `toolhost`: serve sandboxed tool components to agents over MCP, and call
//! them through the full pipeline from a shell.

mod supply;

use anyhow::{Context, bail};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolhost::{
    Host, HostConfig, TerminalApprover, TerminalProgress, default_cache_dir, find_toolbox,
};
use toolhost_contract::{SessionEvent, ToolCall};
use toolhost_effects::Journal;
use toolhost_mcp::http::HttpOptions;
use toolhost_mcp::reload::{self, ToolboxSource};
use toolhost_mcp::{Notices, Server, ServerOptions, Severity};
use toolhost_pipeline::advertise::{self, Format};
use toolhost_pipeline::replay::{Layer, Mode, Replay};
use toolhost_pipeline::{ApproveAll, Pipeline, SessionLog, read_log};
use toolhost_policy::Mode as ToolboxMode;
use toolhost_runtime::ImportVerdict;
use toolhost_toolbox::file::{ComponentEntry, PolicySource, Source, Toolbox};
use toolhost_toolbox::{Moving, default_journal_dir};

/// `println!` that returns an error instead of panicking when stdout is
/// closed (`toolhost inspect … | head`): `main` then exits quietly.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).context("writing to stdout")?
    }};
}

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
    #[command(subcommand)]
    cmd: Cmd,
}

/// Which tools: a toolbox file, one component, or the default.
#[derive(Args, Clone)]
struct ToolSet {
    /// The directory to serve: where `toolhost.toml` is looked for, and the
    /// `/workspace` of the default policies (default: the current directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The toolbox file (default: ./toolhost.toml if present, else the
    /// built-in tools with their default policies, serving the current
    /// directory as /workspace).
    #[arg(long, value_name = "FILE", conflicts_with = "component")]
    config: Option<PathBuf>,
    /// Use this one component instead of a toolbox (a .wasm file or
    /// `builtin:NAME`).
    #[arg(long, value_name = "FILE")]
    component: Option<String>,
    /// The component's policy file (with --component; default: deny
    /// everything, or the built-in's default policy).
    #[arg(long, value_name = "FILE", requires = "component")]
    policy: Option<PathBuf>,
    /// How the tools are offered to the model: `native` (each with its
    /// schema), `code` (the reserved `run_code`: a script that calls them)
    /// or `both`; overrides the toolbox file's `mode` (default: native).
    #[arg(long, value_name = "MODE")]
    mode: Option<ToolboxMode>,
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
    Serve {
        #[command(flatten)]
        tools: ToolSet,
        /// Serve streamable HTTP at this address (e.g. 127.0.0.1:8765)
        /// instead of stdio. The endpoint is http://ADDR/mcp.
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
        /// A file holding the bearer token HTTP clients must send
        /// (required when --http binds a non-loopback address).
        #[arg(long, value_name = "FILE", requires = "http")]
        token_file: Option<PathBuf>,
        /// OAuth, quotas: what serving a team takes.
        #[command(flatten)]
        team: Box<TeamArgs>,
        /// A file holding the secret (at least 32 bytes) that seals what
        /// clients carry between requests: baseline handles and approval
        /// states. Replicas behind one load balancer must share it.
        /// Default: a random secret of this process.
        #[arg(long, value_name = "FILE")]
        state_secret_file: Option<PathBuf>,
        /// Extra Host header values to accept over HTTP (DNS-rebinding
        /// protection accepts loopback names only by default).
        #[arg(long, value_name = "HOST", requires = "http")]
        allow_host: Vec<String>,
        /// Extra browser origins to accept over HTTP (scheme://host[:port]).
        #[arg(long, value_name = "ORIGIN", requires = "http")]
        allow_origin: Vec<String>,
        /// Append every session's call and result events to this log.
        /// A directory (an existing one, or a path ending in `/`): this
        /// replica's own log in it, named by host name and process id, so
        /// replicas can share one directory (`toolhost log DIR` merges them).
        #[arg(long, value_name = "FILE|DIR")]
        log: Option<PathBuf>,
        /// Keep truncated results' full text (artifacts) in this directory
        /// instead of in memory: replicas that share it serve each other's
        /// artifacts, each to the principal whose call made it. Used
        /// approval states are recorded there too (`.approvals/`), so an
        /// approval opens once across the replicas.
        #[arg(long, value_name = "DIR")]
        artifacts_dir: Option<PathBuf>,
        /// Seconds the person at the client has to answer an approval.
        #[arg(long, value_name = "SECS", default_value_t = 120)]
        approval_timeout: u64,
        /// Do not reload when the toolbox, a component or a policy changes.
        #[arg(long)]
        no_reload: bool,
        /// Tool calls (sandbox instances) running at once; more queue.
        #[arg(long, value_name = "N", default_value_t = 64)]
        max_instances: u32,
        /// Deterministic sessions: clocks, randomness and ids derive from
        /// this seed (session N uses seed + N - 1).
        #[arg(long, value_name = "N")]
        seed: Option<u64>,
        /// Record every call and result to this cassette.
        #[arg(long, value_name = "FILE", conflicts_with = "replay")]
        record: Option<PathBuf>,
        /// Answer calls from this cassette (strict: a call it does not
        /// have fails with `not_recorded`).
        #[arg(long, value_name = "FILE")]
        replay: Option<PathBuf>,
        /// With --replay: re-run each call and compare instead of returning
        /// the recorded result (divergences are logged as warnings).
        #[arg(long, requires = "replay")]
        verify: bool,
    },
    /// Call one tool through the whole pipeline.
    Call {
        /// The tool's name.
        tool: String,
        /// The arguments, as the model would emit them (raw JSON text).
        #[arg(long, default_value = "")]
        args: String,
        #[command(flatten)]
        tools: ToolSet,
        /// Print the whole result as JSON.
        #[arg(long)]
        json: bool,
        /// Append the call and result events to this session log.
        #[arg(long)]
        log: Option<PathBuf>,
        /// Approve every `ask` without prompting.
        #[arg(long)]
        yes: bool,
        /// Deterministic: the guest's clocks and randomness derive from
        /// this seed.
        #[arg(long, value_name = "N")]
        seed: Option<u64>,
    },
    /// Run a scripted session deterministically and record it to a cassette.
    ///
    /// The script is JSON Lines, one call per line:
    /// {"tool": "read", "arguments": {"path": "a.txt"}} (arguments may
    /// also be a string, sent as is).
    Record {
        /// The script.
        script: PathBuf,
        /// The cassette to write.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        #[command(flatten)]
        tools: ToolSet,
        /// The session seed.
        #[arg(long, value_name = "N", default_value_t = 0)]
        seed: u64,
        /// Approve every `ask` (otherwise `ask` is denied, as recorded).
        #[arg(long)]
        yes: bool,
    },
    /// Replay a cassette's calls and report any divergence (exit 1).
    ///
    /// By default each result comes from the cassette, with no tool run;
    /// --verify re-runs every call in its recorded environment and compares.
    Replay {
        /// The cassette.
        cassette: PathBuf,
        /// Re-run the components and compare with the recording.
        #[arg(long)]
        verify: bool,
        #[command(flatten)]
        tools: ToolSet,
        /// Approve every `ask` (as the recording session did, if it did).
        #[arg(long)]
        yes: bool,
    },
    /// List the tools served, and those that cannot run under their policy.
    ///
    /// A toolbox serving more than `defer_over` tools advertises only its
    /// eager ones and `search_tools`; the others are marked `deferred`
    /// here, left out of `--format mcp` and `openai` (as `tools/list`
    /// leaves them out), and carry `defer_loading` in `--format anthropic`.
    Tools {
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
    },
    /// Start a tool project: a tool with input and output schemas, a
    /// policy, tests and a README, from a kit language's template, in the
    /// directory NAME.
    ///
    /// Then, in it: `toolhost build`, `toolhost call NAME --args …`,
    /// `toolhost dev`.
    New {
        /// The project's name, which is also the tool's (`word-count`
        /// names the tool `word_count`).
        name: String,
        /// The kit language: rust, python, js, c or go.
        #[arg(long)]
        lang: toolhost::author::Lang,
        /// Where to create the project (default: the current directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Build the tool project (here, or --dir) with its language's kit
    /// and pinned toolchain, installed into the cache the first time; then
    /// show the component's imports against its policy.
    Build {
        /// The project's directory (default: the current directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Serve the tool project over MCP (stdio, or --http), building it
    /// again whenever its sources change; clients see the new tools at
    /// once (hot reload).
    ///
    /// Client configuration: {"command": "toolhost", "args": ["dev", "--dir", "/path/to/project"]}
    Dev {
        /// The project's directory (default: the current directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Serve streamable HTTP at this address instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
    },
    /// Show a component's imports against a policy's grants.
    Inspect {
        /// The component file.
        component: PathBuf,
        /// The policy file (default: deny everything).
        #[arg(long)]
        policy: Option<PathBuf>,
    },
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
    Lock {
        #[command(flatten)]
        tools: ToolSet,
    },
    /// Move pins on purpose: resolve remote components again (those whose
    /// source contains NAME, or all) and print what changed: digest,
    /// signer, imports and declared tools, old and new.
    Update {
        /// Parts of the sources to update (default: every remote source).
        names: Vec<String>,
        #[command(flatten)]
        tools: ToolSet,
    },
    /// Add a third-party component: fetch it, show what it imports and
    /// declares, write the least policy that runs it (placeholders: it
    /// grants nothing until you fill them in), append it to the toolbox and
    /// lock it. The publisher's own idea of a policy is never applied.
    Add {
        /// `oci://REGISTRY/REPOSITORY:TAG` (or `@sha256:…`), or an https URL.
        source: String,
        /// The component's sha256 (https sources).
        #[arg(long)]
        digest: Option<String>,
        /// Prefix its tool names (to avoid clashes).
        #[arg(long)]
        prefix: Option<String>,
        /// The toolbox file (default: ./toolhost.toml, created if missing).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Policies: `toolhost policy suggest SOURCE`.
    Policy {
        #[command(subcommand)]
        cmd: PolicyCmd,
    },
    /// Push a component to an OCI registry as a Wasm artifact (the CNCF TAG
    /// Runtime layout), annotated with its tools and contract version.
    Publish {
        /// The component file.
        component: PathBuf,
        /// Where: oci://REGISTRY/REPOSITORY:TAG.
        reference: String,
        /// The version to annotate it with.
        #[arg(long)]
        version: Option<String>,
        /// A description.
        #[arg(long)]
        description: Option<String>,
        /// Where its source is (a URL).
        #[arg(long)]
        source_url: Option<String>,
        /// The toolbox whose [registries] settings apply (insecure, auth).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Pretty-print a session log, or every replica's log in a directory
    /// merged in time order.
    Log {
        /// The log file, or a directory of logs (`serve --log DIR/`).
        file: PathBuf,
    },
    /// List the calls whose file changes were committed, oldest first, with
    /// what each changed (the journal keeps them for undo).
    History {
        /// Only this session's calls.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Print the journal entries as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revert a committed call's file changes (the newest call's by
    /// default), refusing with `conflict` if any of its files changed since.
    Undo {
        /// The call id (or journal entry) to undo.
        call: Option<String>,
        /// The newest call of this session.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
    /// Re-apply a call's file changes that `undo` reverted (the newest
    /// undone call by default).
    Redo {
        /// The call id (or journal entry) to redo.
        call: Option<String>,
        /// The newest undone call of this session.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
}

#[derive(Subcommand)]
enum PolicyCmd {
    /// Show what a component imports and declares, and the least policy
    /// that runs it (nothing is written).
    Suggest {
        /// `oci://…`, an https URL (with --digest), `builtin:NAME` or a file.
        source: String,
        /// The component's sha256 (https sources).
        #[arg(long)]
        digest: Option<String>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ToolsFormat {
    Table,
    Mcp,
    Openai,
    Anthropic,
}

/// The toolbox a command uses.
fn toolbox(set: &ToolSet, dir: &Path) -> anyhow::Result<Toolbox> {
    let mut tb = toolbox_of(set, dir)?;
    if let Some(mode) = set.mode {
        tb.mode = mode;
    }
    Ok(tb)
}

fn toolbox_of(set: &ToolSet, dir: &Path) -> anyhow::Result<Toolbox> {
    if let Some(c) = &set.component {
        // Files named on the command line are relative to where it runs.
        let cwd = std::env::current_dir()?;
        let source = match c.strip_prefix("builtin:") {
            Some(name) => Source::Builtin(name.to_owned()),
            None => Source::File(cwd.join(c)),
        };
        let policy = match (&set.policy, &source) {
            (Some(p), _) => PolicySource::File(cwd.join(p)),
            (None, Source::Builtin(_)) => PolicySource::BuiltinDefault,
            (None, _) => PolicySource::Inline(Box::default()),
        };
        return Ok(Toolbox::of(
            "<command line>",
            dir,
            vec![ComponentEntry {
                source,
                policy,
                prefix: None,
                advertise: Default::default(),
                line: 0,
            }],
        ));
    }
    Ok(find_toolbox(set.config.as_deref(), dir)?)
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

/// Runs `calls` in order, printing one line each.
async fn run_calls(pipeline: &Pipeline, calls: Vec<(String, String)>) -> anyhow::Result<()> {
    for (i, (tool, args)) in calls.into_iter().enumerate() {
        let r = pipeline
            .execute(
                ToolCall::new(format!("call_{}", i + 1), tool.clone(), args),
                Default::default(),
            )
            .await;
        let status = r.code().map_or("ok".to_owned(), |c| format!("error [{c}]"));
        out!("{:>3}. {tool}: {status}", i + 1);
    }
    Ok(())
}

/// `ms` since the epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The directory served: `--dir`, made absolute, or the current directory.
fn served_dir(set: &ToolSet) -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir()?;
    Ok(match &set.dir {
        Some(d) => cwd.join(d),
        None => cwd,
    })
}

async fn host(
    (cache, journal_dir, sync): (Option<PathBuf>, Option<&Path>, bool),
    max_instances: u32,
    set: &ToolSet,
) -> anyhow::Result<Arc<Host>> {
    let dir = served_dir(set)?;
    let host = Host::new(HostConfig {
        cache_dir: cache,
        max_instances,
        on_compile: Some(Arc::new(TerminalProgress::default())),
        journal_dir: journal_dir.map(Path::to_path_buf),
        journal_sync: sync,
        ..HostConfig::default()
    })?;
    let tb = toolbox(set, &dir)?;
    host.load(&tb).await?;
    Ok(Arc::new(host))
}

/// Cancelled on SIGINT or SIGTERM.
fn on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(s) => s,
                    Err(_) => {
                        let _ = ctrl_c.await;
                        t.cancel();
                        return;
                    }
                };
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        t.cancel();
    });
    token
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

/// Whether `e` is a write to a closed pipe (the reader went away).
/// Prints a component's imports against a policy's grants (`inspect`, and
/// `build` after it built); an error when some import is not granted.
async fn inspect(
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
    out!(
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
/// when they changed. `serve` reloads the component the build replaced.
fn dev(dir: &Path, kits: PathBuf) -> anyhow::Result<()> {
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

/// The journal, with what the last host left recovered: a commit it left
/// halfway finished or rolled back, and what it staged removed (from the
/// staging directory a host with this cache directory uses).
fn open_journal(
    journal: &Path,
    cache: Option<&Path>,
) -> anyhow::Result<(Journal, toolhost_effects::Recovery)> {
    let staging = toolhost_runtime::RuntimeConfig {
        cache_dir: cache.map(Path::to_path_buf),
        ..Default::default()
    }
    .staging_dir();
    Ok(toolhost_effects::recover(journal, &staging)?)
}

async fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOLHOST_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    // `--version` names the build's parts, known only at run time; `-V`
    // stays one line.
    let cli = Cli::from_arg_matches(
        &Cli::command()
            .long_version(toolhost::version::long().leak() as &str)
            .get_matches(),
    )
    .unwrap_or_else(|e| e.exit());
    let journal_dir = cli
        .journal
        .clone()
        .or_else(|| cli.cache_dir.as_ref().map(|d| d.join("journal")))
        .or_else(default_journal_dir);
    // Only the journal's own commands need it named; a host without one
    // journals in a directory of its own (see HostConfig::journal_dir).
    let journal_named = || {
        journal_dir
            .as_deref()
            .context("no cache directory for the journal (set HOME, --cache-dir or --journal)")
    };
    let cli_cache_dir = cli.cache_dir.clone();
    let cache = if cli.no_cache {
        None
    } else {
        cli.cache_dir.or_else(default_cache_dir)
    };
    let default_instances = HostConfig::default().max_instances;
    // The kits and their toolchains live in the cache even with
    // --no-cache (which is about compiled components).
    let kits_cache = || {
        cli_cache_dir
            .clone()
            .or_else(default_cache_dir)
            .context("no cache directory for the tool kits (set HOME or --cache-dir)")
    };
    let cmd = match cli.cmd {
        Cmd::Dev { dir, http } => {
            let dir = match dir {
                Some(d) => d,
                None => std::env::current_dir()?,
            };
            dev(&dir, kits_cache()?)?;
            // Then exactly what `toolhost serve --dir DIR` does.
            let mut args = vec![
                "toolhost".into(),
                "serve".into(),
                "--dir".into(),
                dir.into_os_string(),
            ];
            if let Some(addr) = http {
                args.extend(["--http".into(), addr.to_string().into()]);
            }
            Cli::try_parse_from(args)?.cmd
        }
        other => other,
    };
    match cmd {
        Cmd::Serve {
            tools,
            http,
            token_file,
            state_secret_file,
            team,
            allow_host,
            allow_origin,
            log,
            artifacts_dir,
            approval_timeout,
            no_reload,
            max_instances,
            seed,
            record,
            replay,
            verify,
        } => {
            // The protocol answers at once; components compile in the
            // background and their tools are served as each is ready.
            let notices = Notices::new();
            let dir = served_dir(&tools)?;
            // The shared volume records used approval states too.
            let used_states_dir = artifacts_dir.as_ref().map(|d| d.join(".approvals"));
            let host = Arc::new(Host::new(HostConfig {
                cache_dir: cache,
                max_instances,
                on_compile: Some(Arc::new(notices.clone())),
                journal_dir: journal_dir.clone(),
                journal_sync: cli.sync_commits,
                artifacts_dir,
                ..HostConfig::default()
            })?);
            let tb = toolbox(&tools, &dir)?;
            let layer = if verify {
                Layer::Verify
            } else {
                Layer::Cassette
            };
            let cassette = match (record, replay) {
                (Some(p), _) => Some(Replay::open(&p, Mode::Record, layer)?),
                (None, Some(p)) => Some(Replay::open(&p, Mode::Replay, layer)?),
                (None, None) => None,
            };
            let log = match log {
                Some(p) => Some(Arc::new(SessionLog::open(&replica_log(&p)?)?)),
                None => None,
            };
            let state_secret = match &state_secret_file {
                Some(f) => Some(read_secret(f)?),
                None => None,
            };
            let server = Server::new(
                host.clone(),
                ServerOptions {
                    approval_timeout: Duration::from_secs(approval_timeout),
                    log,
                    seed,
                    cassette: cassette.clone(),
                    notices: notices.clone(),
                    state_secret,
                    quotas: toolhost_auth::QuotaLimits {
                        concurrent: team.quota_concurrent,
                        per_minute: team.quota_per_minute,
                    },
                    used_states_dir,
                },
            )?;
            let changed = {
                let server = server.clone();
                Arc::new(move || server.tools_changed())
            };
            let reload = (!no_reload && tools.component.is_none()).then(|| {
                let source = ToolboxSource {
                    explicit: tools.config.clone(),
                    dir: dir.clone(),
                    mode: tools.mode,
                };
                // Before serving: a change while the first load runs reloads.
                let since = source.baseline(&toolhost_toolbox::watched_files(&tb));
                (source, since)
            });
            let startup = host.start(tb, changed)?;
            let stop = on_signal();
            {
                let server = server.clone();
                let stop = stop.clone();
                tokio::spawn(async move {
                    let report = startup.finished().await;
                    server.mark_ready();
                    if !toolhost_worker::support().missing().is_empty() {
                        notices.say(Severity::Warning, toolhost_toolbox::walls_line(&report));
                    } else {
                        tracing::info!("{}", toolhost_toolbox::walls_line(&report));
                    }
                    for s in &report.skipped {
                        notices.say(
                            Severity::Warning,
                            format!(
                                "not serving `{}` from {}: {}",
                                s.name, s.component, s.reason
                            ),
                        );
                    }
                    for (component, why) in &report.failed {
                        notices.say(
                            Severity::Error,
                            format!("not serving {component}: it did not load: {why}"),
                        );
                    }
                    for w in &report.warnings {
                        notices.say(Severity::Warning, w.clone());
                    }
                    // Hot reload watches what the first load named.
                    if let Some((source, since)) = reload {
                        reload::watch(server, source, since, reload::DEFAULT_INTERVAL, stop).await;
                    }
                });
            }
            match http {
                Some(bind) => {
                    let mut options = HttpOptions::new(bind);
                    if let Some(f) = token_file {
                        let token = std::fs::read_to_string(&f)
                            .with_context(|| format!("reading the token file {}", f.display()))?;
                        options.token = Some(token.trim().to_owned());
                    }
                    let TeamArgs {
                        oauth_issuer,
                        oauth_resource,
                        oauth_jwks_uri,
                        oauth_scope,
                        oauth_tool_scope,
                        ..
                    } = *team;
                    if let Some(issuer) = oauth_issuer {
                        let mut scopes = toolhost_auth::ScopeRules {
                            base: oauth_scope,
                            ..Default::default()
                        };
                        for spec in &oauth_tool_scope {
                            scopes
                                .add(spec)
                                .map_err(|e| anyhow::anyhow!("--oauth-tool-scope {e}"))?;
                        }
                        let verifier = toolhost_auth::Verifier::new(toolhost_auth::OAuthConfig {
                            issuer,
                            resource: oauth_resource
                                .unwrap_or_else(|| format!("http://{bind}/mcp")),
                            jwks_uri: oauth_jwks_uri,
                            scopes,
                        })
                        .map_err(|e| anyhow::anyhow!("the OAuth resource server: {e}"))?;
                        options.oauth = Some(Arc::new(verifier));
                    }
                    options.allowed_hosts = allow_host;
                    options.allowed_origins = allow_origin;
                    toolhost_mcp::http::serve(server, options, stop).await?;
                }
                None => {
                    tokio::select! {
                        r = server.serve_stdio() => r?,
                        () = stop.cancelled() => {
                            if !server.drain(toolhost_mcp::http::DEFAULT_SHUTDOWN_GRACE).await {
                                tracing::warn!("calls still running at shutdown were ended");
                            }
                        }
                    }
                }
            }
            if let Some(c) = cassette
                && let Err(report) = c.finish()
            {
                tracing::warn!("{report}");
            }
        }
        Cmd::Call {
            tool,
            args,
            tools,
            json,
            log,
            yes,
            seed,
        } => {
            let host = host(
                (cache, journal_dir.as_deref(), cli.sync_commits),
                default_instances,
                &tools,
            )
            .await?;
            let mut b = host.session();
            if let Some(seed) = seed {
                b = b.deterministic(seed);
            }
            if yes {
                b = b.approver(Arc::new(ApproveAll));
            } else if std::io::stdin().is_terminal() {
                b = b.approver(Arc::new(TerminalApprover));
            }
            if let Some(path) = log {
                b = b.session_log(Arc::new(SessionLog::open(&path)?));
            }
            let pipeline = b.build();
            let result = pipeline
                .execute(ToolCall::new("cli-1", tool, args), on_signal())
                .await;
            if json {
                out!("{}", serde_json::to_string_pretty(&result)?);
            } else {
                if let Some(e) = result.error() {
                    eprintln!("error [{}]", e.code);
                }
                out!("{}", result.text());
            }
            if result.is_error() {
                std::process::exit(1);
            }
        }
        Cmd::Record {
            script,
            out,
            tools,
            seed,
            yes,
        } => {
            let calls = toolhost::script::read_script(&script)?
                .iter()
                .map(|c| (c.tool.clone(), c.arguments_text()))
                .collect();
            let host = host(
                (cache, journal_dir.as_deref(), cli.sync_commits),
                default_instances,
                &tools,
            )
            .await?;
            let replay = Replay::open(&out, Mode::Record, Layer::Cassette)?;
            let mut b = host.session().deterministic(seed).cassette(replay.clone());
            if yes {
                b = b.approver(Arc::new(ApproveAll));
            }
            run_calls(&b.build(), calls).await?;
            if let Err(report) = replay.finish() {
                bail!("{report}");
            }
            out!("recorded to {}", out.display());
        }
        Cmd::Replay {
            cassette,
            verify,
            tools,
            yes,
        } => {
            let layer = if verify {
                Layer::Verify
            } else {
                Layer::Cassette
            };
            let replay = Replay::open(&cassette, Mode::Replay, layer)?;
            let host = host(
                (cache, journal_dir.as_deref(), cli.sync_commits),
                default_instances,
                &tools,
            )
            .await?;
            let mut b = host.session().cassette(replay.clone());
            if yes {
                b = b.approver(Arc::new(ApproveAll));
            }
            let pipeline = b.build();
            let calls = replay
                .entries()
                .iter()
                .map(|e| (e.key.tool.clone(), e.argument_text()))
                .collect();
            run_calls(&pipeline, calls).await?;
            match replay.finish() {
                Ok(()) => out!(
                    "{} call(s) replayed from {} ({}): no divergence ({} ran)",
                    replay.entries().len(),
                    cassette.display(),
                    if verify {
                        "verified by re-running"
                    } else {
                        "from the cassette"
                    },
                    pipeline.dispatches()
                ),
                Err(report) => {
                    eprintln!("{report}");
                    std::process::exit(1);
                }
            }
        }
        Cmd::Tools {
            tools,
            format,
            search,
            limit,
        } => {
            let host = host(
                (cache, journal_dir.as_deref(), cli.sync_commits),
                default_instances,
                &tools,
            )
            .await?;
            let registry = host.registry();
            let mode = registry.mode();
            if let Some(query) = search {
                let found = toolhost_toolbox::search::find(
                    registry,
                    mode,
                    &query,
                    limit.max(1) as usize,
                    None,
                );
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
                    let value = toolhost_toolbox::search::value(&found, mode);
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
        }
        Cmd::Inspect { component, policy } => {
            let base = std::env::current_dir()?;
            inspect(cache, &component, policy.as_deref(), &base).await?;
        }
        Cmd::New { name, lang, dir } => {
            let parent = match dir {
                Some(d) => d,
                None => std::env::current_dir()?,
            };
            let made = toolhost::author::create(&name, lang, &parent, &kits_cache()?)?;
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
        }
        Cmd::Dev { .. } => unreachable!("dev became serve above"),
        Cmd::Build { dir } => {
            let dir = match dir {
                Some(d) => d,
                None => std::env::current_dir()?,
            };
            let project = toolhost::author::project_of(&dir)?;
            let built = toolhost::author::build(&project, &kits_cache()?)?;
            report_build(&built);
            inspect(
                cache.clone(),
                &project.component,
                Some(&project.dir.join("policy.toml")),
                &project.dir,
            )
            .await?;
            // Loaded as `serve` loads it: what a host refuses (a schema
            // that does not compile, a name it cannot serve) fails here.
            let host = Host::new(HostConfig {
                cache_dir: cache,
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
        }
        Cmd::Lock { tools } => {
            let tb = toolbox(&tools, &served_dir(&tools)?)?;
            if !tb.has_remote() {
                out!("{}: no remote components to lock", tb.origin);
                return Ok(());
            }
            let store = toolhost_toolbox::remote::open_store(None)?;
            let rt = supply::runtime(cache.clone())?;
            let changes =
                toolhost_toolbox::remote::lock(&tb, &store, &Moving::Unlocked, &rt).await?;
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
        }
        Cmd::Update { names, tools } => {
            let tb = toolbox(&tools, &served_dir(&tools)?)?;
            let store = toolhost_toolbox::remote::open_store(None)?;
            let rt = supply::runtime(cache.clone())?;
            let changes =
                toolhost_toolbox::remote::lock(&tb, &store, &Moving::Update(names), &rt).await?;
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
                    Some(Ok(Some(bytes))) => {
                        rt.load_bytes(Path::new("component"), bytes).await.ok()
                    }
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
        }
        Cmd::Add {
            source,
            digest,
            prefix,
            config,
        } => {
            let path = config.unwrap_or_else(|| PathBuf::from(toolhost_toolbox::DEFAULT_FILE_NAME));
            let said =
                supply::add(&source, digest.as_deref(), prefix.as_deref(), &path, cache).await?;
            out!("{said}");
        }
        Cmd::Policy {
            cmd: PolicyCmd::Suggest { source, digest },
        } => {
            let dir = std::env::current_dir()?;
            let tb = find_toolbox(None, &dir).ok();
            let said =
                supply::suggest_policy(&source, digest.as_deref(), tb.as_ref(), cache).await?;
            out!("{said}");
        }
        Cmd::Publish {
            component,
            reference,
            version,
            description,
            source_url,
            config,
        } => {
            let tb = match &config {
                Some(p) => Some(find_toolbox(Some(p), &std::env::current_dir()?)?),
                None => None,
            };
            let mut annotations = std::collections::BTreeMap::new();
            for (key, value) in [
                ("org.opencontainers.image.version", version),
                ("org.opencontainers.image.description", description),
                ("org.opencontainers.image.source", source_url),
            ] {
                if let Some(v) = value {
                    annotations.insert(key.to_owned(), v);
                }
            }
            let digest =
                supply::publish(&component, &reference, annotations, tb.as_ref(), cache).await?;
            out!(
                "published {} as {reference} ({digest})",
                component.display()
            );
        }
        Cmd::History { session, json } => {
            let (journal, recovery) = open_journal(journal_named()?, cache.as_deref())?;
            let entries: Vec<_> = journal
                .entries()?
                .into_iter()
                .filter(|r| session.as_deref().is_none_or(|s| r.session == s))
                .collect();
            if json {
                out!("{}", serde_json::to_string_pretty(&entries)?);
            } else if entries.is_empty() {
                out!("no committed calls in {}", journal_named()?.display());
            } else {
                for r in &entries {
                    let state = match (r.state, &r.undoes) {
                        (_, Some(of)) => format!("undo of {of}"),
                        (toolhost_effects::State::Undone, _) => "undone".to_owned(),
                        _ => "committed".to_owned(),
                    };
                    out!(
                        "{}  {}  {} {}  [{state}]\n    {}",
                        utc(r.time_ms),
                        r.id,
                        r.tool,
                        r.call_id,
                        r.headline
                    );
                }
            }
            if let Some(s) = recovery.staging.summary() {
                // (Beside the JSON, not in it.)
                eprintln!("staging: {s}");
            }
        }
        Cmd::Undo { call, session } => {
            let (journal, _) = open_journal(journal_named()?, cache.as_deref())?;
            let r = journal.undo(call.as_deref(), session.as_deref())?;
            out!("undone: {}", r.headline);
        }
        Cmd::Redo { call, session } => {
            let (journal, _) = open_journal(journal_named()?, cache.as_deref())?;
            let r = journal.redo(call.as_deref(), session.as_deref())?;
            out!("redone: {}", r.headline);
        }
        Cmd::Log { file } => {
            let contents = if file.is_dir() {
                toolhost_pipeline::session_log::read_log_dir(&file)
            } else {
                read_log(&file)
            }
            .with_context(|| format!("reading {}", file.display()))?;
            for ev in &contents.events {
                match ev {
                    SessionEvent::ToolCall(c) => match &c.principal {
                        Some(p) => out!("→ {} {} {} (by {p})", c.call_id, c.tool, c.arguments),
                        None => out!("→ {} {} {}", c.call_id, c.tool, c.arguments),
                    },
                    SessionEvent::ToolResult(r) => {
                        let status = r
                            .code
                            .as_deref()
                            .map_or("ok".to_owned(), |c| format!("error [{c}]"));
                        out!(
                            "← {} {} {} ({} µs)",
                            r.call_id,
                            r.tool,
                            status,
                            r.timings.total_us
                        );
                        if let Some(h) = r.effects.as_ref().and_then(|e| e["headline"].as_str()) {
                            out!("    changed {h}");
                        }
                        if let Some(d) = r.trace.denial() {
                            out!(
                                "    decided by {:?}/{}: {}",
                                d.stage,
                                d.by,
                                d.note.as_deref().unwrap_or("")
                            );
                        }
                        for b in &r.content {
                            if let toolhost_contract::ContentBlock::Text { text } = b {
                                for line in text.lines().take(20) {
                                    out!("    {line}");
                                }
                            }
                        }
                    }
                }
            }
            if let Some(t) = contents.torn_tail {
                out!("(a torn last line of {} bytes was skipped)", t.len());
            }
        }
    }
    Ok(())
}

/// The state secret in `path`: its bytes, without surrounding whitespace (a
/// `base64` or hex secret is used as the text it is).
fn read_secret(path: &Path) -> anyhow::Result<Vec<u8>> {
    let raw = std::fs::read(path)
        .with_context(|| format!("reading the state secret file {}", path.display()))?;
    let text = raw.trim_ascii();
    anyhow::ensure!(
        text.len() >= toolhost_pipeline::baseline::MIN_SECRET_BYTES,
        "the state secret file {} holds {} bytes; at least {} are needed (e.g. `head -c 32 /dev/urandom | base64 > {}`)",
        path.display(),
        text.len(),
        toolhost_pipeline::baseline::MIN_SECRET_BYTES,
        path.display()
    );
    Ok(text.to_vec())
}

/// `serve`'s options for running it for a team: OAuth and quotas.
#[derive(clap::Args, Debug)]
struct TeamArgs {
    /// Authenticate HTTP clients with OAuth: JWT access tokens issued by
    /// this authorization server (its issuer identifier), validated
    /// against its published keys. Serves the Protected Resource
    /// Metadata (RFC 9728) that points clients to it.
    #[arg(
        long,
        value_name = "URL",
        requires = "http",
        conflicts_with = "token_file"
    )]
    oauth_issuer: Option<String>,
    /// This server's resource URI, which tokens must name as their
    /// audience (default: http://ADDR/mcp of --http).
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    oauth_resource: Option<String>,
    /// The issuer's JWKS URL (default: from its metadata).
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    oauth_jwks_uri: Option<String>,
    /// A scope every token must grant (else 403).
    #[arg(long, value_name = "SCOPE", requires = "oauth_issuer")]
    oauth_scope: Option<String>,
    /// Tools that need a scope of their own: SCOPE=TOOL[,TOOL…]
    /// (repeatable). Without it they are not listed, and calling them
    /// is refused (403 insufficient_scope where the request names the tool).
    #[arg(long, value_name = "SCOPE=TOOLS", requires = "oauth_issuer")]
    oauth_tool_scope: Vec<String>,
    /// Calls one principal may have running at once (more: an error
    /// result `quota_exceeded`).
    #[arg(long, value_name = "N")]
    quota_concurrent: Option<usize>,
    /// Calls one principal may start per minute, per replica.
    #[arg(long, value_name = "N")]
    quota_per_minute: Option<usize>,
}

/// The session log file `--log PATH` names: PATH itself, or, when PATH is
/// a directory (or ends in `/`), this replica's own file in it:
/// `HOST-PID.jsonl`.
fn replica_log(path: &Path) -> anyhow::Result<PathBuf> {
    let is_dir = path.is_dir() || path.as_os_str().to_string_lossy().ends_with('/');
    if !is_dir {
        return Ok(path.to_owned());
    }
    std::fs::create_dir_all(path)
        .with_context(|| format!("creating the log directory {}", path.display()))?;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        })
        .unwrap_or_else(|| "host".into());
    Ok(path.join(format!("{host}-{}.jsonl", std::process::id())))
}
