//! A test tool for deterministic replay: `note` reads a file and, on every
//! call, the wall clock, the monotonic clock (three times) and both random
//! sources, so a run is reproducible only if all of them are virtual.
//!
//! Built twice from this one source: `guest-replay`, and
//! `guest-replay-changed` with the `changed` feature, which counts words
//! one too many, so replay's verify layer has a real change to find.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_kit::{Annotations, Content, PathAccess, PathParam, Tool, ToolError};

/// Arguments of `note`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteArgs {
    /// The file to read.
    pub path: String,
}

/// Value of `note`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NoteValue {
    /// The file read.
    pub path: String,
    /// Its first line.
    pub first_line: String,
    /// Whitespace-separated words in it.
    pub words: u64,
    /// 8 bytes of `wasi:random/random`, as hex.
    pub nonce: String,
    /// 8 bytes of `wasi:random/insecure`, as hex.
    pub insecure: String,
    /// The wall clock, ns since the epoch.
    pub wall_ns: u64,
    /// Three reads of the monotonic clock.
    pub ticks: Vec<u64>,
}

/// The `note` tool.
pub struct Note;

impl Tool for Note {
    const NAME: &'static str = "note";
    const DESCRIPTION: &'static str =
        "Reads a file and notes its first line and word count, with the time and a nonce.";
    type Args = NoteArgs;
    type Output = NoteValue;

    fn annotations() -> Annotations {
        Annotations {
            read_only: true,
            ..Annotations::NONE
        }
    }

    fn paths() -> Vec<PathParam> {
        vec![PathParam {
            pointer: "/path",
            access: PathAccess::Read,
        }]
    }

    fn execute(args: NoteArgs) -> Result<NoteValue, ToolError> {
        let path = toolhost_kit::resolve_path(&args.path);
        let text = std::fs::read_to_string(&path).map_err(|e| ToolError::io(&e, &path))?;
        let words = text.split_whitespace().count() as u64;
        Ok(NoteValue {
            path: args.path,
            first_line: text.lines().next().unwrap_or("").to_owned(),
            words: if cfg!(feature = "changed") {
                words + 1
            } else {
                words
            },
            nonce: hex(&env::secure()),
            insecure: hex(&env::insecure()),
            wall_ns: env::wall_ns(),
            ticks: (0..3).map(|_| env::monotonic_ns()).collect(),
        })
    }

    fn render(_args: &NoteArgs, v: &NoteValue) -> Option<Vec<Content>> {
        Some(vec![Content::text(format!(
            "{}: {} words\nfirst line: {}\nnonce {} at {} ns",
            v.path, v.words, v.first_line, v.nonce, v.wall_ns
        ))])
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the tool observes of its environment (zeros natively, for tests
/// of the logic).
mod env {
    #[cfg(target_arch = "wasm32")]
    use toolhost_kit::wasi;

    pub fn secure() -> Vec<u8> {
        #[cfg(target_arch = "wasm32")]
        return wasi::random::random::get_random_bytes(8);
        #[cfg(not(target_arch = "wasm32"))]
        return vec![0; 8];
    }

    pub fn insecure() -> Vec<u8> {
        #[cfg(target_arch = "wasm32")]
        return wasi::random::insecure::get_insecure_random_bytes(8);
        #[cfg(not(target_arch = "wasm32"))]
        return vec![0; 8];
    }

    pub fn wall_ns() -> u64 {
        #[cfg(target_arch = "wasm32")]
        {
            let now = wasi::clocks::wall_clock::now();
            now.seconds
                .saturating_mul(1_000_000_000)
                .saturating_add(u64::from(now.nanoseconds))
        }
        #[cfg(not(target_arch = "wasm32"))]
        0
    }

    pub fn monotonic_ns() -> u64 {
        #[cfg(target_arch = "wasm32")]
        return wasi::clocks::monotonic_clock::now();
        #[cfg(not(target_arch = "wasm32"))]
        return 0;
    }
}

toolhost_kit::export_tools!(Note);
