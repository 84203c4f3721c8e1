//! Loading one component: its policy resolved, its tools listed where
//! its calls will run (in a worker, walled in, or in-process) and bounded
//! by its policy's descriptor limits. Serving a toolbox and locking its
//! remote components both load through here, so a component is listed the
//! same way by both.

use std::path::Path;
use std::sync::Arc;

use toolhost_contract::DescriptorLimits;
use toolhost_policy::{Isolation, Policy, PolicyError, Walls};
use toolhost_runtime::{LoadError, LoadedComponent, Runtime};

use crate::error::HostError;
use crate::file::{ComponentEntry, PolicySource, Source, Toolbox};

/// How a component's tools are listed at load: the bounds on what it may
/// declare, and where its `list-tools` runs (`Some`: in a worker, walled
/// in as its calls will be).
pub(crate) struct Listing {
    limits: DescriptorLimits,
    in_worker: Option<Walls>,
}

/// `entry`'s [`Listing`], from its policy (the defaults when the policy
/// does not resolve: a serving load then fails on it by name).
pub(crate) fn listing(toolbox: &Toolbox, entry: &ComponentEntry) -> Listing {
    let policy = resolve_policy(toolbox, entry).unwrap_or_default();
    let (isolation, walls) = placement(entry, &policy);
    Listing {
        limits: policy.descriptor_limits(),
        in_worker: (isolation == Isolation::Process).then_some(walls),
    }
}

/// Loads the component file `path` as a toolbox entry of it under
/// `policy` would be loaded (its `list-tools` in a worker unless the
/// policy says `isolation = "in-process"`): for `toolhost inspect`.
pub async fn load_component_file(
    runtime: &Runtime,
    path: &Path,
    policy: &Policy,
) -> Result<Arc<LoadedComponent>, LoadError> {
    let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
        path: path.to_owned(),
        source,
    })?;
    let listing = Listing {
        limits: policy.descriptor_limits(),
        in_worker: (policy.isolation() != Some(Isolation::InProcess))
            .then(|| policy.walls().unwrap_or(Walls::BestEffort)),
    };
    load_listed(runtime, path, bytes, &listing).await
}

/// Where `entry`'s guest code runs under `policy`, and what a kernel
/// without the walls means for it: the policy's `isolation` (else
/// in-process for the built-ins, in workers for every other component)
/// and `walls` (else required for registry components, best effort for
/// local files).
pub(crate) fn placement(entry: &ComponentEntry, policy: &Policy) -> (Isolation, Walls) {
    let isolation = policy.isolation().unwrap_or(match &entry.source {
        // The code runner runs text a model wrote in a large interpreter:
        // the most attacker-reachable input there is, behind both walls.
        Source::Builtin(_) if entry.source.runner_language().is_none() => Isolation::InProcess,
        _ => Isolation::Process,
    });
    let walls = policy.walls().unwrap_or(match entry.source {
        Source::Oci(_) | Source::Https { .. } => Walls::Required,
        _ => Walls::BestEffort,
    });
    (isolation, walls)
}

/// Loads `bytes`, its tools listed where `listing` says.
pub(crate) async fn load_listed(
    rt: &Runtime,
    origin: &Path,
    bytes: Vec<u8>,
    listing: &Listing,
) -> Result<Arc<LoadedComponent>, LoadError> {
    let Some(walls) = listing.in_worker else {
        return rt.load_bytes_with(origin, bytes, &listing.limits).await;
    };
    let unlisted = rt.load_bytes_unlisted(origin, bytes).await?;
    if unlisted.component().is_plain() {
        // Its tools are read from its type: none of its code runs to list them.
        let declared = unlisted.component().declared().await?;
        return unlisted.listed(declared, &listing.limits);
    }
    let declared = toolhost_worker::declared(&unlisted, walls)
        .await
        .map_err(|reason| LoadError::ListTools {
            path: origin.to_owned(),
            reason,
        })?;
    unlisted.listed(declared, &listing.limits)
}

pub(crate) fn resolve_policy(
    toolbox: &Toolbox,
    entry: &ComponentEntry,
) -> Result<Policy, HostError> {
    let wrap = |error: PolicyError| HostError::Policy {
        origin: toolbox.origin.clone(),
        line: entry.line,
        source_name: entry.source.to_string(),
        error: Box::new(error),
    };
    match (&entry.policy, &entry.source) {
        (PolicySource::Inline(p), _) => Ok((**p).clone()),
        (PolicySource::File(path), _) => Policy::load(path, &toolbox.base_dir).map_err(wrap),
        (PolicySource::BuiltinDefault, Source::Builtin(name)) => {
            let b = toolhost_builtins::get(name).ok_or_else(|| {
                wrap(PolicyError {
                    origin: format!("builtin:{name}"),
                    line: None,
                    column: None,
                    message: "no such built-in tool".into(),
                })
            })?;
            Policy::parse(
                b.policy,
                &format!("builtin:{name} default policy"),
                &toolbox.base_dir,
            )
            .map_err(wrap)
        }
        (PolicySource::BuiltinDefault, Source::File(_) | Source::Oci(_) | Source::Https { .. }) => {
            Ok(Policy::deny_all())
        }
    }
}
