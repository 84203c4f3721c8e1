//! Where toolhost's remote components come from, and nothing else: a
//! bounded OCI registry client ([`Client`]: resolve a tag, pull a component
//! artifact of the CNCF Wasm OCI layout or `wkg`'s, push one), pinned
//! HTTPS downloads, and the content-addressed [`Store`] they land in. Every
//! blob's digest and size are checked as it streams in, every fetch has a
//! deadline and a minimum rate and every body a bound on its size, plain HTTP is refused but for
//! loopback registries and those marked `insecure`, and credentials come
//! from the toolbox's environment variable or `~/.docker/config.json`.
//!
//! Deciding whether the bytes may run (the lock file, signatures) is the
//! host assembly's; this crate only fetches and checks what it was asked.

pub mod auth;
pub mod http;
pub mod oci;
pub mod store;

pub use http::{Fetch, Limits, Plain};
pub use oci::{Blob, Client, Manifest, Pulled, Resolved};
pub use store::{Store, digest_of};

use std::path::PathBuf;
use toolhost_toolbox_file::Digest;

/// Why a pull, a push or a store read failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The connection or the transfer failed.
    #[error("{url}: {reason}")]
    Io {
        /// What was asked.
        url: String,
        /// Why.
        reason: String,
    },
    /// A fetch took longer than its deadline or a step's bound, or its body
    /// came slower than the minimum rate.
    #[error("{from}: {what}: too slow: {reason} ({url})")]
    TooSlow {
        /// Who answered: the registry's `host:port` (a download's host).
        from: String,
        /// What was fetched (`the manifest of oci://…`).
        what: String,
        /// The URL of the request that was slow.
        url: String,
        /// Which bound, and how far the fetch got.
        reason: String,
    },
    /// A body was larger than its bound.
    #[error("{url}: larger than the limit of {limit} bytes; refused")]
    TooLarge {
        /// What was asked.
        url: String,
        /// The bound.
        limit: u64,
    },
    /// Plain HTTP to a registry that is neither local nor marked insecure.
    #[error(
        "{url}: plain HTTP is refused for a registry not on this machine; if you mean it, set `insecure = true` in the toolbox's [registries.\"HOST:PORT\"]"
    )]
    Insecure {
        /// What was asked.
        url: String,
    },
    /// Bytes that are not what their digest or size says.
    #[error("{url}: refused: {reason}")]
    Integrity {
        /// What was asked.
        url: String,
        /// What did not match.
        reason: String,
    },
    /// The registry wants credentials it did not get, or refused them.
    #[error("{registry}: {reason} (credentials looked for in: {whence})")]
    Auth {
        /// The registry.
        registry: String,
        /// What it said.
        reason: String,
        /// Where credentials were looked for.
        whence: String,
    },
    /// The registry answered with an error status.
    #[error("{reference}: the registry answered {status}: {reason}")]
    Status {
        /// What was asked.
        reference: String,
        /// The HTTP status.
        status: u16,
        /// The registry's own message, clipped.
        reason: String,
    },
    /// What the reference names is not a component artifact toolhost runs.
    #[error("{reference}: {reason}")]
    Artifact {
        /// What was asked.
        reference: String,
        /// Why not.
        reason: String,
    },
    /// The store could not be read or written.
    #[error("the component store at {path}: {reason}")]
    Store {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A stored entry's bytes are not those of its digest: it was changed on disk.
    #[error(
        "{path}: the stored bytes are not {expected} (their SHA-256 is sha256:{actual}): the entry was changed on disk; refused"
    )]
    Corrupt {
        /// The entry.
        path: PathBuf,
        /// What it should hold.
        expected: Digest,
        /// What it holds.
        actual: String,
    },
}
