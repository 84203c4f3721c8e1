//! The built-in tools, embedded in the binary.
//!
//! `read`, `write`, `edit`, `list`, `grep` and `fetch` are WebAssembly
//! components built from `guest-tools/` by the build (never committed as
//! binaries) and embedded here byte for byte, each with its default policy
//! from `policies/` and its compiled form (precompiled by the build with
//! the runtime's engine settings, so they serve without compiling). A
//! toolbox names them as `builtin:NAME`. So are [`CODE`] and
//! [`CODE_PYTHON`], the code runners behind code mode's reserved `run_code`
//! tool (`guest-tools/code`, JavaScript and Python): a toolbox's mode
//! serves the one of its language, and naming it sets its policy.
//!
//! ```
//! let read = toolhost_builtins::get("read").expect("built in");
//! assert!(read.wasm.starts_with(b"\0asm"));
//! assert!(read.policy.contains("version = 1"));
//! ```
//!
//! The default policies grant `.` as `/workspace`: a host resolves `.`
//! against the directory it serves (the toolbox file's directory, or the
//! current directory when there is no toolbox file).

/// One embedded tool component and its default policy.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The name after `builtin:` (also the tool's name).
    pub name: &'static str,
    /// The component's bytes.
    pub wasm: &'static [u8],
    /// The component compiled when toolhost was built (for the target's
    /// portable CPU level, [`PRECOMPILED_FOR`], with the runtime's engine
    /// settings); the runtime compiles `wasm` instead when it does not fit.
    pub precompiled: &'static [u8],
    /// The default policy (TOML, the `policies/NAME.toml` file).
    pub policy: &'static str,
}

impl Builtin {
    /// `builtin:NAME`, the origin used in errors and load reports.
    pub fn origin(&self) -> String {
        format!("builtin:{}", self.name)
    }
}

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// The JavaScript code runner: the built-in behind `run_code`, served by a
/// toolbox's mode rather than listed with the tools.
pub const CODE: &str = "code";

/// The Python code runner: the built-in behind `run_code` when the
/// toolbox's language is Python.
pub const CODE_PYTHON: &str = "code_python";

/// The built-in called `name`.
pub fn get(name: &str) -> Option<&'static Builtin> {
    ALL.iter().find(|b| b.name == name)
}

/// The names of every built-in, sorted.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|b| b.name).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_builtin_is_a_component_with_a_policy() {
        assert_eq!(
            super::names(),
            [
                "code",
                "code_python",
                "edit",
                "fetch",
                "grep",
                "list",
                "read",
                "write"
            ]
        );
        for b in super::ALL {
            // The component-model layer: magic, then version 0x0d + layer 1.
            assert_eq!(&b.wasm[..8], b"\0asm\x0d\0\x01\0", "{}", b.name);
            assert!(b.policy.starts_with("# Policy for the `"), "{}", b.name);
        }
        assert!(super::get("hostile").is_none());
    }
}
