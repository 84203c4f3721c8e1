//! Where a stdio session's calls run, and the calls its transport has
//! read and not yet answered.
//!
//! A call runs in place (on the transport's thread) while it does not wait
//! and no other call is unanswered: a sequential client's round trip then
//! crosses no thread. Otherwise it runs on the pool, so calls sent together
//! run in parallel.

use rmcp::model::RequestId;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{FailureCode, ToolFailure, ToolResult};

/// Where a session's calls run: in place while they do not wait and no
/// other call is unanswered, on `pool` otherwise.
#[derive(Clone)]
pub(crate) struct Placement {
    pool: Handle,
    open: OpenCalls,
}

impl Placement {
    /// Calls on `pool` when they cannot run in place; `open` is what the
    /// transport counts.
    pub(crate) fn new(pool: Handle, open: OpenCalls) -> Placement {
        Placement { pool, open }
    }

    /// Runs `call`: polled here first when it is the only call unanswered,
    /// and moved to the pool once it waits (or at once, beside others).
    pub(crate) async fn run<F>(&self, call: F) -> ToolResult
    where
        F: Future<Output = ToolResult> + Send + 'static,
    {
        let mut call = Box::pin(call);
        if self.open.alone()
            && let Poll::Ready(result) = poll_once(call.as_mut()).await
        {
            return result;
        }
        match self.pool.spawn(call).await {
            Ok(result) => result,
            Err(e) => ToolResult::from_failure(ToolFailure::new(
                FailureCode::HostError,
                format!("the call's task ended before its result: {e}"),
            )),
        }
    }
}

/// The `tools/call` requests read and not yet answered, with the token
/// that cancels each one answered here, and whether more requests are
/// already waiting to be read.
#[derive(Clone, Default)]
pub(crate) struct OpenCalls(Arc<Mutex<Open>>);

#[derive(Default)]
struct Open {
    /// Every open call; `Some` for the ones answered here.
    calls: HashMap<RequestId, Option<CancellationToken>>,
    backlog: bool,
}

impl OpenCalls {
    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a call may run in place: no other call open, and no request
    /// waiting behind it.
    pub(crate) fn alone(&self) -> bool {
        let open = self.lock();
        open.calls.len() <= 1 && !open.backlog
    }

    pub(crate) fn set_backlog(&self, backlog: bool) {
        self.lock().backlog = backlog;
    }

    /// A call rmcp answers.
    pub(crate) fn track(&self, id: RequestId) {
        self.lock().calls.insert(id, None);
    }

    /// A call answered here: the token that cancels it.
    pub(crate) fn open(&self, id: RequestId) -> CancellationToken {
        let ct = CancellationToken::new();
        self.lock().calls.insert(id, Some(ct.clone()));
        ct
    }

    /// The call answered; whether it was still open (not cancelled).
    pub(crate) fn close(&self, id: &RequestId) -> bool {
        self.lock().calls.remove(id).is_some()
    }

    /// The client cancelled `id`: it gets no response (rmcp drops the
    /// response of a request cancelled, and so does this transport), and a
    /// call answered here stops.
    pub(crate) fn cancel(&self, id: &RequestId) {
        if let Some(Some(ct)) = self.lock().calls.remove(id) {
            ct.cancel();
        }
    }

    /// The client went away: every call answered here stops.
    pub(crate) fn cancel_all(&self) {
        for (_, ct) in self.lock().calls.drain() {
            if let Some(ct) = ct {
                ct.cancel();
            }
        }
    }
}

/// `fut` polled once, here: a call that finishes without waiting ends in
/// this poll, and one that waits is handed on (its next poll registers the
/// waker of wherever it went).
async fn poll_once<F: Future + ?Sized>(mut fut: Pin<&mut F>) -> Poll<F::Output> {
    std::future::poll_fn(move |cx| Poll::Ready(fut.as_mut().poll(cx))).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn done() -> ToolResult {
        ToolResult::from_failure(ToolFailure::new(FailureCode::HostError, "done"))
    }

    /// The thread a call finished on.
    async fn finished_on(placement: &Placement, yields: bool) -> std::thread::ThreadId {
        let (tx, rx) = std::sync::mpsc::channel();
        let result = placement
            .run(async move {
                if yields {
                    tokio::task::yield_now().await;
                }
                let _ = tx.send(std::thread::current().id());
                done()
            })
            .await;
        assert!(result.failed_with(FailureCode::HostError));
        rx.recv().expect("the call ran")
    }

    #[test]
    fn a_cancelled_call_is_closed_and_stopped() {
        let calls = OpenCalls::default();
        let ct = calls.open(RequestId::Number(1));
        calls.track(RequestId::Number(2));
        assert!(!calls.alone());
        calls.cancel(&RequestId::Number(1));
        assert!(ct.is_cancelled());
        // Its response is not written; rmcp's cancelled call is closed too.
        assert!(!calls.close(&RequestId::Number(1)));
        calls.cancel(&RequestId::Number(2));
        assert!(calls.alone());
        let ct = calls.open(RequestId::Number(3));
        calls.set_backlog(true);
        assert!(!calls.alone());
        calls.cancel_all();
        assert!(ct.is_cancelled());
    }

    #[test]
    fn a_call_runs_in_place_until_it_waits_or_another_call_is_open() {
        let pool = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .expect("pool");
        let here = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let open = OpenCalls::default();
        let placement = Placement::new(pool.handle().clone(), open.clone());
        let me = std::thread::current().id();
        here.block_on(async {
            open.track(RequestId::Number(1));
            // Alone and never waiting: start to end on this thread.
            assert_eq!(finished_on(&placement, false).await, me);
            // It waited: it finished on the pool.
            assert_ne!(finished_on(&placement, true).await, me);
            // Another call is open: on the pool from the start.
            open.track(RequestId::Number(2));
            let started_here = Arc::new(AtomicBool::new(false));
            let flag = started_here.clone();
            placement
                .run(async move {
                    flag.store(std::thread::current().id() == me, Ordering::SeqCst);
                    done()
                })
                .await;
            assert!(!started_here.load(Ordering::SeqCst));
        });
    }
}
