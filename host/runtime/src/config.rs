//! The settings of a [`crate::Runtime`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolhost_contract::clock::{Clock, SystemClock};

/// How often the epoch ticks. A deadline is enforced to within one tick.
pub const DEFAULT_EPOCH_TICK: Duration = Duration::from_millis(5);

/// Wasm stack per call: the engine's default, which says why it is that size.
pub use toolhost_engine::DEFAULT_MAX_WASM_STACK;

/// Settings of a [`crate::Runtime`].
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where compiled components are cached; `None` compiles on every load.
    pub cache_dir: Option<PathBuf>,
    /// Epoch tick length (deadline granularity).
    pub epoch_tick: Duration,
    /// Wasm stack limit per call.
    pub max_wasm_stack: usize,
    /// How many component instances may be alive at once (pool size): the
    /// bound on concurrent calls. Calls beyond it queue for a free slot.
    pub max_instances: u32,
    /// The clock guests see through `wasi:clocks` (virtual in replay tests).
    pub clock: Arc<dyn Clock>,
    /// Run a guest's file-system calls (open, stat, read a directory, read
    /// and write a file) directly on the thread running the call, instead of
    /// handing each to Tokio's blocking pool and back. On local disks this
    /// is several times faster for tools that touch many files (see the
    /// `scale` benchmark). What it gives up: a file-system call that hangs
    /// (a dead network mount) holds its worker thread, and the call's
    /// deadline fires only once the system call returns. Off, a hung call
    /// still returns `timeout` on time (the blocking-pool thread stays stuck).
    pub fs_on_calling_thread: bool,
    /// Told when a component has to be compiled (no usable cached
    /// artifact), so a front end can show progress: compiling a large
    /// component (an 18 MB Python one) takes tens of seconds.
    pub on_compile: Option<Arc<dyn CompileProgress>>,
    /// Stage every call's writes in its read-write grants and hand them to
    /// the pipeline to commit (default). Off, a call writes straight into
    /// the user's files while it runs, and a failed call leaves what it had
    /// written: only for measuring what staging costs (the `effects`
    /// benchmark's baseline).
    pub stage_writes: bool,
    /// Where guests' allowed outgoing HTTP requests are sent from, when
    /// not from this process: a worker process relays them to the serving
    /// process's gate (`None`: sent from here).
    pub egress_relay: Option<Arc<dyn crate::egress::EgressRelay>>,
    /// Test builds only: link `toolhost:escape/hatch` (see the
    /// `escape-hatch` feature). Ignored by every build without it.
    pub escape_hatch: bool,
}

impl RuntimeConfig {
    /// Where calls stage their writes: `staging` in the cache directory,
    /// else in the user's default one (never a shared temporary path: the
    /// staged bytes are the user's files).
    pub fn staging_dir(&self) -> PathBuf {
        match &self.cache_dir {
            Some(c) => c.join("staging"),
            None => toolhost_effects::private_dir("staging"),
        }
    }
}

/// Progress of compiling a component that was not in the cache.
pub trait CompileProgress: Send + Sync + std::fmt::Debug {
    /// Compiling `origin` (`bytes` long) starts; the compilation ends when
    /// the returned guard is dropped.
    fn compiling(&self, origin: &std::path::Path, bytes: usize) -> Box<dyn Send>;
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cache_dir: None,
            epoch_tick: DEFAULT_EPOCH_TICK,
            max_wasm_stack: DEFAULT_MAX_WASM_STACK,
            max_instances: 64,
            clock: SystemClock::shared(),
            fs_on_calling_thread: true,
            on_compile: None,
            stage_writes: true,
            egress_relay: None,
            escape_hatch: false,
        }
    }
}
