//! The toolbox-file parser (`toolhost.toml`) on arbitrary bytes: it never
//! panics; a toolbox it accepts has components whose lines are in the file;
//! a refusal is one line that names the file, with a line and column inside
//! the input when it has a position (so a user is sent to the right place).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use toolhost_toolbox_file::{PolicySource, Toolbox};

const BUILTINS: &[&str] = &["read", "write", "edit", "list", "grep", "fetch"];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.split('\n').count();
    match Toolbox::parse(text, "fuzz.toml", Path::new("/fuzz"), BUILTINS) {
        Ok(toolbox) => {
            assert!(!toolbox.components.is_empty());
            for c in &toolbox.components {
                assert!(c.line >= 1 && c.line <= lines, "line {} of {lines}", c.line);
                if let PolicySource::Inline(policy) = &c.policy {
                    // An inline policy answers for any tool name.
                    let _ = policy.for_tool("read");
                }
            }
        }
        Err(e) => {
            let shown = e.to_string();
            assert!(shown.starts_with("fuzz.toml"), "{shown}");
            assert!(!shown.contains('\n'), "{shown:?}");
            assert!(!e.message.is_empty());
            if let Some(line) = e.line {
                assert!(
                    line >= 1 && line <= lines,
                    "line {line} of {lines}: {shown}"
                );
                let width = text
                    .split('\n')
                    .nth(line - 1)
                    .map_or(0, |l| l.chars().count());
                let col = e.column.unwrap_or(1);
                assert!(
                    col >= 1 && col <= width + 1,
                    "column {col} of {width}: {shown}"
                );
            }
        }
    }
});
