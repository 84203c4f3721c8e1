//! Stable failure codes: the strings a model (and a program) can rely on.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! failure_codes {
    ($( $(#[$doc:meta])* $variant:ident => $code:literal, )*) => {
        /// Why a call failed, as decided by the host. The string form is stable:
        /// variants are added, never renamed or removed.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum FailureCode {
            $( $(#[$doc])* $variant, )*
        }

        impl FailureCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [FailureCode] = &[$(FailureCode::$variant,)*];

            /// The stable snake_case string.
            pub const fn as_str(self) -> &'static str {
                match self { $(FailureCode::$variant => $code,)* }
            }

            /// Parses a stable string back into a code.
            pub fn from_code(s: &str) -> Option<FailureCode> {
                match s { $($code => Some(FailureCode::$variant),)* _ => None }
            }
        }
    };
}

failure_codes! {
    /// No visible tool has this name.
    UnknownTool => "unknown_tool",
    /// Arguments were unparseable or did not match the input schema.
    InvalidArguments => "invalid_arguments",
    /// A path argument is outside every granted directory, or lacks the permission.
    PathDenied => "path_denied",
    /// A write to an existing file without a fresh baseline (never read, or changed since).
    StaleBaseline => "stale_baseline",
    /// A create target exists, or an overwrite/patch target does not.
    PathConflict => "path_conflict",
    /// The identical call just failed; it is not run again.
    RepeatedFailure => "repeated_failure",
    /// Policy, a pre-execute listener, a guard or the approver denied the call.
    Denied => "denied",
    /// Approval was required and not granted (or no approver is mounted).
    ApprovalDenied => "approval_denied",
    /// The call was cancelled by its caller.
    Cancelled => "cancelled",
    /// The wall-clock deadline passed.
    Timeout => "timeout",
    /// The CPU fuel budget ran out.
    FuelExhausted => "fuel_exhausted",
    /// The guest tried to grow memory beyond its limit.
    MemoryLimit => "memory_limit",
    /// The guest's wasm stack overflowed.
    StackOverflow => "stack_overflow",
    /// The guest wrote more to stdout/stderr than allowed.
    OutputLimit => "output_limit",
    /// The guest trapped (panic, unreachable, bad memory access, ...).
    Trap => "trap",
    /// An outgoing network request was refused by policy.
    NetworkDenied => "network_denied",
    /// The component needs an interface its policy does not grant.
    ImportDenied => "import_denied",
    /// The tool reported a failure of its own (its code is kept in `info.toolCode`).
    ToolError => "tool_error",
    /// The tool's value does not match its output schema, or is not JSON.
    OutputInvalid => "output_invalid",
    /// The tool's render function failed.
    RenderFailed => "render_failed",
    /// A post-execute listener blocked the result.
    Blocked => "blocked",
    /// A pipeline listener failed (panicked or returned an error).
    ListenerFailed => "listener_failed",
    /// The host itself failed (I/O, instantiation, ...).
    HostError => "host_error",
    /// The guest exited (`exit`, `std::process::exit`) instead of returning a
    /// result; its exit status is in `info.exitStatus`.
    GuestExit => "guest_exit",
    /// The guest wrote more bytes, or created more files, in its read-write
    /// grants than one call may (`max_write_bytes`, `max_files_created`).
    WriteBudgetExceeded => "write_budget_exceeded",
    /// Replaying a cassette: the call is not in it (strict replay runs
    /// nothing that was not recorded).
    NotRecorded => "not_recorded",
    /// The tool ran, but its value is larger than its policy's
    /// `max_value_bytes`; the value was dropped, and so were its staged file
    /// changes. The sizes are in `info`.
    ValueTooLarge => "value_too_large",
    /// Approval was asked of the client's user through the protocol itself
    /// (MCP 2026-07-28: an `input_required` result); the call ran nothing,
    /// and runs when the client sends the same call again with the answer.
    /// A front end turns this into its protocol's request for input: the
    /// model does not see it.
    ApprovalPending => "approval_pending",
    /// The tool ran, but a file it read or changed was changed by someone
    /// else (an editor, another session) before its effects were
    /// committed; nothing was committed. The path is in `info.path`.
    Conflict => "conflict",
    /// The caller is over a quota (calls at once, or calls per minute);
    /// nothing ran. `info.retryAfterS` says when a call would be accepted.
    QuotaExceeded => "quota_exceeded",
    /// A script (code mode's `run_code`) made more tool calls than its
    /// policy's `max_tool_calls`; that call did not run. The limit is in
    /// `info.maxToolCalls`.
    ToolCallLimit => "tool_call_limit",
    /// The worker process running the call died (crashed, was killed, or
    /// broke its seccomp filter) or could not be started; it is replaced.
    /// The reason is in `info.reason`.
    WorkerDied => "worker_died",
    /// The worker process running the call sent what no honest worker
    /// sends (an answer to another call, staged writes outside the call's
    /// grants, more than its policy allows, bytes that are no message): it
    /// was killed and is replaced, and nothing it did was kept. What it
    /// sent is in `info.reason`.
    WorkerRefused => "worker_refused",
    /// The component runs in worker processes, and this kernel cannot
    /// build the walls its policy requires (`walls = "required"`); nothing
    /// ran. What is missing is in `info.missing`.
    WallsUnavailable => "walls_unavailable",
    /// The call ran as an MCP task, but its result is larger than a task
    /// keeps (the toolbox's `[tasks] max_result_kib`); the sizes are in
    /// `info`.
    TaskResultTooLarge => "task_result_too_large",
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FailureCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FailureCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        FailureCode::from_code(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown failure code `{s}`")))
    }
}

/// The code of an error result: one of the host's stable codes, or the
/// snake_case code a tool reported about itself (e.g. `not_found`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Decided by the host.
    Host(FailureCode),
    /// Reported by the tool (validated to be `[a-z][a-z0-9_]*`, at most 64 bytes).
    Tool(String),
}

impl ErrorCode {
    /// The code as a string.
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::Host(c) => c.as_str(),
            ErrorCode::Tool(s) => s,
        }
    }

    /// A tool-reported code, or [`FailureCode::ToolError`] when the tool's
    /// string is not a well-formed code (tools are untrusted). A tool code
    /// that spells a host code stays a tool code in this process, so what
    /// acts on the host's codes (a retry on `timeout`, say) never acts on a
    /// tool's claim. Written out, a code is only its string: read back (a
    /// session log, a cassette), one that spells a host code is the host's
    /// (see the `Deserialize` impl); replay compares the strings.
    pub fn from_tool(code: &str) -> ErrorCode {
        // Same shape as a tool name.
        if crate::descriptor::valid_name(code) {
            ErrorCode::Tool(code.to_owned())
        } else {
            ErrorCode::Host(FailureCode::ToolError)
        }
    }
}

impl From<FailureCode> for ErrorCode {
    fn from(c: FailureCode) -> Self {
        ErrorCode::Host(c)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A code read back from its string: the host's when it spells one (the
/// string cannot say who reported it; the trace beside it does), else a
/// tool's.
impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match FailureCode::from_code(&s) {
            Some(c) => ErrorCode::Host(c),
            None => ErrorCode::Tool(s),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden list: a code's string never changes. Adding a code means adding it here.
    #[test]
    fn codes_are_stable() {
        let got: Vec<&str> = FailureCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            got,
            [
                "unknown_tool",
                "invalid_arguments",
                "path_denied",
                "stale_baseline",
                "path_conflict",
                "repeated_failure",
                "denied",
                "approval_denied",
                "cancelled",
                "timeout",
                "fuel_exhausted",
                "memory_limit",
                "stack_overflow",
                "output_limit",
                "trap",
                "network_denied",
                "import_denied",
                "tool_error",
                "output_invalid",
                "render_failed",
                "blocked",
                "listener_failed",
                "host_error",
                "guest_exit",
                "write_budget_exceeded",
                "not_recorded",
                "value_too_large",
                "approval_pending",
                "conflict",
                "quota_exceeded",
                "tool_call_limit",
                "worker_died",
                "worker_refused",
                "walls_unavailable",
                "task_result_too_large",
            ]
        );
        for c in FailureCode::ALL {
            assert_eq!(FailureCode::from_code(c.as_str()), Some(*c));
        }
    }

    #[test]
    fn a_tools_code_is_its_own_until_written_out() {
        let claimed = ErrorCode::from_tool("timeout");
        assert_ne!(claimed, ErrorCode::Host(FailureCode::Timeout));
        let text = serde_json::to_string(&claimed).unwrap_or_default();
        assert_eq!(text, "\"timeout\"");
        let read: ErrorCode = serde_json::from_str(&text).unwrap_or(ErrorCode::Tool(String::new()));
        assert_eq!(read, ErrorCode::Host(FailureCode::Timeout));
        assert_eq!(read.as_str(), claimed.as_str());
        let own: ErrorCode =
            serde_json::from_str("\"not_found\"").unwrap_or(ErrorCode::Tool(String::new()));
        assert_eq!(own, ErrorCode::Tool("not_found".into()));
    }

    #[test]
    fn tool_codes_are_sanitized() {
        assert_eq!(
            ErrorCode::from_tool("not_found"),
            ErrorCode::Tool("not_found".into())
        );
        assert_eq!(
            ErrorCode::from_tool("timeout"),
            ErrorCode::Tool("timeout".into())
        );
        assert_eq!(
            ErrorCode::from_tool("Bad Code!"),
            ErrorCode::Host(FailureCode::ToolError)
        );
        assert_eq!(
            ErrorCode::from_tool(""),
            ErrorCode::Host(FailureCode::ToolError)
        );
        assert_eq!(
            ErrorCode::from_tool(&"a".repeat(65)),
            ErrorCode::Host(FailureCode::ToolError)
        );
    }
}
