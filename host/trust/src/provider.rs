//! sigstore-crypto's cryptography on ring (already built for TLS) instead
//! of aws-lc-rs (which needs cmake and a C toolchain): SHA-2 from `sha2`,
//! signature verification from ring. Verification only: keys are never
//! generated or held here.

use sha2::Digest as _;
use sigstore_verify::crypto::provider::{CryptoProvider, HashContext};
use sigstore_verify::crypto::{Error, Result, SigningScheme};
use sigstore_verify::types::HashAlgorithm;

/// The provider.
#[derive(Debug)]
pub(crate) struct Ring;

enum Hasher {
    S256(sha2::Sha256),
    S384(sha2::Sha384),
    S512(sha2::Sha512),
}

impl HashContext for Hasher {
    fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::S256(h) => h.update(data),
            Hasher::S384(h) => h.update(data),
            Hasher::S512(h) => h.update(data),
        }
    }

    fn finalize(self: Box<Self>) -> Vec<u8> {
        match *self {
            Hasher::S256(h) => h.finalize().to_vec(),
            Hasher::S384(h) => h.finalize().to_vec(),
            Hasher::S512(h) => h.finalize().to_vec(),
        }
    }
}

/// ring's algorithm for a scheme (the key bytes are those sigstore-crypto
/// passes: an uncompressed point, a raw Ed25519 key, a PKCS#1 RSA key).
fn algorithm(scheme: SigningScheme) -> Result<&'static dyn ring::signature::VerificationAlgorithm> {
    use ring::signature as s;
    Ok(match scheme {
        SigningScheme::EcdsaP256Sha256 => &s::ECDSA_P256_SHA256_ASN1,
        SigningScheme::EcdsaP256Sha384 => &s::ECDSA_P256_SHA384_ASN1,
        SigningScheme::EcdsaP384Sha256 => &s::ECDSA_P384_SHA256_ASN1,
        SigningScheme::EcdsaP384Sha384 => &s::ECDSA_P384_SHA384_ASN1,
        SigningScheme::Ed25519 => &s::ED25519,
        SigningScheme::RsaPssSha256 => &s::RSA_PSS_2048_8192_SHA256,
        SigningScheme::RsaPssSha384 => &s::RSA_PSS_2048_8192_SHA384,
        SigningScheme::RsaPssSha512 => &s::RSA_PSS_2048_8192_SHA512,
        SigningScheme::RsaPkcs1Sha256 => &s::RSA_PKCS1_2048_8192_SHA256,
        SigningScheme::RsaPkcs1Sha384 => &s::RSA_PKCS1_2048_8192_SHA384,
        SigningScheme::RsaPkcs1Sha512 => &s::RSA_PKCS1_2048_8192_SHA512,
        other => {
            return Err(Error::UnsupportedAlgorithm(format!(
                "{other:?} (toolhost verifies ECDSA, Ed25519 and RSA signatures)"
            )));
        }
    })
}

impl CryptoProvider for Ring {
    fn hash(&self, algorithm: HashAlgorithm) -> Result<Box<dyn HashContext>> {
        Ok(Box::new(match algorithm {
            HashAlgorithm::Sha2256 => Hasher::S256(sha2::Sha256::new()),
            HashAlgorithm::Sha2384 => Hasher::S384(sha2::Sha384::new()),
            HashAlgorithm::Sha2512 => Hasher::S512(sha2::Sha512::new()),
            other => {
                return Err(Error::UnsupportedAlgorithm(format!("{other:?}")));
            }
        }))
    }

    fn verify_raw(
        &self,
        scheme: SigningScheme,
        spki_pubkey_bytes: &[u8],
        data: &[u8],
        signature: &[u8],
    ) -> Result<()> {
        ring::signature::UnparsedPublicKey::new(algorithm(scheme)?, spki_pubkey_bytes)
            .verify(data, signature)
            .map_err(|_| Error::Verification(format!("{scheme:?} signature does not verify")))
    }

    fn verify_prehashed(
        &self,
        scheme: SigningScheme,
        spki_pubkey_bytes: &[u8],
        digest: &[u8],
        signature: &[u8],
    ) -> Result<()> {
        use p256::ecdsa::signature::hazmat::PrehashVerifier;
        let bad =
            |what: &str| Error::Verification(format!("{scheme:?} signature over a digest: {what}"));
        match scheme {
            SigningScheme::EcdsaP256Sha256 | SigningScheme::EcdsaP256Sha384 => {
                let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(spki_pubkey_bytes)
                    .map_err(|_| bad("not a P-256 key"))?;
                let sig = p256::ecdsa::Signature::from_der(signature)
                    .map_err(|_| bad("not a DER signature"))?;
                key.verify_prehash(digest, &sig)
                    .map_err(|_| bad("does not verify"))
            }
            SigningScheme::EcdsaP384Sha256 | SigningScheme::EcdsaP384Sha384 => {
                let key = p384::ecdsa::VerifyingKey::from_sec1_bytes(spki_pubkey_bytes)
                    .map_err(|_| bad("not a P-384 key"))?;
                let sig = p384::ecdsa::Signature::from_der(signature)
                    .map_err(|_| bad("not a DER signature"))?;
                key.verify_prehash(digest, &sig)
                    .map_err(|_| bad("does not verify"))
            }
            other => Err(Error::UnsupportedAlgorithm(format!(
                "{other:?} over a precomputed digest (toolhost verifies ECDSA there)"
            ))),
        }
    }
}
