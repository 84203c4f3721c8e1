//! The walls a worker builds around itself before any guest code runs:
//! `no_new_privs`, a Landlock ruleset (its grants and its own staging
//! directory, nothing else on disk; no TCP bind or connect; no signals or
//! abstract sockets out of its domain) and a seccomp allow-list.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
pub use toolhost_worker_wire::{WallSpec, WallStatus};

/// What the kernel offers for the walls (probed once per process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Support {
    /// The Landlock ABI version (0: none).
    pub landlock_abi: u32,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
}

impl Support {
    /// Probes the running kernel.
    pub fn probe() -> Support {
        Support {
            landlock_abi: landlock_abi(),
            seccomp: seccomp_available(),
        }
    }

    /// The walls missing on this kernel, by name (empty: both stand).
    /// Landlock below ABI 4 cannot refuse TCP, below 6 cannot scope
    /// signals and abstract sockets: both count as missing.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        if self.landlock_abi < 6 {
            m.push("landlock");
        }
        if !self.seccomp {
            m.push("seccomp");
        }
        m
    }

    /// One line for people: what stands, what is missing.
    pub fn summary(&self) -> String {
        let landlock = match self.landlock_abi {
            0 => "Landlock: unavailable".to_owned(),
            n if n < 6 => format!("Landlock ABI {n} (needs 6: unavailable)"),
            n => format!("Landlock ABI {n}"),
        };
        let seccomp = if self.seccomp {
            "seccomp: yes"
        } else {
            "seccomp: unavailable"
        };
        format!("{landlock}, {seccomp}")
    }
}

#[allow(unsafe_code)]
fn landlock_abi() -> u32 {
    // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    // returns the ABI version, or fails without Landlock.
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_long = 1;
    // SAFETY: a null attribute pointer with size 0 is the documented probe.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(r).unwrap_or(0)
}

#[allow(unsafe_code)]
fn seccomp_available() -> bool {
    // PR_SET_SECCOMP with a null filter fails with EFAULT when filters are
    // supported (the pointer is checked after the mode), EINVAL otherwise.
    // SAFETY: a null filter pointer is never dereferenced by the kernel.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            std::ptr::null::<libc::c_void>(),
        )
    };
    r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT)
}

/// Sets `no_new_privs` and enforces Landlock for this thread and the
/// threads it starts later (Landlock restricts the calling thread only:
/// call it before any other thread exists).
#[allow(unsafe_code)]
pub fn enter_landlock(spec: &WallSpec, status: &mut WallStatus) {
    // SAFETY: prctl with integer arguments only.
    status.no_new_privs = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } == 0;
    match landlock(spec) {
        Ok(true) => status.landlock = true,
        Ok(false) => status
            .notes
            .push("Landlock is not fully enforced by this kernel".into()),
        Err(e) => status.notes.push(format!("Landlock: {e}")),
    }
}

fn landlock(spec: &WallSpec) -> Result<bool, landlock::RulesetError> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
        Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    };
    let abi = ABI::V6;
    let read: BitFlags<AccessFs> = AccessFs::ReadFile | AccessFs::ReadDir;
    let all = AccessFs::from_all(abi) & !AccessFs::Execute;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))?
        .handle_access(AccessNet::from_all(abi))?
        .scope(Scope::from_all(abi))?
        .create()?;
    // The engine's settings read the kernel release (whether page-map
    // scans are available): the same answer as the serving process's.
    let osrelease = PathBuf::from("/proc/sys/kernel/osrelease");
    // wasmtime scans its own page map to keep pages resident cheaply (its
    // own process's: the path resolves to this pid when the rule is made).
    let pagemap = PathBuf::from("/proc/self/pagemap");
    let rules = spec
        .read
        .iter()
        .map(|p| (p, read))
        .chain(spec.write.iter().map(|p| (p, all)))
        .chain([
            (&osrelease, BitFlags::from(AccessFs::ReadFile)),
            (&pagemap, BitFlags::from(AccessFs::ReadFile)),
        ]);
    for (path, access) in rules {
        // A directory that cannot be opened is left out: nothing is
        // granted there, and a call that needs it fails on its own.
        if let Ok(fd) = PathFd::new(path) {
            let access = if path.is_dir() {
                access
            } else {
                access & AccessFs::from_file(abi)
            };
            ruleset = ruleset.add_rule(PathBeneath::new(fd, access))?;
        }
    }
    let status = ruleset.restrict_self()?;
    Ok(status.ruleset == RulesetStatus::FullyEnforced)
}

/// Installs the seccomp filters on every thread of the process (TSYNC):
/// `execve`/`execveat` kill the process; every system call not on the
/// allow-list fails with `EPERM`.
pub fn enter_seccomp(status: &mut WallStatus) {
    match seccomp() {
        Ok(()) => status.seccomp = true,
        Err(e) => status.notes.push(format!("seccomp: {e}")),
    }
}

fn seccomp() -> Result<(), seccompiler::Error> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
    let arch = target_arch();
    let deadly: BTreeMap<i64, Vec<seccompiler::SeccompRule>> =
        [libc::SYS_execve, libc::SYS_execveat]
            .into_iter()
            .map(|n| (n, vec![]))
            .collect();
    let kill: BpfProgram = SeccompFilter::new(
        deadly,
        SeccompAction::Allow,
        SeccompAction::KillProcess,
        arch,
    )?
    .try_into()?;
    let allow: BpfProgram = SeccompFilter::new(
        allowed()?,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
        arch,
    )?
    .try_into()?;
    // The last installed runs first, and its errno wins among equals:
    // clone3's ENOSYS goes after the allow-list's EPERM.
    seccompiler::apply_filter_all_threads(&allow)?;
    clone3_enosys()?;
    seccompiler::apply_filter_all_threads(&kill)?;
    Ok(())
}

fn target_arch() -> seccompiler::TargetArch {
    #[cfg(target_arch = "aarch64")]
    {
        seccompiler::TargetArch::aarch64
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        seccompiler::TargetArch::x86_64
    }
}

/// The system calls a worker makes: memory, threads, time, files (where
/// Landlock lets it), its channel, and nothing that makes a process, a
/// socket, a namespace or a mount, or touches another process.
fn allowed() -> Result<BTreeMap<i64, Vec<seccompiler::SeccompRule>>, seccompiler::Error> {
    use seccompiler::SeccompRule as R;
    use seccompiler::{SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as C};
    let any = |n: libc::c_long| (n, vec![]);
    let mut m: BTreeMap<i64, Vec<R>> = [
        // Files (Landlock decides which).
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_readv,
        libc::SYS_writev,
        libc::SYS_pread64,
        libc::SYS_pwrite64,
        libc::SYS_preadv,
        libc::SYS_pwritev,
        libc::SYS_preadv2,
        libc::SYS_pwritev2,
        libc::SYS_close,
        libc::SYS_fstat,
        libc::SYS_newfstatat,
        libc::SYS_statx,
        libc::SYS_fstatfs,
        libc::SYS_lseek,
        libc::SYS_openat,
        libc::SYS_getdents64,
        libc::SYS_mkdirat,
        libc::SYS_unlinkat,
        libc::SYS_renameat2,
        libc::SYS_linkat,
        libc::SYS_symlinkat,
        libc::SYS_readlinkat,
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        libc::SYS_utimensat,
        libc::SYS_ftruncate,
        libc::SYS_fallocate,
        libc::SYS_fsync,
        libc::SYS_fdatasync,
        libc::SYS_fcntl,
        libc::SYS_flock,
        libc::SYS_faccessat,
        libc::SYS_faccessat2,
        libc::SYS_getcwd,
        libc::SYS_copy_file_range,
        libc::SYS_sendfile,
        libc::SYS_fadvise64,
        // Memory.
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_mprotect,
        libc::SYS_mremap,
        libc::SYS_madvise,
        libc::SYS_brk,
        libc::SYS_memfd_create,
        libc::SYS_membarrier,
        // Threads, signals of its own, time.
        libc::SYS_futex,
        libc::SYS_set_robust_list,
        libc::SYS_rseq,
        libc::SYS_sched_yield,
        libc::SYS_sched_getaffinity,
        libc::SYS_exit,
        libc::SYS_exit_group,
        libc::SYS_rt_sigaction,
        libc::SYS_rt_sigprocmask,
        libc::SYS_rt_sigreturn,
        libc::SYS_sigaltstack,
        libc::SYS_gettid,
        libc::SYS_getpid,
        libc::SYS_getuid,
        libc::SYS_geteuid,
        libc::SYS_getgid,
        libc::SYS_getegid,
        libc::SYS_clock_gettime,
        libc::SYS_clock_getres,
        libc::SYS_clock_nanosleep,
        libc::SYS_nanosleep,
        libc::SYS_gettimeofday,
        libc::SYS_restart_syscall,
        libc::SYS_getrandom,
        libc::SYS_uname,
        // The event loop and the channel (already open: no new sockets).
        libc::SYS_epoll_create1,
        libc::SYS_epoll_ctl,
        libc::SYS_epoll_wait,
        libc::SYS_epoll_pwait,
        libc::SYS_epoll_pwait2,
        libc::SYS_eventfd2,
        libc::SYS_pipe2,
        libc::SYS_poll,
        libc::SYS_ppoll,
        libc::SYS_recvfrom,
        libc::SYS_recvmsg,
        libc::SYS_sendto,
        libc::SYS_sendmsg,
        libc::SYS_shutdown,
    ]
    .into_iter()
    .map(any)
    .collect();
    #[cfg(target_arch = "x86_64")]
    for n in [
        libc::SYS_open,
        libc::SYS_creat,
        libc::SYS_stat,
        libc::SYS_lstat,
        libc::SYS_access,
        libc::SYS_readlink,
        libc::SYS_mkdir,
        libc::SYS_rmdir,
        libc::SYS_unlink,
        libc::SYS_rename,
        libc::SYS_renameat,
        libc::SYS_link,
        libc::SYS_symlink,
        libc::SYS_chmod,
        libc::SYS_getdents,
        libc::SYS_pipe,
        libc::SYS_epoll_create,
        libc::SYS_epoll_wait,
        libc::SYS_arch_prctl,
        libc::SYS_time,
    ] {
        m.insert(n, vec![]);
    }
    // Threads only: a clone without CLONE_THREAD would be a new process.
    // (clone3 passes its flags in memory a filter cannot read: it fails
    // with ENOSYS below, and the C library falls back to clone.)
    let thread = libc::CLONE_THREAD as u64;
    m.insert(
        libc::SYS_clone,
        vec![R::new(vec![C::new(
            0,
            Len::Qword,
            Op::MaskedEq(thread),
            thread,
        )?])?],
    );
    // Signals to its own threads only.
    let pid = u64::from(std::process::id());
    m.insert(
        libc::SYS_tgkill,
        vec![R::new(vec![C::new(0, Len::Dword, Op::Eq, pid)?])?],
    );
    // Naming threads, and setting no_new_privs (one-way); nothing else
    // prctl does.
    m.insert(
        libc::SYS_prctl,
        [
            libc::PR_SET_NAME,
            libc::PR_GET_NAME,
            libc::PR_SET_NO_NEW_PRIVS,
        ]
        .into_iter()
        .map(|op| R::new(vec![C::new(0, Len::Dword, Op::Eq, op as u64)?]))
        .collect::<Result<_, _>>()?,
    );
    // More filters (the two installed after this one): a filter can only
    // take rights away.
    m.insert(
        libc::SYS_seccomp,
        vec![R::new(vec![C::new(
            0,
            Len::Dword,
            Op::Eq,
            u64::from(libc::SECCOMP_SET_MODE_FILTER),
        )?])?],
    );
    // Reading its own limits (the stack's), never setting one.
    m.insert(
        libc::SYS_prlimit64,
        vec![R::new(vec![
            C::new(0, Len::Dword, Op::Eq, 0)?,
            C::new(2, Len::Qword, Op::Eq, 0)?,
        ])?],
    );
    // Non-blocking and close-on-exec flags on its descriptors, and the
    // scan of its own page map (wasmtime resets only the pages a call
    // dirtied; without it, it rewrites a megabyte per instance); nothing
    // a terminal or a device answers.
    const PAGEMAP_SCAN: u64 = 0xc060_6610; // _IOWR('f', 16, struct pm_scan_arg)
    m.insert(
        libc::SYS_ioctl,
        [
            libc::FIONBIO,
            libc::FIOCLEX,
            libc::FIONCLEX,
            libc::FIONREAD,
            PAGEMAP_SCAN,
        ]
        .into_iter()
        .map(|req| R::new(vec![C::new(1, Len::Dword, Op::Eq, req)?]))
        .collect::<Result<_, _>>()?,
    );
    Ok(m)
}

/// clone3 must fail with ENOSYS (not EPERM) for the C library to fall back
/// to clone: a filter of its own.
fn clone3_enosys() -> Result<(), seccompiler::Error> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
    let f: BpfProgram = SeccompFilter::new(
        [(libc::SYS_clone3, vec![])].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        target_arch(),
    )?
    .try_into()?;
    seccompiler::apply_filter_all_threads(&f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_is_missing_below_landlock_abi_6_or_without_seccomp() {
        let full = Support {
            landlock_abi: 7,
            seccomp: true,
        };
        assert!(full.missing().is_empty());
        assert_eq!(full.summary(), "Landlock ABI 7, seccomp: yes");
        let old = Support {
            landlock_abi: 5,
            seccomp: false,
        };
        assert_eq!(old.missing(), ["landlock", "seccomp"]);
        assert!(old.summary().contains("needs 6"), "{}", old.summary());
        let none = Support {
            landlock_abi: 0,
            seccomp: true,
        };
        assert_eq!(none.summary(), "Landlock: unavailable, seccomp: yes");
    }

    #[test]
    fn the_filters_compile_for_this_architecture() {
        // Built, not installed (that would bind the test process).
        let rules = allowed().expect("the allow-list compiles");
        assert!(rules.contains_key(&libc::SYS_read));
        for denied in [
            libc::SYS_execve,
            libc::SYS_ptrace,
            libc::SYS_socket,
            libc::SYS_connect,
            libc::SYS_mount,
            libc::SYS_bpf,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_clone3,
            libc::SYS_process_vm_readv,
            libc::SYS_keyctl,
            libc::SYS_userfaultfd,
            libc::SYS_perf_event_open,
        ] {
            assert!(!rules.contains_key(&denied), "{denied} is allowed");
        }
        let filter: Result<seccompiler::BpfProgram, _> = seccompiler::SeccompFilter::new(
            rules,
            seccompiler::SeccompAction::Errno(libc::EPERM as u32),
            seccompiler::SeccompAction::Allow,
            target_arch(),
        )
        .and_then(TryInto::try_into);
        assert!(filter.is_ok());
    }
}
