//! Ending a finished call's sandbox after its response is out.
//!
//! Dropping a call's store gives its instance back to the pool: the kernel
//! is asked which pages the call dirtied and those are reset, a few
//! microseconds that the caller does not need to wait for. A front end that
//! writes a call's response itself hands the call a [`Retirement`]: a
//! sandbox that ends is kept there, and dropped with the front end's last
//! handle, after the response went out; its pool slot is free only then.
//! Without one a sandbox is dropped where its call ends.

use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError};

/// Where the sandboxes of one response's calls wait to be dropped (a clone
/// is the same place): they are dropped with the last handle.
#[derive(Clone, Default)]
pub struct Retirement(Arc<Mutex<Vec<Box<dyn Any + Send>>>>);

impl Retirement {
    /// An empty place.
    pub fn new() -> Retirement {
        Retirement::default()
    }

    /// Keeps `sandbox` until the last handle drops.
    fn keep(&self, sandbox: Box<dyn Any + Send>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(sandbox);
    }
}

impl std::fmt::Debug for Retirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retirement").finish_non_exhaustive()
    }
}

/// Ends `sandbox`: now, or with the last handle of `to`.
pub(crate) fn retire<T: Send + 'static>(sandbox: T, to: Option<&Retirement>) {
    match to {
        Some(place) => place.keep(Box::new(sandbox)),
        None => drop(sandbox),
    }
}

#[cfg(test)]
mod tests {
    use super::{Retirement, retire};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn sandboxes_end_with_the_last_handle_or_at_once_without_one() {
        let dropped = Arc::new(AtomicUsize::new(0));
        retire(Counted(dropped.clone()), None);
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "no place: at once");
        let place = Retirement::new();
        let call = place.clone();
        retire(Counted(dropped.clone()), Some(&call));
        // Another thread's call ends into the same place.
        let d = dropped.clone();
        std::thread::spawn(move || retire(Counted(d), Some(&call)))
            .join()
            .expect("joins");
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "kept while a handle lives"
        );
        drop(place);
        assert_eq!(dropped.load(Ordering::SeqCst), 3);
    }
}
