//! One module a subcommand (or a few close ones): its options and what it
//! does. `main` parses the command line and calls the module's `run`; what
//! several commands share (the global options, the tool set, the host they
//! load) is here.

use anyhow::Context as _;
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolhost::{Host, HostConfig, TerminalProgress, default_cache_dir, find_toolbox};
use toolhost_policy::Mode as ToolboxMode;
use toolhost_toolbox::file::{ComponentEntry, PolicySource, Source, Toolbox};

/// `println!` that returns an error instead of panicking when stdout is
/// closed (`toolhost inspect … | head`): `main` then exits quietly.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        use anyhow::Context as _;
        writeln!(std::io::stdout().lock(), $($arg)*).context("writing to stdout")?
    }};
}

pub mod author;
pub mod call;
pub mod cassette;
pub mod inspect;
pub mod journal;
pub mod log;
pub mod pins;
pub mod serve;
pub mod supply;
pub mod tools;

/// What every command may use of the global options.
pub struct Context {
    /// The compiled-component cache (`None` with `--no-cache`).
    pub cache: Option<PathBuf>,
    /// `--cache-dir` as given.
    pub cache_dir: Option<PathBuf>,
    /// Where committed file changes are journaled, when known.
    pub journal_dir: Option<PathBuf>,
    /// `--sync-commits`.
    pub sync_commits: bool,
}

impl Context {
    /// The journal directory, for the journal's own commands: only they
    /// need it named; a host without one journals in a directory of its own
    /// (see `HostConfig::journal_dir`).
    pub fn journal_named(&self) -> anyhow::Result<&Path> {
        self.journal_dir
            .as_deref()
            .context("no cache directory for the journal (set HOME, --cache-dir or --journal)")
    }

    /// Where the kits and their toolchains live: in the cache even with
    /// `--no-cache` (which is about compiled components).
    pub fn kits_cache(&self) -> anyhow::Result<PathBuf> {
        self.cache_dir
            .clone()
            .or_else(default_cache_dir)
            .context("no cache directory for the tool kits (set HOME or --cache-dir)")
    }

    /// A host serving `set`, loaded, for the commands that run calls in
    /// this process (`call`, `record`, `replay`, `tools`).
    pub async fn host(&self, set: &ToolSet) -> anyhow::Result<Arc<Host>> {
        let dir = set.served_dir()?;
        let host = Host::new(HostConfig {
            cache_dir: self.cache.clone(),
            on_compile: Some(Arc::new(TerminalProgress::default())),
            journal_dir: self.journal_dir.clone(),
            journal_sync: self.sync_commits,
            ..HostConfig::default()
        })?;
        let tb = set.toolbox(&dir)?;
        host.load(&tb).await?;
        Ok(Arc::new(host))
    }
}

/// Which tools: a toolbox file, one component, or the default.
#[derive(Args, Clone, Default)]
pub struct ToolSet {
    /// The directory to serve: where `toolhost.toml` is looked for, and the
    /// `/workspace` of the default policies (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The toolbox file (default: ./toolhost.toml if present, else the
    /// built-in tools with their default policies, serving the current
    /// directory as /workspace).
    #[arg(long, value_name = "FILE", conflicts_with = "component")]
    pub config: Option<PathBuf>,
    /// Use this one component instead of a toolbox (a .wasm file or
    /// `builtin:NAME`).
    #[arg(long, value_name = "FILE")]
    pub component: Option<String>,
    /// The component's policy file (with --component; default: deny
    /// everything, or the built-in's default policy).
    #[arg(long, value_name = "FILE", requires = "component")]
    pub policy: Option<PathBuf>,
    /// How the tools are offered to the model: `native` (each with its
    /// schema), `code` (the reserved `run_code`: a script that calls them)
    /// or `both`; overrides the toolbox file's `mode` (default: native).
    #[arg(long, value_name = "MODE")]
    pub mode: Option<ToolboxMode>,
    /// The language of code mode's scripts: `javascript` or `python`;
    /// overrides the toolbox file's `language` (default: javascript).
    #[arg(long, value_name = "LANGUAGE")]
    pub language: Option<toolhost_policy::Language>,
}

impl ToolSet {
    /// The directory served: `--dir`, made absolute, or the current directory.
    pub fn served_dir(&self) -> anyhow::Result<PathBuf> {
        let cwd = std::env::current_dir()?;
        Ok(match &self.dir {
            Some(d) => cwd.join(d),
            None => cwd,
        })
    }

    /// The toolbox a command uses, serving `dir`.
    pub fn toolbox(&self, dir: &Path) -> anyhow::Result<Toolbox> {
        let mut tb = self.toolbox_of(dir)?;
        if let Some(language) = self.language {
            tb.language = language;
        }
        if let Some(mode) = self.mode {
            tb.mode = mode;
        }
        Ok(tb)
    }

    fn toolbox_of(&self, dir: &Path) -> anyhow::Result<Toolbox> {
        if let Some(c) = &self.component {
            // Files named on the command line are relative to where it runs.
            let cwd = std::env::current_dir()?;
            let source = match c.strip_prefix("builtin:") {
                Some(name) => Source::Builtin(name.to_owned()),
                None => Source::File(cwd.join(c)),
            };
            let policy = match (&self.policy, &source) {
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
        Ok(find_toolbox(self.config.as_deref(), dir)?)
    }
}

/// `--dir`, or the current directory (the authoring commands' project).
pub fn dir_or_cwd(dir: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    Ok(match dir {
        Some(d) => d,
        None => std::env::current_dir()?,
    })
}

/// Cancelled on SIGINT or SIGTERM.
pub fn on_signal() -> CancellationToken {
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
