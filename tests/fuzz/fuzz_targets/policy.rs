//! The policy parser on arbitrary bytes: it never panics, and a refusal
//! names where the input came from (so a user sees which file is wrong).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use toolhost_policy::Policy;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Policy::parse(text, "fuzz.toml", Path::new("/fuzz")) {
        Ok(policy) => {
            // A valid policy answers for any tool name.
            let _ = policy.for_tool("read");
        }
        Err(e) => assert!(e.to_string().contains("fuzz.toml"), "{e}"),
    }
});
