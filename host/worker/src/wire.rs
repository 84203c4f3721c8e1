//! The channel between the serving process and a worker (the
//! `toolhost-channel` crate: how frames move) and what goes through it
//! (the `toolhost-worker-wire` crate's messages: one frame of JSON each;
//! the compiled artifact goes as one raw frame after `Start`).

pub use toolhost_channel::{Channel, MAX_FRAME, WireError};
pub use toolhost_worker_wire::message::*;
