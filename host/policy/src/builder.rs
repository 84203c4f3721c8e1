//! Programmatic policies, validated exactly like files.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use toml::Spanned;

use crate::Policy;
use crate::error::{Ctx, PolicyError};
use crate::raw::{self, RawEnv, RawFsGrant, RawLimits, RawNetwork, RawPolicy, RawTool};
use crate::types::{ApproveMode, Callers, Decision, FsMode, Limits, RenderMode, TaskMode};

/// The origin named in errors of builder-made policies.
const BUILDER_ORIGIN: &str = "<builder>";

/// Builds a [`Policy`] in code, mainly for tests.
///
/// Starts from the empty (deny-all) policy. [`build`](Self::build) applies the
/// same validation as [`Policy::parse`]; its errors have origin `<builder>`
/// and no line or column.
///
/// ```
/// use toolhost_policy::{Decision, FsMode, PolicyBuilder};
///
/// let policy = PolicyBuilder::new()
///     .base_dir("/srv/project")
///     .decision(Decision::Allow)
///     .grant(".", "/workspace", FsMode::ReadOnly)
///     .env_allow("LANG")
///     .env_set("TOOL_MODE", "test")
///     .network("example.com:443")
///     .limits(|l| l.fuel = 1_000_000)
///     .tool("write", |t| {
///         t.decision(Decision::Ask)
///             .grant(".", "/workspace", FsMode::ReadWrite)
///             .limits(|l| l.timeout_ms = 2_000)
///     })
///     .build()?;
///
/// let write = policy.for_tool("write");
/// assert_eq!(write.decision, Decision::Ask);
/// assert_eq!(write.limits.fuel, 1_000_000); // inherited
/// assert_eq!(write.limits.timeout_ms, 2_000); // overridden
/// assert_eq!(write.sandbox.fs[0].host.to_str(), Some("/srv/project"));
/// # Ok::<(), toolhost_policy::PolicyError>(())
/// ```
#[derive(Debug, Default)]
pub struct PolicyBuilder {
    base_dir: PathBuf,
    decision: Option<Decision>,
    render: Option<RenderMode>,
    approve: Option<ApproveMode>,
    task: Option<TaskMode>,
    callers: Option<Callers>,
    call_tools: bool,
    limits: Limits,
    fs: Vec<(PathBuf, String, FsMode)>,
    env_allow: Vec<String>,
    env_set: BTreeMap<String, String>,
    network: Vec<String>,
    tools: BTreeMap<String, ToolBuilder>,
}

impl PolicyBuilder {
    /// An empty builder: deny, default limits, no fs, env or network.
    pub fn new() -> Self {
        Self::default()
    }

    /// The directory relative `host` paths of grants are joined onto
    /// (default: none, so relative paths stay relative).
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = dir.into();
        self
    }

    /// The component-level decision (default [`Decision::Deny`]).
    pub fn decision(mut self, decision: Decision) -> Self {
        self.decision = Some(decision);
        self
    }

    /// Sets where `render` runs (default: [`RenderMode::Isolated`]).
    pub fn render(mut self, mode: RenderMode) -> Self {
        self.render = Some(mode);
        self
    }

    /// Sets what `ask` approves (default: [`ApproveMode::Arguments`]).
    pub fn approve(mut self, mode: ApproveMode) -> Self {
        self.approve = Some(mode);
        self
    }

    /// Sets when a call becomes an MCP task (default: [`TaskMode::Auto`]).
    pub fn task(mut self, mode: TaskMode) -> Self {
        self.task = Some(mode);
        self
    }

    /// Sets who may call the tools (default: [`Callers::Both`]).
    pub fn callers(mut self, callers: Callers) -> Self {
        self.callers = Some(callers);
        self
    }

    /// Lets the component call the host's tools (a code runner; default
    /// off).
    pub fn call_tools(mut self, allow: bool) -> Self {
        self.call_tools = allow;
        self
    }

    /// Edits the component-level limits, which start at [`Limits::default`].
    pub fn limits(mut self, edit: impl FnOnce(&mut Limits)) -> Self {
        edit(&mut self.limits);
        self
    }

    /// Adds a component-level directory grant.
    pub fn grant(
        mut self,
        host: impl Into<PathBuf>,
        guest: impl Into<String>,
        mode: FsMode,
    ) -> Self {
        self.fs.push((host.into(), guest.into(), mode));
        self
    }

    /// Passes the host environment variable `name` through when it is set.
    pub fn env_allow(mut self, name: impl Into<String>) -> Self {
        self.env_allow.push(name.into());
        self
    }

    /// Sets the environment variable `name` to `value`.
    pub fn env_set(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env_set.insert(name.into(), value.into());
        self
    }

    /// Adds a network allow-list entry, written as in files (`host:port`,
    /// `host:*`, `[::1]:80`).
    pub fn network(mut self, entry: impl Into<String>) -> Self {
        self.network.push(entry.into());
        self
    }

    /// Adds (or continues) the override for tool `name`.
    pub fn tool(
        mut self,
        name: impl Into<String>,
        edit: impl FnOnce(ToolBuilder) -> ToolBuilder,
    ) -> Self {
        let name = name.into();
        let current = self.tools.remove(&name).unwrap_or_default();
        self.tools.insert(name, edit(current));
        self
    }

    /// Validates and builds the policy.
    pub fn build(self) -> Result<Policy, PolicyError> {
        let ctx = Ctx {
            origin: BUILDER_ORIGIN,
            text: None,
        };
        let mut tool_limits = BTreeMap::new();
        let mut tools = BTreeMap::new();
        for (name, tool) in self.tools {
            let limits = if tool.limits.is_empty() {
                None
            } else {
                let mut limits = self.limits.clone();
                for edit in tool.limits {
                    edit(&mut limits);
                }
                tool_limits.insert(name.clone(), limits.clone());
                Some(raw_limits(&limits))
            };
            let raw_tool = RawTool {
                decision: tool.decision.map(unspanned),
                render: tool.render.map(unspanned),
                approve: tool.approve.map(unspanned),
                callers: tool.callers.map(unspanned),
                limits,
                fs: tool.fs.map(raw_fs),
                env: tool.env.map(|(allow, set)| raw_env(allow, set)),
                network: tool.network.map(raw_network),
                ..RawTool::default()
            };
            tools.insert(unspanned(name), raw_tool);
        }
        let raw = RawPolicy {
            version: None,
            decision: self.decision.map(unspanned),
            render: self.render.map(unspanned),
            approve: self.approve.map(unspanned),
            task: self.task.map(unspanned),
            callers: self.callers.map(unspanned),
            call_tools: Some(unspanned(self.call_tools)),
            limits: Some(raw_limits(&self.limits)),
            fs: Some(raw_fs(self.fs)),
            env: Some(raw_env(self.env_allow, self.env_set)),
            network: Some(raw_network(self.network)),
            descriptors: None,
            isolation: None,
            walls: None,
            tools,
        };
        let mut resolved = raw::resolve(&ctx, raw, &self.base_dir)?;
        // The closures produced complete limits; use them as they are, so a
        // tool can also clear `max_result_tokens` (merging would keep it).
        for (name, limits) in tool_limits {
            if let Some(tool) = resolved.tools.get_mut(&name) {
                tool.limits = limits;
            }
        }
        Ok(Policy::from_resolved(resolved))
    }
}

/// A deferred edit of a tool's limits, applied to the component's final limits.
type LimitsEdit = Box<dyn FnOnce(&mut Limits) + Send>;

/// The override for one tool, edited inside [`PolicyBuilder::tool`].
///
/// Everything left untouched is inherited from the component level. Limits
/// edits apply to a copy of the component's final limits. The first
/// [`grant`](Self::grant), [`env_allow`](Self::env_allow)/[`env_set`](Self::env_set)
/// or [`network`](Self::network) call makes the tool's list replace the
/// component's whole; the `clear_*` methods replace it with nothing.
#[derive(Default)]
pub struct ToolBuilder {
    decision: Option<Decision>,
    render: Option<RenderMode>,
    approve: Option<ApproveMode>,
    callers: Option<Callers>,
    limits: Vec<LimitsEdit>,
    fs: Option<Vec<(PathBuf, String, FsMode)>>,
    env: Option<(Vec<String>, BTreeMap<String, String>)>,
    network: Option<Vec<String>>,
}

impl fmt::Debug for ToolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolBuilder")
            .field("decision", &self.decision)
            .field("render", &self.render)
            .field("approve", &self.approve)
            .field("callers", &self.callers)
            .field("limits_edits", &self.limits.len())
            .field("fs", &self.fs)
            .field("env", &self.env)
            .field("network", &self.network)
            .finish()
    }
}

impl ToolBuilder {
    /// The tool's decision.
    pub fn decision(mut self, decision: Decision) -> Self {
        self.decision = Some(decision);
        self
    }

    /// Who may call the tool.
    pub fn callers(mut self, callers: Callers) -> Self {
        self.callers = Some(callers);
        self
    }

    /// Sets where the tool's `render` runs.
    pub fn render(mut self, mode: RenderMode) -> Self {
        self.render = Some(mode);
        self
    }

    /// Sets what `ask` approves for this tool.
    pub fn approve(mut self, mode: ApproveMode) -> Self {
        self.approve = Some(mode);
        self
    }

    /// Edits the tool's limits, starting from the component's.
    pub fn limits(mut self, edit: impl FnOnce(&mut Limits) + Send + 'static) -> Self {
        self.limits.push(Box::new(edit));
        self
    }

    /// Adds a directory grant to the tool's own list.
    pub fn grant(
        mut self,
        host: impl Into<PathBuf>,
        guest: impl Into<String>,
        mode: FsMode,
    ) -> Self {
        self.fs
            .get_or_insert_with(Vec::new)
            .push((host.into(), guest.into(), mode));
        self
    }

    /// Gives the tool no directories at all.
    pub fn clear_fs(mut self) -> Self {
        self.fs = Some(Vec::new());
        self
    }

    /// Adds a pass-through variable to the tool's own environment.
    pub fn env_allow(mut self, name: impl Into<String>) -> Self {
        self.env
            .get_or_insert_with(Default::default)
            .0
            .push(name.into());
        self
    }

    /// Sets a variable in the tool's own environment.
    pub fn env_set(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env
            .get_or_insert_with(Default::default)
            .1
            .insert(name.into(), value.into());
        self
    }

    /// Gives the tool an empty environment.
    pub fn clear_env(mut self) -> Self {
        self.env = Some(Default::default());
        self
    }

    /// Adds an entry to the tool's own network allow-list.
    pub fn network(mut self, entry: impl Into<String>) -> Self {
        self.network.get_or_insert_with(Vec::new).push(entry.into());
        self
    }

    /// Gives the tool no network access.
    pub fn clear_network(mut self) -> Self {
        self.network = Some(Vec::new());
        self
    }
}

/// A value with no source position (builder-made policies have no text).
fn unspanned<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

fn raw_limits(l: &Limits) -> RawLimits {
    RawLimits {
        fuel: Some(unspanned(l.fuel)),
        timeout_ms: Some(unspanned(l.timeout_ms)),
        memory_bytes: Some(unspanned(l.memory_bytes)),
        max_stdout_bytes: Some(unspanned(l.max_stdout_bytes)),
        max_result_bytes: Some(unspanned(l.max_result_bytes)),
        max_result_tokens: l.max_result_tokens.map(unspanned),
        max_value_bytes: Some(unspanned(l.max_value_bytes)),
        max_http_response_bytes: Some(unspanned(l.max_http_response_bytes)),
        http_timeout_ms: Some(unspanned(l.http_timeout_ms)),
        max_write_bytes: Some(unspanned(l.max_write_bytes)),
        max_files_created: Some(unspanned(l.max_files_created)),
        max_context_bytes: Some(unspanned(l.max_context_bytes)),
        max_context_per_second: Some(unspanned(l.max_context_per_second)),
        max_tool_calls: Some(unspanned(l.max_tool_calls)),
        max_parallel_calls: Some(unspanned(l.max_parallel_calls)),
    }
}

fn raw_fs(grants: Vec<(PathBuf, String, FsMode)>) -> Vec<RawFsGrant> {
    grants
        .into_iter()
        .map(|(host, guest, mode)| RawFsGrant {
            host: unspanned(host),
            guest: unspanned(guest),
            mode: Some(unspanned(mode)),
        })
        .collect()
}

fn raw_env(allow: Vec<String>, set: BTreeMap<String, String>) -> RawEnv {
    RawEnv {
        allow: allow.into_iter().map(unspanned).collect(),
        set: set
            .into_iter()
            .map(|(k, v)| (unspanned(k), unspanned(v)))
            .collect(),
    }
}

fn raw_network(entries: Vec<String>) -> RawNetwork {
    RawNetwork {
        allow: entries.into_iter().map(unspanned).collect(),
    }
}
