//! JWT access tokens (RFC 9068 profile): split, decode, check the
//! signature with a JWK, then the claims. Only asymmetric algorithms: a
//! resource server holds no shared secret, and `none` or `HS*` are refused
//! before any key is looked at.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature;
use serde::Deserialize;
use serde_json::Value;

/// Longest token accepted (bytes): far above any real access token.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Why a token was refused (the text goes into `error_description`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not three base64url parts of JSON, or too long.
    #[error("the access token is not a well-formed JWT: {0}")]
    Malformed(String),
    /// An algorithm this server does not accept.
    #[error(
        "the access token's algorithm `{0}` is not accepted (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA)"
    )]
    Algorithm(String),
    /// No key of the issuer's JWKS has this `kid` (or fits the algorithm).
    #[error("no key of the issuer verifies the access token (kid {0:?})")]
    UnknownKey(Option<String>),
    /// The signature does not verify.
    #[error("the access token's signature does not verify")]
    Signature,
    /// A claim is wrong: which, and how.
    #[error("the access token's {0}")]
    Claim(String),
    /// The JWKS could not be fetched.
    #[error("the issuer's keys could not be fetched: {0}")]
    Keys(String),
}

/// The header fields that matter.
#[derive(Debug, Deserialize)]
pub(crate) struct Header {
    pub alg: String,
    #[serde(default)]
    pub kid: Option<String>,
    #[serde(default)]
    pub typ: Option<String>,
}

/// A token split and decoded, its signature not yet checked.
pub(crate) struct Parsed<'a> {
    pub header: Header,
    pub claims: Value,
    /// `header.payload`, what the signature covers.
    pub signed: &'a [u8],
    pub signature: Vec<u8>,
}

/// Splits and decodes `token`.
pub(crate) fn parse(token: &str) -> Result<Parsed<'_>, TokenError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(TokenError::Malformed(format!(
            "{} bytes, more than {MAX_TOKEN_BYTES}",
            token.len()
        )));
    }
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed(
            "not three dot-separated parts".into(),
        ));
    };
    let decode = |what: &str, part: &str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|e| TokenError::Malformed(format!("its {what} is not base64url: {e}")))
    };
    let header: Header = serde_json::from_slice(&decode("header", h)?)
        .map_err(|e| TokenError::Malformed(format!("its header: {e}")))?;
    let claims: Value = serde_json::from_slice(&decode("payload", p)?)
        .map_err(|e| TokenError::Malformed(format!("its payload: {e}")))?;
    if !claims.is_object() {
        return Err(TokenError::Malformed("its payload is not an object".into()));
    }
    Ok(Parsed {
        header,
        claims,
        signed: &token.as_bytes()[..h.len() + 1 + p.len()],
        signature: decode("signature", s)?,
    })
}

/// A verification key from a JWKS.
#[derive(Debug, Clone)]
pub(crate) enum Key {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed point (0x04 ‖ x ‖ y) on P-256 or P-384.
    Ec {
        curve: String,
        point: Vec<u8>,
    },
    Ed25519(Vec<u8>),
}

/// One JWK as published.
#[derive(Debug, Clone)]
pub(crate) struct Jwk {
    pub kid: Option<String>,
    pub alg: Option<String>,
    pub key: Key,
}

impl Jwk {
    /// A JWK from its JSON; `None` for kinds this server cannot use (a
    /// symmetric key, an encryption key, an unknown curve).
    pub fn from_json(v: &Value) -> Option<Jwk> {
        if v.get("use")
            .and_then(Value::as_str)
            .is_some_and(|u| u != "sig")
        {
            return None;
        }
        let b = |k: &str| URL_SAFE_NO_PAD.decode(v.get(k)?.as_str()?).ok();
        let key = match v.get("kty")?.as_str()? {
            "RSA" => Key::Rsa {
                n: b("n")?,
                e: b("e")?,
            },
            "EC" => {
                let curve = v.get("crv")?.as_str()?.to_owned();
                if curve != "P-256" && curve != "P-384" {
                    return None;
                }
                let mut point = vec![4u8];
                point.extend(b("x")?);
                point.extend(b("y")?);
                Key::Ec { curve, point }
            }
            "OKP" if v.get("crv")?.as_str()? == "Ed25519" => Key::Ed25519(b("x")?),
            _ => return None,
        };
        Some(Jwk {
            kid: v.get("kid").and_then(Value::as_str).map(str::to_owned),
            alg: v.get("alg").and_then(Value::as_str).map(str::to_owned),
            key,
        })
    }

    /// Whether this key can verify `alg`.
    pub fn fits(&self, alg: &str) -> bool {
        if self.alg.as_deref().is_some_and(|a| a != alg) {
            return false;
        }
        match (&self.key, alg) {
            (Key::Rsa { .. }, a) => a.starts_with("RS") || a.starts_with("PS"),
            (Key::Ec { curve, .. }, "ES256") => curve == "P-256",
            (Key::Ec { curve, .. }, "ES384") => curve == "P-384",
            (Key::Ed25519(_), "EdDSA") => true,
            _ => false,
        }
    }

    /// Checks `sig` over `msg` with `alg`.
    pub fn verify(&self, alg: &str, msg: &[u8], sig: &[u8]) -> bool {
        match &self.key {
            Key::Rsa { n, e } => {
                let params: &signature::RsaParameters = match alg {
                    "RS256" => &signature::RSA_PKCS1_2048_8192_SHA256,
                    "RS384" => &signature::RSA_PKCS1_2048_8192_SHA384,
                    "RS512" => &signature::RSA_PKCS1_2048_8192_SHA512,
                    "PS256" => &signature::RSA_PSS_2048_8192_SHA256,
                    "PS384" => &signature::RSA_PSS_2048_8192_SHA384,
                    "PS512" => &signature::RSA_PSS_2048_8192_SHA512,
                    _ => return false,
                };
                signature::RsaPublicKeyComponents { n, e }
                    .verify(params, msg, sig)
                    .is_ok()
            }
            Key::Ec { point, .. } => {
                let algorithm: &dyn signature::VerificationAlgorithm = match alg {
                    "ES256" => &signature::ECDSA_P256_SHA256_FIXED,
                    "ES384" => &signature::ECDSA_P384_SHA384_FIXED,
                    _ => return false,
                };
                signature::UnparsedPublicKey::new(algorithm, point)
                    .verify(msg, sig)
                    .is_ok()
            }
            Key::Ed25519(x) => {
                alg == "EdDSA"
                    && signature::UnparsedPublicKey::new(&signature::ED25519, x)
                        .verify(msg, sig)
                        .is_ok()
            }
        }
    }
}

/// Algorithms accepted.
pub(crate) fn accepted(alg: &str) -> bool {
    matches!(
        alg,
        "RS256" | "RS384" | "RS512" | "PS256" | "PS384" | "PS512" | "ES256" | "ES384" | "EdDSA"
    )
}
