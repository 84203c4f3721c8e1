//! Whether a remote component was signed by someone the user trusts:
//! Sigstore bundles verified offline against a [`TrustRule`] of the
//! toolbox, over the component's OCI manifest (so against its digest,
//! never a tag). A rule names a key, or a keyless identity and issuer with
//! the trusted root their certificates chain to (Fulcio, the CT and Rekor
//! logs); there is no rule for "any signer".
//!
//! A key rule with a trusted root requires the bundle's transparency-log
//! entry and verifies it against the root's logs. A key rule without one
//! checks the key's signature alone, as `cosign verify --key …
//! --insecure-ignore-tlog` does: a bundle made with `cosign sign
//! --tlog-upload=false` is accepted, any log entry or timestamp it carries
//! is ignored (there is nothing to check it against), and a bundle with a
//! certificate instead of a key is refused. Verification is
//! sigstore-verify's, with ring as its crypto provider; the key-alone
//! check is this crate's ([`verify`]), with sigstore's own key parsing and
//! signature schemes, since sigstore-verify refuses a bundle without log
//! or timestamp before it looks at the signature.
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

use sigstore_verify::crypto::{KeyAlgorithm, verify_signature};
use sigstore_verify::trust_root::TrustedRoot;
use sigstore_verify::types::bundle::{MessageSignature, VerificationMaterialContent};
use sigstore_verify::types::{
    Bundle, DerPublicKey, DsseEnvelope, HashAlgorithm, SignatureContent, Statement,
};
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
/// the lock file records it. A key rule without a trusted root checks the
/// key's signature alone (see the crate's documentation); with one, the
/// bundle's log entry is required and verified too.
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
            let refused = |why: String| TrustError::Refused(format!("not signed by {name}: {why}"));
            let Some(path) = trusted_root else {
                key_alone(signed, &bundle, &public).map_err(refused)?;
                return Ok(name);
            };
            if bundle.verification_material.tlog_entries.is_empty() {
                return Err(refused(
                    "the signature has no transparency-log entry, and the trust rule names a `trusted_root`, so its log entry is required; sign with a log (cosign without `--tlog-upload=false`), or drop `trusted_root` from the rule to check the key's signature alone".into(),
                ));
            }
            let root = root(path)?;
            let verifier = Verifier::new(&root).map_err(|e| TrustError::Refused(e.to_string()))?;
            verifier
                .verify(signed, &bundle, &PublicKeyVerificationPolicy::new(public))
                .map_err(|e| refused(e.to_string()))?;
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

/// Whether `bundle` is a signature over `signed` made with `key`, checking
/// nothing else (no log entry, no timestamp): a message signature whose
/// declared digest, if any, is that of `signed`, or a DSSE envelope whose
/// in-toto statement names `signed` as a subject. Why not.
fn key_alone(signed: &[u8], bundle: &Bundle, key: &DerPublicKey) -> Result<(), String> {
    // The key is the rule's, never the bundle's: a certificate is a
    // keyless signer's, which a key rule does not name.
    if !matches!(
        bundle.verification_material.content,
        VerificationMaterialContent::PublicKey(_)
    ) {
        return Err(
            "the bundle carries a certificate (a keyless signature), and the trust rule names a key"
                .into(),
        );
    }
    let algorithm = KeyAlgorithm::from_spki(key).map_err(|e| format!("the rule's key: {e}"))?;
    match &bundle.content {
        SignatureContent::MessageSignature(m) => message_signature(signed, m, key, algorithm),
        SignatureContent::DsseEnvelope(e) => dsse_statement(signed, e, key, algorithm),
        _ => Err("the bundle holds neither a message signature nor a DSSE envelope".into()),
    }
}

/// A message signature over `signed`.
fn message_signature(
    signed: &[u8],
    m: &MessageSignature,
    key: &DerPublicKey,
    algorithm: KeyAlgorithm,
) -> Result<(), String> {
    let scheme = match &m.message_digest {
        Some(d) => {
            let actual = digest(d.algorithm, signed)?;
            if d.digest.as_bytes() != actual.as_slice() {
                return Err(format!(
                    "its message digest is {}:{}, the manifest's {}:{}: a signature over another artifact",
                    algorithm_name(d.algorithm),
                    hex(d.digest.as_bytes()),
                    algorithm_name(d.algorithm),
                    hex(&actual)
                ));
            }
            algorithm
                .resolve_signing_scheme(d.algorithm)
                .map_err(|e| e.to_string())?
        }
        None => algorithm.default_signing_scheme(),
    };
    // Over the manifest's bytes themselves, never the declared digest.
    verify_signature(key, signed, &m.signature, scheme)
        .map_err(|e| format!("the signature does not verify under the key: {e}"))
}

/// A DSSE envelope with the key's signature, whose in-toto statement names
/// `signed` (its SHA-256 or SHA-512) as a subject.
fn dsse_statement(
    signed: &[u8],
    e: &DsseEnvelope,
    key: &DerPublicKey,
    algorithm: KeyAlgorithm,
) -> Result<(), String> {
    verify_signature(
        key,
        &e.pae(),
        &e.signature.sig,
        algorithm.default_signing_scheme(),
    )
    .map_err(|e| format!("the DSSE signature does not verify under the key: {e}"))?;
    if e.payload_type != "application/vnd.in-toto+json" {
        return Err(format!(
            "its DSSE payload is {:?}, not an in-toto statement",
            e.payload_type
        ));
    }
    let statement: Statement = serde_json::from_slice(e.payload.as_bytes())
        .map_err(|e| format!("its in-toto statement does not parse: {e}"))?;
    use sha2::Digest as _;
    let sha256 = sha2::Sha256::digest(signed);
    let sha512 = sha2::Sha512::digest(signed);
    let names = statement.subject.iter().any(|s| {
        s.digest
            .sha256
            .as_ref()
            .is_some_and(|d| d.as_bytes() == sha256.as_slice())
            || s.digest
                .sha512
                .as_ref()
                .is_some_and(|d| d.as_bytes() == sha512.as_slice())
    });
    if !names {
        return Err(format!(
            "its in-toto statement names no subject sha256:{}: a statement about another artifact",
            hex(&sha256)
        ));
    }
    Ok(())
}

/// The digest of `bytes` under `algorithm` (the SHA-2 ones Sigstore uses).
fn digest(algorithm: HashAlgorithm, bytes: &[u8]) -> Result<Vec<u8>, String> {
    use sha2::Digest as _;
    Ok(match algorithm {
        HashAlgorithm::Sha2256 => sha2::Sha256::digest(bytes).to_vec(),
        HashAlgorithm::Sha2384 => sha2::Sha384::digest(bytes).to_vec(),
        HashAlgorithm::Sha2512 => sha2::Sha512::digest(bytes).to_vec(),
        other => {
            return Err(format!(
                "its message digest algorithm {other:?} is not supported"
            ));
        }
    })
}

fn algorithm_name(algorithm: HashAlgorithm) -> &'static str {
    match algorithm {
        HashAlgorithm::Sha2384 => "sha384",
        HashAlgorithm::Sha2512 => "sha512",
        _ => "sha256",
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use p256::ecdsa::signature::Signer as _;
    use serde_json::json;
    use toolhost_toolbox_file::Requirement;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// A P-256 key (fixed, for the test) and its rule: key-only, or with a
    /// trusted root.
    struct Key {
        signing: p256::ecdsa::SigningKey,
        dir: tempfile::TempDir,
    }

    impl Key {
        fn new(seed: u8) -> Key {
            let signing = p256::ecdsa::SigningKey::from_bytes(&[seed; 32].into()).expect("a key");
            // SubjectPublicKeyInfo of a P-256 key: its fixed header, then
            // the uncompressed point.
            let mut spki = vec![
                0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06,
                0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
            ];
            spki.extend_from_slice(signing.verifying_key().to_encoded_point(false).as_bytes());
            let dir = tempfile::tempdir().expect("temp dir");
            let pem = format!(
                "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
                b64(&spki)
            );
            std::fs::write(dir.path().join("key.pub"), pem).expect("write the key");
            Key { signing, dir }
        }

        fn rule(&self, trusted_root: bool) -> TrustRule {
            TrustRule {
                prefix: "r.io/".into(),
                signer: Signer::Key {
                    key: self.dir.path().join("key.pub"),
                    trusted_root: trusted_root.then(|| self.dir.path().join("root.json")),
                },
                signature: Requirement::Required,
                line: 1,
            }
        }

        fn sign(&self, bytes: &[u8]) -> Vec<u8> {
            let signature: p256::ecdsa::Signature = self.signing.sign(bytes);
            signature.to_der().as_bytes().to_vec()
        }
    }

    fn sha256(bytes: &[u8]) -> Vec<u8> {
        use sha2::Digest as _;
        sha2::Sha256::digest(bytes).to_vec()
    }

    /// A bundle of `content`, with a key hint and no log entry.
    fn bundle(content: serde_json::Value) -> Vec<u8> {
        let mut b = json!({
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {"publicKey": {"hint": "any"}},
        });
        if let (Some(b), Some(c)) = (b.as_object_mut(), content.as_object()) {
            b.extend(c.clone());
        }
        b.to_string().into_bytes()
    }

    fn message(digest_of: &[u8], signature: &[u8]) -> Vec<u8> {
        bundle(json!({"messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": b64(&sha256(digest_of))},
            "signature": b64(signature),
        }}))
    }

    fn dsse(key: &Key, subject: &[u8], payload_type: &str) -> Vec<u8> {
        let statement = json!({
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "", "digest": {"sha256": hex(&sha256(subject))}}],
            "predicateType": "https://sigstore.dev/cosign/sign/v1",
            "predicate": {},
        })
        .to_string();
        let pae = sigstore_verify::types::pae(payload_type, statement.as_bytes());
        bundle(json!({"dsseEnvelope": {
            "payloadType": payload_type,
            "payload": b64(statement.as_bytes()),
            "signatures": [{"sig": b64(&key.sign(&pae)), "keyid": ""}],
        }}))
    }

    const MANIFEST: &[u8] = br#"{"schemaVersion":2}"#;
    const OTHER: &[u8] = br#"{"schemaVersion":2} "#;

    fn refused(result: Result<String, TrustError>) -> String {
        result.expect_err("refused").to_string()
    }

    #[test]
    fn a_key_rule_without_a_root_checks_the_keys_signature_alone() {
        let key = Key::new(7);
        let rule = key.rule(false);
        // A message signature over the manifest, no log entry: accepted.
        let signer = verify(MANIFEST, &message(MANIFEST, &key.sign(MANIFEST)), &rule)
            .expect("the key's signature");
        assert!(signer.starts_with("key sha256:"), "{signer}");
        // A DSSE statement about the manifest: accepted.
        assert_eq!(
            verify(
                MANIFEST,
                &dsse(&key, MANIFEST, "application/vnd.in-toto+json"),
                &rule
            )
            .expect("the key's statement"),
            signer
        );
        // Another key: refused.
        let other = Key::new(9);
        let e = refused(verify(
            MANIFEST,
            &message(MANIFEST, &other.sign(MANIFEST)),
            &rule,
        ));
        assert!(e.contains("does not verify under the key"), "{e}");
    }

    #[test]
    fn a_key_rule_refuses_other_artifacts_and_certificates() {
        let key = Key::new(7);
        let rule = key.rule(false);
        // Signed and digested other bytes.
        let e = refused(verify(MANIFEST, &message(OTHER, &key.sign(OTHER)), &rule));
        assert!(e.contains("a signature over another artifact"), "{e}");
        // The manifest's digest declared over a signature of other bytes:
        // the signature is checked over the manifest itself.
        let e = refused(verify(
            MANIFEST,
            &message(MANIFEST, &key.sign(OTHER)),
            &rule,
        ));
        assert!(e.contains("does not verify under the key"), "{e}");
        // A statement about another artifact, or not a statement.
        let e = refused(verify(
            MANIFEST,
            &dsse(&key, OTHER, "application/vnd.in-toto+json"),
            &rule,
        ));
        assert!(e.contains("a statement about another artifact"), "{e}");
        let e = refused(verify(MANIFEST, &dsse(&key, MANIFEST, "text/plain"), &rule));
        assert!(e.contains("not an in-toto statement"), "{e}");
        // A certificate where the rule names a key.
        let mut b: serde_json::Value =
            serde_json::from_slice(&message(MANIFEST, &key.sign(MANIFEST))).expect("json");
        b["verificationMaterial"] = json!({"certificate": {"rawBytes": b64(b"not a certificate")}});
        let e = refused(verify(MANIFEST, b.to_string().as_bytes(), &rule));
        assert!(e.contains("carries a certificate"), "{e}");
    }

    #[test]
    fn a_key_rule_with_a_root_requires_the_log_entry() {
        let key = Key::new(7);
        let e = refused(verify(
            MANIFEST,
            &message(MANIFEST, &key.sign(MANIFEST)),
            &key.rule(true),
        ));
        assert!(
            e.contains("no transparency-log entry")
                && e.contains("sign with a log")
                && e.contains("drop `trusted_root`"),
            "{e}"
        );
    }
}
