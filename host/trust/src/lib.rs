//! Whether a remote component was signed by someone the user trusts:
//! Sigstore bundles verified offline against a [`TrustRule`] of the
//! toolbox, over the component's OCI manifest (so against its digest,
//! never a tag). A rule names a key (a PEM public key; with a trusted
//! root, the bundle's transparency-log entry is verified too), or a
//! keyless identity and issuer with the trusted root their certificates
//! chain to (Fulcio, the CT and Rekor logs); there is no rule for "any
//! signer". Verification is sigstore-verify's, with ring as its crypto
//! provider.
//!
//! ```no_run
//! # fn demo(manifest: &[u8], bundle: &[u8], rule: &toolhost_toolbox_file::TrustRule) {
//! match toolhost_trust::verify(manifest, bundle, rule) {
//!     Ok(signer) => println!("signed by {signer}"),
//!     Err(why) => println!("refused: {why}"),
//! }
//! # }
//! ```

mod provider;

use sigstore_verify::trust_root::TrustedRoot;
use sigstore_verify::types::{Bundle, DerPublicKey};
use sigstore_verify::{PublicKeyVerificationPolicy, VerificationPolicy, Verifier};
use std::path::Path;
use std::sync::OnceLock;
use toolhost_toolbox_file::{Signer, TrustRule};

/// The artifact type (and layer media type) of a Sigstore bundle attached
/// to an artifact as an OCI referrer.
pub const BUNDLE_MEDIA_TYPES: &[&str] = &[
    "application/vnd.dev.sigstore.bundle.v0.3+json",
    "application/vnd.dev.sigstore.bundle+json;version=0.3",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
];

/// Why a signature was not accepted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The rule's key or trusted root could not be read.
    #[error("{path}: {reason}")]
    Material {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The bundle is not a Sigstore bundle.
    #[error("not a Sigstore bundle: {0}")]
    Bundle(String),
    /// The bundle does not verify under the rule.
    #[error("{0}")]
    Refused(String),
}

/// Installs ring as sigstore-crypto's provider, once per process.
fn provider() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        // Refused only if another provider is there already, which serves too.
        let _ = sigstore_verify::crypto::provider::install_default_provider(&provider::Ring);
    });
}

/// A trusted root with nothing in it: a key rule without a transparency log.
const EMPTY_ROOT: &str = r#"{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1","tlogs":[],"certificateAuthorities":[],"ctlogs":[],"timestampAuthorities":[]}"#;

fn root(path: &Path) -> Result<TrustedRoot, TrustError> {
    let material = |reason: String| TrustError::Material {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| material(format!("cannot read the trusted root: {e}")))?;
    TrustedRoot::from_json(&text).map_err(|e| material(format!("not a Sigstore trusted root: {e}")))
}

/// The signer of a key: `key sha256:FINGERPRINT` (of its DER public key).
fn key_name(der: &[u8]) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(der);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("key sha256:{hex}")
}

/// Verifies `bundle` (a Sigstore bundle's JSON) as a signature over
/// `signed` (the component's manifest bytes) under `rule`; the signer, as
/// the lock file records it.
pub fn verify(signed: &[u8], bundle: &[u8], rule: &TrustRule) -> Result<String, TrustError> {
    provider();
    let text = std::str::from_utf8(bundle).map_err(|e| TrustError::Bundle(e.to_string()))?;
    let bundle = Bundle::from_json(text).map_err(|e| TrustError::Bundle(e.to_string()))?;
    match &rule.signer {
        Signer::Key { key, trusted_root } => {
            let pem = std::fs::read_to_string(key).map_err(|e| TrustError::Material {
                path: key.display().to_string(),
                reason: format!("cannot read the key: {e}"),
            })?;
            let public = DerPublicKey::from_pem(&pem).map_err(|e| TrustError::Material {
                path: key.display().to_string(),
                reason: format!("not a PEM public key: {e}"),
            })?;
            let name = key_name(public.as_bytes());
            let (root, policy) = match trusted_root {
                Some(path) => (root(path)?, PublicKeyVerificationPolicy::new(public)),
                // No log to check it against: the key's signature alone.
                None => (
                    TrustedRoot::from_json(EMPTY_ROOT)
                        .map_err(|e| TrustError::Refused(e.to_string()))?,
                    PublicKeyVerificationPolicy::new(public).skip_tlog_unsafe(),
                ),
            };
            let verifier = Verifier::new(&root).map_err(|e| TrustError::Refused(e.to_string()))?;
            verifier
                .verify(signed, &bundle, &policy)
                .map_err(|e| TrustError::Refused(format!("not signed by {name}: {e}")))?;
            Ok(name)
        }
        Signer::Keyless {
            identity,
            issuer,
            trusted_root,
        } => {
            let root = root(trusted_root)?;
            let verifier = Verifier::new(&root).map_err(|e| TrustError::Refused(e.to_string()))?;
            let policy = VerificationPolicy::new(identity.as_str(), issuer.as_str());
            verifier.verify(signed, &bundle, &policy).map_err(|e| {
                TrustError::Refused(format!("not signed by {identity} ({issuer}): {e}"))
            })?;
            Ok(format!("keyless {identity} ({issuer})"))
        }
    }
}
