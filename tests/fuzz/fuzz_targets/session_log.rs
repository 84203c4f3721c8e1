//! The session-log reader on arbitrary bytes: it never panics, and what it
//! reads survives a round trip (the events written out again as JSON Lines
//! read back the same, with no torn tail).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use toolhost_session_log::parse_log;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.jsonl");
    let Ok(contents) = parse_log(data, path) else {
        return;
    };
    let mut again = Vec::new();
    for e in &contents.events {
        serde_json::to_writer(&mut again, e).expect("an event encodes");
        again.push(b'\n');
    }
    let back = parse_log(&again, path).expect("written events read back");
    assert_eq!(back.events, contents.events);
    assert_eq!(back.torn_tail, None);
});
