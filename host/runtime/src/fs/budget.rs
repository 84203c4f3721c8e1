//! The per-call write budget of read-write grants: bytes written and
//! entries (files, directories, links) created, and the wrapper that meters
//! a file's output stream. The shadow filesystem (see [`super`]) charges it
//! before every operation that adds data or entries.
//!
//! **When exceeded.** The operation that would pass the budget is not
//! performed; the call traps with [`WriteBudgetExceeded`], reported as
//! `write_budget_exceeded`. Read-only grants cannot write at all, so the
//! budget only ever counts what lands in read-write grants.

use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use wasmtime_wasi::p2::{
    DynOutputStream, FsError, OutputStream, Pollable, StreamError, StreamResult,
};

/// What a call exceeded. Found by downcasting the trap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WriteBudgetExceeded {
    /// More bytes than `max_write_bytes`.
    #[error("the call tried to write more than its {limit} bytes")]
    Bytes {
        /// The policy's limit.
        limit: u64,
    },
    /// More entries than `max_files_created`.
    #[error("the call tried to create more than its {limit} files, directories and links")]
    Files {
        /// The policy's limit.
        limit: u64,
    },
}

/// One call's write budget and what it has used. Shared (through an `Arc`)
/// by the call's store and the file streams it opened.
#[derive(Debug)]
pub(crate) struct WriteBudget {
    max_bytes: u64,
    max_files: u64,
    bytes: AtomicU64,
    files: AtomicU64,
    /// The first budget the call exceeded, kept even when the guest swallows
    /// the trap's effects somehow: the classification reads it.
    exceeded: std::sync::Mutex<Option<WriteBudgetExceeded>>,
    hit: AtomicBool,
}

impl WriteBudget {
    /// A fresh budget of `max_bytes` bytes and `max_files` entries.
    pub(crate) fn new(max_bytes: u64, max_files: u64) -> WriteBudget {
        WriteBudget {
            max_bytes,
            max_files,
            bytes: AtomicU64::new(0),
            files: AtomicU64::new(0),
            exceeded: std::sync::Mutex::new(None),
            hit: AtomicBool::new(false),
        }
    }

    /// Takes `n` from `counter` unless that would pass `max`.
    fn take(
        &self,
        counter: &AtomicU64,
        max: u64,
        n: u64,
        why: WriteBudgetExceeded,
    ) -> Result<(), WriteBudgetExceeded> {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(n).filter(|&total| total <= max)
            })
            .map(drop)
            .map_err(|_| {
                self.hit.store(true, Ordering::SeqCst);
                if let Ok(mut first) = self.exceeded.lock() {
                    first.get_or_insert(why);
                }
                why
            })
    }

    /// Accounts for `n` bytes about to be written.
    pub(crate) fn charge_bytes(&self, n: u64) -> Result<(), WriteBudgetExceeded> {
        let why = WriteBudgetExceeded::Bytes {
            limit: self.max_bytes,
        };
        self.take(&self.bytes, self.max_bytes, n, why)
    }

    /// Accounts for one entry about to be created.
    pub(crate) fn charge_entry(&self) -> Result<(), WriteBudgetExceeded> {
        let why = WriteBudgetExceeded::Files {
            limit: self.max_files,
        };
        self.take(&self.files, self.max_files, 1, why)
    }

    /// Gives back an entry whose creation failed.
    pub(crate) fn refund_entry(&self) {
        let _ = self
            .files
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_sub(1)
            });
    }

    /// Gives back bytes whose write failed.
    pub(crate) fn refund_bytes(&self, n: u64) {
        let _ = self
            .bytes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                Some(used.saturating_sub(n))
            });
    }

    /// The first budget exceeded, if any.
    pub(crate) fn exceeded(&self) -> Option<WriteBudgetExceeded> {
        if !self.hit.load(Ordering::SeqCst) {
            return None;
        }
        self.exceeded.lock().ok().and_then(|e| *e)
    }

    /// Bytes written and entries created so far.
    pub(crate) fn used(&self) -> (u64, u64) {
        (
            self.bytes.load(Ordering::SeqCst),
            self.files.load(Ordering::SeqCst),
        )
    }
}

/// The trap that stops a call past its budget.
pub(crate) fn trap(e: WriteBudgetExceeded) -> FsError {
    FsError::trap(wasmtime::Error::new(e))
}

/// A file output stream that charges every byte to the call's budget before
/// it is written. Only the write paths are its own; the rest delegates.
pub(crate) struct BudgetedStream {
    inner: DynOutputStream,
    budget: Arc<WriteBudget>,
}

impl BudgetedStream {
    /// `inner`, metered against `budget`.
    pub(crate) fn new(inner: DynOutputStream, budget: Arc<WriteBudget>) -> BudgetedStream {
        BudgetedStream { inner, budget }
    }

    fn charge(&self, n: usize) -> StreamResult<()> {
        self.budget
            .charge_bytes(n as u64)
            .map_err(|e| StreamError::Trap(wasmtime::Error::new(e)))
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for BudgetedStream {
    async fn ready(&mut self) {
        self.inner.ready().await;
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for BudgetedStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.charge(bytes.len())?;
        self.inner.write(bytes)
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        self.inner.check_write()
    }

    /// Charged, then the inner stream's own (file streams write directly
    /// instead of through a spawned task).
    async fn blocking_write_and_flush(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.charge(bytes.len())?;
        self.inner.blocking_write_and_flush(bytes).await
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_charged_up_to_the_limit_and_no_further() {
        let b = WriteBudget::new(10, 2);
        assert_eq!(b.charge_bytes(6), Ok(()));
        assert_eq!(b.charge_bytes(4), Ok(()));
        assert_eq!(b.exceeded(), None);
        assert_eq!(
            b.charge_bytes(1),
            Err(WriteBudgetExceeded::Bytes { limit: 10 })
        );
        assert_eq!(b.used(), (10, 0), "a refused charge takes nothing");
        assert_eq!(b.exceeded(), Some(WriteBudgetExceeded::Bytes { limit: 10 }));
        assert!(b.charge_bytes(u64::MAX).is_err(), "no overflow");
    }

    #[test]
    fn entries_are_charged_and_refunded() {
        let b = WriteBudget::new(10, 2);
        assert_eq!(b.charge_entry(), Ok(()));
        b.refund_entry();
        assert_eq!(b.charge_entry(), Ok(()));
        assert_eq!(b.charge_entry(), Ok(()));
        assert_eq!(
            b.charge_entry(),
            Err(WriteBudgetExceeded::Files { limit: 2 })
        );
        assert_eq!(b.used(), (0, 2));
        // The first budget exceeded is the one reported.
        assert!(b.charge_bytes(11).is_err());
        assert_eq!(b.exceeded(), Some(WriteBudgetExceeded::Files { limit: 2 }));
    }
}
