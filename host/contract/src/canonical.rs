//! Canonical JSON: one text per JSON value, whatever order its keys came
//! in; the base of every digest of JSON (replay keys, descriptor pins).

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io;

/// `v` as canonical JSON: object keys sorted (by their UTF-8 bytes) at every
/// level, no insignificant whitespace. Two values that are equal as JSON
/// have the same canonical text, whatever order their keys came in.
pub fn canonical_json(v: &Value) -> String {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail, and serde_json writes UTF-8.
    let _ = write_canonical(v, &mut out);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Writes `v` as canonical JSON: each key and scalar straight through
/// serde_json's own (compact) writer, so the bytes are those of
/// `Value::to_string`, without a string per node.
fn write_canonical<W: io::Write>(v: &Value, out: &mut W) -> io::Result<()> {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.write_all(b"{")?;
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                serde_json::to_writer(&mut *out, k)?;
                out.write_all(b":")?;
                write_canonical(v, out)?;
            }
            out.write_all(b"}")
        }
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_canonical(item, out)?;
            }
            out.write_all(b"]")
        }
        scalar => Ok(serde_json::to_writer(&mut *out, scalar)?),
    }
}

/// Feeds `io::Write` output into a SHA-256 hasher.
pub struct HashWriter<'a>(pub &'a mut Sha256);

impl io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// SHA-256 (hex) of `v`'s canonical JSON, hashed as it is written (the
/// text itself is never built).
pub fn canonical_sha256(v: &Value) -> String {
    let mut h = Sha256::new();
    // Hashing cannot fail.
    let _ = write_canonical(v, &mut HashWriter(&mut h));
    crate::hex(&h.finalize())
}
