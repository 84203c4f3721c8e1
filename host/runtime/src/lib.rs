//! Runs tool components in a capability-limited wasmtime sandbox.
//!
//! A [`Runtime`] owns one wasmtime `Engine` (pooling allocator, fuel, epoch
//! interruption, NaN canonicalization, bounded wasm stack) and an on-disk cache
//! of compiled components. [`Runtime::load`] turns a component file into a
//! [`LoadedComponent`]: compiled (or taken from the cache when the artifact
//! matches the component's SHA-256 and the engine), pre-linked once
//! (`InstancePre`), its imports and tool descriptors read.
//!
//! Every call gets **a fresh `Store` and instance**, whose WASI context is
//! built from the call's [`toolhost_policy::ToolPolicy`] and nothing else:
//! deny by default (no preopens, no env, no sockets, no outgoing HTTP, empty
//! stdin, bounded stdout/stderr). The limits that bound a call — CPU fuel and
//! the wall-clock deadline — come in a [`Budget`] that the pipeline's
//! around-dispatch wrappers fill in; an empty budget cannot run anything
//! (fail closed). Every way a call can end maps to a stable
//! [`toolhost_contract::FailureCode`].
//!
//! A code runner (contract 0.4.0 and 0.5.0's `code-runner` world, under a policy
//! with `call_tools`) calls the host's tools through the [`ToolCaller`]
//! its [`Invocation`] brings; the calls a script makes stage their writes
//! in the script's [`toolhost_effects::Transaction`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use toolhost_runtime::{Budget, Invocation, Runtime, RuntimeConfig};
//! use toolhost_policy::Policy;
//! let rt = Runtime::new(RuntimeConfig::default())?;
//! let component = rt.load(std::path::Path::new("tool_read.wasm")).await?;
//! let policy = Policy::deny_all().for_tool("read");
//! let mut inv = Invocation::new("read", r#"{"path":"/workspace/a.txt"}"#, &policy);
//! inv.budget = Budget { fuel: 1_000_000_000, deadline: std::time::Duration::from_secs(5) };
//! let outcome = component.execute(inv).await;
//! # Ok(()) }
//! ```

mod bindings;
mod cache;
mod calls;
mod component;
mod config;
mod context;
mod egress;
mod engine;
mod entropy;
mod error;
mod escape;
mod fs;
mod imports;
mod invoke;
mod limiter;
mod pipe;
mod plain;
mod retire;
mod sandbox;
mod wasi_config;

pub use bindings::contract_versions;
pub use cache::CacheOutcome;
pub use calls::{CallFuture, Scope, ToolCaller};
pub use component::{LoadedComponent, Unlisted};
pub use config::{CompileProgress, RuntimeConfig};
pub use egress::{EgressRelay, send_relayed};
pub use engine::{Runtime, RuntimeStats};
pub use entropy::Entropy;
pub use error::{LoadError, RuntimeError};
pub use imports::{ImportCheck, ImportVerdict};
pub use invoke::{Budget, Execution, Invocation, Reach};
pub use plain::Unserved;
pub use retire::Retirement;
pub use toolhost_worker_wire::{
    CallOutcome, CallReply, Declared, ExecutionReport, RelayError, RelayedRequest, RelayedResponse,
};
