//! Hostile test tools: one component whose tools misbehave on purpose, so
//! the host's integration tests can prove the sandbox limits (time, fuel,
//! memory, stack, output, filesystem, fresh instances, output validation,
//! traps and render failures). All annotations are false and no tool
//! declares path arguments, so the host does not pre-check any path.
//!
//! | tool | behaviour | the host should report |
//! | --- | --- | --- |
//! | `spin` | loops forever without host calls | `timeout` / `fuel_exhausted` |
//! | `memory_bomb` | allocates 1 MiB blocks until allocation fails | `memory_limit` |
//! | `recurse` | unbounded non-tail recursion | `stack_overflow` |
//! | `flood_stdout` | prints 64 KiB lines forever | `output_limit` |
//! | `read_file` | `{path}` → `{content}` with `std::fs` | WASI refuses escapes: `io_error` |
//! | `write_file` | `{path, content}` → `{ok}` | read-only preopen: `io_error` |
//! | `env` | `{name}` → `{value}` | what the host passes |
//! | `counter` | a static counter → `{count}` | always 1 (fresh instances) |
//! | `echo` | `{…}` → `{args}`, render `None` | the host's default render |
//! | `bad_output` | returns `{"n":"x"}`, schema says integer | `output_invalid` |
//! | `panic` | panics | `trap` |
//! | `slow_sleep` | `{ms}` → sleeps (blocking host call) | timeout backstop |
//! | `random` | random bytes (secure, insecure) as hex, wall clock ns, three monotonic reads | deterministic replay |
//! | `fail` | failure `boom` / `it failed` | the tool's failure |
//! | `render_fail` | `{ok: true}`, render panics | `render_failed` |
//! | `exit` | `{status}` → `std::process::exit(status)` | `guest_exit` |
//! | `abort` | `std::process::abort()` | `trap` |
//! | `hard_link` | `{from, to}` → `std::fs::hard_link` | refused across preopens: `io_error` |
//! | `rename` | `{from, to}` → `std::fs::rename` | refused across preopens: `io_error` |
//! | `truncate` | `{path}` → open for write with truncate, then `set_len(0)` | read-only preopen: `io_error` |
//! | `list_dir` | `{path}` → `{names}` with `std::fs::read_dir` | only inside preopens |
//! | `raw_open` | `{path, write}` → raw `open-at` on the first preopen (any bytes, NUL too) | WASI refuses: `io_error` |
//! | `symlink` | `{target, link}` → raw `symlink-at` on the first preopen | the link is never followed out |
//! | `fill` | `{path, bytes}` → writes `bytes` in 64 KiB chunks | write budget: `write_budget_exceeded` |
//! | `spawn_files` | `{count, dirs}` → creates `count` files (or directories) | write budget: `write_budget_exceeded` |
//! | `grow` | `{path, size}` → creates a file and `set_len(size)` | write budget: `write_budget_exceeded` |
//! | `invalid_json` | returns `{"ok": tru` | `output_invalid` |
//! | `huge_value` | `{mb}` → `{blob}`, a string of `mb` MiB | `value_too_large` over `max_value_bytes`; else what the model reads is bounded by `max_result_bytes` |
//! | `deep_value` | `{depth}` → `depth` nested arrays | `output_invalid`, no host stack overflow |
//! | `render_spin` | `{ok: true}`, render loops forever | `render_failed` (timeout / fuel) |
//! | `render_huge` | `{mb}` → `{ok: true}`, render returns `mb` MiB of text | bounded by `max_result_bytes` |

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_kit::{Annotations, Content, Tool, ToolError};

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// A value that is never produced (the tool does not return).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Never {}

/// `{ok: true}`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OkValue {
    /// Always true.
    pub ok: bool,
}

fn io_error(e: &std::io::Error) -> ToolError {
    ToolError::new("io_error", e.to_string())
        .with_info(serde_json::json!({ "kind": format!("{:?}", e.kind()) }))
}

/// Declares a tool with all annotations false and no path arguments.
macro_rules! hostile {
    ($ty:ident, $name:literal, $desc:literal, $args:ty => $out:ty, |$a:pat_param| $body:expr) => {
        #[doc = $desc]
        pub struct $ty;
        impl Tool for $ty {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = $desc;
            type Args = $args;
            type Output = $out;
            fn annotations() -> Annotations {
                Annotations::NONE
            }
            fn execute($a: $args) -> Result<$out, ToolError> {
                $body
            }
        }
    };
}

hostile!(Spin, "spin", "Loops forever without host calls.", NoArgs => Never, |_| {
    let mut x: u64 = 0;
    loop {
        x = black_box(x.wrapping_add(1));
    }
});

hostile!(MemoryBomb, "memory_bomb", "Allocates and touches 1 MiB blocks until allocation fails.", NoArgs => Never, |_| {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut n: u8 = 0;
    loop {
        // An allocation failure aborts (a trap), as it does in ordinary code.
        let mut block = vec![0u8; 1 << 20];
        for (i, b) in block.iter_mut().enumerate().step_by(4096) {
            *b = n.wrapping_add(i as u8);
        }
        n = n.wrapping_add(1);
        blocks.push(black_box(block));
    }
});

static mut RECURSION_SINK: u64 = 0;

/// Unbounded non-tail recursion. The volatile store before the call and the
/// non-associative use of the result afterwards keep LLVM from turning it into
/// a loop or removing it; locals stay in wasm locals, so it is the wasm call
/// stack (not the linear-memory shadow stack) that overflows.
#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(n: u64) -> u64 {
    // SAFETY: a plain volatile store to a static that nothing else reads
    // concurrently (components are single-threaded).
    unsafe { std::ptr::write_volatile(&raw mut RECURSION_SINK, n) };
    let r = recurse(n.wrapping_add(1));
    r.rotate_left(3) ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

hostile!(Recurse, "recurse", "Recurses without bound.", NoArgs => Never, |_| {
    let _ = black_box(recurse(black_box(0)));
    Err(ToolError::new("unreachable", "recursion returned"))
});

hostile!(FloodStdout, "flood_stdout", "Writes 64 KiB lines to stdout forever.", NoArgs => Never, |_| {
    let mut line = "x".repeat(64 * 1024 - 1);
    line.push('\n');
    loop {
        print!("{line}");
    }
});

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathArgs {
    /// Path (resolved against the working directory when relative).
    pub path: String,
}

/// Value of `read_file`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileContent {
    /// The file's content (lossy UTF-8).
    pub content: String,
}

hostile!(ReadFile, "read_file", "Reads a file with std::fs, with no declared path argument.", PathArgs => FileContent, |a| {
    let path = toolhost_kit::resolve_path(&a.path);
    let bytes = std::fs::read(&path).map_err(|e| io_error(&e))?;
    Ok(FileContent { content: String::from_utf8_lossy(&bytes).into_owned() })
});

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// Path (resolved against the working directory when relative).
    pub path: String,
    /// Content to write.
    pub content: String,
}

hostile!(WriteFile, "write_file", "Writes a file with std::fs, with no declared path argument.", WriteArgs => OkValue, |a| {
    let path = toolhost_kit::resolve_path(&a.path);
    std::fs::write(&path, a.content).map_err(|e| io_error(&e))?;
    Ok(OkValue { ok: true })
});

/// Arguments of `env`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvArgs {
    /// Variable name.
    pub name: String,
}

/// Value of `env`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvValue {
    /// The variable's value, or null when unset.
    pub value: Option<String>,
}

hostile!(Env, "env", "Reads an environment variable.", EnvArgs => EnvValue, |a| {
    Ok(EnvValue { value: std::env::var_os(&a.name).map(|v| v.to_string_lossy().into_owned()) })
});

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Value of `counter`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Count {
    /// Calls seen by this instance.
    pub count: u64,
}

hostile!(Counter, "counter", "Increments a static counter and returns it.", NoArgs => Count, |_| {
    Ok(Count { count: COUNTER.fetch_add(1, Ordering::SeqCst) + 1 })
});

/// Value of `echo`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Echoed {
    /// The arguments object, as received.
    pub args: serde_json::Map<String, serde_json::Value>,
}

hostile!(Echo, "echo", "Returns its arguments; leaves rendering to the host.", serde_json::Map<String, serde_json::Value> => Echoed, |a| {
    Ok(Echoed { args: a })
});

/// Arguments of `report` (other keys are ignored: benchmarks number
/// their calls).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReportArgs {
    /// Reports to make.
    pub n: u64,
    /// Log messages instead of progress updates.
    #[serde(default)]
    pub log: bool,
}

hostile!(Report, "report", "Reports progress (or logs) n times, as fast as it can (contract 0.3.0).", ReportArgs => Count, |a| {
    let ctx = toolhost_kit::ctx();
    for i in 0..a.n {
        if a.log {
            ctx.log(toolhost_kit::LogLevel::Info, "step");
        } else {
            ctx.progress(i + 1, Some(a.n), None);
        }
    }
    Ok(Count { count: a.n })
});

/// `echo`, declaring that it renders nothing itself (contract 0.3.0's
/// `host-renders`): the host never asks it to render.
pub struct EchoPlain;

impl Tool for EchoPlain {
    const NAME: &'static str = "echo_plain";
    const DESCRIPTION: &'static str =
        "Returns its arguments; declares that the host renders its value.";
    type Args = serde_json::Map<String, serde_json::Value>;
    type Output = Echoed;
    fn annotations() -> Annotations {
        Annotations::NONE
    }
    fn execute(a: Self::Args) -> Result<Echoed, ToolError> {
        Ok(Echoed { args: a })
    }
    fn host_renders() -> bool {
        true
    }
}

/// Value of `bad_output`: the schema says `n` is an integer, the tool sends a string.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BadValue {
    /// Declared as an integer.
    #[schemars(with = "i64")]
    pub n: String,
}

hostile!(BadOutput, "bad_output", "Returns a value that violates its own output schema.", NoArgs => BadValue, |_| {
    Ok(BadValue { n: "x".into() })
});

hostile!(Panic, "panic", "Panics.", NoArgs => Never, |_| {
    panic!("hostile panic")
});

/// Arguments of `slow_sleep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SleepArgs {
    /// Milliseconds to sleep.
    pub ms: u64,
}

/// Value of `slow_sleep`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Slept {
    /// Milliseconds slept.
    pub ms: u64,
}

hostile!(SlowSleep, "slow_sleep", "Sleeps with std::thread::sleep (a blocking host call).", SleepArgs => Slept, |a| {
    std::thread::sleep(std::time::Duration::from_millis(a.ms));
    Ok(Slept { ms: a.ms })
});

/// Value of `random`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RandomValue {
    /// 16 bytes from `wasi:random/random`, as lowercase hex.
    pub hex: String,
    /// `wasi:clocks/wall-clock.now()` in nanoseconds since the Unix epoch.
    pub wall_clock_ns: u64,
    /// Three reads of `wasi:clocks/monotonic-clock.now()`.
    pub monotonic_ns: Vec<u64>,
    /// 8 bytes from `wasi:random/insecure`, as lowercase hex.
    pub insecure_hex: String,
}

fn monotonic_ns() -> u64 {
    #[cfg(target_arch = "wasm32")]
    {
        toolhost_kit::wasi::clocks::monotonic_clock::now()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0
    }
}

fn insecure_bytes() -> Vec<u8> {
    #[cfg(target_arch = "wasm32")]
    {
        toolhost_kit::wasi::random::insecure::get_insecure_random_bytes(8)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        vec![0; 8]
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_bytes() -> Vec<u8> {
    #[cfg(target_arch = "wasm32")]
    {
        toolhost_kit::wasi::random::random::get_random_bytes(16)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        vec![0; 16]
    }
}

fn wall_clock_ns() -> u64 {
    #[cfg(target_arch = "wasm32")]
    {
        let now = toolhost_kit::wasi::clocks::wall_clock::now();
        now.seconds
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(now.nanoseconds))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

hostile!(Random, "random", "Returns random bytes (secure and insecure) as hex, the wall-clock time and three monotonic-clock reads.", NoArgs => RandomValue, |_| {
    Ok(RandomValue {
        hex: hex(&random_bytes()),
        wall_clock_ns: wall_clock_ns(),
        monotonic_ns: (0..3).map(|_| monotonic_ns()).collect(),
        insecure_hex: hex(&insecure_bytes()),
    })
});

hostile!(Fail, "fail", "Always fails with code boom.", NoArgs => Never, |_| {
    Err(ToolError::new("boom", "it failed"))
});

/// Succeeds, but its render panics.
pub struct RenderFail;

impl Tool for RenderFail {
    const NAME: &'static str = "render_fail";
    const DESCRIPTION: &'static str = "Succeeds with {ok: true}; its render panics.";
    type Args = NoArgs;
    type Output = OkValue;
    fn annotations() -> Annotations {
        Annotations::NONE
    }
    fn execute(_: NoArgs) -> Result<OkValue, ToolError> {
        Ok(OkValue { ok: true })
    }
    fn render(_: &NoArgs, _: &OkValue) -> Option<Vec<Content>> {
        panic!("hostile render panic")
    }
}

/// Arguments of `exit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExitArgs {
    /// The exit status.
    pub status: i32,
}

hostile!(Exit, "exit", "Exits the process with a status instead of returning.", ExitArgs => Never, |a| {
    eprintln!("hostile exit {}", a.status);
    std::process::exit(a.status)
});

hostile!(Abort, "abort", "Aborts the process.", NoArgs => Never, |_| {
    eprintln!("hostile abort");
    std::process::abort()
});

/// Arguments of `hard_link` and `rename`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FromTo {
    /// The existing path.
    pub from: String,
    /// The new path.
    pub to: String,
}

hostile!(HardLink, "hard_link", "Creates a hard link with std::fs::hard_link.", FromTo => OkValue, |a| {
    let (from, to) = (toolhost_kit::resolve_path(&a.from), toolhost_kit::resolve_path(&a.to));
    std::fs::hard_link(from, to).map_err(|e| io_error(&e))?;
    Ok(OkValue { ok: true })
});

hostile!(Rename, "rename", "Renames with std::fs::rename.", FromTo => OkValue, |a| {
    let (from, to) = (toolhost_kit::resolve_path(&a.from), toolhost_kit::resolve_path(&a.to));
    std::fs::rename(from, to).map_err(|e| io_error(&e))?;
    Ok(OkValue { ok: true })
});

hostile!(Truncate, "truncate", "Opens a file for writing with truncation, then sets its length to 0.", PathArgs => OkValue, |a| {
    let path = toolhost_kit::resolve_path(&a.path);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .map_err(|e| io_error(&e))?;
    f.set_len(0).map_err(|e| io_error(&e))?;
    Ok(OkValue { ok: true })
});

/// Value of `list_dir`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Names {
    /// Entry names, sorted.
    pub names: Vec<String>,
}

hostile!(ListDir, "list_dir", "Lists a directory with std::fs::read_dir.", PathArgs => Names, |a| {
    let path = toolhost_kit::resolve_path(&a.path);
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&path).map_err(|e| io_error(&e))? {
        let entry = entry.map_err(|e| io_error(&e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(Names { names })
});

/// The first preopened directory, through raw WASI (no path resolution by
/// the guest's libc: the host sees exactly the bytes the tool sends).
#[cfg(target_arch = "wasm32")]
fn first_preopen() -> Result<toolhost_kit::wasi::filesystem::types::Descriptor, ToolError> {
    toolhost_kit::wasi::filesystem::preopens::get_directories()
        .into_iter()
        .next()
        .map(|(d, _)| d)
        .ok_or_else(|| ToolError::new("no_preopen", "no directory is preopened"))
}

#[cfg(target_arch = "wasm32")]
fn wasi_error(e: toolhost_kit::wasi::filesystem::types::ErrorCode) -> ToolError {
    ToolError::new("io_error", format!("{e:?}"))
        .with_info(serde_json::json!({ "kind": format!("{e:?}") }))
}

/// Arguments of `raw_open`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOpenArgs {
    /// Path relative to the first preopen, sent as is.
    pub path: String,
    /// Open for writing (create, truncate) and write `pwned`; else read.
    pub write: bool,
}

hostile!(RawOpen, "raw_open", "Opens a path with raw wasi:filesystem open-at on the first preopen.", RawOpenArgs => FileContent, |a| {
    #[cfg(target_arch = "wasm32")]
    {
        use toolhost_kit::wasi::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
        let dir = first_preopen()?;
        if a.write {
            let f = dir
                .open_at(
                    PathFlags::empty(),
                    &a.path,
                    OpenFlags::CREATE | OpenFlags::TRUNCATE,
                    DescriptorFlags::WRITE,
                )
                .map_err(wasi_error)?;
            f.write(b"pwned", 0).map_err(wasi_error)?;
            Ok(FileContent { content: String::new() })
        } else {
            let f = dir
                .open_at(PathFlags::SYMLINK_FOLLOW, &a.path, OpenFlags::empty(), DescriptorFlags::READ)
                .map_err(wasi_error)?;
            let (bytes, _) = f.read(1 << 20, 0).map_err(wasi_error)?;
            Ok(FileContent { content: String::from_utf8_lossy(&bytes).into_owned() })
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = a;
        Err(ToolError::new("unsupported", "wasm32 only"))
    }
});

/// Arguments of `symlink`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SymlinkArgs {
    /// What the link points to, stored as is.
    pub target: String,
    /// The link's path, relative to the first preopen.
    pub link: String,
}

hostile!(Symlink, "symlink", "Creates a symlink with raw wasi:filesystem symlink-at on the first preopen.", SymlinkArgs => OkValue, |a| {
    #[cfg(target_arch = "wasm32")]
    {
        first_preopen()?.symlink_at(&a.target, &a.link).map_err(wasi_error)?;
        Ok(OkValue { ok: true })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = a;
        Err(ToolError::new("unsupported", "wasm32 only"))
    }
});

/// Arguments of `fill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FillArgs {
    /// The file to write.
    pub path: String,
    /// How many bytes to write.
    pub bytes: u64,
}

/// How much a filling tool did.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Done {
    /// Units done (bytes written or entries created).
    pub done: u64,
}

hostile!(Fill, "fill", "Writes the given number of bytes to a file in 64 KiB chunks.", FillArgs => Done, |a| {
    use std::io::Write;
    let path = toolhost_kit::resolve_path(&a.path);
    let mut f = std::fs::File::create(&path).map_err(|e| io_error(&e))?;
    let chunk = vec![b'x'; 64 * 1024];
    let mut done = 0u64;
    while done < a.bytes {
        let n = chunk.len().min(usize::try_from(a.bytes - done).unwrap_or(usize::MAX));
        f.write_all(&chunk[..n]).map_err(|e| io_error(&e))?;
        done += n as u64;
    }
    Ok(Done { done })
});

/// Arguments of `spawn_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnArgs {
    /// How many entries to create in the working directory.
    pub count: u64,
    /// Create directories instead of files.
    pub dirs: bool,
}

hostile!(SpawnFiles, "spawn_files", "Creates many small files (or directories) in the working directory.", SpawnArgs => Done, |a| {
    for i in 0..a.count {
        let path = toolhost_kit::resolve_path(&format!("spawn-{i}"));
        if a.dirs {
            std::fs::create_dir(&path).map_err(|e| io_error(&e))?;
        } else {
            std::fs::write(&path, b"x").map_err(|e| io_error(&e))?;
        }
    }
    Ok(Done { done: a.count })
});

/// Arguments of `grow`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrowArgs {
    /// The file to create.
    pub path: String,
    /// The length to set.
    pub size: u64,
}

hostile!(Grow, "grow", "Creates a file and sets its length with set_len.", GrowArgs => Done, |a| {
    let path = toolhost_kit::resolve_path(&a.path);
    let f = std::fs::File::create(&path).map_err(|e| io_error(&e))?;
    f.set_len(a.size).map_err(|e| io_error(&e))?;
    Ok(Done { done: a.size })
});

/// A JSON document written out verbatim, unchecked: serde_json's raw-value
/// token (feature `raw_value`) makes its serializer copy the text as is, so
/// a tool can hand the host text that is not JSON, or JSON too deep to parse.
#[derive(Debug, Deserialize)]
pub struct Verbatim(pub String);

impl Serialize for Verbatim {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        const TOKEN: &str = "$serde_json::private::RawValue";
        let mut st = s.serialize_struct(TOKEN, 1)?;
        st.serialize_field(TOKEN, &self.0)?;
        st.end()
    }
}

impl JsonSchema for Verbatim {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Verbatim".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({})
    }
}

hostile!(InvalidJson, "invalid_json", "Returns text that is not JSON as its value.", NoArgs => Verbatim, |_| {
    Ok(Verbatim(r#"{"ok": tru"#.into()))
});

/// Arguments of `huge_value` and `render_huge`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SizeArgs {
    /// Size in MiB.
    pub mb: u32,
}

/// Value of `huge_value`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Blob {
    /// A long string of `x`.
    pub blob: String,
}

hostile!(HugeValue, "huge_value", "Returns a value holding a string of the given size in MiB.", SizeArgs => Blob, |a| {
    Ok(Blob { blob: "x".repeat(a.mb as usize * (1 << 20)) })
});

/// Arguments of `deep_value`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DepthArgs {
    /// Nesting depth.
    pub depth: u32,
}

hostile!(DeepValue, "deep_value", "Returns arrays nested to the given depth.", DepthArgs => Verbatim, |a| {
    let d = a.depth as usize;
    Ok(Verbatim(format!("{}{}", "[".repeat(d), "]".repeat(d))))
});

/// Arguments of `residue`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResidueArgs {
    /// 64 KiB wasm pages to grow memory by, at most 256.
    #[schemars(range(max = 256))]
    pub grow_pages: u32,
}

/// Value of `residue`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Residue {
    /// Non-zero bytes found in a zero-initialized static buffer.
    pub nonzero_static: u64,
    /// Non-zero bytes found in the freshly grown pages.
    pub nonzero_grown: u64,
}

/// Bytes of the zero-initialized static `residue` scans and dirties.
const SCRATCH_BYTES: usize = 256 << 10;

static mut SCRATCH: [u8; SCRATCH_BYTES] = [0; SCRATCH_BYTES];

/// Counts the non-zero bytes in `len` bytes at `at`, then overwrites them
/// with a marker.
///
/// # Safety
/// `at..at + len` must be linear memory that nothing else uses.
#[cfg(target_arch = "wasm32")]
unsafe fn scan_and_dirty(at: *mut u8, len: usize) -> u64 {
    let mut nonzero = 0;
    for i in 0..len {
        // SAFETY: in bounds by the caller's promise; volatile so the reads
        // and writes happen as written.
        unsafe {
            let p = at.add(i);
            nonzero += u64::from(std::ptr::read_volatile(p) != 0);
            std::ptr::write_volatile(p, 0xa5);
        }
    }
    nonzero
}

hostile!(ResidueTool, "residue", "Looks for bytes an earlier call left in memory: scans a zero-initialized static and freshly grown pages for non-zero bytes, then fills both with a marker.", ResidueArgs => Residue, |a| {
    #[cfg(target_arch = "wasm32")]
    {
        let pages = a.grow_pages.min(256) as usize;
        // SAFETY: SCRATCH is only touched here, and a component instance is
        // single-threaded.
        let nonzero_static = unsafe { scan_and_dirty((&raw mut SCRATCH).cast(), SCRATCH_BYTES) };
        let before = core::arch::wasm32::memory_grow(0, pages);
        if before == usize::MAX {
            return Err(ToolError::new("grow_failed", "memory.grow failed"));
        }
        // SAFETY: the pages just grown belong to no allocation: the
        // allocator grows memory itself and never sees these.
        let nonzero_grown = unsafe { scan_and_dirty((before << 16) as *mut u8, pages << 16) };
        Ok(Residue { nonzero_static, nonzero_grown })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = (a, &raw const SCRATCH);
        Err(ToolError::new("unsupported", "wasm32 only"))
    }
});

/// Succeeds; its render loops forever.
pub struct RenderSpin;

impl Tool for RenderSpin {
    const NAME: &'static str = "render_spin";
    const DESCRIPTION: &'static str = "Succeeds with {ok: true}; its render loops forever.";
    type Args = NoArgs;
    type Output = OkValue;
    fn annotations() -> Annotations {
        Annotations::NONE
    }
    fn execute(_: NoArgs) -> Result<OkValue, ToolError> {
        Ok(OkValue { ok: true })
    }
    fn render(_: &NoArgs, _: &OkValue) -> Option<Vec<Content>> {
        let mut x: u64 = 0;
        loop {
            x = black_box(x.wrapping_add(1));
        }
    }
}

/// Succeeds; its render returns a huge text.
pub struct RenderHuge;

impl Tool for RenderHuge {
    const NAME: &'static str = "render_huge";
    const DESCRIPTION: &'static str =
        "Succeeds with {ok: true}; its render returns mb MiB of text.";
    type Args = SizeArgs;
    type Output = OkValue;
    fn annotations() -> Annotations {
        Annotations::NONE
    }
    fn execute(_: SizeArgs) -> Result<OkValue, ToolError> {
        Ok(OkValue { ok: true })
    }
    fn render(a: &SizeArgs, _: &OkValue) -> Option<Vec<Content>> {
        Some(vec![Content::text("y".repeat(a.mb as usize * (1 << 20)))])
    }
}

/// Arguments of `scribble`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScribbleArgs {
    /// How many new files to create (`new-0.txt`, …), each `new N` and a
    /// newline.
    pub create: u64,
    /// Existing files to read first and then overwrite with `changed`.
    #[serde(default)]
    pub modify: Vec<String>,
    /// Files to delete.
    #[serde(default)]
    pub delete: Vec<String>,
    /// Milliseconds to sleep after reading, before writing anything.
    #[serde(default)]
    pub sleep_ms: u64,
    /// How the call ends once it has written: `ok`, `fail`, `trap`, `spin`
    /// (until the deadline or a cancel), `memory` (until the memory limit),
    /// `budget` (writing until the write budget stops it).
    pub then: String,
}

hostile!(Scribble, "scribble", "Reads, then creates, overwrites and deletes files, then ends as told (ok or a failure).", ScribbleArgs => Done, |a| {
    use std::io::Write;
    for m in &a.modify {
        std::fs::read(toolhost_kit::resolve_path(m)).map_err(|e| io_error(&e))?;
    }
    if a.sleep_ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(a.sleep_ms));
    }
    for i in 0..a.create {
        let path = toolhost_kit::resolve_path(&format!("new-{i}.txt"));
        std::fs::write(&path, format!("new {i}\n")).map_err(|e| io_error(&e))?;
    }
    for m in &a.modify {
        std::fs::write(toolhost_kit::resolve_path(m), "changed\n").map_err(|e| io_error(&e))?;
    }
    for d in &a.delete {
        std::fs::remove_file(toolhost_kit::resolve_path(d)).map_err(|e| io_error(&e))?;
    }
    match a.then.as_str() {
        "ok" => Ok(Done { done: a.create }),
        "fail" => Err(ToolError::new("boom", "failed after writing")),
        "trap" => panic!("trapped after writing"),
        "spin" => {
            let mut x: u64 = 0;
            loop {
                x = black_box(x.wrapping_add(1));
            }
        }
        "memory" => {
            let mut blocks: Vec<Vec<u8>> = Vec::new();
            loop {
                let mut block = vec![0u8; 1 << 20];
                block[0] = 1;
                blocks.push(black_box(block));
            }
        }
        "budget" => {
            let mut f = std::fs::File::create(toolhost_kit::resolve_path("flood.bin"))
                .map_err(|e| io_error(&e))?;
            let chunk = vec![b'x'; 64 * 1024];
            loop {
                f.write_all(&chunk).map_err(|e| io_error(&e))?;
            }
        }
        other => Err(ToolError::new("bad_args", format!("unknown ending `{other}`"))),
    }
});

toolhost_kit::export_tools!(
    Scribble,
    Spin,
    MemoryBomb,
    Recurse,
    FloodStdout,
    ReadFile,
    WriteFile,
    Env,
    Counter,
    Echo,
    EchoPlain,
    Report,
    BadOutput,
    Panic,
    SlowSleep,
    Random,
    Fail,
    RenderFail,
    Exit,
    Abort,
    HardLink,
    Rename,
    Truncate,
    ListDir,
    RawOpen,
    Symlink,
    Fill,
    SpawnFiles,
    Grow,
    InvalidJson,
    HugeValue,
    DeepValue,
    RenderSpin,
    RenderHuge,
    ResidueTool,
);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_kit::{ToolEntry, Toolset};

    static SET: Toolset = Toolset::new(&[
        ToolEntry::of::<Counter>(),
        ToolEntry::of::<Echo>(),
        ToolEntry::of::<BadOutput>(),
        ToolEntry::of::<Fail>(),
        ToolEntry::of::<Env>(),
        ToolEntry::of::<Random>(),
        ToolEntry::of::<InvalidJson>(),
        ToolEntry::of::<DeepValue>(),
    ]);

    #[test]
    fn benign_ones() {
        assert_eq!(
            SET.execute("echo", r#"{"a":[1,2],"b":"x"}"#).unwrap(),
            r#"{"args":{"a":[1,2],"b":"x"}}"#
        );
        assert_eq!(SET.render("echo", "{}", r#"{"args":{}}"#), None);
        assert_eq!(SET.execute("bad_output", "{}").unwrap(), r#"{"n":"x"}"#);
        let schema: serde_json::Value = serde_json::from_str(&SET.list()[2].output_schema).unwrap();
        assert_eq!(schema["properties"]["n"]["type"], "integer");
        let e = SET.execute("fail", "{}").unwrap_err();
        assert_eq!((e.code.as_str(), e.message.as_str()), ("boom", "it failed"));
        assert_eq!(
            SET.execute("env", r#"{"name":"TOOLHOST_SURELY_UNSET"}"#)
                .unwrap(),
            r#"{"value":null}"#
        );
        let v: serde_json::Value =
            serde_json::from_str(&SET.execute("random", "{}").unwrap()).unwrap();
        assert_eq!(v["hex"].as_str().map(str::len), Some(32));
        assert!(SET.execute("counter", "{}").is_ok());
        let bad = SET.execute("invalid_json", "{}").unwrap();
        assert_eq!(bad, r#"{"ok": tru"#);
        assert!(serde_json::from_str::<serde_json::Value>(&bad).is_err());
        assert_eq!(
            SET.execute("deep_value", r#"{"depth":3}"#).unwrap(),
            "[[[]]]"
        );
        assert_eq!(
            SET.execute("counter", r#"{"x":1}"#).unwrap_err().code,
            "invalid_arguments"
        );
    }
}
