//! The lowered toolbox: what a parsed `toolhost.toml` says, with paths
//! resolved and every value checked, as the rest of the host uses it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toolhost_policy::{Language, Mode, Policy, PolicyError};

use crate::remote::{Digest, OciRef};

/// The only value of `version` accepted in toolbox files.
pub const TOOLBOX_VERSION: i64 = 1;

/// The name of the toolbox file a host looks for in its directory.
pub const DEFAULT_FILE_NAME: &str = "toolhost.toml";

/// The longest accepted `prefix`, in bytes.
pub const MAX_PREFIX_LEN: usize = 32;

/// What starts a `source` naming a built-in tool.
pub(crate) const BUILTIN_SCHEME: &str = "builtin:";

/// Why a toolbox file was rejected, and where.
///
/// The same type as policy errors ([`PolicyError`]: origin, 1-based line and
/// column, message; displayed as `{origin}:{line}:{column}: {message}`),
/// because an inline policy's errors are errors of the toolbox file itself
/// and pass through unchanged.
pub type ToolboxError = PolicyError;

/// A parsed and validated toolbox file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolbox {
    /// Where the toolbox came from (the file name or path given), for messages.
    pub origin: String,
    /// The directory the file's relative paths were resolved against.
    pub base_dir: PathBuf,
    /// The components, in file order; never empty in a parsed file.
    pub components: Vec<ComponentEntry>,
    /// The toolbox file, when there is one (its lock file is beside it).
    pub path: Option<PathBuf>,
    /// Per-registry settings, by `host[:port]`.
    pub registries: BTreeMap<String, RegistrySettings>,
    /// Whose signatures are accepted for which remote components.
    pub trust: Vec<TrustRule>,
    /// How the journal of committed file changes is kept.
    pub journal: JournalSettings,
    /// When a call becomes an MCP task, and how long its result is kept.
    pub tasks: TaskSettings,
    /// How the tools are offered to the model: each with its schema,
    /// through code mode's `run_code`, or both.
    pub mode: Mode,
    /// The language of code mode's scripts (which code runner serves
    /// `run_code`).
    pub language: Language,
    /// `defer_over`: with more tools than this, those of components that
    /// are not eager are deferred.
    pub defer_over: usize,
}

/// The default of `defer_over`: a model picks less well among more tools
/// than this (selection accuracy is reported to fall past 30 to 50).
pub const DEFAULT_DEFER_OVER: usize = 50;

/// `advertise`: whether a component's tools are advertised to the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Advertise {
    /// Unsaid: eager for a built-in; for the others, eager until the
    /// toolbox serves more than `defer_over` tools, then deferred.
    #[default]
    Auto,
    /// Always advertised.
    Eager,
    /// Never advertised: callable by name, found by `search_tools`.
    Deferred,
}

/// `[journal]`: how long committed file changes stay undoable, and whether
/// each commit is flushed to disk. `None`: the host's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalSettings {
    /// Most bytes of pre-images kept (`max_mib`).
    pub max_bytes: Option<u64>,
    /// Oldest commit kept (`max_days`).
    pub max_age: Option<std::time::Duration>,
    /// Flush every commit step to disk (`sync`).
    pub sync: Option<bool>,
}

/// `[tasks]`: when a call becomes an MCP task for a client that declared
/// the tasks extension, and what becomes of its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSettings {
    /// A call still running after this long becomes a task (`after_ms`).
    pub after: std::time::Duration,
    /// How long a task's result is kept once it is ready (`keep_secs`).
    pub keep: std::time::Duration,
    /// The most bytes of a task's result (`max_result_kib`); a larger
    /// one is kept as an error result saying so.
    pub max_result_bytes: u64,
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            // Under what a person waits for without wondering, and past
            // what most reads and edits take.
            after: std::time::Duration::from_secs(2),
            keep: std::time::Duration::from_secs(3600),
            max_result_bytes: 1 << 20,
        }
    }
}

impl Toolbox {
    /// A toolbox of `components` alone (no file, no registries, no trust
    /// rules): the embedded default, a component named on the command line.
    pub fn of(origin: &str, base_dir: &Path, components: Vec<ComponentEntry>) -> Toolbox {
        Toolbox {
            origin: origin.to_owned(),
            base_dir: base_dir.to_owned(),
            components,
            path: None,
            registries: BTreeMap::new(),
            trust: Vec::new(),
            journal: JournalSettings::default(),
            tasks: TaskSettings::default(),
            mode: Mode::default(),
            language: Language::default(),
            defer_over: DEFAULT_DEFER_OVER,
        }
    }

    /// The lock file beside the toolbox file (`toolhost.toml` →
    /// `toolhost.lock`), or in its directory when there is no file.
    pub fn lock_path(&self) -> PathBuf {
        match &self.path {
            Some(p) => p.with_extension("lock"),
            None => self.base_dir.join("toolhost.lock"),
        }
    }

    /// Whether any component comes from a registry or a URL.
    pub fn has_remote(&self) -> bool {
        self.components.iter().any(|c| c.source.is_remote())
    }

    /// The settings for `registry` (`host[:port]`): its own table, or none.
    pub fn registry(&self, registry: &str) -> RegistrySettings {
        self.registries.get(registry).cloned().unwrap_or_default()
    }

    /// The trust rule covering `name` (`REGISTRY/REPOSITORY`): the one with
    /// the longest matching prefix.
    pub fn trust_for(&self, name: &str) -> Option<&TrustRule> {
        self.trust
            .iter()
            .filter(|r| name.starts_with(&r.prefix))
            .max_by_key(|r| r.prefix.len())
    }
}

/// How toolhost reaches one registry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrySettings {
    /// Plain HTTP (loopback registries need no marking).
    pub insecure: bool,
    /// The environment variable holding its credentials (`user:password`,
    /// or `Bearer TOKEN`), before `~/.docker/config.json`.
    pub auth_env: Option<String>,
    /// `deadline_secs`: how long one fetch (a manifest, a token, a
    /// signature) may take, every request of it included; a component's
    /// layer gets longer by the time its size takes at the minimum rate.
    /// `None`: the client's default.
    pub deadline: Option<std::time::Duration>,
    /// `min_rate`: the least average rate of a body, in bytes per second,
    /// after a few seconds' grace (0: none). `None`: the client's default.
    pub min_rate: Option<u64>,
}

/// Whose signatures are accepted for the remote components under `prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustRule {
    /// `REGISTRY/REPOSITORY` prefix the rule covers.
    pub prefix: String,
    /// Who may sign.
    pub signer: Signer,
    /// Whether a signature must be there.
    pub signature: Requirement,
    /// 1-based line of the rule in the toolbox file.
    pub line: usize,
}

/// A signer a trust rule accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signer {
    /// Signatures made with this key.
    Key {
        /// A PEM public key file.
        key: PathBuf,
        /// A Sigstore trusted root whose Rekor log the signature's entry
        /// must be in (a bundle without one is refused); without it the
        /// key's signature alone is checked, any log entry ignored, as
        /// `cosign verify --insecure-ignore-tlog` does.
        trusted_root: Option<PathBuf>,
    },
    /// Keyless (Sigstore) signatures whose certificate names exactly this
    /// identity and issuer, chained to this trusted root.
    Keyless {
        /// The certificate's subject (an email or a URI).
        identity: String,
        /// The OIDC issuer that vouched for it.
        issuer: String,
        /// A Sigstore `trusted_root.json` (Fulcio, Rekor, CT logs).
        trusted_root: PathBuf,
    },
}

/// Whether a matching trust rule requires a signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// No signature from an accepted signer: refused.
    Required,
    /// A signature is checked when there is one; none is accepted.
    Optional,
}

/// One `[[component]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentEntry {
    /// Where the component comes from.
    pub source: Source,
    /// The policy the component runs under.
    pub policy: PolicySource,
    /// Prepended to every tool name of the component, when set.
    pub prefix: Option<String>,
    /// Whether its tools are advertised.
    pub advertise: Advertise,
    /// 1-based line of the entry in the toolbox file, for later error messages.
    pub line: usize,
}

/// Where a component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A tool built into the host (`builtin:NAME`), by name.
    Builtin(String),
    /// A `.wasm` component file (relative paths already joined onto the
    /// toolbox file's directory).
    File(PathBuf),
    /// An artifact in an OCI registry (pinned by the lock file).
    Oci(OciRef),
    /// A component file at an HTTPS URL, pinned by its digest.
    Https {
        /// The URL.
        url: String,
        /// The component's SHA-256.
        digest: Digest,
    },
}

impl Source {
    /// Whether it comes from a registry or a URL (and needs the lock).
    pub fn is_remote(&self) -> bool {
        matches!(self, Source::Oci(_) | Source::Https { .. })
    }

    /// The language it runs, when it is one of the built-in code runners
    /// (`builtin:code`, `builtin:code_python`).
    pub fn runner_language(&self) -> Option<Language> {
        match self {
            Source::Builtin(name) => RUNNERS
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, language)| *language),
            _ => None,
        }
    }

    /// The built-in code runner of `language`.
    pub fn runner(language: Language) -> Source {
        let name = RUNNERS
            .iter()
            .find(|(_, l)| *l == language)
            .map_or("code", |(n, _)| n);
        Source::Builtin(name.to_owned())
    }
}

/// The built-in code runners by name (the names `toolhost-builtins` gives
/// them; this crate builds without it).
const RUNNERS: &[(&str, Language)] = &[
    ("code", Language::Javascript),
    ("code_python", Language::Python),
];

impl fmt::Display for Source {
    /// `builtin:NAME`, the file's path, the `oci://` reference or the URL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin(name) => write!(f, "{BUILTIN_SCHEME}{name}"),
            Source::File(path) => write!(f, "{}", path.display()),
            Source::Oci(r) => write!(f, "{r}"),
            Source::Https { url, .. } => f.write_str(url),
        }
    }
}

/// The policy a component runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySource {
    /// A policy file, not yet loaded (relative paths already joined onto the
    /// toolbox file's directory).
    File(PathBuf),
    /// An inline `[component.policy]` table, already validated.
    Inline(Box<Policy>),
    /// No `policy` key: the built-in tool's own default policy applies.
    BuiltinDefault,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_display() {
        assert_eq!(Source::Builtin("read".into()).to_string(), "builtin:read");
        assert_eq!(
            Source::File("/base/tools/csv.wasm".into()).to_string(),
            "/base/tools/csv.wasm"
        );
    }
}
