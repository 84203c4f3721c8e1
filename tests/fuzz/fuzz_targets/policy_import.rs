//! Another host's YAML policy imported on arbitrary bytes: it never
//! panics, a refusal names where the input came from, and what an import
//! writes always parses as a toolhost policy.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use toolhost_policy::{Policy, import};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match import::wassette(text, "fuzz.yaml") {
        Ok(imported) => {
            if let Err(e) = Policy::parse(&imported.toml, "imported.toml", Path::new("/fuzz")) {
                panic!("an import that does not parse: {e}\n{}", imported.toml);
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.yaml"), "{e}"),
    }
});
