//! The toolbox file, `toolhost.toml`: which tool components a host runs,
//! where each comes from, and under which policy. `toolhost-toolbox`
//! assembles a host from it; this crate only parses, so it builds without
//! the sandbox and is fuzzed (`tests/fuzz`).
//!
//! ```toml
//! version = 1                       # required; only 1 is accepted
//! mode = "native"                   # how tools are offered: "native" (each its own schema; the
//!                                   # default), "code" (run_code, a script that calls them),
//!                                   # or "both"
//! language = "javascript"           # the scripts' language in code mode: "javascript" (the
//!                                   # default) or "python"
//! defer_over = 50                   # the default: with more tools than this, the tools of
//!                                   # components not marked eager are deferred: callable by
//!                                   # name, found by `search_tools`, not advertised
//!
//! [[component]]                     # one or more
//! source = "builtin:read"           # a built-in tool, or the path of a .wasm component file
//! policy = "policies/read.toml"     # a policy file; optional for built-ins (their default applies)
//! prefix = "ws_"                    # optional: prepended to every tool name of this component
//! advertise = "eager"               # optional: "eager" (always advertised; built-ins are,
//!                                   # unless told otherwise) or "deferred" (never)
//!
//! [[component]]
//! source = "tools/csv.wasm"
//! [component.policy]                # an inline policy: the keys of a policy file
//! decision = "allow"                # (`version` optional, and only 1)
//! [[component.policy.fs]]
//! host = "data"
//! guest = "/data"
//!
//! [[component]]                     # a remote component, pinned by toolhost.lock
//! source = "oci://ghcr.io/acme/csv:1.2"   # or …@sha256:DIGEST
//! policy = "policies/csv.toml"
//!
//! [[component]]
//! source = "https://example.com/tools/csv.wasm"
//! digest = "sha256:…"               # required for https sources
//! policy = "policies/csv.toml"
//!
//! [registries."localhost:5000"]     # optional, per registry
//! insecure = true                   # plain HTTP (implied for loopback registries)
//! auth_env = "TOOLHOST_REGISTRY_AUTH"   # `user:password`, or `Bearer TOKEN`
//! deadline_secs = 60                # the default: one fetch (manifest, token, signature),
//!                                   # all its requests; a layer gets its size at min_rate more
//! min_rate = 16384                  # the default, bytes/s each body averages after 5 s (0: none)
//!
//! [journal]                         # committed file changes kept for undo (optional)
//! max_mib = 512                     # the default; the oldest go first
//! max_days = 7                      # the default
//! sync = false                      # the default; true: fsync each commit step
//!
//! [[trust]]                         # whose signatures are accepted, per prefix
//! prefix = "ghcr.io/acme/"          # REGISTRY/REPOSITORY prefix
//! key = "keys/acme.pub"             # a PEM public key: alone, the key's signature alone is
//!                                   # checked (no log entry needed); with `trusted_root`, its
//!                                   # log entry is required and checked too; or keyless:
//! # identity = "https://github.com/acme/tools/.github/workflows/release.yml@refs/heads/main"
//! # issuer = "https://token.actions.githubusercontent.com"
//! # trusted_root = "trusted_root.json"
//! signature = "required"            # the default; or "optional"
//! ```
//!
//! Relative paths (component files, policy files, and the `host` of inline
//! `[[fs]]` grants) are relative to the toolbox file's directory. Paths are
//! not checked for existence here; policy files are loaded later, by whoever
//! assembles the host. Unknown keys are rejected everywhere, inline policies
//! included, and every error names the file, line and column, like a
//! [`PolicyError`](toolhost_policy::PolicyError).
//!
//! ```
//! use std::path::Path;
//! use toolhost_toolbox_file::{PolicySource, Source, Toolbox};
//!
//! let text = r#"
//! version = 1
//!
//! [[component]]
//! source = "builtin:read"
//! prefix = "ws_"
//!
//! [[component]]
//! source = "tools/csv.wasm"
//! [component.policy]
//! decision = "allow"
//! [[component.policy.fs]]
//! host = "data"
//! guest = "/data"
//! "#;
//! let toolbox = Toolbox::parse(text, "toolhost.toml", Path::new("/srv"), &["read", "write"])?;
//!
//! let read = &toolbox.components[0];
//! assert_eq!(read.source, Source::Builtin("read".into()));
//! assert_eq!(read.policy, PolicySource::BuiltinDefault);
//! assert_eq!(read.prefix.as_deref(), Some("ws_"));
//!
//! let csv = &toolbox.components[1];
//! assert_eq!(csv.source.to_string(), "/srv/tools/csv.wasm");
//! assert_eq!(csv.line, 8);
//! let PolicySource::Inline(policy) = &csv.policy else { panic!("inline") };
//! assert_eq!(policy.component().sandbox.fs[0].host, Path::new("/srv/data"));
//!
//! // Errors name the file, line and column.
//! let err = Toolbox::parse(
//!     "version = 1\n[[component]]\nsource = \"builtin:raed\"\n",
//!     "toolhost.toml",
//!     Path::new("/srv"),
//!     &["read", "write"],
//! )
//! .unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "toolhost.toml:3:10: unknown built-in tool `raed`, expected `read` or `write`"
//! );
//! # Ok::<(), toolhost_toolbox_file::ToolboxError>(())
//! ```

mod lower;
mod raw;
mod types;

pub mod lock;
pub mod remote;

pub use lock::{LOCK_VERSION, LockEntry, LockFile};
pub use remote::{Digest, OCI_SCHEME, OciRef};
pub use toolhost_policy::{Language, Mode};
pub use types::{
    Advertise, ComponentEntry, DEFAULT_DEFER_OVER, DEFAULT_FILE_NAME, JournalSettings,
    MAX_PREFIX_LEN, PolicySource, RegistrySettings, Requirement, Signer, Source, TOOLBOX_VERSION,
    TaskSettings, Toolbox, ToolboxError, TrustRule,
};
