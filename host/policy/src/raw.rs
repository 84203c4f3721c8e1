//! The file format as deserialized (with spans), and its validation into
//! resolved [`ToolPolicy`] values.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::error::{Ctx, PolicyError};
use crate::types::{
    ApproveMode, Callers, Decision, FsGrant, FsMode, Isolation, Limits, NetRule, Place, RenderMode,
    TaskMode, ToolDeclaration, ToolPolicy, Walls,
};
use toolhost_contract::{DescriptorLimits, PathAccess, PathParam};

/// The only policy format version this crate understands.
pub(crate) const SUPPORTED_VERSION: i64 = 1;

/// First pass over a file: only `version`, everything else ignored, so that a
/// file of another version is reported as such rather than as unknown keys.
#[derive(Deserialize)]
struct VersionProbe {
    version: Option<Spanned<toml::Value>>,
}

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPolicy {
    /// In a file, checked first by [`VersionProbe`] (listed here so it is a
    /// known key); in an inline policy, optional and checked by
    /// [`resolve_inline`].
    pub version: Option<Spanned<toml::Value>>,
    pub decision: Option<Spanned<Decision>>,
    pub render: Option<Spanned<RenderMode>>,
    pub approve: Option<Spanned<ApproveMode>>,
    pub task: Option<Spanned<TaskMode>>,
    pub callers: Option<Spanned<Callers>>,
    pub call_tools: Option<Spanned<bool>>,
    pub limits: Option<RawLimits>,
    pub fs: Option<Vec<RawFsGrant>>,
    pub env: Option<RawEnv>,
    pub network: Option<RawNetwork>,
    /// Component level only: what the component may declare.
    pub descriptors: Option<RawDescriptors>,
    /// Component level only: where its calls run.
    pub isolation: Option<Spanned<Isolation>>,
    /// Component level only: without a kernel's second wall, refuse or run.
    pub walls: Option<Spanned<Walls>>,
    #[serde(default)]
    pub tools: BTreeMap<Spanned<String>, RawTool>,
}

/// `[descriptors]`: bounds on what the component declares; every key
/// optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDescriptors {
    pub max_tools: Option<Spanned<u64>>,
    pub max_description_bytes: Option<Spanned<u64>>,
    pub max_schema_bytes: Option<Spanned<u64>>,
    pub max_total_bytes: Option<Spanned<u64>>,
}

/// `[tools.NAME]`: every part optional; present parts override the component.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTool {
    pub decision: Option<Spanned<Decision>>,
    pub render: Option<Spanned<RenderMode>>,
    pub approve: Option<Spanned<ApproveMode>>,
    pub task: Option<Spanned<TaskMode>>,
    pub callers: Option<Spanned<Callers>>,
    pub limits: Option<RawLimits>,
    pub fs: Option<Vec<RawFsGrant>>,
    pub env: Option<RawEnv>,
    pub network: Option<RawNetwork>,
    /// Path arguments the component does not declare itself.
    pub paths: Option<Vec<RawPath>>,
    /// URL arguments the component does not declare itself.
    pub urls: Option<Vec<Spanned<String>>>,
    /// Behaviour hints.
    pub annotations: Option<RawAnnotations>,
}

/// One entry of `paths`: `{ pointer = "/path", access = "read" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPath {
    pub pointer: Spanned<String>,
    pub access: Spanned<PathAccess>,
}

/// `annotations`: every hint optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAnnotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

/// `[limits]`: every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    pub fuel: Option<Spanned<u64>>,
    pub timeout_ms: Option<Spanned<u64>>,
    pub memory_bytes: Option<Spanned<u64>>,
    pub max_stdout_bytes: Option<Spanned<u64>>,
    pub max_result_bytes: Option<Spanned<u64>>,
    pub max_result_tokens: Option<Spanned<u64>>,
    pub max_value_bytes: Option<Spanned<u64>>,
    pub max_http_response_bytes: Option<Spanned<u64>>,
    pub http_timeout_ms: Option<Spanned<u64>>,
    pub max_write_bytes: Option<Spanned<u64>>,
    pub max_files_created: Option<Spanned<u64>>,
    pub max_context_bytes: Option<Spanned<u64>>,
    pub max_context_per_second: Option<Spanned<u64>>,
    pub max_tool_calls: Option<Spanned<u64>>,
    pub max_parallel_calls: Option<Spanned<u64>>,
}

/// One `[[fs]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFsGrant {
    pub host: Spanned<PathBuf>,
    pub guest: Spanned<String>,
    /// Absent = read-only, the least privilege.
    pub mode: Option<Spanned<FsMode>>,
}

/// `[env]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEnv {
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    #[serde(default)]
    pub set: BTreeMap<Spanned<String>, Spanned<String>>,
}

/// `[network]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNetwork {
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
}

/// The parts shared by the component level and a tool override.
struct Section {
    decision: Option<Spanned<Decision>>,
    render: Option<Spanned<RenderMode>>,
    approve: Option<Spanned<ApproveMode>>,
    task: Option<Spanned<TaskMode>>,
    callers: Option<Spanned<Callers>>,
    limits: Option<RawLimits>,
    fs: Option<Vec<RawFsGrant>>,
    env: Option<RawEnv>,
    network: Option<RawNetwork>,
}

/// The validated content of a policy: the component level and each override,
/// each fully resolved.
pub(crate) struct Resolved {
    pub component: ToolPolicy,
    pub tools: BTreeMap<String, ToolPolicy>,
    pub declarations: BTreeMap<String, ToolDeclaration>,
    pub descriptors: DescriptorLimits,
    pub isolation: Option<Isolation>,
    pub walls: Option<Walls>,
}

/// Parses and validates a policy file.
pub(crate) fn parse(text: &str, origin: &str, base_dir: &Path) -> Result<Resolved, PolicyError> {
    let ctx = Ctx {
        origin,
        text: Some(text),
    };
    let probe: VersionProbe = toml::from_str(text).map_err(|e| ctx.toml_error(&e))?;
    if probe.version.is_none() {
        // The probe skips other values unchecked: a syntax error (an
        // integer out of range, say) comes first, with its line.
        toml::from_str::<toml::Table>(text).map_err(|e| ctx.toml_error(&e))?;
    }
    check_version(&ctx, probe.version)?;
    let raw: RawPolicy = toml::from_str(text).map_err(|e| ctx.toml_error(&e))?;
    resolve(&ctx, raw, base_dir)
}

/// Validates a policy table embedded in another TOML file, `text`: its
/// `version` may be left out, and errors point into `text`.
pub(crate) fn resolve_inline(
    mut raw: RawPolicy,
    origin: &str,
    text: &str,
    base_dir: &Path,
) -> Result<Resolved, PolicyError> {
    let ctx = Ctx {
        origin,
        text: Some(text),
    };
    if let Some(version) = raw.version.take() {
        check_version(&ctx, Some(version))?;
    }
    resolve(&ctx, raw, base_dir)
}

fn check_version(ctx: &Ctx<'_>, version: Option<Spanned<toml::Value>>) -> Result<(), PolicyError> {
    let Some(version) = version else {
        return Err(ctx.plain(format!(
            "missing required key `version`; add `version = {SUPPORTED_VERSION}` at the top of the file"
        )));
    };
    match version.get_ref() {
        toml::Value::Integer(v) if *v == SUPPORTED_VERSION => Ok(()),
        toml::Value::Integer(v) => Err(ctx.at(
            version.span(),
            format!("unsupported policy version {v}, expected {SUPPORTED_VERSION}"),
        )),
        other => Err(ctx.at(
            version.span(),
            format!(
                "invalid type: {} for `version`, expected the integer {SUPPORTED_VERSION}",
                other.type_str()
            ),
        )),
    }
}

/// Validates a deserialized (or builder-made) policy and resolves every tool.
pub(crate) fn resolve(
    ctx: &Ctx<'_>,
    raw: RawPolicy,
    base_dir: &Path,
) -> Result<Resolved, PolicyError> {
    let top = Section {
        decision: raw.decision,
        render: raw.render,
        approve: raw.approve,
        task: raw.task,
        callers: raw.callers,
        limits: raw.limits,
        fs: raw.fs,
        env: raw.env,
        network: raw.network,
    };
    let mut base = ToolPolicy::default();
    base.sandbox.call_tools = raw.call_tools.is_some_and(Spanned::into_inner);
    let component = resolve_section(ctx, "", top, &base, base_dir)?;
    let descriptors = resolve_descriptors(ctx, raw.descriptors)?;
    let mut tools = BTreeMap::new();
    let mut declarations = BTreeMap::new();
    for (name, mut tool) in raw.tools {
        check_tool_name(ctx, &name)?;
        let declared = resolve_declaration(ctx, name.get_ref(), &mut tool)?;
        if !declared.is_empty() {
            declarations.insert(name.get_ref().clone(), declared);
        }
        let section = Section {
            decision: tool.decision,
            render: tool.render,
            approve: tool.approve,
            task: tool.task,
            callers: tool.callers,
            limits: tool.limits,
            fs: tool.fs,
            env: tool.env,
            network: tool.network,
        };
        let prefix = format!("tools.{}.", name.get_ref());
        let resolved = resolve_section(ctx, &prefix, section, &component, base_dir)?;
        tools.insert(name.into_inner(), resolved);
    }
    Ok(Resolved {
        component,
        tools,
        declarations,
        descriptors,
        isolation: raw.isolation.map(Spanned::into_inner),
        walls: raw.walls.map(Spanned::into_inner),
    })
}

/// What `[tools.NAME]` states about the tool's declaration (taken out
/// of `tool`): pointers well formed, none given twice.
fn resolve_declaration(
    ctx: &Ctx<'_>,
    name: &str,
    tool: &mut RawTool,
) -> Result<ToolDeclaration, PolicyError> {
    let place = |span: std::ops::Range<usize>| {
        let (line, column) = match ctx.text {
            Some(text) => {
                let (l, c) = crate::error::line_column(text, span.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        Place {
            origin: ctx.origin.to_owned(),
            line,
            column,
        }
    };
    let pointer = |p: &Spanned<String>, key: &str| -> Result<String, PolicyError> {
        let text = p.get_ref();
        if !text.starts_with('/') || text.len() < 2 {
            return Err(ctx.at(
                p.span(),
                format!(
                    "`tools.{name}.{key}`: `{text}` is not a JSON Pointer to an argument \
                     (write `/path` for the argument `path`)"
                ),
            ));
        }
        Ok(text.clone())
    };
    let mut out = ToolDeclaration::default();
    for p in tool.paths.take().unwrap_or_default() {
        let text = pointer(&p.pointer, "paths")?;
        if out.paths.iter().any(|(q, _)| q.pointer == text) {
            return Err(ctx.at(
                p.pointer.span(),
                format!("`tools.{name}.paths`: `{text}` is declared twice"),
            ));
        }
        out.paths.push((
            PathParam {
                pointer: text,
                access: p.access.into_inner(),
            },
            place(p.pointer.span()),
        ));
    }
    for u in tool.urls.take().unwrap_or_default() {
        let text = pointer(&u, "urls")?;
        if out.urls.iter().any(|(q, _)| *q == text) {
            return Err(ctx.at(
                u.span(),
                format!("`tools.{name}.urls`: `{text}` is declared twice"),
            ));
        }
        out.urls.push((text, place(u.span())));
    }
    if let Some(a) = tool.annotations.take() {
        out.read_only = a.read_only;
        out.destructive = a.destructive;
        out.idempotent = a.idempotent;
        out.open_world = a.open_world;
    }
    Ok(out)
}

/// `[descriptors]` over the defaults; every bound greater than zero.
fn resolve_descriptors(
    ctx: &Ctx<'_>,
    raw: Option<RawDescriptors>,
) -> Result<DescriptorLimits, PolicyError> {
    let mut out = DescriptorLimits::default();
    let Some(raw) = raw else {
        return Ok(out);
    };
    for (name, value, slot) in [
        ("max_tools", raw.max_tools, &mut out.max_tools),
        (
            "max_description_bytes",
            raw.max_description_bytes,
            &mut out.max_description_bytes,
        ),
        (
            "max_schema_bytes",
            raw.max_schema_bytes,
            &mut out.max_schema_bytes,
        ),
        (
            "max_total_bytes",
            raw.max_total_bytes,
            &mut out.max_total_bytes,
        ),
    ] {
        if let Some(v) = value {
            if *v.get_ref() == 0 {
                return Err(ctx.at(
                    v.span(),
                    format!("`descriptors.{name}` must be greater than 0"),
                ));
            }
            *slot = v.into_inner();
        }
    }
    Ok(out)
}

/// Applies `section` over `parent`: decision and each limit replace the
/// parent's when present; `fs`, `env` and `network` replace it whole.
fn resolve_section(
    ctx: &Ctx<'_>,
    prefix: &str,
    section: Section,
    parent: &ToolPolicy,
    base_dir: &Path,
) -> Result<ToolPolicy, PolicyError> {
    let mut out = parent.clone();
    if let Some(decision) = section.decision {
        out.decision = decision.into_inner();
    }
    if let Some(render) = section.render {
        out.render = render.into_inner();
    }
    if let Some(approve) = section.approve {
        out.approve = approve.into_inner();
    }
    if let Some(task) = section.task {
        out.task = task.into_inner();
    }
    if let Some(callers) = section.callers {
        out.callers = callers.into_inner();
    }
    if let Some(limits) = section.limits {
        merge_limits(ctx, prefix, limits, &mut out.limits)?;
    }
    if let Some(fs) = section.fs {
        out.sandbox.fs = resolve_fs(ctx, prefix, fs, base_dir)?;
    }
    if let Some(env) = section.env {
        let (allow, set) = resolve_env(ctx, env)?;
        out.sandbox.env_allow = allow;
        out.sandbox.env_set = set;
    }
    if let Some(network) = section.network {
        out.sandbox.network = network
            .allow
            .iter()
            .map(|entry| parse_net_rule(entry.get_ref()).map_err(|m| ctx.at(entry.span(), m)))
            .collect::<Result<_, _>>()?;
    }
    Ok(out)
}

fn merge_limits(
    ctx: &Ctx<'_>,
    prefix: &str,
    raw: RawLimits,
    out: &mut Limits,
) -> Result<(), PolicyError> {
    let mut present: Vec<(&str, &Spanned<u64>)> = [
        ("fuel", &raw.fuel),
        ("timeout_ms", &raw.timeout_ms),
        ("memory_bytes", &raw.memory_bytes),
        ("max_stdout_bytes", &raw.max_stdout_bytes),
        ("max_result_bytes", &raw.max_result_bytes),
        ("max_result_tokens", &raw.max_result_tokens),
        ("max_value_bytes", &raw.max_value_bytes),
        ("max_http_response_bytes", &raw.max_http_response_bytes),
        ("http_timeout_ms", &raw.http_timeout_ms),
        ("max_write_bytes", &raw.max_write_bytes),
        ("max_files_created", &raw.max_files_created),
        ("max_context_bytes", &raw.max_context_bytes),
        ("max_context_per_second", &raw.max_context_per_second),
        ("max_tool_calls", &raw.max_tool_calls),
        ("max_parallel_calls", &raw.max_parallel_calls),
    ]
    .into_iter()
    .filter_map(|(name, value)| value.as_ref().map(|v| (name, v)))
    .collect();
    // Report the first zero in file order.
    present.sort_by_key(|(_, v)| v.span().start);
    if let Some((name, value)) = present.iter().find(|(_, v)| *v.get_ref() == 0) {
        return Err(ctx.at(
            value.span(),
            format!("`{prefix}limits.{name}` must be greater than 0"),
        ));
    }
    let take = |v: Option<Spanned<u64>>| v.map(Spanned::into_inner);
    out.fuel = take(raw.fuel).unwrap_or(out.fuel);
    out.timeout_ms = take(raw.timeout_ms).unwrap_or(out.timeout_ms);
    out.memory_bytes = take(raw.memory_bytes).unwrap_or(out.memory_bytes);
    out.max_stdout_bytes = take(raw.max_stdout_bytes).unwrap_or(out.max_stdout_bytes);
    out.max_result_bytes = take(raw.max_result_bytes).unwrap_or(out.max_result_bytes);
    out.max_result_tokens = take(raw.max_result_tokens).or(out.max_result_tokens);
    out.max_value_bytes = take(raw.max_value_bytes).unwrap_or(out.max_value_bytes);
    out.max_http_response_bytes =
        take(raw.max_http_response_bytes).unwrap_or(out.max_http_response_bytes);
    out.http_timeout_ms = take(raw.http_timeout_ms).unwrap_or(out.http_timeout_ms);
    out.max_write_bytes = take(raw.max_write_bytes).unwrap_or(out.max_write_bytes);
    out.max_files_created = take(raw.max_files_created).unwrap_or(out.max_files_created);
    out.max_context_bytes = take(raw.max_context_bytes).unwrap_or(out.max_context_bytes);
    out.max_context_per_second =
        take(raw.max_context_per_second).unwrap_or(out.max_context_per_second);
    out.max_tool_calls = take(raw.max_tool_calls).unwrap_or(out.max_tool_calls);
    out.max_parallel_calls = take(raw.max_parallel_calls).unwrap_or(out.max_parallel_calls);
    Ok(())
}

fn resolve_fs(
    ctx: &Ctx<'_>,
    prefix: &str,
    grants: Vec<RawFsGrant>,
    base_dir: &Path,
) -> Result<Vec<FsGrant>, PolicyError> {
    let mut out: Vec<FsGrant> = Vec::with_capacity(grants.len());
    for grant in grants {
        let host_path = grant.host.get_ref();
        if host_path.as_os_str().is_empty() {
            return Err(ctx.at(
                grant.host.span(),
                "empty host path; use \".\" for the base directory",
            ));
        }
        if host_path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(ctx.at(grant.host.span(), "host path contains a NUL character"));
        }
        check_guest_path(grant.guest.get_ref()).map_err(|m| ctx.at(grant.guest.span(), m))?;
        let guest = grant.guest.get_ref();
        if out.iter().any(|g| g.guest == *guest) {
            return Err(ctx.at(
                grant.guest.span(),
                format!("guest path `{guest}` is granted more than once in `{prefix}fs`"),
            ));
        }
        // Lexical cleanup only (drops `.` components and doubled slashes);
        // `..` is kept as written, since resolving it is only correct on the
        // real file system, which the runtime does when it opens the directory.
        let host: PathBuf = base_dir.join(host_path).components().collect();
        out.push(FsGrant {
            host,
            guest: guest.clone(),
            mode: grant.mode.map_or(FsMode::ReadOnly, Spanned::into_inner),
        });
    }
    Ok(out)
}

/// Accepts only absolute, normalized guest paths: `/`, or `/a/b` with no
/// empty, `.` or `..` components.
pub(crate) fn check_guest_path(guest: &str) -> Result<(), String> {
    if !guest.starts_with('/') {
        return Err(format!(
            "guest path `{guest}` must be absolute (start with `/`)"
        ));
    }
    if guest.contains('\0') {
        return Err("guest path contains a NUL character".to_owned());
    }
    if guest == "/" {
        return Ok(());
    }
    if guest.ends_with('/') {
        return Err(format!(
            "guest path `{guest}` must not end with `/`; write `{}`",
            guest.trim_end_matches('/')
        ));
    }
    for component in guest[1..].split('/') {
        match component {
            "" => {
                return Err(format!(
                    "guest path `{guest}` must not contain empty components (`//`)"
                ));
            }
            "." => {
                return Err(format!(
                    "guest path `{guest}` must not contain `.` components"
                ));
            }
            ".." => {
                return Err(format!(
                    "guest path `{guest}` must not contain `..` components"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

fn resolve_env(
    ctx: &Ctx<'_>,
    env: RawEnv,
) -> Result<(Vec<String>, BTreeMap<String, String>), PolicyError> {
    let mut allow = Vec::with_capacity(env.allow.len());
    for name in env.allow {
        check_env_name(name.get_ref()).map_err(|m| ctx.at(name.span(), m))?;
        if !allow.contains(name.get_ref()) {
            allow.push(name.into_inner());
        }
    }
    let mut set = BTreeMap::new();
    for (name, value) in env.set {
        check_env_name(name.get_ref()).map_err(|m| ctx.at(name.span(), m))?;
        if value.get_ref().contains('\0') {
            return Err(ctx.at(
                value.span(),
                format!(
                    "value of environment variable `{}` contains a NUL character",
                    name.get_ref()
                ),
            ));
        }
        set.insert(name.into_inner(), value.into_inner());
    }
    Ok((allow, set))
}

fn check_env_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        Err("environment variable name must not be empty".to_owned())
    } else if name.contains('=') {
        Err(format!(
            "environment variable name `{name}` must not contain `=`"
        ))
    } else if name.contains('\0') {
        Err("environment variable name contains a NUL character".to_owned())
    } else {
        Ok(())
    }
}

/// Tool names as the model sees them: the contract's rule, `[a-z][a-z0-9_]*`
/// of at most 64 bytes.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    toolhost_contract::valid_name(name)
}

fn check_tool_name(ctx: &Ctx<'_>, name: &Spanned<String>) -> Result<(), PolicyError> {
    if is_valid_tool_name(name.get_ref()) {
        Ok(())
    } else {
        Err(ctx.at(
            name.span(),
            format!(
                "invalid tool name `{}`, expected lowercase letters, digits and `_`, starting with a letter",
                name.get_ref()
            ),
        ))
    }
}

/// Parses `host:port`, `host:*`, `[v6]:port` or `[v6]:*` into a rule.
pub(crate) fn parse_net_rule(entry: &str) -> Result<NetRule, String> {
    let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err(format!("invalid network entry `{entry}`: missing `]`"));
        };
        let Some(port) = after.strip_prefix(':') else {
            return Err(format!(
                "network entry `{entry}` has no port; write `{entry}:PORT` or `{entry}:*`"
            ));
        };
        (host, port)
    } else {
        let Some((host, port)) = entry.rsplit_once(':') else {
            return Err(format!(
                "network entry `{entry}` has no port; write `{entry}:PORT` or `{entry}:*`"
            ));
        };
        if host.contains(':') {
            return Err(format!(
                "IPv6 address in network entry `{entry}` must be in brackets, e.g. `[::1]:443`"
            ));
        }
        (host, port)
    };
    let port = parse_port(entry, port)?;
    if host.is_empty() {
        return Err(format!("network entry `{entry}` has an empty host"));
    }
    if host.contains('*') {
        return Err(format!(
            "wildcards are not allowed in hosts (`{entry}`); list each host explicitly"
        ));
    }
    let host = if entry.starts_with('[') {
        let addr: Ipv6Addr = host
            .parse()
            .map_err(|_| format!("invalid IPv6 address `{host}` in network entry `{entry}`"))?;
        addr.to_string()
    } else {
        check_host_name(entry, host)?;
        host.to_ascii_lowercase()
    };
    Ok(NetRule { host, port })
}

fn parse_port(entry: &str, port: &str) -> Result<Option<u16>, String> {
    if port == "*" {
        return Ok(None);
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 && port.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(p)),
        _ => Err(format!(
            "invalid port `{port}` in network entry `{entry}`, expected 1-65535 or `*`"
        )),
    }
}

/// A DNS name (letters, digits, `-`, `_`, dot-separated, no empty labels) or
/// an IPv4 address. Names whose last label is numeric must be IPv4 addresses,
/// so `300.1.1.1` is rejected rather than treated as a name.
fn check_host_name(entry: &str, host: &str) -> Result<(), String> {
    let invalid = || format!("invalid host `{host}` in network entry `{entry}`");
    if host.len() > 253 {
        return Err(invalid());
    }
    let labels_ok = host.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    if !labels_ok {
        return Err(invalid());
    }
    let last_is_numeric = host
        .rsplit('.')
        .next()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
    if last_is_numeric && host.parse::<Ipv4Addr>().is_err() {
        return Err(invalid());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_rules_parse() {
        let r = parse_net_rule("Example.COM:443").unwrap();
        assert_eq!(
            r,
            NetRule {
                host: "example.com".into(),
                port: Some(443)
            }
        );
        let r = parse_net_rule("127.0.0.1:*").unwrap();
        assert_eq!(r.port, None);
        let r = parse_net_rule("[0:0::1]:80").unwrap();
        assert_eq!(r.host, "::1");
        assert_eq!(r.port, Some(80));
        assert!(parse_net_rule("[::1]:*").unwrap().port.is_none());
    }

    #[test]
    fn net_rules_rejected() {
        for bad in [
            "example.com",
            "example.com:",
            "example.com:0",
            "example.com:65536",
            "example.com:+80",
            "example.com:http",
            ":443",
            "*.example.com:443",
            "*:443",
            "::1:80",
            "[::1]",
            "[::1:80",
            "[nope]:80",
            "ex ample.com:80",
            "a..b:80",
            ".example.com:80",
            "300.1.1.1:80",
        ] {
            assert!(parse_net_rule(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn guest_paths() {
        for ok in ["/", "/workspace", "/a/b_c/d.e", "/..a", "/a..b"] {
            assert!(check_guest_path(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "workspace",
            "./x",
            "/x/",
            "//",
            "/a//b",
            "/a/./b",
            "/a/..",
            "/..",
            "/.",
        ] {
            assert!(check_guest_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tool_names() {
        for ok in ["read", "a", "web_fetch2"] {
            assert!(is_valid_tool_name(ok), "{ok}");
        }
        for bad in ["", "Read", "2read", "_read", "read-file", "réad"] {
            assert!(!is_valid_tool_name(bad), "{bad}");
        }
        assert!(is_valid_tool_name(&"a".repeat(64)));
        assert!(
            !is_valid_tool_name(&"a".repeat(65)),
            "longer than any tool can be"
        );
    }
}
