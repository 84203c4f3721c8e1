//! The one wasmtime engine, its linker and the epoch ticker.

use crate::cache::ArtifactCache;
use crate::error::RuntimeError;
use crate::sandbox::HostState;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolhost_contract::clock::{Clock, SystemClock};
use wasmtime::component::Linker;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch ticks. A deadline is enforced to within one tick.
pub const DEFAULT_EPOCH_TICK: Duration = Duration::from_millis(5);

/// Wasm stack per call. Bounded so deep recursion ends in `stack_overflow`
/// long before it can exhaust the host thread's stack.
pub const DEFAULT_MAX_WASM_STACK: usize = 512 * 1024;

/// Largest linear memory any instance may have, whatever its policy says:
/// the size of one pooling-allocator slot.
pub const MAX_MEMORY_SLOT: u64 = 4 << 30;

/// Bytes of each table and stack slot reset by memset (not decommitted)
/// when an instance ends: the pages a typical call dirties. Zeroing is as
/// strict as decommitting; only the mechanism differs.
const KEEP_RESIDENT: usize = 64 << 10;

/// Bytes of each linear memory's dirty pages reset by memset (and kept
/// resident) when an instance ends, where the kernel reports dirty pages;
/// dirty pages beyond it are decommitted. What reading a file or two
/// dirties. The cost: a warm slot keeps up to this much resident, so at
/// most 1 MiB × the pool's memory slots.
const MEMORY_KEEP_RESIDENT_SCANNED: usize = 1 << 20;

/// Linear memory kept resident where the kernel cannot report dirty
/// pages: there the lowest addresses are reset by memset whether dirty or
/// not, so a large size would cost every call.
fn memory_keep_resident() -> usize {
    if pagemap_scan_supported() {
        MEMORY_KEEP_RESIDENT_SCANNED
    } else {
        KEEP_RESIDENT
    }
}

/// Whether the kernel has the `PAGEMAP_SCAN` ioctl (Linux 6.7 and later).
fn pagemap_scan_supported() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .is_ok_and(|release| release_has_pagemap_scan(&release))
}

/// Whether a Linux release string (`6.18.44-fc`, `6.1.0-18-amd64`) is 6.7
/// or later.
fn release_has_pagemap_scan(release: &str) -> bool {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (6, 7)
}

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
    pub(crate) slots: tokio::sync::Semaphore,
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
        let cache = ArtifactCache::open(config.cache_dir.as_deref(), &engine)?;
        spawn_ticker(&engine, config.epoch_tick);
        let slots = tokio::sync::Semaphore::new(config.max_instances.max(1) as usize);
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                cache,
                config,
                slots,
            }),
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }
}

fn engine_config(config: &RuntimeConfig) -> Config {
    let mut cfg = Config::new();
    cfg.wasm_component_model(true)
        .consume_fuel(true)
        .epoch_interruption(true)
        .cranelift_nan_canonicalization(true)
        .max_wasm_stack(config.max_wasm_stack)
        // The component-model concurrency machinery is not used by tools and
        // costs per-store set-up on every call.
        .concurrency_support(false);
    let mut pool = PoolingAllocationConfig::default();
    let n = config.max_instances.max(1);
    pool.total_component_instances(n)
        .total_core_instances(n.saturating_mul(8))
        .total_memories(n.saturating_mul(4))
        .total_tables(n.saturating_mul(8))
        .total_stacks(n)
        .max_memory_size(usize::try_from(MAX_MEMORY_SLOT).unwrap_or(usize::MAX))
        // Reset a slot's pages with memset instead of madvise: a decommit
        // shoots down TLBs on every core (measured: 13% of a call-heavy
        // profile), and most calls touch only a few pages.
        .linear_memory_keep_resident(memory_keep_resident())
        .table_keep_resident(KEEP_RESIDENT)
        .async_stack_keep_resident(KEEP_RESIDENT)
        // Ask the kernel which pages a call dirtied (the PAGEMAP_SCAN ioctl,
        // Linux 6.7 and later; elsewhere the memset/madvise split above) and
        // reset just those with memset, up to the keep-resident size: no
        // madvise, no TLB shootdown and no page faults on the slot's next
        // use. Measured: the raw call floor 24.9 → 12.6 µs, a pipeline call
        // 35.7 → 22.3 µs.
        .pagemap_scan(wasmtime::Enabled::Auto);
    cfg.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    cfg
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

#[cfg(test)]
mod tests {
    use super::release_has_pagemap_scan;

    #[test]
    fn pagemap_scan_is_known_from_linux_6_7() {
        for (release, has) in [
            ("6.18.44-fc-v669\n", true),
            ("6.7.0", true),
            ("7.0.1-arch1", true),
            ("6.6.30-generic", false),
            ("6.1.0-18-amd64", false),
            ("5.10.0", false),
            ("", false),
            ("garbage", false),
        ] {
            assert_eq!(release_has_pagemap_scan(release), has, "{release:?}");
        }
    }
}
