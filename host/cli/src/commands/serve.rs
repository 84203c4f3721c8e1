//! `toolhost serve`: the tools over MCP, on stdio or streamable HTTP.

use super::{Context, ToolSet, on_signal};
use anyhow::Context as _;
use clap::Args;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use toolhost::{Host, HostConfig};
use toolhost_mcp::http::HttpOptions;
use toolhost_mcp::reload::{self, ToolboxSource};
use toolhost_mcp::{Notices, Server, ServerOptions, Severity};
use toolhost_pipeline::SessionLog;
use toolhost_pipeline::replay::{Layer, Mode, Replay};

/// Seconds an approval waits for its answer, unless `--approval-timeout`.
const APPROVAL_TIMEOUT_S: u64 = 120;
/// Tool calls running at once, unless `--max-instances`.
const MAX_INSTANCES: u32 = 64;

/// `toolhost serve`'s options.
#[derive(Args)]
pub struct ServeArgs {
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
    /// approval opens once across the replicas, and MCP tasks are kept
    /// there (`.tasks/`), so any replica answers for a task.
    #[arg(long, value_name = "DIR")]
    artifacts_dir: Option<PathBuf>,
    /// Seconds the person at the client has to answer an approval.
    #[arg(long, value_name = "SECS", default_value_t = APPROVAL_TIMEOUT_S)]
    approval_timeout: u64,
    /// Do not reload when the toolbox, a component or a policy changes.
    #[arg(long)]
    no_reload: bool,
    /// Tool calls (sandbox instances) running at once; more queue.
    #[arg(long, value_name = "N", default_value_t = MAX_INSTANCES)]
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
}

impl ServeArgs {
    /// What `toolhost serve --dir DIR [--http ADDR]` parses to: how `dev`
    /// serves its project.
    pub fn project(dir: PathBuf, http: Option<SocketAddr>) -> ServeArgs {
        ServeArgs {
            tools: ToolSet {
                dir: Some(dir),
                ..ToolSet::default()
            },
            http,
            token_file: None,
            team: Box::default(),
            state_secret_file: None,
            allow_host: Vec::new(),
            allow_origin: Vec::new(),
            log: None,
            artifacts_dir: None,
            approval_timeout: APPROVAL_TIMEOUT_S,
            no_reload: false,
            max_instances: MAX_INSTANCES,
            seed: None,
            record: None,
            replay: None,
            verify: false,
        }
    }
}

/// `serve`'s options for running it for a team: OAuth and quotas.
#[derive(Args, Debug, Default)]
pub struct TeamArgs {
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

/// Serves until stdin closes (stdio) or a signal stops it.
pub async fn run(ctx: &Context, args: ServeArgs) -> anyhow::Result<()> {
    let ServeArgs {
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
    } = args;
    // The protocol answers at once; components compile in the
    // background and their tools are served as each is ready.
    let notices = Notices::new();
    let dir = tools.served_dir()?;
    // The shared volume records used approval states and keeps MCP tasks
    // too.
    let used_states_dir = artifacts_dir.as_ref().map(|d| d.join(".approvals"));
    let tasks_dir = artifacts_dir.as_ref().map(|d| d.join(".tasks"));
    let host = Arc::new(Host::new(HostConfig {
        cache_dir: ctx.cache.clone(),
        max_instances,
        on_compile: Some(Arc::new(notices.clone())),
        journal_dir: ctx.journal_dir.clone(),
        journal_sync: ctx.sync_commits,
        artifacts_dir,
        warm_workers: true,
        ..HostConfig::default()
    })?);
    let tb = tools.toolbox(&dir)?;
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
            tasks_dir,
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
            language: tools.language,
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
                    resource: oauth_resource.unwrap_or_else(|| format!("http://{bind}/mcp")),
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
