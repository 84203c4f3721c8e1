//! What toolhost's serving process and a worker process say to each other,
//! and what the serving process accepts of it.
//!
//! [`message`] holds the messages, each way; [`carried`] the data a call's
//! sandbox hands across a process boundary (what it observed, its HTTP
//! requests, a code runner's calls, a component's declared tools), which
//! the runtime uses in process too. [`accept`] is the serving side's word on
//! a worker's answer: how large it may be, whether what it reports fits the
//! call's policy, and its staged writes taken into the serving process's
//! own area, only in the call's read-write grants and within its write
//! budget.
//!
//! A worker may be compromised, so everything here that reads its bytes is
//! fuzzed (the `worker_answer` target in `tests/fuzz`). The crate has no
//! wasm runtime, which keeps that target quick to build; how frames move is
//! the `toolhost-channel` crate's.

pub mod accept;
pub mod carried;
pub mod message;

pub use carried::{
    CallOutcome, CallReply, Declared, DeclaredTool, ExecutionReport, RelayError, RelayedRequest,
    RelayedResponse,
};
pub use message::{Execute, Executed, FromWorker, Render, Start, ToWorker, WallSpec, WallStatus};
