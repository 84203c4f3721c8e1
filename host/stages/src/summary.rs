//! Bounded summaries: what an approver sees and what a default render shows.

use crate::paths::ResolvedPath;
use serde_json::Value;
use toolhost_contract::PathAccess;

/// Longest approval summary, in bytes: approval is a product surface, never
/// a dump of raw content.
pub const MAX_SUMMARY_BYTES: usize = 600;

fn line_count(s: &str) -> usize {
    if s.is_empty() { 0 } else { s.lines().count() }
}

/// Cuts `s` to `max` bytes on a char boundary, marking the cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    format!("{}…", &s[..s.floor_char_boundary(max.saturating_sub(1))])
}

/// A one-paragraph summary of a call for an approver: the tool, each path
/// with its access, and the change shape (`+12 −3 lines`) where the
/// arguments show one.
pub fn approval_summary(tool: &str, args: &Value, paths: &[ResolvedPath]) -> String {
    let mut parts = Vec::new();
    for p in paths {
        let verb = match p.access {
            PathAccess::Read => "read",
            PathAccess::List => "list",
            PathAccess::Create => "create",
            PathAccess::Overwrite => "overwrite",
            PathAccess::Patch => "patch",
            PathAccess::Write => "write",
        };
        parts.push(format!("{verb} {}", clip(&p.guest, 200)));
    }
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    let shape = match (s("old_text"), s("new_text"), s("content")) {
        (Some(old), Some(new), _) => {
            Some(format!("+{} −{} lines", line_count(new), line_count(old)))
        }
        (_, _, Some(content)) => Some(format!(
            "{} lines, {} bytes",
            line_count(content),
            content.len()
        )),
        _ => None,
    };
    let mut out = format!("{tool}: ");
    out.push_str(&if parts.is_empty() {
        "no paths".to_owned()
    } else {
        parts.join(", ")
    });
    if let Some(shape) = shape {
        out.push_str(&format!(" ({shape})"));
    }
    if let Some(url) = s("url") {
        out.push_str(&format!(" GET {}", clip(url, 200)));
    }
    clip(&out, MAX_SUMMARY_BYTES)
}
