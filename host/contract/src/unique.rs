//! Names nothing else picks: temporary files and claims in directories
//! that processes share, possibly with the same pid (each replica's
//! `toolhost serve` is PID 1 in its container, and so is a restarted one).

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A number no other process, and no other call in this one, is likely to
/// return: the standard library's per-process random hash keys, mixed
/// with the wall time, the pid and a counter. Not for secrets.
pub fn unique_u64() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    #[allow(clippy::disallowed_methods)] // a name, never a clock a guest reads
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.write_u64(NEXT.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// [`unique_u64`] as 16 hex digits, for a file name.
pub fn unique_name() -> String {
    format!("{:016x}", unique_u64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_differ_within_a_process() {
        let names: std::collections::HashSet<String> = (0..1000).map(|_| unique_name()).collect();
        assert_eq!(names.len(), 1000);
        assert!(names.iter().all(|n| n.len() == 16));
    }
}
