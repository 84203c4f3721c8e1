//! Text-file helpers shared by tools that read source files: loading a file
//! as UTF-8 text with clear failures, and splitting it into lines.

use std::path::Path;

use crate::ToolError;

/// Why some bytes are not usable as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotText {
    /// The bytes contain a NUL byte (at this offset): a binary file.
    Binary(usize),
    /// The bytes are not valid UTF-8 from this offset on.
    NotUtf8(usize),
}

/// Checks that `bytes` are text: no NUL byte and valid UTF-8.
pub fn decode(bytes: Vec<u8>) -> Result<String, NotText> {
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(NotText::Binary(at));
    }
    String::from_utf8(bytes).map_err(|e| NotText::NotUtf8(e.utf8_error().valid_up_to()))
}

/// Reads the file at `path` as text.
///
/// Failures: `not_found`, `is_directory`, `binary_file` (the file has a NUL
/// byte), `not_utf8`, or the other codes of [`ToolError::io`].
pub fn read_text_file(path: &Path) -> Result<String, ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| ToolError::io(&e, path))?;
    if meta.is_dir() {
        return Err(ToolError::new(
            "is_directory",
            format!("{} is a directory, not a file", path.display()),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| ToolError::io(&e, path))?;
    decode(bytes).map_err(|e| not_text_error(path, e))
}

/// The failure for a file that is not text.
pub fn not_text_error(path: &Path, why: NotText) -> ToolError {
    match why {
        NotText::Binary(at) => ToolError::new(
            "binary_file",
            format!(
                "{} looks like a binary file (NUL byte at offset {at}); only text files are supported",
                path.display()
            ),
        ),
        NotText::NotUtf8(at) => ToolError::new(
            "not_utf8",
            format!(
                "{} is not valid UTF-8 (first invalid byte at offset {at})",
                path.display()
            ),
        ),
    }
}

/// Splits text into lines: `\n` separates lines, a trailing `\n` does not
/// start another line, and a `\r` before the `\n` (CRLF) is dropped. Empty
/// text has no lines.
pub fn split_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if text.is_empty() || text.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// Counts the `\n` bytes in `bytes`: 16 at a time with wasm SIMD (guests
/// are built with `simd128`), through `memchr` elsewhere.
pub fn count_newlines(bytes: &[u8]) -> usize {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        simd::count(bytes, b'\n')
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        memchr::memchr_iter(b'\n', bytes).count()
    }
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd {
    use core::arch::wasm32::{
        u8x16_eq, u8x16_splat, u8x16_sub, u16x8_extadd_pairwise_u8x16, u32x4_extadd_pairwise_u16x8,
        u32x4_extract_lane, v128, v128_load,
    };

    /// Counts `needle` in `bytes`: per 16-byte vector, a compare gives -1 in
    /// each matching lane, subtracted into byte counters that are summed
    /// every 255 vectors (before a lane could overflow).
    pub fn count(bytes: &[u8], needle: u8) -> usize {
        let wanted = u8x16_splat(needle);
        let (vectors, rest) = bytes.as_chunks::<16>();
        let mut total = 0usize;
        for block in vectors.chunks(255) {
            let mut lanes = u8x16_splat(0);
            for v in block {
                // SAFETY: `v` is a reference to 16 readable bytes, and wasm's
                // `v128.load` has no alignment requirement.
                let v = unsafe { v128_load(v.as_ptr().cast::<v128>()) };
                lanes = u8x16_sub(lanes, u8x16_eq(v, wanted));
            }
            let sums = u32x4_extadd_pairwise_u16x8(u16x8_extadd_pairwise_u8x16(lanes));
            total += (u32x4_extract_lane::<0>(sums)
                + u32x4_extract_lane::<1>(sums)
                + u32x4_extract_lane::<2>(sums)
                + u32x4_extract_lane::<3>(sums)) as usize;
        }
        total + rest.iter().filter(|&&b| b == needle).count()
    }
}

/// The number of lines in `text`, as [`split_lines`] counts them.
pub fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        count_newlines(text.as_bytes()) + usize::from(!text.ends_with('\n'))
    }
}

/// `text` cut to at most `max_chars` characters; whether it was cut.
pub fn truncate_chars(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => (&text[..at], true),
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_newlines_matches_a_plain_count() {
        let text: Vec<u8> = (0..20_000u32)
            .map(|i| if i % 7 == 0 { b'\n' } else { (i % 251) as u8 })
            .collect();
        for end in [0, 1, 15, 16, 17, 4079, 4080, 4081, 20_000] {
            let plain = text[..end].iter().filter(|&&b| b == b'\n').count();
            assert_eq!(count_newlines(&text[..end]), plain, "{end}");
        }
    }

    #[test]
    fn lines() {
        assert_eq!(split_lines(""), Vec::<&str>::new());
        assert_eq!(split_lines("a"), vec!["a"]);
        assert_eq!(split_lines("a\n"), vec!["a"]);
        assert_eq!(split_lines("a\nb"), vec!["a", "b"]);
        assert_eq!(split_lines("a\r\nb\r\n"), vec!["a", "b"]);
        assert_eq!(split_lines("\n"), vec![""]);
        assert_eq!(split_lines("a\n\n"), vec!["a", ""]);
        for t in ["", "a", "a\n", "a\nb", "\n", "a\n\n", "x\r\ny"] {
            assert_eq!(count_lines(t), split_lines(t).len(), "{t:?}");
        }
    }

    #[test]
    fn decoding() {
        assert_eq!(decode(b"hi".to_vec()), Ok("hi".to_string()));
        assert_eq!(decode(b"h\0i".to_vec()), Err(NotText::Binary(1)));
        assert_eq!(decode(b"ab\xffc".to_vec()), Err(NotText::NotUtf8(2)));
    }

    #[test]
    fn truncation() {
        assert_eq!(truncate_chars("héllo", 2), ("hé", true));
        assert_eq!(truncate_chars("hé", 2), ("hé", false));
    }

    #[test]
    fn files() {
        let dir = std::env::temp_dir().join(format!("toolhost-kit-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(read_text_file(&dir).unwrap_err().code, "is_directory");
        assert_eq!(
            read_text_file(&dir.join("missing")).unwrap_err().code,
            "not_found"
        );
        std::fs::write(dir.join("bin"), b"\x7fELF\0\0").unwrap();
        assert_eq!(
            read_text_file(&dir.join("bin")).unwrap_err().code,
            "binary_file"
        );
        std::fs::write(dir.join("latin1"), b"caf\xe9").unwrap();
        assert_eq!(
            read_text_file(&dir.join("latin1")).unwrap_err().code,
            "not_utf8"
        );
        std::fs::write(dir.join("ok"), "x\n").unwrap();
        assert_eq!(read_text_file(&dir.join("ok")).unwrap(), "x\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
