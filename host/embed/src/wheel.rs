//! One file out of a wheel (a zip archive): found by the central directory
//! at the archive's end, stored or deflated, its size checked against
//! what the directory says. Enough for the pinned wheel (no ZIP64, no
//! encryption); anything else is refused with what was wrong.

use crate::EmbedError;

/// The end-of-central-directory record's signature.
const END: u32 = 0x0605_4b50;
/// A central directory entry's signature.
const ENTRY: u32 = 0x0201_4b50;
/// A local file header's signature.
const LOCAL: u32 = 0x0403_4b50;

/// The most bytes one file may inflate to (the weights are 16 MB).
pub const MAX_FILE: usize = 256 << 20;

/// The bytes of the file `name` in the zip `archive`.
pub fn entry(archive: &[u8], name: &str) -> Result<Vec<u8>, EmbedError> {
    let bad = |what: &str| EmbedError::Wheel(format!("{what} (reading {name})"));
    let end = find_end(archive).ok_or_else(|| bad("no end of central directory"))?;
    let count = u16_at(archive, end + 10).ok_or_else(|| bad("a short end record"))?;
    let mut at = u32_at(archive, end + 16).ok_or_else(|| bad("a short end record"))? as usize;
    for _ in 0..count {
        if u32_at(archive, at) != Some(ENTRY) {
            return Err(bad("a central directory entry without its signature"));
        }
        let field16 = |off: usize| u16_at(archive, at + off).map(usize::from);
        let field32 = |off: usize| u32_at(archive, at + off);
        let (Some(method), Some(packed), Some(size), Some(n), Some(extra), Some(comment)) = (
            field16(10),
            field32(20),
            field32(24),
            field16(28),
            field16(30),
            field16(32),
        ) else {
            return Err(bad("a short central directory entry"));
        };
        let offset = field32(42).ok_or_else(|| bad("a short central directory entry"))?;
        let this = archive
            .get(at + 46..at + 46 + n)
            .ok_or_else(|| bad("a name past the archive's end"))?;
        at += 46 + n + extra + comment;
        if this != name.as_bytes() {
            continue;
        }
        if packed == u32::MAX || size == u32::MAX || offset == u32::MAX {
            return Err(bad("a ZIP64 entry"));
        }
        let (packed, size, offset) = (packed as usize, size as usize, offset as usize);
        if size > MAX_FILE {
            return Err(bad(&format!("{size} bytes, over {MAX_FILE}")));
        }
        if u32_at(archive, offset) != Some(LOCAL) {
            return Err(bad("a local header without its signature"));
        }
        let local_n = u16_at(archive, offset + 26).ok_or_else(|| bad("a short local header"))?;
        let local_extra =
            u16_at(archive, offset + 28).ok_or_else(|| bad("a short local header"))?;
        let start = offset + 30 + usize::from(local_n) + usize::from(local_extra);
        let data = archive
            .get(start..start + packed)
            .ok_or_else(|| bad("data past the archive's end"))?;
        let bytes = match method {
            0 => data.to_vec(),
            8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, size)
                .map_err(|e| bad(&format!("inflating: {:?}", e.status)))?,
            m => return Err(bad(&format!("compression method {m}"))),
        };
        if bytes.len() != size {
            return Err(bad(&format!(
                "{} bytes, but the directory says {size}",
                bytes.len()
            )));
        }
        return Ok(bytes);
    }
    Err(bad("no such file in the archive"))
}

/// Where the end-of-central-directory record starts: searched backwards
/// over its 22 bytes and the longest comment it may carry.
fn find_end(archive: &[u8]) -> Option<usize> {
    let last = archive.len().checked_sub(22)?;
    let first = last.saturating_sub(u16::MAX as usize);
    (first..=last)
        .rev()
        .find(|&i| u32_at(archive, i) == Some(END))
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zip archive of `files` (stored, not deflated), as `zip -0` makes.
    fn stored(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut directory = Vec::new();
        for (name, data) in files {
            let offset = out.len() as u32;
            let size = data.len() as u32;
            out.extend(LOCAL.to_le_bytes());
            out.extend([20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            out.extend(size.to_le_bytes());
            out.extend(size.to_le_bytes());
            out.extend((name.len() as u16).to_le_bytes());
            out.extend(0u16.to_le_bytes());
            out.extend(name.as_bytes());
            out.extend(*data);
            directory.extend(ENTRY.to_le_bytes());
            directory.extend([20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            directory.extend(size.to_le_bytes());
            directory.extend(size.to_le_bytes());
            directory.extend((name.len() as u16).to_le_bytes());
            directory.extend([0; 12]);
            directory.extend(offset.to_le_bytes());
            directory.extend(name.as_bytes());
        }
        let at = out.len() as u32;
        let size = directory.len() as u32;
        out.extend(directory);
        out.extend(END.to_le_bytes());
        out.extend([0, 0, 0, 0]);
        out.extend((files.len() as u16).to_le_bytes());
        out.extend((files.len() as u16).to_le_bytes());
        out.extend(size.to_le_bytes());
        out.extend(at.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out
    }

    #[test]
    fn reads_a_file_by_name_and_refuses_what_it_cannot_read() {
        let zip = stored(&[("a.txt", b"first"), ("dir/b.json", b"{\"b\":1}")]);
        assert_eq!(entry(&zip, "dir/b.json").unwrap_or_default(), b"{\"b\":1}");
        assert_eq!(entry(&zip, "a.txt").unwrap_or_default(), b"first");
        let missing = entry(&zip, "c").map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(
            missing,
            Err("the wheel: no such file in the archive (reading c)".into())
        );
        // Every truncation is an error, never a panic.
        for cut in 0..zip.len() {
            let _ = entry(&zip[..cut], "dir/b.json");
        }
        assert!(entry(b"not a zip", "a.txt").is_err());
    }
}
