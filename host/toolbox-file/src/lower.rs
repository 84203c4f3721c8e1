//! Lowering a toolbox file: its raw serde shapes ([`crate::raw`]) checked
//! and resolved into [`Toolbox`] values, every error naming the file, line
//! and column.

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;
use toolhost_policy::{Language, Policy, PolicyError, line_column};

use crate::raw::{
    RawComponent, RawPolicySource, RawRegistry, RawTasks, RawToolbox, RawTrust, VersionProbe,
};
use crate::remote::{Digest, OCI_SCHEME, OciRef};
use crate::types::{
    BUILTIN_SCHEME, ComponentEntry, DEFAULT_DEFER_OVER, JournalSettings, MAX_PREFIX_LEN,
    PolicySource, RegistrySettings, Requirement, Signer, Source, TOOLBOX_VERSION, TaskSettings,
    Toolbox, ToolboxError, TrustRule,
};

/// What starts a `source` fetched over HTTPS (pinned by its `digest`).
const HTTPS_SCHEME: &str = "https://";

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
        let components: Vec<ComponentEntry> = match raw.component {
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
        // A code runner the file names decides the language when the file
        // does not; the two cannot disagree.
        let named = components
            .iter()
            .find_map(|c| c.source.runner_language().map(|l| (l, c)));
        let language = match (raw.language, named) {
            (Some(language), Some((runs, entry))) if language != runs => {
                return Err(PolicyError {
                    line: Some(entry.line),
                    column: Some(1),
                    ..PolicyError::new(
                        origin,
                        format!(
                            "`{}` runs {runs}, but the toolbox's `language` is {language}",
                            entry.source
                        ),
                    )
                });
            }
            (Some(language), _) => language,
            (None, Some((runs, _))) => runs,
            (None, None) => Language::default(),
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
        let tasks = match raw.tasks {
            Some(t) => file.tasks(t)?,
            None => TaskSettings::default(),
        };
        Ok(Toolbox {
            origin: origin.to_owned(),
            base_dir: base_dir.to_owned(),
            components,
            path: None,
            registries,
            trust,
            journal,
            tasks,
            mode: raw.mode.unwrap_or_default(),
            language,
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

    /// The `[tasks]` table: each key in its range, else an error at it.
    fn tasks(&self, raw: RawTasks) -> Result<TaskSettings, ToolboxError> {
        let mut out = TaskSettings::default();
        let check = |v: &Spanned<u64>, range: std::ops::RangeInclusive<u64>, what: &str| {
            if range.contains(v.get_ref()) {
                Ok(v.clone().into_inner())
            } else {
                Err(self.at(
                    v.span(),
                    format!("{what}: {} to {}", range.start(), range.end()),
                ))
            }
        };
        // An hour is past what a client holds a request open for.
        if let Some(v) = &raw.after_ms {
            let ms = check(
                v,
                0..=3_600_000,
                "`after_ms` is the milliseconds a call runs before it becomes a task",
            )?;
            out.after = std::time::Duration::from_millis(ms);
        }
        // A result nobody can fetch is lost; a month is past any client.
        if let Some(v) = &raw.keep_secs {
            let secs = check(
                v,
                1..=30 * 86_400,
                "`keep_secs` is the seconds a task's result is kept",
            )?;
            out.keep = std::time::Duration::from_secs(secs);
        }
        if let Some(v) = &raw.max_result_kib {
            let kib = check(
                v,
                1..=1 << 20,
                "`max_result_kib` bounds a task's result, in KiB",
            )?;
            out.max_result_bytes = kib << 10;
        }
        Ok(out)
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
    use crate::types::Advertise;
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
