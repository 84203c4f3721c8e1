//! Another host's policy as toolhost's: a wassette `policy.yaml` (the
//! format of microsoft/policy-mcp, `version: "1.0"` with `permissions`)
//! turned into a `policy.toml` that grants the same and nothing more,
//! with what cannot be said in toolhost's terms left out and named.
//!
//! | wassette | toolhost |
//! |---|---|
//! | `storage.allow` `fs://PATH` (`/**` for the tree) | `[[fs]]` `host = PATH`, `guest = /PATH`, `ro` (`rw` with `write`) |
//! | `network.allow` `host` (or a URL) | `[network] allow`: `host:*` (the URL's own port when it has one) |
//! | `environment.allow` `key` | `[env] allow` |
//! | `resources` `memory` (MB, or `512Mi`) | `[limits] memory_bytes` |
//! | `storage.deny`, `network.deny`, CIDR ranges, `*.` host wildcards, partial globs, `cpu`, `io`, `runtime`, `ipc` | left out, each named: toolhost denies what it does not grant, and bounds CPU by fuel and deadline |
//!
//! The decision is `allow` (wassette runs every call it can), or `ask`
//! when something is granted write access.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;

use crate::PolicyError;

/// A policy imported: its text, and what could not be mapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The `policy.toml` text (it parses with [`crate::Policy::parse`]).
    pub toml: String,
    /// What the source said that toolhost's policy cannot, one line each
    /// (also written into `toml` as comments).
    pub unmapped: Vec<String>,
}

/// The wassette policy document.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    version: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    permissions: Option<Permissions>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Permissions {
    #[serde(default)]
    storage: Option<Lists<Storage>>,
    #[serde(default)]
    network: Option<Lists<Network>>,
    #[serde(default)]
    environment: Option<Environment>,
    #[serde(default)]
    resources: Option<Resources>,
    #[serde(default)]
    runtime: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    ipc: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Lists<T> {
    // (A missing `Option` is `None` without `#[serde(default)]`, which on a
    // generic field would make serde ask for `T: Default`.)
    allow: Option<Vec<T>>,
    deny: Option<Vec<T>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Storage {
    uri: String,
    access: Vec<Access>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Access {
    Read,
    Write,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Network {
    Host {
        host: String,
    },
    Cidr {
        cidr: String,
    },
    Defaults {
        #[serde(rename = "defaults")]
        _on: bool,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Environment {
    #[serde(default)]
    allow: Option<Vec<EnvKey>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvKey {
    key: String,
}

/// `resources`: policy-mcp's `{cpu, memory, io}` (percent, MB, IOPS), or
/// the later `{limits: {cpu, memory}}` in Kubernetes units.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Resources {
    #[serde(default)]
    cpu: Option<Quantity>,
    #[serde(default)]
    memory: Option<Quantity>,
    #[serde(default)]
    io: Option<Quantity>,
    #[serde(default)]
    limits: Option<Limits>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Limits {
    #[serde(default)]
    cpu: Option<Quantity>,
    #[serde(default)]
    memory: Option<Quantity>,
}

/// A number, or a Kubernetes quantity (`512Mi`, `500m`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Quantity {
    Number(f64),
    Text(String),
}

impl std::fmt::Display for Quantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Quantity::Number(n) => write!(f, "{n}"),
            Quantity::Text(t) => f.write_str(t),
        }
    }
}

/// Largest policy file read.
const MAX_BYTES: usize = 1 << 20;

/// Imports the wassette policy `text` (read from `origin`, named in
/// errors, which give its line and column).
pub fn wassette(text: &str, origin: &str) -> Result<Imported, PolicyError> {
    if text.len() > MAX_BYTES {
        return Err(PolicyError::new(
            origin,
            format!("the policy is {} bytes, more than {MAX_BYTES}", text.len()),
        ));
    }
    let doc: Document = serde_saphyr::from_str(text).map_err(|e| {
        let text = e.without_snippet().to_string();
        // The position goes into the error's own fields.
        let message = match (e.location(), text.rfind(" at line ")) {
            (Some(_), Some(at)) => text[..at].to_owned(),
            _ => text,
        };
        let mut err = PolicyError::new(origin, message);
        if let Some(at) = e.location() {
            err.line = usize::try_from(at.line()).ok().filter(|l| *l > 0);
            err.column = usize::try_from(at.column()).ok().filter(|c| *c > 0);
        }
        err
    })?;
    if !doc.version.starts_with("1.") && doc.version != "1" {
        return Err(PolicyError::new(
            origin,
            format!(
                "policy version {:?}: only version 1 policies are understood",
                doc.version
            ),
        ));
    }
    let permissions = doc.permissions.unwrap_or(Permissions {
        storage: None,
        network: None,
        environment: None,
        resources: None,
        runtime: None,
        ipc: None,
    });
    let mut unmapped = Vec::new();

    // Directories: one grant a guest path, read-write when any entry
    // asks to write.
    let mut fs: BTreeMap<String, (String, bool)> = BTreeMap::new();
    if let Some(storage) = permissions.storage {
        for s in storage.allow.unwrap_or_default() {
            match fs_grant(&s.uri) {
                Ok((host, guest)) => {
                    let write = s.access.contains(&Access::Write);
                    let entry = fs.entry(guest).or_insert((host, false));
                    entry.1 |= write;
                }
                Err(why) => unmapped.push(format!("storage `{}`: {why}", s.uri)),
            }
        }
        for s in storage.deny.unwrap_or_default() {
            unmapped.push(format!(
                "storage deny `{}`: toolhost has no deny rules (what it does not grant is denied); \
                 make sure no granted directory holds it",
                s.uri
            ));
        }
    }

    let mut network = Vec::new();
    if let Some(net) = permissions.network {
        for n in net.allow.unwrap_or_default() {
            match n {
                Network::Host { host } => match net_rule(&host) {
                    Ok(rule) => {
                        if !network.contains(&rule) {
                            network.push(rule);
                        }
                    }
                    Err(why) => unmapped.push(format!("network host `{host}`: {why}")),
                },
                Network::Cidr { cidr } => unmapped.push(format!(
                    "network cidr `{cidr}`: toolhost allows hosts by name, not address ranges"
                )),
                Network::Defaults { .. } => unmapped.push(
                    "network defaults: toolhost has no predefined host list; name each host"
                        .to_owned(),
                ),
            }
        }
        for n in net.deny.unwrap_or_default() {
            let what = match n {
                Network::Host { host } => host,
                Network::Cidr { cidr } => cidr,
                Network::Defaults { .. } => "defaults".to_owned(),
            };
            unmapped.push(format!(
                "network deny `{what}`: toolhost has no deny rules (what it does not allow is refused)"
            ));
        }
    }

    let mut env = Vec::new();
    for k in permissions
        .environment
        .and_then(|e| e.allow)
        .unwrap_or_default()
    {
        if valid_env_name(&k.key) {
            if !env.contains(&k.key) {
                env.push(k.key);
            }
        } else {
            unmapped.push(format!(
                "environment key `{}`: not a variable name toolhost passes",
                k.key
            ));
        }
    }

    let mut memory_bytes = None;
    if let Some(r) = permissions.resources {
        let (cpu, memory, io, memory_is_mb) = match r.limits {
            Some(l) => (l.cpu.or(r.cpu), l.memory.or(r.memory), r.io, false),
            None => (r.cpu, r.memory, r.io, true),
        };
        if let Some(m) = memory {
            match bytes_of(&m, memory_is_mb) {
                Some(b) if b > 0 => memory_bytes = Some(b),
                _ => unmapped.push(format!("resources memory `{m}`: not a memory size")),
            }
        }
        if let Some(c) = cpu {
            unmapped.push(format!(
                "resources cpu `{c}`: toolhost bounds a call's CPU by fuel and its deadline, \
                 not a share (see [limits] fuel and timeout_ms)"
            ));
        }
        if let Some(i) = io {
            unmapped.push(format!(
                "resources io `{i}`: toolhost bounds writes per call (max_write_bytes), not IOPS"
            ));
        }
    }
    if permissions.runtime.is_some() {
        unmapped.push(
            "runtime: container and VM settings do not apply (toolhost runs the component in \
             wasmtime, in a worker process behind Landlock and seccomp)"
                .to_owned(),
        );
    }
    if permissions.ipc.is_some() {
        unmapped.push("ipc: toolhost grants no pipes or sockets".to_owned());
    }

    let writes = fs.values().any(|(_, w)| *w);
    let mut out = String::new();
    out.push_str("# Imported from a wassette policy");
    if let Some(d) = doc
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        let _ = write!(out, ": {}", one_line(d));
    }
    out.push_str(".\n# Review it: it grants what the original granted, and nothing more.\n");
    for u in &unmapped {
        let _ = writeln!(out, "# Not imported: {}", one_line(u));
    }
    out.push_str("version = 1\n");
    if writes {
        out.push_str(
            "# Something is granted write access: each call is asked (wassette ran every call).\n\
             decision = \"ask\"\n",
        );
    } else {
        out.push_str("decision = \"allow\"\n");
    }
    for (guest, (host, write)) in &fs {
        let _ = write!(
            out,
            "\n[[fs]]\nhost = {}\nguest = {}\nmode = \"{}\"\n",
            toml_string(host),
            toml_string(guest),
            if *write { "rw" } else { "ro" }
        );
    }
    if !env.is_empty() {
        let keys: Vec<String> = env.iter().map(|k| toml_string(k)).collect();
        let _ = write!(out, "\n[env]\nallow = [{}]\n", keys.join(", "));
    }
    if !network.is_empty() {
        let rules: Vec<String> = network.iter().map(|r| toml_string(r)).collect();
        let _ = write!(out, "\n[network]\nallow = [{}]\n", rules.join(", "));
    }
    if let Some(b) = memory_bytes {
        let _ = write!(out, "\n[limits]\nmemory_bytes = {b}\n");
    }
    Ok(Imported {
        toml: out,
        unmapped,
    })
}

/// `fs://PATH` as (host path, guest path): a relative path is the
/// policy's directory's (as wassette reads it, from its plugin directory),
/// seen by the guest at `/PATH`; an absolute one at itself. `/**` grants
/// the directory's tree, as every grant does; other globs cannot be said.
fn fs_grant(uri: &str) -> Result<(String, String), String> {
    let path = uri
        .strip_prefix("fs://")
        .ok_or("only fs:// storage can be granted")?;
    let path = path.strip_suffix("/**").unwrap_or(path);
    let path = path.trim_end_matches('/');
    if path.contains('*') {
        return Err(
            "toolhost grants whole directories: a pattern inside a path cannot be granted \
             (grant its directory if you mean to)"
                .to_owned(),
        );
    }
    if path.is_empty() {
        return Ok(("/".to_owned(), "/".to_owned()));
    }
    if path.split('/').any(|c| c == "..") {
        return Err("a path with `..` is not imported".to_owned());
    }
    let guest = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    // The same rule the written policy is held to, so that an import never
    // writes a grant its own parse then refuses.
    crate::raw::check_guest_path(&guest)?;
    Ok((path.to_owned(), guest))
}

/// A network entry as `host:port` (`host:*` without a port; a URL's port,
/// or its scheme's).
fn net_rule(entry: &str) -> Result<String, String> {
    let (rest, scheme_port) = match entry.split_once("://") {
        Some(("https", rest)) => (rest, Some(443)),
        Some(("http", rest)) => (rest, Some(80)),
        Some((other, _)) => return Err(format!("the scheme `{other}` is not HTTP")),
        None => (entry, None),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if authority.contains('*') {
        return Err("toolhost allows exact hosts: list each host a wildcard stood for".to_owned());
    }
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let (host, port): (String, Option<&str>) = if let Some(inner) = authority.strip_prefix('[') {
        let (h, after) = inner.split_once(']').ok_or("an unclosed `[`")?;
        let port = match after.strip_prefix(':') {
            Some(p) if digits(p) => Some(p),
            Some(_) => return Err("not a port".to_owned()),
            None => None,
        };
        (format!("[{h}]"), port)
    } else if authority.matches(':').count() > 1 {
        // A bare IPv6 address.
        (format!("[{authority}]"), None)
    } else {
        match authority.split_once(':') {
            Some((h, p)) if digits(p) => (h.to_owned(), Some(p)),
            Some(_) => return Err("not a port".to_owned()),
            None => (authority.to_owned(), None),
        }
    };
    if host.is_empty() {
        return Err("no host".to_owned());
    }
    let port = match (port, scheme_port) {
        (Some(p), _) => p.to_owned(),
        (None, Some(p)) => p.to_string(),
        (None, None) => "*".to_owned(),
    };
    let rule = format!("{}:{port}", host.to_ascii_lowercase());
    crate::raw::parse_net_rule(&rule).map(|_| rule)
}

/// A memory quantity in bytes: a number of MB (`unit_mb`) or bytes, or a
/// Kubernetes quantity (`512Mi`, `1G`).
fn bytes_of(q: &Quantity, unit_mb: bool) -> Option<u64> {
    match q {
        Quantity::Number(n) if *n >= 0.0 && n.fract() == 0.0 => {
            let n = *n as u64;
            Some(if unit_mb { n.checked_mul(1 << 20)? } else { n })
        }
        Quantity::Number(_) => None,
        Quantity::Text(t) => {
            let t = t.trim();
            let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let (digits, unit) = t.split_at(split);
            let n: u64 = digits.parse().ok()?;
            let factor: u64 = match unit {
                "" if unit_mb => 1 << 20,
                "" => 1,
                "Ki" => 1 << 10,
                "Mi" => 1 << 20,
                "Gi" => 1 << 30,
                "K" | "k" => 1_000,
                "M" => 1_000_000,
                "G" => 1_000_000_000,
                _ => return None,
            };
            n.checked_mul(factor)
        }
    }
}

fn valid_env_name(k: &str) -> bool {
    !k.is_empty() && !k.contains('=') && !k.contains('\0')
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// `s` as one line of a TOML comment: whitespace runs as one space, and
/// control characters (which a comment may not hold) escaped.
fn one_line(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .flat_map(|c| {
            let shown: Vec<char> = if c.is_control() {
                c.escape_unicode().collect()
            } else {
                vec![c]
            };
            shown
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FsMode, Policy};
    use std::path::Path;

    fn import(text: &str) -> (Imported, Policy) {
        let i = wassette(text, "policy.yaml").expect("imports");
        let p = Policy::parse(&i.toml, "policy.toml", Path::new("/plugins"))
            .unwrap_or_else(|e| panic!("{e}\n{}", i.toml));
        (i, p)
    }

    #[test]
    fn storage_network_environment_and_memory_map() {
        let (i, p) = import(
            r#"
version: "1.0"
description: "Permission policy for a weather demo"
permissions:
  storage:
    allow:
      - uri: "fs://workspace/**"
        access: ["read", "write"]
      - uri: "fs:///etc/app"
        access: ["read"]
  network:
    allow:
      - host: "api.openweathermap.org"
      - host: "https://rss.nytimes.com/"
  environment:
    allow:
      - key: "OPENWEATHER_API_KEY"
  resources:
    limits:
      memory: "512Mi"
      cpu: "500m"
"#,
        );
        let c = p.component();
        assert_eq!(c.decision, crate::Decision::Ask, "{}", i.toml);
        let fs: Vec<(String, String, FsMode)> = c
            .sandbox
            .fs
            .iter()
            .map(|g| (g.host.display().to_string(), g.guest.clone(), g.mode))
            .collect();
        assert_eq!(
            fs,
            [
                (
                    "/etc/app".to_owned(),
                    "/etc/app".to_owned(),
                    FsMode::ReadOnly
                ),
                (
                    "/plugins/workspace".to_owned(),
                    "/workspace".to_owned(),
                    FsMode::ReadWrite
                ),
            ]
        );
        let net: Vec<String> = c.sandbox.network.iter().map(ToString::to_string).collect();
        assert_eq!(net, ["api.openweathermap.org:*", "rss.nytimes.com:443"]);
        assert_eq!(c.sandbox.env_allow, ["OPENWEATHER_API_KEY"]);
        assert_eq!(c.limits.memory_bytes, 512 << 20);
        assert_eq!(i.unmapped.len(), 1, "{:?}", i.unmapped);
        assert!(i.unmapped[0].contains("cpu `500m`"));
        assert!(i.toml.contains("# Not imported: resources cpu"));
    }

    #[test]
    fn what_cannot_be_said_is_named_not_granted() {
        let (i, p) = import(
            r#"
version: "1.0"
permissions:
  storage:
    allow:
      - uri: "fs://logs/*.txt"
        access: ["read"]
      - uri: "fs:///srv//data/./x"
        access: ["read"]
    deny:
      - uri: "fs://secrets/**"
        access: ["read"]
  network:
    allow:
      - host: "*.internal.example.com"
      - cidr: "10.0.0.0/8"
    deny:
      - host: "evil.example.com"
  resources:
    cpu: 50.0
    memory: 1024
    io: 1000
  runtime:
    docker:
      security:
        privileged: false
"#,
        );
        let c = p.component();
        assert!(c.sandbox.fs.is_empty() && c.sandbox.network.is_empty());
        assert_eq!(c.decision, crate::Decision::Allow);
        assert_eq!(c.limits.memory_bytes, 1024 << 20);
        let all = i.unmapped.join("\n");
        for said in [
            "fs://logs/*.txt",
            "fs:///srv//data/./x",
            "storage deny `fs://secrets/**`",
            "*.internal.example.com",
            "10.0.0.0/8",
            "network deny `evil.example.com`",
            "cpu `50`",
            "io `1000`",
            "runtime",
        ] {
            assert!(all.contains(said), "{said} is not named: {all}");
        }
    }

    #[test]
    fn an_empty_policy_grants_nothing() {
        let (i, p) = import(
            "version: \"1.0\"\ndescription: \"Permission policy for time-server\"\npermissions: {}\n",
        );
        let c = p.component();
        assert!(
            c.sandbox.fs.is_empty()
                && c.sandbox.network.is_empty()
                && c.sandbox.env_allow.is_empty()
        );
        assert!(i.unmapped.is_empty());
        assert!(
            i.toml.starts_with(
                "# Imported from a wassette policy: Permission policy for time-server."
            )
        );
    }

    #[test]
    fn control_characters_stay_out_of_the_comments() {
        let (i, _) =
            import("version: \"1.0\"\ndescription: \"a\\abell\\u0000\"\npermissions: {}\n");
        assert!(i.toml.contains("a\\u{7}bell\\u{0}"), "{}", i.toml);
    }

    #[test]
    fn bad_input_says_which_line() {
        let e = wassette(
            "version: \"1.0\"\npermissions:\n  storage:\n    alow: []\n",
            "policy.yaml",
        )
        .expect_err("unknown key");
        assert_eq!(e.line, Some(4), "{e}");
        assert!(e.message.contains("alow"), "{e}");
        let e = wassette("version: \"2.0\"\n", "policy.yaml").expect_err("version");
        assert!(e.message.contains("version"), "{e}");
        let e = wassette("permissions: {}\n", "policy.yaml").expect_err("no version");
        assert!(e.message.contains("version"), "{e}");
        let e = wassette("version: [\n", "policy.yaml").expect_err("syntax");
        assert!(e.line.is_some(), "{e}");
    }
}
