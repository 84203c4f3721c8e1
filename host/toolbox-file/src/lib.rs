//! The toolbox file, `toolhost.toml`: which tool components a host runs,
//! where each comes from, and under which policy. `toolhost-toolbox`
//! assembles a host from it; this crate only parses, so it builds without
//! the sandbox and is fuzzed (`tests/fuzz`).
//!
//! ```toml
//! version = 1                       # required; only 1 is accepted
//! mode = "native"                   # how tools are offered: "native" (each its own schema; the
//!                                   # default), "code" (run_code, a script that calls them),
//!                                   # or "both"
//! defer_over = 50                   # the default: with more tools than this, the tools of
//!                                   # components not marked eager are deferred: callable by
//!                                   # name, found by `search_tools`, not advertised
//!
//! [[component]]                     # one or more
//! source = "builtin:read"           # a built-in tool, or the path of a .wasm component file
//! policy = "policies/read.toml"     # a policy file; optional for built-ins (their default applies)
//! prefix = "ws_"                    # optional: prepended to every tool name of this component
//! advertise = "eager"               # optional: "eager" (always advertised; built-ins are,
//!                                   # unless told otherwise) or "deferred" (never)
//!
//! [[component]]
//! source = "tools/csv.wasm"
//! [component.policy]                # an inline policy: the keys of a policy file
//! decision = "allow"                # (`version` optional, and only 1)
//! [[component.policy.fs]]
//! host = "data"
//! guest = "/data"
//!
//! [[component]]                     # a remote component, pinned by toolhost.lock
//! source = "oci://ghcr.io/acme/csv:1.2"   # or …@sha256:DIGEST
//! policy = "policies/csv.toml"
//!
//! [[component]]
//! source = "https://example.com/tools/csv.wasm"
//! digest = "sha256:…"               # required for https sources
//! policy = "policies/csv.toml"
//!
//! [registries."localhost:5000"]     # optional, per registry
//! insecure = true                   # plain HTTP (implied for loopback registries)
//! auth_env = "TOOLHOST_REGISTRY_AUTH"   # `user:password`, or `Bearer TOKEN`
//! deadline_secs = 60                # the default: one fetch (manifest, token, signature),
//!                                   # all its requests; a layer gets its size at min_rate more
//! min_rate = 16384                  # the default, bytes/s each body averages after 5 s (0: none)
//!
//! [journal]                         # committed file changes kept for undo (optional)
//! max_mib = 512                     # the default; the oldest go first
//! max_days = 7                      # the default
//! sync = false                      # the default; true: fsync each commit step
//!
//! [[trust]]                         # whose signatures are accepted, per prefix
//! prefix = "ghcr.io/acme/"          # REGISTRY/REPOSITORY prefix
//! key = "keys/acme.pub"             # a PEM public key: alone, the key's signature alone is
//!                                   # checked (no log entry needed); with `trusted_root`, its
//!                                   # log entry is required and checked too; or keyless:
//! # identity = "https://github.com/acme/tools/.github/workflows/release.yml@refs/heads/main"
//! # issuer = "https://token.actions.githubusercontent.com"
//! # trusted_root = "trusted_root.json"
//! signature = "required"            # the default; or "optional"
//! ```
//!
//! Relative paths (component files, policy files, and the `host` of inline
//! `[[fs]]` grants) are relative to the toolbox file's directory. Paths are
//! not checked for existence here; policy files are loaded later, by whoever
//! assembles the host. Unknown keys are rejected everywhere, inline policies
//! included, and every error names the file, line and column, like a
//! [`PolicyError`].
//!
//! ```
//! use std::path::Path;
//! use toolhost_toolbox_file::{PolicySource, Source, Toolbox};
//!
//! let text = r#"
//! version = 1
//!
//! [[component]]
//! source = "builtin:read"
//! prefix = "ws_"
//!
//! [[component]]
//! source = "tools/csv.wasm"
//! [component.policy]
//! decision = "allow"
//! [[component.policy.fs]]
//! host = "data"
//! guest = "/data"
//! "#;
//! let toolbox = Toolbox::parse(text, "toolhost.toml", Path::new("/srv"), &["read", "write"])?;
//!
//! let read = &toolbox.components[0];
//! assert_eq!(read.source, Source::Builtin("read".into()));
//! assert_eq!(read.policy, PolicySource::BuiltinDefault);
//! assert_eq!(read.prefix.as_deref(), Some("ws_"));
//!
//! let csv = &toolbox.components[1];
//! assert_eq!(csv.source.to_string(), "/srv/tools/csv.wasm");
//! assert_eq!(csv.line, 8);
//! let PolicySource::Inline(policy) = &csv.policy else { panic!("inline") };
//! assert_eq!(policy.component().sandbox.fs[0].host, Path::new("/srv/data"));
//!
//! // Errors name the file, line and column.
//! let err = Toolbox::parse(
//!     "version = 1\n[[component]]\nsource = \"builtin:raed\"\n",
//!     "toolhost.toml",
//!     Path::new("/srv"),
//!     &["read", "write"],
//! )
//! .unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "toolhost.toml:3:10: unknown built-in tool `raed`, expected `read` or `write`"
//! );
//! # Ok::<(), toolhost_toolbox_file::ToolboxError>(())
//! ```

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;
pub use toolhost_policy::Mode;
use toolhost_policy::{InlinePolicy, Policy, PolicyError, line_column};

pub mod lock;
pub mod remote;

pub use lock::{LOCK_VERSION, LockEntry, LockFile};
pub use remote::{Digest, OCI_SCHEME, OciRef};

/// The only value of `version` accepted in toolbox files.
pub const TOOLBOX_VERSION: i64 = 1;

/// The name of the toolbox file a host looks for in its directory.
pub const DEFAULT_FILE_NAME: &str = "toolhost.toml";

/// The longest accepted `prefix`, in bytes.
pub const MAX_PREFIX_LEN: usize = 32;

/// What starts a `source` naming a built-in tool.
const BUILTIN_SCHEME: &str = "builtin:";

/// What starts a `source` fetched over HTTPS (pinned by its `digest`).
const HTTPS_SCHEME: &str = "https://";

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
    /// How the tools are offered to the model: each with its schema,
    /// through code mode's `run_code`, or both.
    pub mode: Mode,
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
            mode: Mode::default(),
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
}

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

impl Toolbox {
    /// Parses and validates a toolbox from `text`.
    ///
    /// `origin` names the source in errors (usually the file name). Relative
    /// paths are joined onto `base_dir` (not canonicalized, not checked for
    /// existence). `builtins` are the names `builtin:NAME` may use.
    pub fn parse(
        text: &str,
        origin: &str,
        base_dir: &Path,
        builtins: &[&str],
    ) -> Result<Toolbox, ToolboxError> {
        let file = File {
            origin,
            text,
            base_dir,
            builtins,
        };
        let probe: VersionProbe = toml::from_str(text).map_err(|e| file.toml_error(&e))?;
        if probe.version.is_none() {
            // The probe skips other values unchecked: a syntax error (an
            // integer out of range, say) comes first, with its line.
            toml::from_str::<toml::Table>(text).map_err(|e| file.toml_error(&e))?;
        }
        file.check_version(probe.version)?;
        let raw: RawToolbox = toml::from_str(text).map_err(|e| file.toml_error(&e))?;
        let components = match raw.component {
            None => return Err(PolicyError::new(origin, NO_COMPONENTS)),
            Some(list) if list.get_ref().0.is_empty() => {
                return Err(file.at(list.span(), NO_COMPONENTS));
            }
            Some(list) => list
                .into_inner()
                .0
                .into_iter()
                .map(|component| file.component(component))
                .collect::<Result<_, _>>()?,
        };
        let registries = raw
            .registries
            .unwrap_or_default()
            .into_iter()
            .map(|(name, settings)| file.registry(name, settings))
            .collect::<Result<_, _>>()?;
        let trust = raw
            .trust
            .unwrap_or_default()
            .into_iter()
            .map(|rule| file.trust_rule(rule))
            .collect::<Result<_, _>>()?;
        let journal = raw
            .journal
            .map_or_else(JournalSettings::default, |j| JournalSettings {
                max_bytes: j.max_mib.map(|m| m.saturating_mul(1 << 20)),
                max_age: j
                    .max_days
                    .map(|d| std::time::Duration::from_secs(d.saturating_mul(86_400))),
                sync: j.sync,
            });
        Ok(Toolbox {
            origin: origin.to_owned(),
            base_dir: base_dir.to_owned(),
            components,
            path: None,
            registries,
            trust,
            journal,
            mode: raw.mode.unwrap_or_default(),
            defer_over: raw.defer_over.unwrap_or(DEFAULT_DEFER_OVER),
        })
    }

    /// Reads and parses the toolbox file at `path`; errors name `path` as
    /// given. Relative paths in the file are resolved against the file's
    /// directory, made absolute with the current directory if needed.
    pub fn load(path: &Path, builtins: &[&str]) -> Result<Toolbox, ToolboxError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| PolicyError::new(&origin, format!("cannot read toolbox file: {e}")))?;
        let dir = path.parent().unwrap_or(Path::new(""));
        let base_dir: PathBuf = if dir.is_absolute() {
            dir.components().collect()
        } else {
            let cwd = std::env::current_dir().map_err(|e| {
                PolicyError::new(
                    &origin,
                    format!("cannot determine the current directory: {e}"),
                )
            })?;
            cwd.join(dir).components().collect()
        };
        let mut toolbox = Toolbox::parse(&text, &origin, &base_dir, builtins)?;
        let name = path.file_name().unwrap_or(path.as_os_str());
        toolbox.path = Some(base_dir.join(name));
        Ok(toolbox)
    }
}

/// The message for a toolbox without components.
const NO_COMPONENTS: &str = "no components; add at least one `[[component]]` table with a `source`, e.g. `source = \"builtin:read\"`";

/// First pass over a file: only `version`, everything else ignored, so that a
/// file of another version is reported as such rather than as unknown keys.
#[derive(Deserialize)]
struct VersionProbe {
    version: Option<Spanned<toml::Value>>,
}

/// The whole file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolbox {
    /// Checked by [`VersionProbe`]; listed here so it is a known key.
    #[serde(rename = "version")]
    _version: Option<IgnoredAny>,
    component: Option<Spanned<RawComponents>>,
    registries: Option<BTreeMap<Spanned<String>, Spanned<RawRegistry>>>,
    trust: Option<Vec<Spanned<RawTrust>>>,
    journal: Option<RawJournal>,
    mode: Option<Mode>,
    defer_over: Option<usize>,
}

/// `[journal]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJournal {
    max_mib: Option<u64>,
    max_days: Option<u64>,
    sync: Option<bool>,
}

/// `[registries."HOST:PORT"]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegistry {
    insecure: Option<bool>,
    auth_env: Option<Spanned<String>>,
    deadline_secs: Option<Spanned<u64>>,
    min_rate: Option<u64>,
}

/// `[[trust]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrust {
    prefix: Spanned<String>,
    key: Option<Spanned<String>>,
    identity: Option<Spanned<String>>,
    issuer: Option<Spanned<String>>,
    trusted_root: Option<Spanned<String>>,
    signature: Option<Spanned<String>>,
}

/// `component`: an array of tables, whose error says so when it is not one
/// (a `[component]` written with single brackets is a table).
struct RawComponents(Vec<Spanned<RawComponent>>);

impl<'de> Deserialize<'de> for RawComponents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawComponentsVisitor)
    }
}

struct RawComponentsVisitor;

impl<'de> Visitor<'de> for RawComponentsVisitor {
    type Value = RawComponents;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of `[[component]]` tables (double brackets)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawComponents, A::Error> {
        let mut components = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(component) = seq.next_element()? {
            components.push(component);
        }
        Ok(RawComponents(components))
    }
}

/// One `[[component]]` entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawComponent {
    source: Spanned<String>,
    digest: Option<Spanned<String>>,
    policy: Option<Spanned<RawPolicySource>>,
    prefix: Option<Spanned<String>>,
    advertise: Option<Advertise>,
}

/// `policy`: a file path or an inline table.
enum RawPolicySource {
    File(String),
    /// Boxed: a raw policy is large next to a path.
    Inline(Box<InlinePolicy>),
}

impl<'de> Deserialize<'de> for RawPolicySource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawPolicySourceVisitor)
    }
}

struct RawPolicySourceVisitor;

impl<'de> Visitor<'de> for RawPolicySourceVisitor {
    type Value = RawPolicySource;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a policy file path or an inline policy table")
    }

    fn visit_str<E: de::Error>(self, path: &str) -> Result<RawPolicySource, E> {
        Ok(RawPolicySource::File(path.to_owned()))
    }

    /// The table's own map access, so the policy's keys and values keep
    /// their positions in the toolbox file.
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawPolicySource, A::Error> {
        InlinePolicy::deserialize(MapAccessDeserializer::new(map))
            .map(|inline| RawPolicySource::Inline(Box::new(inline)))
    }
}

/// The file being parsed, for errors and for resolving its entries.
struct File<'a> {
    origin: &'a str,
    text: &'a str,
    base_dir: &'a Path,
    builtins: &'a [&'a str],
}

impl File<'_> {
    /// An error pointing at the start of `span`, a byte range of the file.
    fn at(&self, span: Range<usize>, message: impl Into<String>) -> ToolboxError {
        PolicyError::at(self.origin, self.text, span, message)
    }

    fn toml_error(&self, err: &toml::de::Error) -> ToolboxError {
        PolicyError::from_toml(self.origin, self.text, err)
    }

    fn check_version(&self, version: Option<Spanned<toml::Value>>) -> Result<(), ToolboxError> {
        let Some(version) = version else {
            return Err(PolicyError::new(
                self.origin,
                format!(
                    "missing required key `version`; add `version = {TOOLBOX_VERSION}` at the top of the file"
                ),
            ));
        };
        match version.get_ref() {
            toml::Value::Integer(v) if *v == TOOLBOX_VERSION => Ok(()),
            toml::Value::Integer(v) => Err(self.at(
                version.span(),
                format!("unsupported toolbox version {v}, expected {TOOLBOX_VERSION}"),
            )),
            other => Err(self.at(
                version.span(),
                format!(
                    "invalid type: {} for `version`, expected the integer {TOOLBOX_VERSION}",
                    other.type_str()
                ),
            )),
        }
    }

    /// Validates one entry, in the order of its keys in the format: source,
    /// policy, prefix.
    fn component(&self, raw: Spanned<RawComponent>) -> Result<ComponentEntry, ToolboxError> {
        let span = raw.span();
        let (line, _) = line_column(self.text, span.start);
        let raw = raw.into_inner();
        let source = self.source(&raw.source, raw.digest.as_ref())?;
        let policy = match raw.policy {
            Some(policy) => {
                let policy_span = policy.span();
                match policy.into_inner() {
                    RawPolicySource::File(path) => {
                        PolicySource::File(self.path(&path, policy_span, "policy")?)
                    }
                    RawPolicySource::Inline(inline) => PolicySource::Inline(Box::new(
                        Policy::from_inline(*inline, self.origin, self.text, self.base_dir)?,
                    )),
                }
            }
            None if matches!(source, Source::Builtin(_)) => PolicySource::BuiltinDefault,
            None => {
                return Err(self.at(
                    span,
                    format!(
                        "component `{}` has no policy; add `policy = \"FILE\"` or an inline `[component.policy]` table",
                        raw.source.get_ref()
                    ),
                ));
            }
        };
        let prefix = match raw.prefix {
            Some(prefix) => {
                check_prefix(prefix.get_ref()).map_err(|m| self.at(prefix.span(), m))?;
                Some(prefix.into_inner())
            }
            None => None,
        };
        Ok(ComponentEntry {
            source,
            policy,
            prefix,
            advertise: raw.advertise.unwrap_or_default(),
            line,
        })
    }

    fn source(
        &self,
        source: &Spanned<String>,
        digest: Option<&Spanned<String>>,
    ) -> Result<Source, ToolboxError> {
        let text = source.get_ref();
        let https = text.starts_with(HTTPS_SCHEME);
        if let Some(d) = digest
            && !https
        {
            return Err(self.at(
                d.span(),
                "`digest` pins an https source; pin an oci source with `@sha256:…` (or the lock file)",
            ));
        }
        if https {
            let Some(d) = digest else {
                return Err(self.at(
                    source.span(),
                    format!(
                        "https source `{text}` needs its `digest = \"sha256:…\"`: toolhost never runs bytes it cannot pin"
                    ),
                ));
            };
            let digest = Digest::parse(d.get_ref()).map_err(|m| self.at(d.span(), m))?;
            let valid = text.len() > HTTPS_SCHEME.len()
                && !text.contains(char::is_whitespace)
                && !text.contains('#');
            if !valid {
                return Err(self.at(source.span(), format!("`{text}` is not a URL")));
            }
            return Ok(Source::Https {
                url: text.clone(),
                digest,
            });
        }
        if text.starts_with(OCI_SCHEME) {
            return OciRef::parse(text)
                .map(Source::Oci)
                .map_err(|m| self.at(source.span(), m));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(self.at(
                source.span(),
                format!("unknown source scheme `{scheme}://`: write `oci://`, `https://`, `builtin:NAME` or a file path"),
            ));
        }
        let Some(name) = text.strip_prefix(BUILTIN_SCHEME) else {
            return self.path(text, source.span(), "source").map(Source::File);
        };
        if self.builtins.contains(&name) {
            return Ok(Source::Builtin(name.to_owned()));
        }
        let known = match self.builtins {
            [] => ": this host has no built-in tools".to_owned(),
            names => format!(", expected {}", one_of(names)),
        };
        let message = if name.is_empty() {
            format!("missing built-in tool name after `{BUILTIN_SCHEME}`{known}")
        } else {
            format!("unknown built-in tool `{name}`{known}")
        };
        Err(self.at(source.span(), message))
    }

    /// One `[registries."HOST:PORT"]` table.
    fn registry(
        &self,
        name: Spanned<String>,
        raw: Spanned<RawRegistry>,
    ) -> Result<(String, RegistrySettings), ToolboxError> {
        let probe = format!("{OCI_SCHEME}{}/x:1", name.get_ref());
        OciRef::parse(&probe).map_err(|_| {
            self.at(
                name.span(),
                format!(
                    "`{}` is not a registry: expected HOST or HOST:PORT",
                    name.get_ref()
                ),
            )
        })?;
        let raw = raw.into_inner();
        let auth_env = match raw.auth_env {
            Some(v) => {
                let ok = !v.get_ref().is_empty()
                    && v.get_ref()
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_');
                if !ok {
                    return Err(self.at(
                        v.span(),
                        "`auth_env` names an environment variable: letters, digits and `_`",
                    ));
                }
                Some(v.into_inner())
            }
            None => None,
        };
        // A fetch that may take no time fetches nothing; a day is past
        // what anyone waits for.
        let deadline = match raw.deadline_secs {
            Some(d) if !(1..=86_400).contains(d.get_ref()) => {
                return Err(self.at(
                    d.span(),
                    "`deadline_secs` is the seconds one fetch may take: 1 to 86400",
                ));
            }
            Some(d) => Some(std::time::Duration::from_secs(d.into_inner())),
            None => None,
        };
        Ok((
            name.into_inner(),
            RegistrySettings {
                insecure: raw.insecure.unwrap_or(false),
                auth_env,
                deadline,
                min_rate: raw.min_rate,
            },
        ))
    }

    /// One `[[trust]]` rule: a key, or a keyless identity with its issuer
    /// and trusted root (never "any signer").
    fn trust_rule(&self, raw: Spanned<RawTrust>) -> Result<TrustRule, ToolboxError> {
        let span = raw.span();
        let (line, _) = line_column(self.text, span.start);
        let raw = raw.into_inner();
        let prefix = raw.prefix.get_ref().clone();
        if prefix.is_empty() || prefix.contains("://") || prefix.contains(char::is_whitespace) {
            return Err(self.at(
                raw.prefix.span(),
                "`prefix` is a REGISTRY/REPOSITORY prefix, e.g. `ghcr.io/acme/`",
            ));
        }
        let keyless = raw.identity.is_some() || raw.issuer.is_some();
        let signer = match (raw.key, keyless) {
            (Some(key), false) => Signer::Key {
                key: self.path(key.get_ref(), key.span(), "key")?,
                trusted_root: match raw.trusted_root {
                    Some(r) => Some(self.path(r.get_ref(), r.span(), "trusted_root")?),
                    None => None,
                },
            },
            (Some(key), true) => {
                return Err(self.at(
                    key.span(),
                    "a trust rule is either a `key` or a keyless `identity` and `issuer`, not both",
                ));
            }
            (None, true) => {
                let need = |v: Option<Spanned<String>>, what: &str| {
                    v.filter(|v| !v.get_ref().is_empty()).ok_or_else(|| {
                        self.at(
                            span.clone(),
                            format!(
                                "a keyless trust rule needs `{what}`: toolhost never accepts any signer (name the identity, its issuer and the trusted root)"
                            ),
                        )
                    })
                };
                let identity = need(raw.identity, "identity")?.into_inner();
                let issuer = need(raw.issuer, "issuer")?.into_inner();
                let root = need(raw.trusted_root, "trusted_root")?;
                Signer::Keyless {
                    identity,
                    issuer,
                    trusted_root: self.path(root.get_ref(), root.span(), "trusted_root")?,
                }
            }
            (None, false) if raw.trusted_root.is_some() => {
                return Err(self.at(
                    span,
                    "a keyless trust rule needs `identity`: toolhost never accepts any signer (name the identity, its issuer and the trusted root)",
                ));
            }
            (None, false) => {
                return Err(self.at(
                    span,
                    "a trust rule names who may sign: a `key = \"FILE.pem\"`, or a keyless `identity`, `issuer` and `trusted_root`",
                ));
            }
        };
        let signature = match raw.signature {
            None => Requirement::Required,
            Some(s) => match s.get_ref().as_str() {
                "required" => Requirement::Required,
                "optional" => Requirement::Optional,
                other => {
                    return Err(self.at(
                        s.span(),
                        format!("unknown signature requirement `{other}`, expected `required` or `optional`"),
                    ));
                }
            },
        };
        Ok(TrustRule {
            prefix,
            signer,
            signature,
            line,
        })
    }

    /// Resolves the path in the value of `key` (at `span`) against the base
    /// directory.
    fn path(&self, path: &str, span: Range<usize>, key: &str) -> Result<PathBuf, ToolboxError> {
        if path.is_empty() {
            let hint = match key {
                "source" => "write `builtin:NAME` or the path of a `.wasm` component file",
                "policy" => {
                    "write the path of a policy file, or use an inline `[component.policy]` table"
                }
                _ => "write the path of a file",
            };
            return Err(self.at(span, format!("empty `{key}`; {hint}")));
        }
        if path.contains('\0') {
            return Err(self.at(span, format!("`{key}` path contains a NUL character")));
        }
        // Lexical cleanup only, as for the `host` of policy grants: `.`
        // components go, `..` stays for the file system to resolve.
        Ok(self.base_dir.join(path).components().collect())
    }
}

/// Prefixes are the start of a tool name: `[a-z][a-z0-9_]*`, at most
/// [`MAX_PREFIX_LEN`] bytes.
fn check_prefix(prefix: &str) -> Result<(), String> {
    let mut bytes = prefix.bytes();
    let valid = bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !valid {
        return Err(format!(
            "invalid prefix `{prefix}`, expected lowercase ASCII letters, digits and `_`, starting with a letter"
        ));
    }
    if prefix.len() > MAX_PREFIX_LEN {
        return Err(format!(
            "prefix `{prefix}` is {} bytes long, at most {MAX_PREFIX_LEN} are allowed",
            prefix.len()
        ));
    }
    Ok(())
}

/// `` `a` ``, `` `a` or `b` ``, or `` one of `a`, `b`, `c` `` (as serde words
/// its lists of expected values).
fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [one] => one.clone(),
        [a, b] => format!("{a} or {b}"),
        _ => format!("one of {}", quoted.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_policy::{Decision, FsMode};

    const BUILTINS: &[&str] = &["read", "write", "edit", "list", "grep", "fetch"];

    fn parse(text: &str) -> Toolbox {
        match Toolbox::parse(text, "toolhost.toml", Path::new("/base"), BUILTINS) {
            Ok(toolbox) => toolbox,
            Err(e) => panic!("{e}"),
        }
    }

    fn parse_err(text: &str) -> String {
        match Toolbox::parse(text, "toolhost.toml", Path::new("/base"), BUILTINS) {
            Ok(toolbox) => panic!("expected an error, got {toolbox:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn builtins_with_and_without_policy() {
        let toolbox = parse(
            "version = 1\n\n[[component]]\nsource = \"builtin:read\"\n\n[[component]]\nsource = \"builtin:write\"\npolicy = \"policies/write.toml\"\n",
        );
        assert_eq!(toolbox.origin, "toolhost.toml");
        assert_eq!(toolbox.base_dir, Path::new("/base"));
        assert_eq!(
            toolbox.components,
            [
                ComponentEntry {
                    source: Source::Builtin("read".into()),
                    policy: PolicySource::BuiltinDefault,
                    prefix: None,
                    advertise: Default::default(),
                    line: 3,
                },
                ComponentEntry {
                    source: Source::Builtin("write".into()),
                    policy: PolicySource::File("/base/policies/write.toml".into()),
                    prefix: None,
                    advertise: Default::default(),
                    line: 6,
                },
            ]
        );
    }

    #[test]
    fn advertise_and_defer_over_are_read_and_checked() {
        let toolbox = parse(
            "version = 1\ndefer_over = 10\n[[component]]\nsource = \"builtin:read\"\nadvertise = \"deferred\"\n[[component]]\nsource = \"builtin:write\"\nadvertise = \"eager\"\n[[component]]\nsource = \"builtin:edit\"\n",
        );
        assert_eq!(toolbox.defer_over, 10);
        let how: Vec<Advertise> = toolbox.components.iter().map(|c| c.advertise).collect();
        assert_eq!(
            how,
            [Advertise::Deferred, Advertise::Eager, Advertise::Auto]
        );
        assert_eq!(
            parse("version = 1\n[[component]]\nsource = \"builtin:read\"\n").defer_over,
            DEFAULT_DEFER_OVER
        );
        let e = parse_err(
            "version = 1\n[[component]]\nsource = \"builtin:read\"\nadvertise = \"lazy\"\n",
        );
        assert!(e.starts_with("toolhost.toml:4:"), "{e}");
        assert!(e.contains("lazy") && e.contains("eager"), "{e}");
        let e =
            parse_err("version = 1\ndefer_over = -1\n[[component]]\nsource = \"builtin:read\"\n");
        assert!(e.starts_with("toolhost.toml:2:"), "{e}");
    }

    #[test]
    fn the_journal_table_sets_limits_and_sync() {
        let toolbox = parse(
            "version = 1\n[journal]\nmax_mib = 64\nmax_days = 2\nsync = true\n[[component]]\nsource = \"builtin:read\"\n",
        );
        assert_eq!(
            toolbox.journal,
            JournalSettings {
                max_bytes: Some(64 << 20),
                max_age: Some(std::time::Duration::from_secs(2 * 86_400)),
                sync: Some(true),
            }
        );
        let plain = parse("version = 1\n[[component]]\nsource = \"builtin:read\"\n");
        assert_eq!(plain.journal, JournalSettings::default());
    }

    #[test]
    fn file_source_with_file_policy() {
        let toolbox = parse(
            "version = 1\n[[component]]\nsource = \"./tools/../tools/csv.wasm\"\npolicy = \"/etc/toolhost/csv.toml\"\n",
        );
        let entry = &toolbox.components[0];
        // `.` cleaned, `..` kept, as for policy grants
        assert_eq!(
            entry.source,
            Source::File("/base/tools/../tools/csv.wasm".into())
        );
        assert_eq!(
            entry.policy,
            PolicySource::File("/etc/toolhost/csv.toml".into())
        );
    }

    #[test]
    fn inline_policy_grants_resolve_against_the_toolbox_dir() {
        let toolbox = parse(
            r#"version = 1

[[component]]
source = "tools/csv.wasm"
[component.policy]
version = 1
decision = "allow"
[[component.policy.fs]]
host = "data"
guest = "/data"
[[component.policy.fs]]
host = "/tmp/out"
guest = "/out"
mode = "rw"
[component.policy.tools.export]
decision = "ask"

[[component]]
source = "builtin:fetch"
policy = { decision = "ask", network = { allow = ["example.com:443"] } }
"#,
        );
        let PolicySource::Inline(csv) = &toolbox.components[0].policy else {
            panic!("{toolbox:?}");
        };
        let component = csv.component();
        assert_eq!(component.decision, Decision::Allow);
        assert_eq!(component.sandbox.fs[0].host, Path::new("/base/data"));
        assert_eq!(component.sandbox.fs[0].mode, FsMode::ReadOnly);
        assert_eq!(component.sandbox.fs[1].host, Path::new("/tmp/out"));
        assert_eq!(csv.for_tool("export").decision, Decision::Ask);

        let entry = &toolbox.components[1];
        assert_eq!(entry.line, 18);
        let PolicySource::Inline(fetch) = &entry.policy else {
            panic!("{toolbox:?}");
        };
        assert!(fetch.component().sandbox.allows_network("example.com", 443));
    }

    #[test]
    fn empty_inline_policy_denies_everything() {
        let toolbox = parse("version = 1\n[[component]]\nsource = \"a.wasm\"\npolicy = {}\n");
        assert_eq!(
            toolbox.components[0].policy,
            PolicySource::Inline(Box::new(Policy::deny_all()))
        );
    }

    #[test]
    fn prefixes() {
        let toolbox = parse(
            "version = 1\n[[component]]\nsource = \"builtin:read\"\nprefix = \"ws_\"\n[[component]]\nsource = \"builtin:read\"\nprefix = \"a2\"\n",
        );
        let prefixes: Vec<_> = toolbox
            .components
            .iter()
            .map(|c| c.prefix.as_deref())
            .collect();
        assert_eq!(prefixes, [Some("ws_"), Some("a2")]);

        for ok in ["a", "ws_", "a_1", &"a".repeat(MAX_PREFIX_LEN)] {
            assert!(check_prefix(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Ws",
            "_ws",
            "1ws",
            "ws-",
            "wé",
            "ws ",
            &"a".repeat(MAX_PREFIX_LEN + 1),
        ] {
            assert!(check_prefix(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn components_as_an_inline_array() {
        let toolbox = parse(
            "version = 1\ncomponent = [\n  { source = \"builtin:read\" },\n  { source = \"builtin:grep\", prefix = \"g_\" },\n]\n",
        );
        let lines: Vec<_> = toolbox.components.iter().map(|c| c.line).collect();
        assert_eq!(lines, [3, 4]);
    }

    #[test]
    fn source_display() {
        assert_eq!(Source::Builtin("read".into()).to_string(), "builtin:read");
        assert_eq!(
            Source::File("/base/tools/csv.wasm".into()).to_string(),
            "/base/tools/csv.wasm"
        );
    }

    #[test]
    fn version_checked_before_unknown_keys() {
        assert_eq!(
            parse_err("version = 2\n[[tool]]\nwasm = \"a.wasm\"\n"),
            "toolhost.toml:1:11: unsupported toolbox version 2, expected 1"
        );
    }

    #[test]
    fn unknown_builtin_lists_the_known_names() {
        let text = "version = 1\n[[component]]\nsource = \"builtin:cat\"\n";
        let err = |builtins: &[&str]| {
            Toolbox::parse(text, "t.toml", Path::new("/"), builtins)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&[]),
            "t.toml:3:10: unknown built-in tool `cat`: this host has no built-in tools"
        );
        assert_eq!(
            err(&["read"]),
            "t.toml:3:10: unknown built-in tool `cat`, expected `read`"
        );
        assert_eq!(
            err(BUILTINS),
            "t.toml:3:10: unknown built-in tool `cat`, expected one of `read`, `write`, `edit`, `list`, `grep`, `fetch`"
        );
    }

    #[test]
    fn load_resolves_against_the_file_directory() {
        // Unit tests run in the package directory.
        let toolbox = Toolbox::load(Path::new("tests/valid/example.toml"), BUILTINS)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(toolbox.origin, "tests/valid/example.toml");
        let expected = std::env::current_dir()
            .expect("current directory")
            .join("tests/valid");
        assert_eq!(toolbox.base_dir, expected);
        assert!(toolbox.base_dir.is_absolute());
        assert_eq!(
            toolbox.components[0].policy,
            PolicySource::File(expected.join("policies/read.toml"))
        );
    }

    #[test]
    fn load_names_the_file() {
        let err = Toolbox::load(Path::new("/nonexistent/toolhost.toml"), BUILTINS).unwrap_err();
        assert_eq!(err.origin, "/nonexistent/toolhost.toml");
        assert!(
            err.to_string()
                .starts_with("/nonexistent/toolhost.toml: cannot read toolbox file: "),
            "{err}"
        );
    }
}
