//! What a component imports, against what its policy grants.

use toolhost_policy::Sandbox;

/// The ruling on one import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportVerdict {
    /// Provided (clocks, random, cli, io; filesystem with grants; http with a network grant).
    Granted,
    /// Linked, but the policy grants nothing through it (e.g. filesystem
    /// without preopens): every use fails inside the guest.
    Inert,
    /// Refused: the component is not run under this policy.
    Denied(String),
}

/// One import and its ruling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportCheck {
    /// The import's full name, e.g. `wasi:http/outgoing-handler@0.2.6`.
    pub import: String,
    /// The ruling.
    pub verdict: ImportVerdict,
}

/// The contract's own types interface: types only, nothing to provide.
const CONTRACT_TYPES: &str = "toolhost:tool/types@";

/// Whether toolhost links an import at all.
pub(crate) fn is_provided(import: &str) -> bool {
    [
        "wasi:cli/",
        "wasi:io/",
        "wasi:clocks/",
        "wasi:random/",
        "wasi:filesystem/",
        "wasi:sockets/",
        "wasi:http/",
        CONTRACT_TYPES,
    ]
    .iter()
    .any(|p| import.starts_with(p))
}

/// Rules every import of a component against a policy's sandbox.
pub(crate) fn check(imports: &[String], sandbox: &Sandbox) -> Vec<ImportCheck> {
    imports
        .iter()
        .map(|import| ImportCheck {
            import: import.clone(),
            verdict: verdict(import, sandbox),
        })
        .collect()
}

/// The first denied import's reason, if any. Runs before every call, so it
/// allocates only for a denial.
pub(crate) fn first_denial(imports: &[String], sandbox: &Sandbox) -> Option<String> {
    imports.iter().find_map(|i| match verdict(i, sandbox) {
        ImportVerdict::Denied(why) => Some(why),
        _ => None,
    })
}

/// The ruling on one import under `sandbox`.
fn verdict(i: &str, sandbox: &Sandbox) -> ImportVerdict {
    if [
        "wasi:cli/",
        "wasi:io/",
        "wasi:clocks/",
        "wasi:random/",
        CONTRACT_TYPES,
    ]
    .iter()
    .any(|p| i.starts_with(p))
    {
        ImportVerdict::Granted
    } else if i.starts_with("wasi:filesystem/") {
        if sandbox.fs.is_empty() {
            ImportVerdict::Inert
        } else {
            ImportVerdict::Granted
        }
    } else if i.starts_with("wasi:http/") {
        if sandbox.grants_network() {
            ImportVerdict::Granted
        } else {
            ImportVerdict::Denied(format!(
                "`{i}` needs a network grant; the policy's [network] allow-list is empty"
            ))
        }
    } else if i.starts_with("wasi:sockets/") {
        if sandbox.grants_network() {
            // Raw sockets stay off; network access is HTTP through the allow-list.
            ImportVerdict::Inert
        } else {
            ImportVerdict::Denied(format!(
                "`{i}` (raw sockets) is not granted; the policy grants no network"
            ))
        }
    } else {
        ImportVerdict::Denied(format!("`{i}` is not provided by toolhost"))
    }
}
