//! Processes run to a deadline, their output drained on threads so that a
//! chatty child never blocks on a full pipe.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Collects a pipe's bytes on a thread; readable at any time.
pub struct Drain {
    buf: Arc<Mutex<Vec<u8>>>,
    thread: thread::JoinHandle<()>,
}

impl Drain {
    /// Starts reading `pipe` to its end.
    pub fn new(mut pipe: impl Read + Send + 'static) -> Drain {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = buf.clone();
        let thread = thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(&chunk[..n]);
            }
        });
        Drain { buf, thread }
    }

    /// What was read so far, after waiting up to `grace` for the end of
    /// the pipe (a grandchild, such as a server a client spawned, may hold
    /// it open).
    pub fn text(&self, grace: Duration) -> String {
        let until = Instant::now() + grace;
        while !self.thread.is_finished() && Instant::now() < until {
            thread::sleep(Duration::from_millis(10));
        }
        String::from_utf8_lossy(&self.buf.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

/// What a finished process left.
pub struct Finished {
    /// How it ended.
    pub status: ExitStatus,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

/// Runs `cmd` (stdin closed) to completion, killing it after `deadline`.
pub fn run(cmd: Command, deadline: Duration) -> Finished {
    run_as(cmd, deadline, false)
}

/// Runs `cmd` (stdin closed) to completion in a process group of its own;
/// past `deadline` the whole group (a client, an installer, the server it
/// spawned) is killed, and so is what is left of it when it ends.
pub fn run_in_group(cmd: Command, deadline: Duration) -> Finished {
    run_as(cmd, deadline, true)
}

fn run_as(mut cmd: Command, deadline: Duration, group: bool) -> Finished {
    let started = Instant::now();
    if group {
        cmd.process_group(0);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
    let out = Drain::new(child.stdout.take().expect("stdout piped"));
    let err = Drain::new(child.stderr.take().expect("stderr piped"));
    let end = |child: &mut std::process::Child| {
        if group {
            kill_group(child.id());
        }
    };
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for a child") {
            break status;
        }
        if started.elapsed() > deadline {
            end(&mut child);
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} did not finish within {deadline:?}; stderr so far:\n{}",
                err.text(Duration::from_secs(1))
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    // Nothing a grouped command started may outlive it.
    end(&mut child);
    let grace = Duration::from_secs(10);
    Finished {
        status,
        stdout: out.text(grace),
        stderr: err.text(grace),
        elapsed: started.elapsed(),
    }
}

/// Kills a process group (what a client and the servers it spawned form).
pub fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

/// The child processes of `pid`'s threads.
pub fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}
