//! The escape hatch (test builds only): `toolhost:escape/hatch`, through
//! which a test guest runs an operation natively in the process that runs
//! it (the serving process, or a worker), as a guest that broke out of
//! wasmtime would. The second wall's tests use it to show what Landlock
//! and seccomp stop, and that the same attempts succeed without them.
//!
//! Compiled only with the `escape-hatch` feature *and* debug assertions:
//! an optimized build never links it, whatever features unify.

use crate::sandbox::HostState;
use wasmtime::component::Linker;

/// The hatch's interface name.
#[cfg_attr(not(all(feature = "escape-hatch", debug_assertions)), allow(dead_code))]
const HATCH: &str = "toolhost:escape/hatch@0.1.0";

/// Whether `import` is the hatch and this build links it.
pub(crate) fn provides(import: &str) -> bool {
    cfg!(all(feature = "escape-hatch", debug_assertions)) && import == HATCH
}

/// Links the hatch (nothing in a build without it).
#[cfg(not(all(feature = "escape-hatch", debug_assertions)))]
pub(crate) fn add_to_linker(_: &mut Linker<HostState>) -> wasmtime::Result<()> {
    Ok(())
}

/// Links the hatch.
#[cfg(all(feature = "escape-hatch", debug_assertions))]
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.instance(HATCH)?.func_wrap(
        "attempt",
        |_store, (op, arg): (String, String)| -> wasmtime::Result<(Result<String, String>,)> {
            let r = attempt(&op, &arg);
            tracing::warn!(op, arg, ok = r.is_ok(), "escape hatch used (a test build)");
            Ok((r,))
        },
    )?;
    Ok(())
}

/// Runs one operation natively: `Ok` with what it got, `Err` with the OS
/// error. `parent` as a pid means this process's parent.
#[cfg(all(feature = "escape-hatch", debug_assertions))]
#[allow(unsafe_code)]
fn attempt(op: &str, arg: &str) -> Result<String, String> {
    use std::io::Read as _;
    let os = |e: std::io::Error| e.to_string();
    let pid = || -> Result<libc::pid_t, String> {
        if arg == "parent" {
            // SAFETY: getppid has no preconditions.
            Ok(unsafe { libc::getppid() })
        } else {
            arg.parse().map_err(|_| format!("not a pid: {arg}"))
        }
    };
    let errno = |r: libc::c_long| {
        if r < 0 {
            Err(std::io::Error::last_os_error().to_string())
        } else {
            Ok(r.to_string())
        }
    };
    match op {
        "read" => {
            let mut f = std::fs::File::open(arg).map_err(os)?;
            let mut buf = vec![0; 64 << 10];
            let n = f.read(&mut buf).map_err(os)?;
            Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
        }
        "write" => std::fs::write(arg, b"escaped")
            .map(|()| "written".into())
            .map_err(os),
        "list" => {
            let names: Vec<String> = std::fs::read_dir(arg)
                .map_err(os)?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            Ok(names.join(","))
        }
        "connect" => {
            let addr: std::net::SocketAddr =
                arg.parse().map_err(|_| format!("not an address: {arg}"))?;
            std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2))
                .map(|_| "connected".into())
                .map_err(os)
        }
        "bind" => std::net::TcpListener::bind(arg)
            .map(|l| format!("bound {:?}", l.local_addr().ok()))
            .map_err(os),
        "unix" => std::os::unix::net::UnixStream::connect(arg)
            .map(|_| "connected".into())
            .map_err(os),
        "spawn" => {
            // A new process (fork and exec).
            let out = std::process::Command::new(arg)
                .args(["-c", "echo escaped"])
                .output()
                .map_err(os)?;
            if out.status.success() {
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            } else {
                Err(format!("the child ended with {}", out.status))
            }
        }
        "exec" => {
            // This process replaced: the wall ends it instead.
            let path = std::ffi::CString::new(arg).map_err(|e| e.to_string())?;
            let argv = [path.as_ptr(), std::ptr::null()];
            let envp = [std::ptr::null()];
            // SAFETY: NUL-terminated argv and envp of valid C strings.
            unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
            Err(std::io::Error::last_os_error().to_string())
        }
        "ptrace" => {
            let pid = pid()?;
            // SAFETY: PTRACE_ATTACH takes a pid and no pointers.
            let r = unsafe { libc::ptrace(libc::PTRACE_ATTACH, pid, 0, 0) };
            if r == 0 {
                // SAFETY: as above.
                unsafe { libc::ptrace(libc::PTRACE_DETACH, pid, 0, 0) };
            }
            errno(r)
        }
        "process_vm_readv" => {
            let pid = pid()?;
            let mut buf = [0u8; 8];
            let local = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            let remote = libc::iovec {
                iov_base: 0x1000 as *mut libc::c_void,
                iov_len: buf.len(),
            };
            // SAFETY: both iovecs describe buffers of the given length.
            let r = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
            errno(r as libc::c_long)
        }
        "signal" => {
            // Signal 0: only whether a signal could be sent.
            // SAFETY: kill with signal 0 sends nothing.
            errno(libc::c_long::from(unsafe { libc::kill(pid()?, 0) }))
        }
        "socket" => {
            // SAFETY: socket takes no pointers; the fd is closed at once.
            let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
            if fd >= 0 {
                // SAFETY: fd is ours.
                unsafe { libc::close(fd) };
            }
            errno(libc::c_long::from(fd))
        }
        "unshare" => {
            // SAFETY: unshare takes flags only.
            errno(libc::c_long::from(unsafe {
                libc::unshare(libc::CLONE_NEWUSER)
            }))
        }
        "bpf" | "userfaultfd" | "perf_event_open" | "keyctl" | "mount" => {
            let nr = match op {
                "bpf" => libc::SYS_bpf,
                "userfaultfd" => libc::SYS_userfaultfd,
                "perf_event_open" => libc::SYS_perf_event_open,
                "keyctl" => libc::SYS_keyctl,
                _ => libc::SYS_mount,
            };
            // Called with zero arguments: the kernel's refusal (EINVAL,
            // EFAULT) means the call got through; EPERM is the wall's.
            // SAFETY: null arguments are rejected by the kernel, not read.
            errno(unsafe { libc::syscall(nr, 0, 0, 0, 0, 0) })
        }
        other => Err(format!("unknown operation {other}")),
    }
}
