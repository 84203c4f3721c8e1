//! The one wasmtime engine, its linker and the epoch ticker.

use crate::cache::ArtifactCache;
use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::sandbox::HostState;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use wasmtime::component::Linker;
use wasmtime::{Config, Engine};

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
    /// Ticks the epoch while calls run.
    pub(crate) ticker: Arc<Ticker>,
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
        crate::fs::add_to_linker(&mut linker, HostState::budgeted_fs).map_err(|e| {
            RuntimeError::Engine(format!("linking the budgeted wasi:filesystem: {e:#}"))
        })?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(|e| RuntimeError::Engine(format!("linking wasi:http: {e:#}")))?;
        crate::sandbox::add_to_linker(&mut linker)
            .map_err(|e| RuntimeError::Engine(format!("linking toolhost:tool/context: {e:#}")))?;
        crate::wasi_config::add_to_linker(&mut linker)
            .map_err(|e| RuntimeError::Engine(format!("linking wasi:config: {e:#}")))?;
        if config.escape_hatch {
            crate::escape::add_to_linker(&mut linker)
                .map_err(|e| RuntimeError::Engine(format!("linking the escape hatch: {e:#}")))?;
        }
        let cache = ArtifactCache::open(config.cache_dir.as_deref(), &engine)?;
        let ticker = Ticker::start(&engine, config.epoch_tick);
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
                ticker,
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

/// Advances the engine's epoch while calls run and parks while none do, so
/// an idle host (or an idle worker process) wakes no core: a ticker that
/// slept 5 ms forever cost every process 200 wake-ups a second.
pub(crate) struct Ticker {
    state: Mutex<TickerState>,
    wake: Condvar,
    /// Epochs advanced so far.
    ticks: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct TickerState {
    running: usize,
    closed: bool,
}

/// Held by a running call: the ticker ticks while one exists.
pub(crate) struct Ticking<'a>(&'a Ticker);

impl Ticker {
    fn start(engine: &Engine, tick: Duration) -> Arc<Ticker> {
        let ticker = Arc::new(Ticker {
            state: Mutex::new(TickerState::default()),
            wake: Condvar::new(),
            ticks: Default::default(),
        });
        let weak = engine.weak();
        let shared = ticker.clone();
        let spawned = std::thread::Builder::new()
            .name("toolhost-epoch".into())
            .spawn(move || {
                while shared.await_calls() {
                    std::thread::sleep(tick);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                    shared
                        .ticks
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        if let Err(e) = spawned {
            // Without a ticker deadlines are still enforced by the tokio backstop.
            tracing::error!("could not start the epoch ticker: {e}");
        }
        ticker
    }

    /// Marks a call running until the guard drops.
    pub(crate) fn enter(&self) -> Ticking<'_> {
        let mut state = self.lock();
        state.running += 1;
        if state.running == 1 {
            self.wake.notify_one();
        }
        Ticking(self)
    }

    /// Blocks while no call runs; false once the runtime is gone.
    fn await_calls(&self) -> bool {
        let mut state = self.lock();
        while state.running == 0 && !state.closed {
            state = self.wake.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        !state.closed
    }

    fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_one();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TickerState> {
        // The counter stays right even if a holder panicked.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Ticking<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.running = state.running.saturating_sub(1);
    }
}

impl Drop for RuntimeInner {
    fn drop(&mut self) {
        self.ticker.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;
    use std::time::Instant;

    #[test]
    fn ticks_only_while_a_call_runs() {
        let engine = Engine::new(&Config::new()).expect("engine");
        let ticker = Ticker::start(&engine, Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(ticker.ticks.load(Relaxed), 0, "ticked with no call running");
        {
            let _running = ticker.enter();
            let waited = Instant::now();
            while ticker.ticks.load(Relaxed) == 0 {
                assert!(waited.elapsed() < Duration::from_secs(10), "never ticked");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let after = ticker.ticks.load(Relaxed);
        std::thread::sleep(Duration::from_millis(50));
        // One tick may have been asleep when the call ended; no more.
        assert!(ticker.ticks.load(Relaxed) <= after + 1, "kept ticking");
        ticker.close();
    }
}
