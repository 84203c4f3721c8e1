//! What `toolhost --version` says: enough to tell two builds apart and to
//! know what a binary runs before asking it to.

/// The version line and what this build is made of: its commit, the
/// contract versions it runs, the MCP revisions it speaks, its wasmtime and
/// the CPU the built-ins were precompiled for. The first line is what `-V`
/// prints too (after the program's name).
pub fn long() -> String {
    let contract: Vec<_> = toolhost_runtime::contract_versions().collect();
    let mcp: Vec<_> = toolhost_mcp::protocol_revisions().collect();
    format!(
        "{version}\n\
         commit:    {commit}\n\
         contract:  toolhost:tool@{contract}\n\
         mcp:       {mcp}\n\
         wasmtime:  {wasmtime}\n\
         built-ins: precompiled for {builtins}",
        version = env!("CARGO_PKG_VERSION"),
        commit = env!("TOOLHOST_COMMIT"),
        contract = contract.join(", "),
        mcp = mcp.join(", "),
        wasmtime = toolhost_engine::WASMTIME_VERSION,
        builtins = toolhost_builtins::PRECOMPILED_FOR,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_every_part() {
        let text = super::long();
        let first = text.lines().next().unwrap_or_default();
        assert_eq!(first, env!("CARGO_PKG_VERSION"));
        for part in [
            "commit:",
            "contract:  toolhost:tool@0.5.0, 0.4.0, 0.3.0",
            "mcp:       2026-07-28",
            "wasmtime:  48.",
            "built-ins: precompiled for",
        ] {
            assert!(text.contains(part), "{part:?} missing from:\n{text}");
        }
    }
}
