//! The escaped guest: a test component that acts as a guest that broke out
//! of wasmtime, for the second wall's tests (worker processes under Landlock
//! and seccomp). Besides the tool contract it imports the test-only
//! `toolhost:escape/hatch@0.1.0` (`wit/test-escape/hatch.wit`), through which
//! the host runs an operation natively in the process (or worker) that runs
//! this guest, as escaped code would. Only test hosts link that import; a
//! release build never does, so there this component does not even
//! instantiate. All annotations are false and no tool declares path
//! arguments, so the host does not pre-check any path.
//!
//! | tool | behaviour |
//! | --- | --- |
//! | `attempt` | `{op, arg}` → `hatch.attempt(op, arg)` → `{ok, detail}`; never a tool failure |
//! | `read` | `{path}` → `{content}` with `std::fs::read_to_string` (ordinary WASI, through its grants); `io_error` on error |
//! | `write` | `{path, content}` → `{ok: true}` with `std::fs::write`; `io_error` on error |

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_kit::{Annotations, Tool, ToolError};

/// Bindings of the test-only `escaped` world (its one import, `hatch`),
/// beside the kit's own bindings of the tool contract.
#[cfg(target_arch = "wasm32")]
#[allow(missing_docs, unsafe_op_in_unsafe_fn, clippy::all)]
mod escape_bindings {
    wit_bindgen::generate!({
        path: "../../../wit/test-escape",
        world: "escaped",
    });
}

/// Calls the host's `hatch.attempt`.
#[cfg(target_arch = "wasm32")]
fn hatch_attempt(op: &str, arg: &str) -> Result<String, String> {
    escape_bindings::toolhost::escape::hatch::attempt(op, arg)
}

/// Natively there is no hatch (the tool logic still builds and tests).
#[cfg(not(target_arch = "wasm32"))]
fn hatch_attempt(_op: &str, _arg: &str) -> Result<String, String> {
    Err("no hatch outside a component".into())
}

fn io_error(e: &std::io::Error) -> ToolError {
    ToolError::new("io_error", e.to_string())
        .with_info(serde_json::json!({ "kind": format!("{:?}", e.kind()) }))
}

/// Arguments of `attempt`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttemptArgs {
    /// The operation the host runs natively.
    pub op: String,
    /// Its argument.
    pub arg: String,
}

/// Value of `attempt`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttemptValue {
    /// Whether the operation succeeded.
    pub ok: bool,
    /// What it got when it succeeded, the OS error when it failed.
    pub detail: String,
}

/// Runs an operation natively through the hatch, as escaped code would.
pub struct Attempt;

impl Tool for Attempt {
    const NAME: &'static str = "attempt";
    const DESCRIPTION: &'static str = "Runs an operation natively in the process that runs this guest (test-only hatch); always returns what happened.";
    type Args = AttemptArgs;
    type Output = AttemptValue;
    fn annotations() -> Annotations {
        Annotations::NONE
    }
    fn execute(a: AttemptArgs) -> Result<AttemptValue, ToolError> {
        Ok(match hatch_attempt(&a.op, &a.arg) {
            Ok(detail) => AttemptValue { ok: true, detail },
            Err(detail) => AttemptValue { ok: false, detail },
        })
    }
}

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// Path (resolved against the working directory when relative).
    pub path: String,
}

/// Value of `read`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadValue {
    /// The file's content.
    pub content: String,
}

/// Reads a file through ordinary WASI.
pub struct Read;

impl Tool for Read {
    const NAME: &'static str = "read";
    const DESCRIPTION: &'static str =
        "Reads a text file with std::fs (ordinary WASI), with no declared path argument.";
    type Args = ReadArgs;
    type Output = ReadValue;
    fn annotations() -> Annotations {
        Annotations::NONE
    }
    fn execute(a: ReadArgs) -> Result<ReadValue, ToolError> {
        let path = toolhost_kit::resolve_path(&a.path);
        let content = std::fs::read_to_string(&path).map_err(|e| io_error(&e))?;
        Ok(ReadValue { content })
    }
}

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// Path (resolved against the working directory when relative).
    pub path: String,
    /// Content to write.
    pub content: String,
}

/// Value of `write`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteValue {
    /// Always true.
    pub ok: bool,
}

/// Writes a file through ordinary WASI.
pub struct Write;

impl Tool for Write {
    const NAME: &'static str = "write";
    const DESCRIPTION: &'static str =
        "Writes a file with std::fs (ordinary WASI), with no declared path argument.";
    type Args = WriteArgs;
    type Output = WriteValue;
    fn annotations() -> Annotations {
        Annotations::NONE
    }
    fn execute(a: WriteArgs) -> Result<WriteValue, ToolError> {
        let path = toolhost_kit::resolve_path(&a.path);
        std::fs::write(&path, a.content).map_err(|e| io_error(&e))?;
        Ok(WriteValue { ok: true })
    }
}

toolhost_kit::export_tools!(Attempt, Read, Write);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_kit::{ToolEntry, Toolset};

    static SET: Toolset = Toolset::new(&[
        ToolEntry::of::<Attempt>(),
        ToolEntry::of::<Read>(),
        ToolEntry::of::<Write>(),
    ]);

    #[test]
    fn tools() {
        let names: Vec<String> = SET.list().into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["attempt", "read", "write"]);
        // No hatch natively: still a value, never a failure.
        assert_eq!(
            SET.execute("attempt", r#"{"op":"read","arg":"/etc/passwd"}"#)
                .unwrap(),
            r#"{"ok":false,"detail":"no hatch outside a component"}"#
        );
        let e = SET
            .execute("read", r#"{"path":"/surely/not/here"}"#)
            .unwrap_err();
        assert_eq!(e.code, "io_error");
        assert_eq!(
            SET.execute("attempt", r#"{"op":"x"}"#).unwrap_err().code,
            "invalid_arguments"
        );
    }
}
