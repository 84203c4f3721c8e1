//! Memory and table limits for one instance.

/// The error `memory.grow` traps with when the policy's limit would be
/// passed; found by downcasting and reported as `memory_limit`.
#[derive(Debug, thiserror::Error)]
#[error("guest tried to grow memory to {desired} bytes; the limit is {limit} bytes")]
pub(crate) struct MemoryLimitExceeded {
    pub(crate) desired: usize,
    pub(crate) limit: usize,
}

/// Most table elements an instance may have: bounds indirect-call tables a
/// hostile guest could grow to exhaust host memory.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// A `ResourceLimiter` that fails memory growth past the policy's limit with
/// its own error, not a generic trap.
#[derive(Debug)]
pub(crate) struct Limiter {
    pub(crate) memory_limit: usize,
    pub(crate) hit: bool,
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_limit {
            self.hit = true;
            return Err(wasmtime::Error::new(MemoryLimitExceeded {
                desired,
                limit: self.memory_limit,
            }));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}
