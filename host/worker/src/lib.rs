//! Runs toolhost's components in worker processes: the second wall.
//!
//! The serving process keeps the MCP edge, the policies, approvals, state
//! secrets, handles, the journal and commits. A worker holds wasmtime and
//! one compiled component, and gets exactly what one call needs over a
//! Unix socket ([`wire`]). Before it runs any guest code it walls itself
//! in ([`wall`]): `no_new_privs`, Landlock (the component's grants read
//! only, its own staging directory read-write, nothing else; no TCP; no
//! signals or abstract sockets out), and a seccomp allow-list (no new
//! processes, sockets, namespaces, mounts, tracing; `execve` kills it). Its
//! environment is empty. An escaped guest is then a walled-in worker, not
//! the serving process.
//!
//! [`Isolated`] is the pipeline's body for such a component: a pool of
//! workers, reused across calls, each call a fresh store and instance. A
//! call's writes come back as data and are staged again in the serving
//! process, which alone commits; its HTTP requests come back to the
//! serving process's egress gate. A worker that dies fails its call with
//! `worker_died` and is replaced.
//!
//! A `toolhost` binary becomes a worker when its first argument is
//! [`WORKER_ARG`]: its `main` calls [`worker_main`] first, and otherwise
//! [`workers_run_this_binary`].

mod child;
#[cfg(debug_assertions)]
mod forge;
mod pool;
pub mod wall;
pub mod wire;

pub use child::main as worker_main;
pub use pool::{
    Isolated, Unavailable, WORKER_ARG, declared, support, worker_exe, workers_run_this_binary,
};
pub use wall::{Support, WallSpec, WallStatus};
