//! Ending a finished call's sandbox after its response is out.
//!
//! Dropping a call's store gives its instance back to the pool: the kernel
//! is asked which pages the call dirtied and those are reset, a few
//! microseconds that the caller does not need to wait for. A front end that
//! writes a call's response itself runs the call inside [`deferring`]: a
//! sandbox that ends there is dropped when the scope closes, after the
//! response went out, and its pool slot is free only then. Anywhere else a
//! sandbox is dropped where its call ends.

use std::any::Any;
use std::cell::RefCell;

thread_local! {
    /// The sandboxes ended inside this thread's [`deferring`] scope.
    static DEFERRED: RefCell<Option<Vec<Box<dyn Any>>>> = const { RefCell::new(None) };
}

/// Runs `f`, and drops the sandboxes of the calls that end inside it when
/// it returns (not where each call ends). Nested scopes drop at the
/// innermost one's end.
pub fn deferring<R>(f: impl FnOnce() -> R) -> R {
    /// Puts the outer scope back, and drops what this one kept, also when
    /// `f` panics.
    struct Scope(Option<Vec<Box<dyn Any>>>);
    impl Drop for Scope {
        fn drop(&mut self) {
            let outer = self.0.take();
            let ended = DEFERRED.with(|d| std::mem::replace(&mut *d.borrow_mut(), outer));
            drop(ended);
        }
    }
    let _scope = Scope(DEFERRED.with(|d| d.borrow_mut().replace(Vec::new())));
    f()
}

/// Ends `sandbox`: now, or at the close of the [`deferring`] scope this
/// thread is in.
pub(crate) fn retire<T: 'static>(sandbox: T) {
    let now = DEFERRED.with(|d| match d.borrow_mut().as_mut() {
        Some(kept) => {
            kept.push(Box::new(sandbox));
            None
        }
        None => Some(sandbox),
    });
    drop(now);
}

#[cfg(test)]
mod tests {
    use super::{deferring, retire};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn sandboxes_end_at_the_scope_close_or_at_once_outside_one() {
        let dropped = Arc::new(AtomicUsize::new(0));
        retire(Counted(dropped.clone()));
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "no scope: at once");
        let seen_inside = deferring(|| {
            retire(Counted(dropped.clone()));
            let inner = deferring(|| {
                retire(Counted(dropped.clone()));
                dropped.load(Ordering::SeqCst)
            });
            assert_eq!(inner, 1, "kept until the inner scope closed");
            assert_eq!(dropped.load(Ordering::SeqCst), 2, "the inner one's dropped");
            dropped.load(Ordering::SeqCst)
        });
        assert_eq!(seen_inside, 2, "the outer one's kept");
        assert_eq!(dropped.load(Ordering::SeqCst), 3);
        // Another thread's scope keeps nothing of this one's.
        deferring(|| {
            let d = dropped.clone();
            std::thread::spawn(move || retire(Counted(d)))
                .join()
                .expect("joins");
            assert_eq!(dropped.load(Ordering::SeqCst), 4);
        });
    }

    #[test]
    fn a_panic_in_the_scope_still_drops_what_it_kept() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = dropped.clone();
        let r = std::panic::catch_unwind(move || {
            deferring(|| {
                retire(Counted(d));
                panic!("the call panicked");
            })
        });
        assert!(r.is_err());
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        retire(Counted(dropped.clone()));
        assert_eq!(dropped.load(Ordering::SeqCst), 2, "no scope left behind");
    }
}
