//! The one wasmtime engine, its linker and the epoch ticker.

use crate::cache::ArtifactCache;
use crate::error::RuntimeError;
use crate::sandbox::HostState;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolhost_contract::clock::{Clock, SystemClock};
use wasmtime::component::Linker;
use wasmtime::{Config, Engine};

/// How often the epoch ticks. A deadline is enforced to within one tick.
pub const DEFAULT_EPOCH_TICK: Duration = Duration::from_millis(5);

/// Wasm stack per call (see [`toolhost_engine::DEFAULT_MAX_WASM_STACK`]).
pub use toolhost_engine::DEFAULT_MAX_WASM_STACK;

/// Settings of a [`Runtime`].
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

/// Shared state behind a [`Runtime`] and every component it loaded.
pub(crate) struct RuntimeInner {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<HostState>,
    pub(crate) cache: ArtifactCache,
    pub(crate) config: RuntimeConfig,
    /// One permit per pool slot: a call waits here for a free instance
    /// instead of failing when the pool is busy.
    pub(crate) slots: Arc<tokio::sync::Semaphore>,
    /// Code runners running at once: at most half the pool, so the calls
    /// their scripts make (each needing a slot while its runner holds one)
    /// always find one: runners alone can never fill the pool.
    pub(crate) runners: Arc<tokio::sync::Semaphore>,
    /// One compilation at a time (FIFO).
    pub(crate) compiles: tokio::sync::Semaphore,
    /// Calls waiting for a pool slot now.
    pub(crate) queued: std::sync::atomic::AtomicUsize,
    /// Sandboxes built since the start (one per instantiation).
    pub(crate) instances: std::sync::atomic::AtomicU64,
    /// Loads so far by how the cache served them, in [`crate::CacheOutcome`] order.
    pub(crate) loads: [std::sync::atomic::AtomicU64; 5],
}

/// What a [`Runtime`] is doing now, and has done (for metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Sandbox instances that may run at once.
    pub slots: usize,
    /// Instances running now.
    pub slots_in_use: usize,
    /// Calls waiting for a free slot now.
    pub queued: usize,
    /// Sandbox instances built since the runtime started (every
    /// `execute`, isolated `render` and load-time `list-tools`).
    pub instances: u64,
    /// Components loaded from the compiled-component cache.
    pub cache_hits: u64,
    /// Components compiled (no artifact, or a stale one).
    pub cache_misses: u64,
    /// Built-ins loaded precompiled.
    pub precompiled: u64,
}

/// Loads and runs tool components. Cheap to clone; one per process is enough.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<RuntimeInner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Builds the engine and linker and starts the epoch ticker thread (it
    /// stops by itself when the last clone of the engine is dropped).
    pub fn new(config: RuntimeConfig) -> Result<Runtime, RuntimeError> {
        let engine = Engine::new(&engine_config(&config))
            .map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        let mut linker = Linker::<HostState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| RuntimeError::Engine(format!("linking WASI: {e:#}")))?;
        crate::write_budget::add_to_linker(&mut linker).map_err(|e| {
            RuntimeError::Engine(format!("linking the budgeted wasi:filesystem: {e:#}"))
        })?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(|e| RuntimeError::Engine(format!("linking wasi:http: {e:#}")))?;
        crate::context::add_to_linker(&mut linker)
            .map_err(|e| RuntimeError::Engine(format!("linking toolhost:tool/context: {e:#}")))?;
        if config.escape_hatch {
            crate::escape::add_to_linker(&mut linker)
                .map_err(|e| RuntimeError::Engine(format!("linking the escape hatch: {e:#}")))?;
        }
        let cache = ArtifactCache::open(config.cache_dir.as_deref(), &engine)?;
        spawn_ticker(&engine, config.epoch_tick);
        let slots = Arc::new(tokio::sync::Semaphore::new(
            config.max_instances.max(1) as usize
        ));
        let runners = Arc::new(tokio::sync::Semaphore::new(
            (config.max_instances / 2).max(1) as usize,
        ));
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                cache,
                config,
                slots,
                runners,
                compiles: tokio::sync::Semaphore::new(1),
                queued: Default::default(),
                instances: Default::default(),
                loads: Default::default(),
            }),
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The settings it was built with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    /// Where calls stage their writes (see [`RuntimeConfig::staging_dir`]).
    pub fn staging_dir(&self) -> PathBuf {
        self.inner.config.staging_dir()
    }

    /// What the runtime is doing now, and the cache's record so far.
    pub fn stats(&self) -> RuntimeStats {
        use std::sync::atomic::Ordering::Relaxed;
        let i = &self.inner;
        let slots = i.config.max_instances.max(1) as usize;
        use crate::cache::CacheOutcome;
        let load = |o: CacheOutcome| i.loads[o.index()].load(Relaxed);
        RuntimeStats {
            slots,
            slots_in_use: slots.saturating_sub(i.slots.available_permits()),
            queued: i.queued.load(Relaxed),
            instances: i.instances.load(Relaxed),
            cache_hits: load(CacheOutcome::Hit),
            cache_misses: load(CacheOutcome::Miss) + load(CacheOutcome::Stale),
            precompiled: load(CacheOutcome::Precompiled),
        }
    }
}

fn engine_config(config: &RuntimeConfig) -> Config {
    toolhost_engine::config(&toolhost_engine::EngineSettings {
        max_wasm_stack: config.max_wasm_stack,
        max_instances: config.max_instances,
    })
}

fn spawn_ticker(engine: &Engine, tick: Duration) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new()
        .name("toolhost-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(tick);
                match weak.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        });
    if let Err(e) = spawned {
        // Without a ticker deadlines are still enforced by the tokio backstop.
        tracing::error!("could not start the epoch ticker: {e}");
    }
}
