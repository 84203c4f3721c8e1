//! The repeat check's link between consecutive calls: a call's identity,
//! and its outcome, which the next call waits for when it is the same call.

use crate::call::{FrozenCall, ParsedArguments};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use toolhost_contract::HashWriter;

/// A call as the next call's repeat check sees it.
#[derive(Clone)]
pub(crate) struct Previous {
    pub(crate) fingerprint: Fingerprint,
    /// Whether it failed, once it has a result (a cancelled call did not fail).
    pub(crate) outcome: Outcome,
}

/// Identity of a call for the repeat check: SHA-256 of agent, tool and
/// canonical arguments.
pub(crate) type Fingerprint = [u8; 32];

/// The fingerprint of `call`.
pub(crate) fn fingerprint(call: &FrozenCall) -> Fingerprint {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(call.agent().unwrap_or("").as_bytes());
    h.update([0]);
    h.update(call.name().as_bytes());
    h.update([0]);
    match call.arguments() {
        ParsedArguments::Json(v) => {
            // Serialized straight into the hasher: no string in between.
            let _ = serde_json::to_writer(HashWriter(&mut h), v);
        }
        ParsedArguments::Raw(r) => h.update(r.as_bytes()),
    }
    h.finalize().into()
}

const PENDING: u8 = 0;
const SUCCEEDED: u8 = 1;
const FAILED: u8 = 2;
const ABANDONED: u8 = 3;

/// One call's outcome, set once (a one-shot broadcast: one atomic and one
/// `Notify`, where a `watch` channel carried eight).
#[derive(Default)]
struct Cell {
    state: AtomicU8,
    notify: Notify,
}

/// Sets the outcome; dropped without [`send`](Self::send), the call counts
/// as abandoned.
pub(crate) struct OutcomeSender(Arc<Cell>);

/// Waits for the outcome.
#[derive(Clone)]
pub(crate) struct Outcome(Arc<Cell>);

/// A new pending outcome.
pub(crate) fn outcome() -> (OutcomeSender, Outcome) {
    let cell = Arc::new(Cell::default());
    (OutcomeSender(cell.clone()), Outcome(cell))
}

impl OutcomeSender {
    /// The call ended: `failed` says whether it failed (a cancellation is not a failure).
    pub(crate) fn send(&self, failed: bool) {
        self.set(if failed { FAILED } else { SUCCEEDED });
    }

    fn set(&self, state: u8) {
        let c = &self.0;
        if c.state
            .compare_exchange(PENDING, state, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            c.notify.notify_waiters();
        }
    }
}

impl Drop for OutcomeSender {
    fn drop(&mut self) {
        self.set(ABANDONED);
    }
}

impl Outcome {
    /// `Some(failed)` once the call ended; `None` if it was abandoned.
    pub(crate) async fn wait(&self) -> Option<bool> {
        let c = &self.0;
        loop {
            // Registered before the state is read, so a send in between is not missed.
            let notified = c.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match c.state.load(Ordering::Acquire) {
                PENDING => notified.await,
                SUCCEEDED => return Some(false),
                FAILED => return Some(true),
                _ => return None,
            }
        }
    }
}

/// The repeat check of stateless requests (MCP 2026-07-28, where every
/// request is its own session): the latest call of each principal, shared
/// by the requests of one process. Bounded: past [`RepeatScopes::CAPACITY`]
/// principals the least recently seen one is forgotten (its next call is
/// checked against nothing). Replicas do not share it: a repeated call that
/// lands on another replica runs (and fails) once more there.
#[derive(Default)]
pub struct RepeatScopes {
    inner: Mutex<Scopes>,
}

#[derive(Default)]
struct Scopes {
    /// The latest call of each principal, with when it was seen.
    last: std::collections::HashMap<String, (u64, Previous)>,
    /// Admissions so far (the recency stamp).
    stamp: u64,
}

impl RepeatScopes {
    /// Most principals remembered.
    pub const CAPACITY: usize = 4096;

    /// Makes `next` the latest call of `principal`; returns the one before.
    pub(crate) fn replace(&self, principal: &str, next: Previous) -> Option<Previous> {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.stamp += 1;
        let stamp = s.stamp;
        if let Some(slot) = s.last.get_mut(principal) {
            return Some(std::mem::replace(slot, (stamp, next)).1);
        }
        if s.last.len() >= Self::CAPACITY
            && let Some(oldest) = s
                .last
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone())
        {
            s.last.remove(&oldest);
        }
        s.last.insert(principal.to_owned(), (stamp, next));
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiter_sees_the_outcome_sent_after_it_started_waiting() {
        let (tx, rx) = outcome();
        let waiter = tokio::spawn(async move { rx.wait().await });
        tokio::task::yield_now().await;
        tx.send(true);
        assert_eq!(waiter.await.ok(), Some(Some(true)));
    }

    #[tokio::test]
    async fn the_first_outcome_stands_and_a_dropped_sender_is_abandoned() {
        let (tx, rx) = outcome();
        tx.send(false);
        tx.send(true);
        drop(tx);
        assert_eq!(rx.wait().await, Some(false));
        let (tx, rx) = outcome();
        drop(tx);
        assert_eq!(rx.wait().await, None);
    }
}
