//! The resolved policy types the runtime consumes.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Default fuel budget per call: 2×10⁹ units (roughly one unit per wasm
/// instruction, a few seconds of work).
///
/// Fuel is the deterministic bound on CPU: a tool stuck in a loop stops after
/// the same amount of work on every machine, independent of load, which a
/// wall-clock deadline alone cannot promise.
pub const DEFAULT_FUEL: u64 = 2_000_000_000;

/// Default wall-clock deadline per call: 10 s.
///
/// Bounds what fuel does not see (time spent blocked in host calls such as
/// file or network I/O), so a model's turn never waits indefinitely on a tool.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// Default maximum linear memory per instance: 128 MiB.
///
/// Keeps one tool from exhausting host memory; several instances may run at
/// once on a small machine.
pub const DEFAULT_MEMORY_BYTES: u64 = 128 * 1024 * 1024;

/// Default cap on captured stdout, and separately on stderr: 64 KiB per stream.
///
/// A tool that prints without end must not grow host buffers without end;
/// output past the cap is dropped (the runtime reports the truncation).
pub const DEFAULT_MAX_STDOUT_BYTES: u64 = 64 * 1024;

/// Default cap on the result the model reads: 32 KiB.
///
/// Whatever a tool returns lands in the model's context window; an unbounded
/// result wastes the context, costs tokens, and lets data the tool read (which
/// may be hostile) crowd out the conversation.
pub const DEFAULT_MAX_RESULT_BYTES: u64 = 32 * 1024;

/// Default cap on the tool's value, in bytes of JSON: 16 MiB.
///
/// The value is what a program reads (MCP `structuredContent`, a cassette);
/// the model reads the rendered content, bounded by `max_result_bytes`. An
/// unbounded value lets a tool push its whole memory to every client (one
/// hostile call returned 40 MiB). 16 MiB holds the largest honest value of
/// the built-in tools (`fetch` at its 10 MB maximum, JSON-escaped); a value
/// over the cap fails `value_too_large` before it is parsed.
pub const DEFAULT_MAX_VALUE_BYTES: u64 = 16 * 1024 * 1024;

/// Default approximate token cap on the result: none, only
/// [`DEFAULT_MAX_RESULT_BYTES`] applies.
///
/// When a policy sets `max_result_tokens`, the tighter of the byte cap and
/// `tokens × APPROX_BYTES_PER_TOKEN` wins (see [`Limits::result_byte_budget`]).
pub const DEFAULT_MAX_RESULT_TOKENS: Option<u64> = None;

/// Bytes assumed per model token when converting a token bound into bytes.
///
/// Four bytes per token is the usual estimate for English text and code; it
/// is an approximation, which is why the byte cap always applies as well.
pub const APPROX_BYTES_PER_TOKEN: u64 = 4;

/// Default cap on one HTTP response body read by a tool: 10 MiB.
///
/// A remote server chooses how much it sends; the host stops reading past the
/// cap so a hostile or broken server cannot fill memory.
pub const DEFAULT_MAX_HTTP_RESPONSE_BYTES: u64 = 10 * 1024 * 1024;

/// Default deadline for one outgoing HTTP request: 10 s.
///
/// A server that accepts the connection and then stalls must not hold the
/// tool (and the model's turn) until the overall call deadline.
pub const DEFAULT_HTTP_TIMEOUT_MS: u64 = 10_000;

/// Default cap on bytes one call may write into its read-write grants: 64 MiB.
///
/// The deadline alone lets a hostile tool fill the disk (one call wrote
/// 171 MB in 3 s); an honest tool writes a few files of source or data. It
/// equals the largest file the pipeline can baseline, so any file a tool may
/// later be asked to change can still be written in one call.
pub const DEFAULT_MAX_WRITE_BYTES: u64 = 64 * 1024 * 1024;

/// Default cap on files, directories and links one call may create in its
/// read-write grants: 1,000.
///
/// Bounds inode exhaustion and directory flooding (one call created 19k files
/// in 3 s) while leaving room for a tool that scaffolds a project.
pub const DEFAULT_MAX_FILES_CREATED: u64 = 1_000;

/// Default cap on what a tool reports while it runs (progress and log
/// messages, contract 0.3.0), in bytes per call: 64 KiB. Past it, the
/// rest is dropped and the drop counted.
pub const DEFAULT_MAX_CONTEXT_BYTES: u64 = 64 * 1024;

/// Default rate of progress and log messages a tool may report, per
/// second of the call (a burst of as many is allowed): 20. A client shows
/// progress; it does not need a thousand updates a second.
pub const DEFAULT_MAX_CONTEXT_PER_SECOND: u64 = 20;

/// Default cap on the tool calls one `run_code` script may make: 1,000.
///
/// A script calls tools in a loop; each call is a whole pipeline call with
/// its own session-log events. The deadline and fuel bound the script's
/// time, this bounds what it leaves behind. 1,000 covers reading every
/// file of a mid-sized project once.
pub const DEFAULT_MAX_TOOL_CALLS: u64 = 1_000;

/// Default cap on the tool calls of one script that run at once: 4.
///
/// A script's independent calls (`Promise.all`, `asyncio.gather`) run
/// together; each is a sandbox of its own (an instance, a worker), so this
/// bounds what one script holds at a time. Four is what a component's
/// worker pool keeps warm (more would start worker processes for every
/// burst), and keeps two cores busy through calls that wait.
pub const DEFAULT_MAX_PARALLEL_CALLS: u64 = 4;

/// What the host does when the model calls a tool.
///
/// The default is [`Decision::Deny`]: a tool runs only if a policy says so.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run the tool without asking.
    Allow,
    /// Ask the user to confirm each call before running it.
    Ask,
    /// Refuse the call; the model is told the tool was denied.
    #[default]
    Deny,
}

impl Decision {
    /// The word used in policy files: `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Access granted to a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FsMode {
    /// `"ro"`: the tool may read, list and stat, never modify.
    #[serde(rename = "ro")]
    ReadOnly,
    /// `"rw"`: the tool may also create, write, rename and delete.
    #[serde(rename = "rw")]
    ReadWrite,
}

impl FsMode {
    /// The word used in policy files: `ro` or `rw`.
    pub fn as_str(self) -> &'static str {
        match self {
            FsMode::ReadOnly => "ro",
            FsMode::ReadWrite => "rw",
        }
    }

    /// Whether this mode allows modifications.
    pub fn is_writable(self) -> bool {
        self == FsMode::ReadWrite
    }
}

impl fmt::Display for FsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One host directory made visible to the tool (a WASI preopen).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsGrant {
    /// Host directory. A relative path in the file is joined onto the base
    /// directory given to [`Policy::parse`](crate::Policy::parse), so it is
    /// absolute whenever that base is. It is cleaned of `.` components but not
    /// canonicalized, and may not exist: the runtime checks it when it opens it.
    pub host: PathBuf,
    /// Where the tool sees the directory: an absolute, normalized guest path
    /// (no `.` or `..` components, no empty components, no trailing slash
    /// except for `/` itself). Unique among the grants of one tool.
    pub guest: String,
    /// Read-only or read-write.
    pub mode: FsMode,
}

/// One entry of the network allow-list: a host and a port (or any port).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NetRule {
    /// A DNS name or an IP address, lowercase; IPv6 without brackets, in the
    /// canonical compressed form (`::1`). Never contains wildcards.
    pub host: String,
    /// The allowed port; `None` (written `*`) allows every port.
    pub port: Option<u16>,
}

impl NetRule {
    /// Whether a connection to `host:port` is allowed by this rule.
    ///
    /// Hosts compare exactly but case-insensitively; there are no wildcards.
    /// `host` may be an IPv6 literal with or without brackets, and IP
    /// addresses compare as addresses (`0:0::1` matches `::1`). One trailing
    /// dot of a fully-qualified name is ignored (`example.com.`).
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if let (Ok(want), Ok(got)) = (self.host.parse::<IpAddr>(), host.parse::<IpAddr>()) {
            return want == got;
        }
        let host = host.strip_suffix('.').unwrap_or(host);
        !host.is_empty() && self.host.eq_ignore_ascii_case(host)
    }
}

impl fmt::Display for NetRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            f.write_str(&self.host)?;
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => f.write_str(":*"),
        }
    }
}

/// Resource bounds for one tool call. Every value is greater than zero.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Wasm fuel units per call (see [`DEFAULT_FUEL`]).
    pub fuel: u64,
    /// Wall-clock deadline per call, in milliseconds (see [`DEFAULT_TIMEOUT_MS`]).
    pub timeout_ms: u64,
    /// Maximum linear memory per instance, in bytes (see [`DEFAULT_MEMORY_BYTES`]).
    pub memory_bytes: u64,
    /// Cap on captured stdout, and separately on stderr, in bytes
    /// (see [`DEFAULT_MAX_STDOUT_BYTES`]).
    pub max_stdout_bytes: u64,
    /// Cap on the result the model reads, in bytes (see [`DEFAULT_MAX_RESULT_BYTES`]).
    pub max_result_bytes: u64,
    /// Optional approximate token cap on the result; the tighter of this and
    /// `max_result_bytes` wins (see [`Limits::result_byte_budget`]).
    pub max_result_tokens: Option<u64>,
    /// Cap on the tool's value, in bytes of JSON (see [`DEFAULT_MAX_VALUE_BYTES`]).
    pub max_value_bytes: u64,
    /// Cap on one HTTP response body, in bytes
    /// (see [`DEFAULT_MAX_HTTP_RESPONSE_BYTES`]).
    pub max_http_response_bytes: u64,
    /// Deadline for one outgoing HTTP request, in milliseconds
    /// (see [`DEFAULT_HTTP_TIMEOUT_MS`]).
    pub http_timeout_ms: u64,
    /// Cap on bytes written into read-write grants per call
    /// (see [`DEFAULT_MAX_WRITE_BYTES`]).
    pub max_write_bytes: u64,
    /// Cap on files, directories and links created in read-write grants per
    /// call (see [`DEFAULT_MAX_FILES_CREATED`]).
    pub max_files_created: u64,
    /// Cap on what a tool reports while it runs, in bytes per call
    /// (see [`DEFAULT_MAX_CONTEXT_BYTES`]).
    pub max_context_bytes: u64,
    /// Progress and log messages a tool may report per second
    /// (see [`DEFAULT_MAX_CONTEXT_PER_SECOND`]).
    pub max_context_per_second: u64,
    /// Tool calls one script may make, for a code runner such as
    /// `run_code` (see [`DEFAULT_MAX_TOOL_CALLS`]). Serialized only when it
    /// is not the default: a policy's digest (cassettes record it) stays
    /// what it was before the key existed.
    #[serde(
        skip_serializing_if = "is_default_tool_calls",
        default = "default_tool_calls"
    )]
    pub max_tool_calls: u64,
    /// Tool calls of one script that run at once, for a code runner (see
    /// [`DEFAULT_MAX_PARALLEL_CALLS`]); serialized only when it is not the
    /// default, as [`Limits::max_tool_calls`] is.
    #[serde(
        skip_serializing_if = "is_default_parallel_calls",
        default = "default_parallel_calls"
    )]
    pub max_parallel_calls: u64,
}

impl Default for Limits {
    /// The `DEFAULT_*` constants of this crate.
    fn default() -> Self {
        Limits {
            fuel: DEFAULT_FUEL,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            max_stdout_bytes: DEFAULT_MAX_STDOUT_BYTES,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            max_result_tokens: DEFAULT_MAX_RESULT_TOKENS,
            max_value_bytes: DEFAULT_MAX_VALUE_BYTES,
            max_http_response_bytes: DEFAULT_MAX_HTTP_RESPONSE_BYTES,
            http_timeout_ms: DEFAULT_HTTP_TIMEOUT_MS,
            max_write_bytes: DEFAULT_MAX_WRITE_BYTES,
            max_files_created: DEFAULT_MAX_FILES_CREATED,
            max_context_bytes: DEFAULT_MAX_CONTEXT_BYTES,
            max_context_per_second: DEFAULT_MAX_CONTEXT_PER_SECOND,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_parallel_calls: DEFAULT_MAX_PARALLEL_CALLS,
        }
    }
}

fn is_default_parallel_calls(n: &u64) -> bool {
    *n == DEFAULT_MAX_PARALLEL_CALLS
}

fn default_parallel_calls() -> u64 {
    DEFAULT_MAX_PARALLEL_CALLS
}

fn is_default_tool_calls(n: &u64) -> bool {
    *n == DEFAULT_MAX_TOOL_CALLS
}

fn default_tool_calls() -> u64 {
    DEFAULT_MAX_TOOL_CALLS
}

impl Limits {
    /// The number of result bytes the model may read: `max_result_bytes`, or
    /// `max_result_tokens × APPROX_BYTES_PER_TOKEN` when that is smaller.
    pub fn result_byte_budget(&self) -> u64 {
        match self.max_result_tokens {
            Some(tokens) => self
                .max_result_bytes
                .min(tokens.saturating_mul(APPROX_BYTES_PER_TOKEN)),
            None => self.max_result_bytes,
        }
    }
}

/// What a tool may reach outside its own memory. Empty = nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sandbox {
    /// Directories made visible to the tool.
    pub fs: Vec<FsGrant>,
    /// Names of host environment variables passed through when set on the host.
    pub env_allow: Vec<String>,
    /// Environment variables set to fixed values (these win over `env_allow`).
    pub env_set: BTreeMap<String, String>,
    /// Network allow-list; empty means no network at all.
    pub network: Vec<NetRule>,
    /// Whether the component may call the host's other tools (contract
    /// 0.4.0's `tools` import, which only a code runner imports). Each call
    /// it makes is a whole pipeline call of its own. (Serialized only when
    /// set, as [`Limits::max_tool_calls`] is.)
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub call_tools: bool,
}

impl Sandbox {
    /// Whether some rule allows a connection to `host:port`.
    pub fn allows_network(&self, host: &str, port: u16) -> bool {
        self.network.iter().any(|rule| rule.matches(host, port))
    }

    /// Whether any network access is granted (the allow-list is not empty).
    pub fn grants_network(&self) -> bool {
        !self.network.is_empty()
    }
}

/// Where a tool's `render` runs, if at all.
///
/// The default, [`RenderMode::Isolated`], makes render pure by construction.
/// [`RenderMode::Host`] is pure too, and costs nothing: the tool's render is
/// never called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RenderMode {
    /// In a fresh sandbox that grants nothing (only the limits apply):
    /// render sees the arguments and the value, nothing else.
    #[default]
    Isolated,
    /// In the instance that ran `execute`, right after it: one
    /// instantiation per call instead of two. Gives up: render can see state
    /// that `execute` left in the instance, and runs with the tool's grants
    /// and what is left of its budget. For trusted, stateless tools (the
    /// built-in tools' default policies use it).
    SameInstance,
    /// Nowhere: the tool's `render` is never called, and the host renders
    /// the value (as when render returns `none`). One instantiation per
    /// call, and what the model reads comes from the validated value alone.
    /// Gives up: the tool's own rendering. For tools that leave rendering
    /// to the host anyway, or whose rendering is not wanted.
    Host,
}

/// Who may call a tool: the model directly, a script through `run_code`
/// (code mode), or both.
///
/// The default is [`Callers::Both`]: a toolbox in code mode lets scripts
/// call what the model could. A tool that should only ever run inside
/// scripts (its results filtered before the model sees them) says `code`;
/// one whose every call a person should see as a call of its own says
/// `model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Callers {
    /// Only the model, with a call of its own.
    Model,
    /// Only scripts (`run_code`).
    Code,
    /// Both.
    #[default]
    Both,
}

impl Callers {
    /// The word used in policy files.
    pub fn as_str(self) -> &'static str {
        match self {
            Callers::Model => "model",
            Callers::Code => "code",
            Callers::Both => "both",
        }
    }

    /// Whether both may call it (the default).
    pub fn is_both(&self) -> bool {
        *self == Callers::Both
    }

    /// Whether the model may call the tool directly.
    pub fn model(self) -> bool {
        self != Callers::Code
    }

    /// Whether a script may call the tool.
    pub fn code(self) -> bool {
        self != Callers::Model
    }
}

impl fmt::Display for Callers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a toolbox offers its tools to the model (the toolbox file's `mode`,
/// `toolhost serve --mode`).
///
/// - `native`: each tool the model may call is advertised with its own
///   schema (the default);
/// - `code`: the reserved `run_code` tool is advertised instead, with the
///   typed API of every tool a script may call in its description; tools
///   only the model may call are still advertised themselves;
/// - `both`: `run_code` and every tool the model may call.
///
/// The mode decides what is advertised; a tool's [`Callers`] decide who
/// may call it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every tool with its own schema.
    #[default]
    Native,
    /// `run_code` instead of the schemas of the tools scripts may call.
    Code,
    /// `run_code` and every tool's own schema.
    Both,
}

impl Mode {
    /// The word used in toolbox files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Native => "native",
            Mode::Code => "code",
            Mode::Both => "both",
        }
    }

    /// Whether `run_code` is served.
    pub fn runs_code(self) -> bool {
        self != Mode::Native
    }

    /// Whether a tool with these callers is advertised to the model as a
    /// tool of its own.
    pub fn lists(self, callers: Callers) -> bool {
        match self {
            Mode::Native | Mode::Both => callers.model(),
            // Scripts reach it through run_code; only what a script may
            // not call is listed itself.
            Mode::Code => callers == Callers::Model,
        }
    }

    /// Whether the model can use a tool with these callers at all: by
    /// calling it, or through a `run_code` script when the mode runs them.
    pub fn reaches(self, callers: Callers) -> bool {
        callers.model() || (self.runs_code() && callers.code())
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "native" => Ok(Mode::Native),
            "code" => Ok(Mode::Code),
            "both" => Ok(Mode::Both),
            other => Err(format!(
                "unknown mode `{other}`; expected `native`, `code` or `both`"
            )),
        }
    }
}

/// The language of code mode's scripts (the toolbox file's `language`,
/// `--language`): one per toolbox, so `run_code`'s description declares
/// the tools once, in the language the model writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// JavaScript, run by QuickJS (the built-in `code`).
    #[default]
    Javascript,
    /// Python, run by Monty (the built-in `code_python`).
    Python,
}

impl Language {
    /// The word used in toolbox files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Javascript => "javascript",
            Language::Python => "python",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Language {
    type Err = String;
    fn from_str(s: &str) -> Result<Language, String> {
        match s {
            "javascript" => Ok(Language::Javascript),
            "python" => Ok(Language::Python),
            other => Err(format!(
                "unknown language `{other}`; expected `javascript` or `python`"
            )),
        }
    }
}

/// What an `ask` decision asks the user to approve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApproveMode {
    /// The call's arguments, before it runs (for tools whose arguments say
    /// everything they will do, such as `edit`).
    #[default]
    Arguments,
    /// What the call actually did: it runs staged first, then the user
    /// approves its effect set (the files it would change, with the diff);
    /// accepting commits exactly those effects, anything else discards them.
    Effects,
}

/// When a call of the tool becomes an MCP task (the `task` key), for a
/// client that declared the tasks extension: the client then polls for
/// the result instead of holding its request open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskMode {
    /// `"auto"`: when it runs longer than the toolbox's `[tasks] after_ms`,
    /// or stops to ask its user.
    #[default]
    Auto,
    /// `"always"`: at once (a script, whose length nobody knows ahead).
    Always,
    /// `"never"`: the request stays open until the call ends, as for a
    /// client without the extension.
    Never,
}

impl TaskMode {
    fn is_auto(&self) -> bool {
        *self == TaskMode::Auto
    }
}

/// Where a component's calls run (the component-level key `isolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// `"process"`: in worker processes that wall themselves in (Landlock,
    /// seccomp) before any guest code runs, away from the serving
    /// process's secrets. The default for every component but the
    /// built-ins.
    Process,
    /// `"in-process"`: in the serving process, behind wasmtime alone. The
    /// built-ins' default.
    InProcess,
}

impl Isolation {
    /// The policy file's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::Process => "process",
            Isolation::InProcess => "in-process",
        }
    }
}

/// What a process-isolated component does on a kernel that cannot build
/// a worker's walls (the component-level key `walls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Walls {
    /// `"required"`: it does not run (the default for components from a
    /// registry).
    Required,
    /// `"best-effort"`: it runs behind the walls the kernel has, and the
    /// host says loudly which are missing (the default for local files).
    BestEffort,
}

/// The fully resolved policy for one tool: what the runtime enforces for a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPolicy {
    /// Whether the call runs, is asked about, or is refused.
    pub decision: Decision,
    /// Where `render` runs.
    pub render: RenderMode,
    /// What `ask` approves: the arguments, or the staged effects.
    pub approve: ApproveMode,
    /// When a call becomes an MCP task. (Serialized only when not
    /// [`TaskMode::Auto`], so a policy's digest stays what it was before
    /// the key existed.)
    #[serde(skip_serializing_if = "TaskMode::is_auto", default)]
    pub task: TaskMode,
    /// Who may call it: the model, scripts, or both. (Serialized only when
    /// not both, as [`Limits::max_tool_calls`] is.)
    #[serde(skip_serializing_if = "Callers::is_both", default)]
    pub callers: Callers,
    /// Resource bounds for the call.
    pub limits: Limits,
    /// Directories, environment and network the tool may use.
    pub sandbox: Sandbox,
}

/// A tool's declaration as its policy states it: what a component that
/// knows nothing of toolhost (a plain component) cannot say about its
/// tools itself, and what a policy may add to any component's. Paths and
/// URLs are added to what the component declares (more checks, never
/// fewer); a stated annotation replaces the component's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolDeclaration {
    /// Arguments that are file-system paths, and how the tool uses them,
    /// each with where it is written.
    pub paths: Vec<(toolhost_contract::PathParam, Place)>,
    /// Arguments that are URLs the tool requests, as JSON Pointers, each
    /// with where it is written.
    pub urls: Vec<(String, Place)>,
    /// Behaviour hints stated (`None`: as the component says).
    pub read_only: Option<bool>,
    /// See [`ToolDeclaration::read_only`].
    pub destructive: Option<bool>,
    /// See [`ToolDeclaration::read_only`].
    pub idempotent: Option<bool>,
    /// See [`ToolDeclaration::read_only`].
    pub open_world: Option<bool>,
}

impl ToolDeclaration {
    /// Whether it states anything.
    pub fn is_empty(&self) -> bool {
        self == &ToolDeclaration::default()
    }

    /// `annotations` with the stated hints in place.
    pub fn annotate(&self, annotations: &mut toolhost_contract::Annotations) {
        for (stated, slot) in [
            (self.read_only, &mut annotations.read_only),
            (self.destructive, &mut annotations.destructive),
            (self.idempotent, &mut annotations.idempotent),
            (self.open_world, &mut annotations.open_world),
        ] {
            if let Some(v) = stated {
                *slot = v;
            }
        }
    }
}

/// Where something is written in a policy, for an error found only once
/// the component is loaded (a declared path that names no argument).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// The policy's origin (its file name).
    pub origin: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
}

impl Place {
    /// An error about what is written here.
    pub fn error(&self, message: impl Into<String>) -> crate::PolicyError {
        crate::PolicyError {
            line: self.line,
            column: self.column,
            ..crate::PolicyError::new(self.origin.clone(), message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(host: &str, port: Option<u16>) -> NetRule {
        NetRule {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn a_mode_reaches_script_only_tools_only_when_it_runs_scripts() {
        assert!(!Mode::Native.reaches(Callers::Code));
        assert!(Mode::Code.reaches(Callers::Code) && Mode::Both.reaches(Callers::Code));
        for mode in [Mode::Native, Mode::Code, Mode::Both] {
            assert!(mode.reaches(Callers::Model) && mode.reaches(Callers::Both));
        }
    }

    #[test]
    fn net_rule_port_wildcard() {
        let any = rule("127.0.0.1", None);
        assert!(any.matches("127.0.0.1", 1));
        assert!(any.matches("127.0.0.1", 65535));
        assert!(!any.matches("127.0.0.2", 80));

        let https = rule("example.com", Some(443));
        assert!(https.matches("example.com", 443));
        assert!(!https.matches("example.com", 80));
    }

    #[test]
    fn net_rule_host_is_exact_and_case_insensitive() {
        let r = rule("example.com", Some(443));
        assert!(r.matches("EXAMPLE.com", 443));
        assert!(r.matches("example.com.", 443));
        assert!(!r.matches("www.example.com", 443));
        assert!(!r.matches("example.com.evil.net", 443));
        assert!(!r.matches("xexample.com", 443));
        assert!(!r.matches("", 443));
        assert!(!r.matches(".", 443));
    }

    #[test]
    fn net_rule_ipv6() {
        let r = rule("::1", Some(80));
        assert!(r.matches("::1", 80));
        assert!(r.matches("[::1]", 80));
        assert!(r.matches("0:0:0:0:0:0:0:1", 80));
        assert!(!r.matches("::2", 80));
        assert!(!r.matches("::1", 81));
        assert!(!r.matches("127.0.0.1", 80));

        let r = rule("2001:db8::1", None);
        assert!(r.matches("[2001:DB8::1]", 8080));
        assert_eq!(r.to_string(), "[2001:db8::1]:*");
    }

    #[test]
    fn result_byte_budget_takes_the_tighter_bound() {
        let mut limits = Limits::default();
        assert_eq!(limits.result_byte_budget(), DEFAULT_MAX_RESULT_BYTES);
        limits.max_result_bytes = 32_768;
        limits.max_result_tokens = Some(8_000);
        assert_eq!(limits.result_byte_budget(), 32_000);
        limits.max_result_tokens = Some(10_000);
        assert_eq!(limits.result_byte_budget(), 32_768);
        limits.max_result_tokens = Some(u64::MAX);
        assert_eq!(limits.result_byte_budget(), 32_768);
    }

    #[test]
    fn sandbox_network() {
        let mut sandbox = Sandbox::default();
        assert!(!sandbox.grants_network());
        assert!(!sandbox.allows_network("example.com", 443));
        sandbox.network.push(rule("example.com", Some(443)));
        assert!(sandbox.grants_network());
        assert!(sandbox.allows_network("example.com", 443));
        assert!(!sandbox.allows_network("example.org", 443));
    }
}
