//! The wasmtime engine settings of toolhost, in one place, because two
//! builds need them to be identical: the runtime's engine, and the build of
//! `toolhost-builtins`, which precompiles the built-in tools so that a
//! machine that never ran toolhost serves them without compiling. wasmtime
//! refuses a precompiled component from an engine whose code-generation
//! settings differ (the runtime then compiles it), so a setting changed
//! here changes both sides at once.

use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig};

/// The wasmtime release toolhost is built on (the workspace pins it exactly,
/// and a test holds this to the pin): `toolhost --version` names it.
pub const WASMTIME_VERSION: &str = "48.0.8";

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

/// What varies between engines: none of it changes the compiled code (the
/// pool's size and the stack limit are run-time settings), so a component
/// precompiled under one loads under any other.
#[derive(Debug, Clone, Copy)]
pub struct EngineSettings {
    /// Wasm stack limit per call.
    pub max_wasm_stack: usize,
    /// Component instances alive at once (the pool's size).
    pub max_instances: u32,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            max_wasm_stack: DEFAULT_MAX_WASM_STACK,
            max_instances: 64,
        }
    }
}

/// The engine configuration for `settings`.
pub fn config(settings: &EngineSettings) -> Config {
    let mut cfg = Config::new();
    cfg.wasm_component_model(true)
        .consume_fuel(true)
        .epoch_interruption(true)
        .cranelift_nan_canonicalization(true)
        .max_wasm_stack(settings.max_wasm_stack)
        // The component-model concurrency machinery is not used by tools and
        // costs per-store set-up on every call.
        .concurrency_support(false);
    let mut pool = PoolingAllocationConfig::default();
    let n = settings.max_instances.max(1);
    pool.total_component_instances(n)
        .total_core_instances(n.saturating_mul(8))
        .total_memories(n.saturating_mul(4))
        .total_tables(n.saturating_mul(8))
        .total_stacks(n)
        .max_memory_size(usize::try_from(MAX_MEMORY_SLOT).unwrap_or(usize::MAX))
        // Reset a slot's pages with memset instead of madvise: a decommit
        // shoots down TLBs on every core, and most calls touch only a few
        // pages.
        .linear_memory_keep_resident(memory_keep_resident())
        .table_keep_resident(KEEP_RESIDENT)
        .async_stack_keep_resident(KEEP_RESIDENT)
        // Ask the kernel which pages a call dirtied (the PAGEMAP_SCAN ioctl,
        // Linux 6.7 and later; elsewhere the memset/madvise split above) and
        // reset just those with memset, up to the keep-resident size: no
        // madvise, no TLB shootdown and no page faults on the slot's next
        // use (`--bench overhead`'s raw floor shows it).
        .pagemap_scan(wasmtime::Enabled::Auto);
    cfg.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    cfg
}

/// The CPU level the built-ins are precompiled for on `target_arch`, when
/// toolhost knows a portable one: x86-64-v2 (SSE4.2 and POPCNT, every
/// x86-64 CPU since 2009) and the aarch64 baseline. wasmtime loads an
/// artifact on any CPU that has every feature it was compiled with, so a
/// binary built on one machine serves the built-ins without compiling on
/// any other of its architecture.
pub fn portable_cpu(target_arch: &str) -> Option<&'static str> {
    match target_arch {
        "x86_64" => Some("x86-64-v2"),
        "aarch64" => Some("baseline"),
        _ => None,
    }
}

/// Sets `cfg` to compile for `target` (a triple) at
/// [`portable_cpu`]'s level instead of the building machine's CPU; the
/// name of that level, or `None` when there is none known for the target
/// (`cfg` is then left to the building machine's CPU).
#[allow(unsafe_code)]
pub fn compile_portably(cfg: &mut Config, target: &str) -> Option<&'static str> {
    let arch = target.split('-').next().unwrap_or_default();
    let cpu = portable_cpu(arch)?;
    cfg.target(target).ok()?;
    if cpu != "baseline" {
        // SAFETY: a named cranelift preset of the target's own ISA; the
        // runtime checks each enabled feature against the CPU before it
        // loads code compiled with it.
        unsafe {
            cfg.cranelift_flag_enable(cpu);
        }
    }
    Some(cpu)
}

#[cfg(test)]
mod tests {
    use super::{WASMTIME_VERSION, release_has_pagemap_scan};

    #[test]
    fn wasmtime_version_is_the_workspace_pin() {
        let manifest = include_str!("../../../Cargo.toml");
        let pin = manifest
            .lines()
            .find(|l| l.starts_with("wasmtime = "))
            .expect("the workspace pins wasmtime");
        assert!(
            pin.contains(&format!("version = \"={WASMTIME_VERSION}\"")),
            "WASMTIME_VERSION {WASMTIME_VERSION} is not the workspace's pin: {pin}"
        );
    }

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
