//! What this process holds, read from `/proc/self` (Linux): resident memory
//! and open file descriptors. Shared by the soak test (`tests/soak.rs`,
//! through the support library) and the overhead bench (included with
//! `#[path]`), so both measure the same way.

/// Resident memory in KiB (`VmRSS` of `/proc/self/status`), if readable.
pub fn resident_kib() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Open file descriptors (entries of `/proc/self/fd`), if readable.
pub fn open_fds() -> Option<usize> {
    std::fs::read_dir("/proc/self/fd").ok().map(Iterator::count)
}
