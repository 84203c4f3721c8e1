//! Policy files for toolhost tool components.
//!
//! Each tool component (a WebAssembly component exposing one or more tools to
//! an LLM agent) runs under a policy: a small TOML file saying whether its
//! tools may run ([`Decision`]: allow, ask the user, or deny), how much CPU,
//! time, memory and output a call may use ([`Limits`]), and what the call may
//! reach outside its own memory ([`Sandbox`]: directories, environment
//! variables, network endpoints). A policy may override any of this per tool.
//! This crate parses and validates those files into resolved [`ToolPolicy`]
//! values; the runtime enforces them.
//!
//! **Deny by default: an empty policy grants nothing** (no directories, no
//! env, no network, every tool denied). Every grant must be written down.
//!
//! ```
//! use std::path::Path;
//! use toolhost_policy::{Decision, FsMode, Policy};
//!
//! let text = r#"
//! version = 1
//! decision = "allow"
//!
//! [[fs]]
//! host = "."
//! guest = "/workspace"
//! mode = "ro"
//!
//! [tools.write]
//! decision = "ask"
//! [[tools.write.fs]]
//! host = "."
//! guest = "/workspace"
//! mode = "rw"
//! "#;
//! let policy = Policy::parse(text, "files.toml", Path::new("/srv/project"))?;
//!
//! let read = policy.for_tool("read");
//! assert_eq!(read.decision, Decision::Allow);
//! assert_eq!(read.sandbox.fs[0].host, Path::new("/srv/project"));
//! assert_eq!(read.sandbox.fs[0].mode, FsMode::ReadOnly);
//! assert!(!read.sandbox.grants_network());
//!
//! let write = policy.for_tool("write");
//! assert_eq!(write.decision, Decision::Ask);
//! assert_eq!(write.sandbox.fs[0].mode, FsMode::ReadWrite);
//!
//! // Errors name the file, line and column.
//! let err = Policy::parse("version = 1\ndecision = \"maybe\"\n", "p.toml", Path::new("/"))
//!     .unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "p.toml:2:12: unknown variant `maybe`, expected one of `allow`, `ask`, `deny`"
//! );
//! # Ok::<(), toolhost_policy::PolicyError>(())
//! ```
//!
//! The file format is described in `policies/README.md` at the root of the
//! repository; [`PolicyBuilder`] makes the same policies in code, and
//! [`InlinePolicy`] reads the same tables embedded in other TOML files.

mod builder;
mod error;
pub mod import;
mod raw;
mod types;

use std::collections::BTreeMap;
use std::path::Path;
pub use toolhost_contract::DescriptorLimits;

use serde::Deserialize;

pub use builder::{PolicyBuilder, ToolBuilder};
pub use error::{PolicyError, line_column};
pub use types::{
    APPROX_BYTES_PER_TOKEN, ApproveMode, Callers, DEFAULT_FUEL, DEFAULT_HTTP_TIMEOUT_MS,
    DEFAULT_MAX_CONTEXT_BYTES, DEFAULT_MAX_CONTEXT_PER_SECOND, DEFAULT_MAX_FILES_CREATED,
    DEFAULT_MAX_HTTP_RESPONSE_BYTES, DEFAULT_MAX_PARALLEL_CALLS, DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_RESULT_TOKENS, DEFAULT_MAX_STDOUT_BYTES, DEFAULT_MAX_TOOL_CALLS,
    DEFAULT_MAX_VALUE_BYTES, DEFAULT_MAX_WRITE_BYTES, DEFAULT_MEMORY_BYTES, DEFAULT_TIMEOUT_MS,
    Decision, FsGrant, FsMode, Isolation, Language, Limits, Mode, NetRule, Place, RenderMode,
    Sandbox, TaskMode, ToolDeclaration, ToolPolicy, Walls,
};

/// The only value of `version` accepted in policy files.
pub const POLICY_VERSION: i64 = raw::SUPPORTED_VERSION;

/// The validated policy of one component: its component-level settings and
/// the per-tool overrides, each already resolved.
///
/// [`Policy::default`] is [`Policy::deny_all`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    component: ToolPolicy,
    tools: BTreeMap<String, ToolPolicy>,
    declarations: BTreeMap<String, ToolDeclaration>,
    descriptors: DescriptorLimits,
    isolation: Option<Isolation>,
    walls: Option<Walls>,
}

impl Policy {
    /// The empty policy: every tool denied, default limits, no directories,
    /// no environment, no network.
    pub fn deny_all() -> Policy {
        Policy::default()
    }

    /// Parses and validates a policy from `text`.
    ///
    /// `origin` names the source in errors (usually the file name). Relative
    /// `host` paths of `[[fs]]` grants are joined onto `base_dir` (not
    /// canonicalized, not checked for existence).
    pub fn parse(text: &str, origin: &str, base_dir: &Path) -> Result<Policy, PolicyError> {
        raw::parse(text, origin, base_dir).map(Policy::from_resolved)
    }

    /// Reads and parses the policy file at `path`; errors name `path` as given.
    pub fn load(path: &Path, base_dir: &Path) -> Result<Policy, PolicyError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| PolicyError::new(&origin, format!("cannot read policy file: {e}")))?;
        Policy::parse(&text, &origin, base_dir)
    }

    /// Validates a policy table embedded in another TOML file, exactly as
    /// [`Policy::parse`] validates a file.
    ///
    /// `text` is the whole embedding file and `origin` its name: errors point
    /// into it. Relative `host` paths of `[[fs]]` grants are joined onto
    /// `base_dir`. The table's `version` may be left out.
    pub fn from_inline(
        inline: InlinePolicy,
        origin: &str,
        text: &str,
        base_dir: &Path,
    ) -> Result<Policy, PolicyError> {
        raw::resolve_inline(inline.0, origin, text, base_dir).map(Policy::from_resolved)
    }

    /// The resolved policy for `tool`: the component level with the tool's
    /// override applied (decision and each limit replaced when set; `fs`,
    /// `env` and `network` replaced whole when present). A tool without an
    /// override gets the component level.
    pub fn for_tool(&self, tool: &str) -> ToolPolicy {
        self.tools.get(tool).unwrap_or(&self.component).clone()
    }

    /// The component-level policy, ignoring every override.
    pub fn component(&self) -> ToolPolicy {
        self.component.clone()
    }

    /// What the policy states about `tool`'s declaration (its path and
    /// URL arguments, its annotations), if anything.
    pub fn declaration(&self, tool: &str) -> Option<&ToolDeclaration> {
        self.declarations.get(tool)
    }

    /// Every tool whose declaration the policy states, in sorted order.
    pub fn declarations(&self) -> impl Iterator<Item = (&str, &ToolDeclaration)> {
        self.declarations.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Names of the tools that have an override, in sorted order.
    pub fn tool_overrides(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    pub(crate) fn from_resolved(resolved: raw::Resolved) -> Policy {
        Policy {
            component: resolved.component,
            tools: resolved.tools,
            declarations: resolved.declarations,
            descriptors: resolved.descriptors,
            isolation: resolved.isolation,
            walls: resolved.walls,
        }
    }

    /// Where the component's calls run, when the policy says (`None`: the
    /// host decides by where the component came from).
    pub fn isolation(&self) -> Option<Isolation> {
        self.isolation
    }

    /// Whether the component runs when the kernel cannot build its
    /// worker's walls, when the policy says (`None`: the host decides by
    /// where the component came from).
    pub fn walls(&self) -> Option<Walls> {
        self.walls
    }

    /// The bounds on what the component may declare about its tools
    /// (`[descriptors]`; the defaults when absent).
    pub fn descriptor_limits(&self) -> DescriptorLimits {
        self.descriptors
    }
}

/// A policy table embedded in another TOML file (the same keys as a policy
/// file; `version` optional, and only `1` if given), deserialized but not yet
/// validated: pass it to [`Policy::from_inline`].
///
/// Unknown keys are rejected while deserializing. Deserialize it from the
/// `toml` crate's deserializer so errors keep their positions.
///
/// ```
/// use std::path::Path;
/// use toolhost_policy::{Decision, InlinePolicy, Policy};
///
/// #[derive(serde::Deserialize)]
/// struct Host {
///     policy: InlinePolicy,
/// }
///
/// let text = "[policy]\ndecision = \"allow\"\n[[policy.fs]]\nhost = \"data\"\nguest = \"/data\"\n";
/// let host: Host = toml::from_str(text)?;
/// let policy = Policy::from_inline(host.policy, "host.toml", text, Path::new("/srv"))?;
/// assert_eq!(policy.component().decision, Decision::Allow);
/// assert_eq!(policy.component().sandbox.fs[0].host, Path::new("/srv/data"));
///
/// // Errors point into the embedding file.
/// let text = "[policy]\nversion = 1\ndecision = \"allow\"\n[[policy.fs]]\nhost = \"data\"\nguest = \"data\"\n";
/// let host: Host = toml::from_str(text)?;
/// let err = Policy::from_inline(host.policy, "host.toml", text, Path::new("/srv")).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "host.toml:6:9: guest path `data` must be absolute (start with `/`)"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct InlinePolicy(raw::RawPolicy);

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn parse(text: &str) -> Policy {
        match Policy::parse(text, "test.toml", Path::new("/base")) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    fn parse_err(text: &str) -> String {
        match Policy::parse(text, "test.toml", Path::new("/base")) {
            Ok(p) => panic!("expected an error, got {p:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn empty_policy_denies_everything() {
        for policy in [
            parse("version = 1\n"),
            Policy::deny_all(),
            PolicyBuilder::new().build().unwrap(),
        ] {
            assert_eq!(policy, Policy::deny_all());
            for tool in ["read", "write", "anything"] {
                let p = policy.for_tool(tool);
                assert_eq!(p.decision, Decision::Deny);
                assert!(p.sandbox.fs.is_empty());
                assert!(p.sandbox.env_allow.is_empty());
                assert!(p.sandbox.env_set.is_empty());
                assert!(!p.sandbox.grants_network());
                assert!(!p.sandbox.allows_network("localhost", 80));
                assert_eq!(p.limits, Limits::default());
            }
            assert_eq!(policy.tool_overrides().count(), 0);
        }
    }

    const MERGE: &str = r#"
version = 1
decision = "allow"

[limits]
fuel = 1000
timeout_ms = 5000
max_result_tokens = 100

[[fs]]
host = "."
guest = "/workspace"
mode = "ro"

[[fs]]
host = "/tmp/cache"
guest = "/cache"
mode = "rw"

[env]
allow = ["LANG"]
set = { MODE = "component" }

[network]
allow = ["example.com:443"]

[tools.write]
decision = "ask"
[tools.write.limits]
timeout_ms = 2000
[[tools.write.fs]]
host = "out"
guest = "/workspace"
mode = "rw"

[tools.quiet]
env = {}
network = { allow = [] }
fs = []
"#;

    #[test]
    fn override_merges_limits_and_replaces_fs() {
        let policy = parse(MERGE);
        assert_eq!(
            policy.tool_overrides().collect::<Vec<_>>(),
            ["quiet", "write"]
        );

        let component = policy.component();
        assert_eq!(policy.for_tool("read"), component);
        assert_eq!(component.decision, Decision::Allow);
        assert_eq!(component.sandbox.fs.len(), 2);
        assert_eq!(component.sandbox.fs[0].host, PathBuf::from("/base"));
        assert_eq!(component.sandbox.fs[1].host, PathBuf::from("/tmp/cache"));

        let write = policy.for_tool("write");
        assert_eq!(write.decision, Decision::Ask);
        // limits merged field by field
        assert_eq!(write.limits.timeout_ms, 2000);
        assert_eq!(write.limits.fuel, 1000);
        assert_eq!(write.limits.max_result_tokens, Some(100));
        assert_eq!(write.limits.memory_bytes, DEFAULT_MEMORY_BYTES);
        // fs replaced whole (the /cache grant is gone)
        assert_eq!(
            write.sandbox.fs,
            [FsGrant {
                host: PathBuf::from("/base/out"),
                guest: "/workspace".into(),
                mode: FsMode::ReadWrite,
            }]
        );
        // absent env and network inherited
        assert_eq!(write.sandbox.env_allow, ["LANG"]);
        assert_eq!(write.sandbox.env_set["MODE"], "component");
        assert!(write.sandbox.allows_network("example.com", 443));

        // present-but-empty sections replace with nothing
        let quiet = policy.for_tool("quiet");
        assert_eq!(quiet.decision, Decision::Allow);
        assert_eq!(quiet.limits, component.limits);
        assert!(quiet.sandbox.fs.is_empty());
        assert!(quiet.sandbox.env_allow.is_empty());
        assert!(quiet.sandbox.env_set.is_empty());
        assert!(!quiet.sandbox.grants_network());
    }

    #[test]
    fn callers_call_tools_and_the_tool_call_limit() {
        let policy = parse(
            "version = 1\ncallers = \"code\"\ncall_tools = true\n[limits]\nmax_tool_calls = 20\n\
             [tools.direct]\ncallers = \"model\"\n",
        );
        let c = policy.component();
        assert_eq!(c.callers, Callers::Code);
        assert!(c.callers.code() && !c.callers.model());
        assert!(c.sandbox.call_tools);
        assert_eq!(c.limits.max_tool_calls, 20);
        let direct = policy.for_tool("direct");
        assert_eq!(direct.callers, Callers::Model);
        assert!(direct.sandbox.call_tools, "a component-level grant");
        // The defaults: both callers, no tool calls of its own.
        let d = Policy::deny_all().component();
        assert_eq!(d.callers, Callers::Both);
        assert!(!d.sandbox.call_tools);
        assert_eq!(d.limits.max_tool_calls, DEFAULT_MAX_TOOL_CALLS);
        let e = Policy::parse(
            "version = 1\ncallers = \"anyone\"\n",
            "p.toml",
            Path::new("/"),
        )
        .expect_err("an unknown caller");
        assert!(e.to_string().starts_with("p.toml:2:"), "{e}");
        assert!(e.to_string().contains("model"), "{e}");
    }

    #[test]
    fn env_replaced_whole() {
        let policy = parse(
            "version = 1\n[env]\nallow = [\"LANG\"]\nset = { A = \"1\" }\n[tools.t.env]\nallow = [\"TZ\"]\n",
        );
        let t = policy.for_tool("t");
        assert_eq!(t.sandbox.env_allow, ["TZ"]);
        assert!(t.sandbox.env_set.is_empty());
    }

    #[test]
    fn builder_matches_file() {
        let built = PolicyBuilder::new()
            .base_dir("/base")
            .decision(Decision::Allow)
            .limits(|l| {
                l.fuel = 1000;
                l.timeout_ms = 5000;
                l.max_result_tokens = Some(100);
            })
            .grant(".", "/workspace", FsMode::ReadOnly)
            .grant("/tmp/cache", "/cache", FsMode::ReadWrite)
            .env_allow("LANG")
            .env_set("MODE", "component")
            .network("example.com:443")
            .tool("write", |t| {
                t.decision(Decision::Ask)
                    .limits(|l| l.timeout_ms = 2000)
                    .grant("out", "/workspace", FsMode::ReadWrite)
            })
            .tool("quiet", |t| t.clear_fs().clear_env().clear_network())
            .build()
            .unwrap();
        assert_eq!(built, parse(MERGE));
    }

    #[test]
    fn builder_validates_like_files() {
        let err = PolicyBuilder::new()
            .limits(|l| l.fuel = 0)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "<builder>: `limits.fuel` must be greater than 0"
        );
        assert_eq!((err.line, err.column), (None, None));

        let err = PolicyBuilder::new()
            .tool("write", |t| t.limits(|l| l.timeout_ms = 0))
            .build()
            .unwrap_err();
        assert_eq!(
            err.message,
            "`tools.write.limits.timeout_ms` must be greater than 0"
        );

        for bad in [
            PolicyBuilder::new().grant(".", "workspace", FsMode::ReadOnly),
            PolicyBuilder::new()
                .grant(".", "/w", FsMode::ReadOnly)
                .grant("x", "/w", FsMode::ReadWrite),
            PolicyBuilder::new().network("*.example.com:443"),
            PolicyBuilder::new().env_allow("A=B"),
            PolicyBuilder::new().env_set("", "v"),
            PolicyBuilder::new().tool("Bad", |t| t),
            PolicyBuilder::new().tool("t", |t| t.network("example.com")),
        ] {
            assert!(bad.build().is_err());
        }
    }

    #[test]
    fn builder_tool_limits_start_from_final_component_limits() {
        let policy = PolicyBuilder::new()
            .tool("t", |t| t.limits(|l| l.max_result_tokens = None))
            .limits(|l| {
                l.fuel = 7;
                l.max_result_tokens = Some(10);
            })
            .build()
            .unwrap();
        let t = policy.for_tool("t");
        assert_eq!(t.limits.fuel, 7);
        assert_eq!(t.limits.max_result_tokens, None);
        assert_eq!(policy.component().limits.max_result_tokens, Some(10));
    }

    #[test]
    fn relative_hosts_join_the_base_dir() {
        let policy = parse(
            "version = 1\n[[fs]]\nhost = \"./src/../lib/.\"\nguest = \"/\"\n[[fs]]\nhost = \"/abs\"\nguest = \"/abs\"\nmode = \"rw\"\n",
        );
        let fs = policy.component().sandbox.fs;
        // `.` cleaned, `..` kept for the runtime to resolve on the real file system
        assert_eq!(fs[0].host, PathBuf::from("/base/src/../lib"));
        assert_eq!(fs[0].mode, FsMode::ReadOnly, "mode defaults to ro");
        assert_eq!(fs[1].host, PathBuf::from("/abs"));
    }

    #[test]
    fn network_entries_normalized() {
        let policy = parse(
            "version = 1\n[network]\nallow = [\"Example.COM:443\", \"[::1]:*\", \"127.0.0.1:8080\"]\n",
        );
        let sandbox = policy.component().sandbox;
        assert_eq!(
            sandbox.network,
            [
                NetRule {
                    host: "example.com".into(),
                    port: Some(443)
                },
                NetRule {
                    host: "::1".into(),
                    port: None
                },
                NetRule {
                    host: "127.0.0.1".into(),
                    port: Some(8080)
                },
            ]
        );
        assert!(sandbox.allows_network("example.com", 443));
        assert!(sandbox.allows_network("[::1]", 1234));
        assert!(!sandbox.allows_network("127.0.0.1", 80));
    }

    #[test]
    fn version_checked_before_unknown_keys() {
        assert_eq!(
            parse_err("version = 2\nnew_feature = true\n"),
            "test.toml:1:11: unsupported policy version 2, expected 1"
        );
    }

    /// An embedding file with the policy under `[outer.policy]`.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        outer: OuterEntry,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct OuterEntry {
        #[allow(dead_code)]
        name: String,
        policy: InlinePolicy,
    }

    fn inline(text: &str) -> Result<Policy, PolicyError> {
        let outer: Outer =
            toml::from_str(text).map_err(|e| PolicyError::from_toml("outer.toml", text, &e))?;
        Policy::from_inline(outer.outer.policy, "outer.toml", text, Path::new("/outer"))
    }

    #[test]
    fn inline_policies_validate_like_files() {
        let policy = inline(
            "[outer]\nname = \"x\"\n[outer.policy]\nversion = 1\ndecision = \"ask\"\n[[outer.policy.fs]]\nhost = \"sub\"\nguest = \"/w\"\n[outer.policy.tools.write]\ndecision = \"deny\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(policy.component().decision, Decision::Ask);
        assert_eq!(
            policy.component().sandbox.fs[0].host,
            Path::new("/outer/sub")
        );
        assert_eq!(policy.for_tool("write").decision, Decision::Deny);

        // `version` is optional, and an empty table denies everything.
        let policy =
            inline("[outer]\nname = \"x\"\npolicy = {}\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(policy, Policy::deny_all());

        for (text, expected) in [
            (
                "[outer]\nname = \"x\"\n[outer.policy]\nversion = 2\n",
                "outer.toml:4:11: unsupported policy version 2, expected 1",
            ),
            (
                "[outer]\nname = \"x\"\npolicy = { version = \"1\" }\n",
                "outer.toml:3:22: invalid type: string for `version`, expected the integer 1",
            ),
            (
                "[outer]\nname = \"x\"\n[outer.policy]\ndecision = \"allow\"\nfuel = 5\n",
                "outer.toml:5:1: unknown field `fuel`, expected one of `version`, `decision`, `render`, `approve`, `task`, `callers`, `call_tools`, `limits`, `fs`, `env`, `network`, `descriptors`, `isolation`, `walls`, `tools`",
            ),
            (
                "[outer]\nname = \"x\"\n[outer.policy.limits]\nfuel = 0\n",
                "outer.toml:4:8: `limits.fuel` must be greater than 0",
            ),
        ] {
            assert_eq!(inline(text).unwrap_err().to_string(), expected);
        }
    }

    #[test]
    fn load_names_the_file() {
        let err = Policy::load(Path::new("/nonexistent/p.toml"), Path::new("/")).unwrap_err();
        assert_eq!(err.origin, "/nonexistent/p.toml");
        assert!(
            err.to_string()
                .starts_with("/nonexistent/p.toml: cannot read policy file: ")
        );
    }

    #[test]
    fn serializes_for_traces() {
        fn assert_serialize<T: serde::Serialize>() {}
        assert_serialize::<ToolPolicy>();
        assert_serialize::<Decision>();
        assert_serialize::<FsMode>();
        assert_serialize::<Limits>();
    }
}
