//! Signatures on remote components: the trust rule that covers a
//! component, and the Sigstore bundles attached to its manifest (OCI
//! referrers, or the referrers tag when the registry has no such API),
//! verified against that manifest's bytes, so against its digest and never
//! a tag. At lock time the bundles are fetched into the store; at every
//! load they are verified again from there (no cache hit skips the check).

use crate::file::{Digest, OciRef, Requirement, Toolbox, TrustRule};
use toolhost_registry::{Blob, Client, Store};

/// What verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// No rule covers the component, or an optional rule found no signature.
    Unsigned,
    /// Signed by this signer (`key sha256:…`, `keyless IDENTITY (ISSUER)`).
    Signer(String),
}

/// At lock time: the bundles `r`'s registry holds for `manifest`, fetched
/// into the store, verified against the rule covering `r`.
pub async fn verify_remote(
    toolbox: &Toolbox,
    r: &OciRef,
    manifest: &Digest,
    client: &Client,
    store: &Store,
) -> Result<Verified, String> {
    let Some(rule) = toolbox.trust_for(&r.name()) else {
        return Ok(Verified::Unsigned);
    };
    let referrers = client
        .referrers(r, manifest)
        .await
        .map_err(|e| format!("reading the signatures of {manifest}: {e}"))?;
    let mut bundles = Vec::new();
    for d in referrers.iter().filter(|d| {
        d.artifact_type
            .as_deref()
            .is_some_and(|t| toolhost_trust::BUNDLE_MEDIA_TYPES.contains(&t))
    }) {
        // The referrer is a manifest whose layer is the bundle.
        let Ok(digest) = Digest::parse(&d.digest) else {
            continue;
        };
        let referrer = client
            .resolve_signature(&r.pinned(digest))
            .await
            .map_err(|e| format!("reading a signature of {manifest}: {e}"))?;
        let Some(subject) = &referrer.manifest.subject else {
            continue;
        };
        if subject.digest != manifest.as_str() {
            continue;
        }
        for layer in &referrer.manifest.layers {
            if !toolhost_trust::BUNDLE_MEDIA_TYPES.contains(&layer.media_type.as_str()) {
                continue;
            }
            let Ok(bundle) = Digest::parse(&layer.digest) else {
                continue;
            };
            if store.get(&bundle).map_err(|e| e.to_string())?.is_none() {
                client
                    .blob(r, &bundle, Blob::Signature(layer.size), store)
                    .await
                    .map_err(|e| format!("fetching a signature of {manifest}: {e}"))?;
            }
            bundles.push(bundle);
        }
    }
    store
        .set_signatures(manifest, &bundles)
        .map_err(|e| e.to_string())?;
    check(toolbox, rule, manifest, store, &bundles)
}

/// At every load: the bundles kept in the store for `manifest`, verified
/// again against the rule covering `r`.
pub fn verify_stored(
    toolbox: &Toolbox,
    r: &OciRef,
    manifest: &Digest,
    store: &Store,
) -> Result<Verified, String> {
    let Some(rule) = toolbox.trust_for(&r.name()) else {
        return Ok(Verified::Unsigned);
    };
    let bundles = store.signatures(manifest).map_err(|e| e.to_string())?;
    check(toolbox, rule, manifest, store, &bundles)
}

/// The signer of `manifest` among `bundles`, under `rule`: the first that
/// verifies. Required and none verifies: refused, naming why each failed.
fn check(
    toolbox: &Toolbox,
    rule: &TrustRule,
    manifest: &Digest,
    store: &Store,
    bundles: &[Digest],
) -> Result<Verified, String> {
    let signed = store
        .get(manifest)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the manifest {manifest} is not in the store"))?;
    let mut why = Vec::new();
    for b in bundles {
        let Some(bundle) = store.get(b).map_err(|e| e.to_string())? else {
            why.push(format!("the signature {b} is not in the store"));
            continue;
        };
        match toolhost_trust::verify(&signed, &bundle, rule) {
            Ok(signer) => return Ok(Verified::Signer(signer)),
            Err(e) => why.push(e.to_string()),
        }
    }
    let at = format!("{}:{}", toolbox.origin, rule.line);
    match (rule.signature, why.is_empty()) {
        (Requirement::Optional, true) => Ok(Verified::Unsigned),
        (Requirement::Required, true) => Err(format!(
            "unsigned: the trust rule at {at} requires a signature on {manifest}, and none is attached"
        )),
        // An optional rule still refuses a signature that does not verify:
        // it is there, and wrong.
        (_, false) => Err(format!(
            "no signature on {manifest} verifies under the trust rule at {at}: {}",
            why.join("; ")
        )),
    }
}
