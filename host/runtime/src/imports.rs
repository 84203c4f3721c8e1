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
/// The contract's `context` interface (0.3.0): progress, log, cancelled,
/// bounded by the policy's limits; every policy grants it.
const CONTRACT_CONTEXT: &str = "toolhost:tool/context@";
/// The contract's `tools` interface (0.4.0 on): a code runner's calls of the
/// host's tools; only a policy with `call_tools` grants it.
const CONTRACT_TOOLS: &str = "toolhost:tool/tools@";

/// `wasi:config/store`, in the published versions toolhost links (a
/// prerelease version matches only itself): the configuration values a
/// policy grants as its environment; every policy grants it.
const WASI_CONFIG: [&str; 2] = [
    "wasi:config/store@0.2.0-draft",
    "wasi:config/store@0.2.0-rc.1",
];

/// Whether toolhost links an import at all.
pub(crate) fn is_provided(import: &str) -> bool {
    WASI_CONFIG.contains(&import)
        || [
            "wasi:cli/",
            "wasi:io/",
            "wasi:clocks/",
            "wasi:random/",
            "wasi:filesystem/",
            "wasi:sockets/",
            "wasi:http/",
            CONTRACT_TYPES,
            CONTRACT_CONTEXT,
            CONTRACT_TOOLS,
        ]
        .iter()
        .any(|p| import.starts_with(p))
        || crate::escape::provides(import)
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

/// A component's imports, with what the per-call check needs worked out
/// once at load: only the network grant and `call_tools` can deny an import
/// toolhost provides (every other import is granted or inert under any
/// policy).
#[derive(Debug, Clone)]
pub(crate) struct Imports {
    names: Vec<String>,
    /// The imports some policy can deny: those the sandbox that grants
    /// nothing denies (they need the network grant, or `call_tools`), in
    /// order.
    deniable: Vec<usize>,
}

impl Imports {
    /// `names` must all be [provided](is_provided) (checked at load).
    pub(crate) fn new(names: Vec<String>) -> Imports {
        let nothing = Sandbox::default();
        let deniable = names
            .iter()
            .enumerate()
            .filter(|(_, i)| matches!(verdict(i, &nothing), ImportVerdict::Denied(_)))
            .map(|(n, _)| n)
            .collect();
        Imports { names, deniable }
    }

    /// The imports' names.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// The first denied import's reason, if any: what [`check`] would deny
    /// first. Runs before every call, so it costs nothing unless the
    /// component needs a grant (network, tool calls).
    pub(crate) fn first_denial(&self, sandbox: &Sandbox) -> Option<String> {
        self.deniable
            .iter()
            .find_map(|&i| match verdict(&self.names[i], sandbox) {
                ImportVerdict::Denied(why) => Some(why),
                _ => None,
            })
    }
}

/// The ruling on one import under `sandbox`.
fn verdict(i: &str, sandbox: &Sandbox) -> ImportVerdict {
    if WASI_CONFIG.contains(&i)
        || [
            "wasi:cli/",
            "wasi:io/",
            "wasi:clocks/",
            "wasi:random/",
            CONTRACT_TYPES,
            CONTRACT_CONTEXT,
        ]
        .iter()
        .any(|p| i.starts_with(p))
        || crate::escape::provides(i)
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
    } else if i.starts_with(CONTRACT_TOOLS) {
        if sandbox.call_tools {
            ImportVerdict::Granted
        } else {
            ImportVerdict::Denied(format!(
                "`{i}` calls the host's other tools, which only a code runner's policy grants (`call_tools = true`)"
            ))
        }
    } else if i.starts_with("wasi:sockets/") {
        // Raw sockets are never granted (network access is HTTP through
        // the allow-list), so they are linked inert under any policy: a
        // component whose libc brings them along (every componentize-py
        // component) runs, and one that needs them fails when it tries.
        ImportVerdict::Inert
    } else {
        ImportVerdict::Denied(format!("`{i}` is not provided by toolhost"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_policy::{NetRule, Policy};

    /// The scan over every import that `Imports::first_denial` stands for.
    fn scanned(imports: &[String], sandbox: &Sandbox) -> Option<String> {
        check(imports, sandbox)
            .into_iter()
            .find_map(|c| match c.verdict {
                ImportVerdict::Denied(why) => Some(why),
                _ => None,
            })
    }

    #[test]
    fn the_precomputed_denial_is_the_first_the_full_check_denies() {
        let sets: [&[&str]; 6] = [
            &["wasi:cli/environment@0.2.6", "wasi:io/streams@0.2.6"],
            &[
                "wasi:filesystem/types@0.2.6",
                "wasi:clocks/monotonic-clock@0.2.6",
            ],
            &[
                "wasi:io/poll@0.2.6",
                "wasi:sockets/tcp@0.2.6",
                "wasi:http/types@0.2.6",
            ],
            &["wasi:http/outgoing-handler@0.2.6", "wasi:sockets/udp@0.2.6"],
            &[
                "toolhost:tool/types@0.2.0",
                "toolhost:tool/context@0.3.0",
                "wasi:random/random@0.2.6",
                "wasi:http/types@0.2.6",
            ],
            &[
                "wasi:http/types@0.2.6",
                "toolhost:tool/tools@0.4.0",
                "wasi:clocks/monotonic-clock@0.2.6",
            ],
        ];
        let closed = Policy::deny_all().component().sandbox;
        let mut open = closed.clone();
        open.network.push(NetRule {
            host: "example.com".into(),
            port: Some(443),
        });
        let mut runner = closed.clone();
        runner.call_tools = true;
        let mut both = open.clone();
        both.call_tools = true;
        for set in sets {
            let names: Vec<String> = set.iter().map(|s| (*s).to_owned()).collect();
            assert!(names.iter().all(|n| is_provided(n)));
            let imports = Imports::new(names.clone());
            for sandbox in [&closed, &open, &runner, &both] {
                assert_eq!(
                    imports.first_denial(sandbox),
                    scanned(&names, sandbox),
                    "{set:?}"
                );
            }
        }
        let networked = Imports::new(sets[2].iter().map(|s| (*s).to_owned()).collect());
        let why = networked
            .first_denial(&closed)
            .expect("denied without a network grant");
        // Sockets are inert under any policy; HTTP needs the grant.
        assert!(why.contains("wasi:http/types"), "{why}");
        assert_eq!(networked.first_denial(&open), None);
        let sockets = Imports::new(vec!["wasi:sockets/tcp@0.2.6".to_owned()]);
        assert_eq!(sockets.first_denial(&closed), None);
        // A runner that also fetches needs both grants, whichever comes first.
        let fetching_runner = Imports::new(sets[5].iter().map(|s| (*s).to_owned()).collect());
        let why = fetching_runner.first_denial(&open).expect("no call_tools");
        assert!(why.contains("call_tools"), "{why}");
        assert!(fetching_runner.first_denial(&runner).is_some());
        assert_eq!(fetching_runner.first_denial(&both), None);
    }
}
