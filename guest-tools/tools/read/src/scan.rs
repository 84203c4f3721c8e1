//! One streaming pass over a file: counts its lines, keeps the raw bytes of a
//! window of them, and notes the first NUL byte. Memory is one chunk plus the
//! window (each line kept to [`MAX_LINE_BYTES`]), whatever the file's size.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use memchr::{memchr, memchr_iter};
use toolhost_kit::text::count_newlines;

/// Bytes read at a time (what WASI hands over per call anyway; a bigger
/// buffer would only cost a small file's call more memory to zero).
pub const CHUNK: usize = 64 << 10;
/// Bytes kept of one line: enough for [`crate::MAX_LINE_CHARS`] characters
/// of up to four bytes each, and a `\r`.
pub const MAX_LINE_BYTES: usize = crate::MAX_LINE_CHARS * 4 + 1;

/// One line as read.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RawLine {
    /// Its bytes, without the `\n` (at most [`MAX_LINE_BYTES`]).
    pub bytes: Vec<u8>,
    /// True when the line was longer and cut.
    pub cut: bool,
}

/// What a pass found.
#[derive(Debug, Default)]
pub struct Window {
    /// 0-based number of the first line in `lines`.
    pub first: usize,
    /// The lines of the window.
    pub lines: Vec<RawLine>,
    /// Lines in the whole file.
    pub total_lines: usize,
    /// File offset of the first NUL byte, if any.
    pub binary_at: Option<u64>,
}

/// Reads `count` lines from 0-based line `first`, and counts all lines.
pub fn window(file: &mut File, first: usize, count: usize) -> std::io::Result<Window> {
    let mut pass = Pass::new(first, count);
    pass.run(file, 0, true)?;
    Ok(pass.finish())
}

/// Reads the last `count` lines. One pass counts the lines and remembers
/// where each chunk starts; the last lines are then read from the chunk that
/// holds their start, so the file is read once (plus at most one chunk).
pub fn tail(file: &mut File, count: usize) -> std::io::Result<Window> {
    let mut pass = Pass::new(usize::MAX, 0);
    pass.checkpoints = Some(vec![]);
    pass.run(file, 0, true)?;
    let counted = pass.finish();
    let total = counted.total_lines;
    if counted.binary_at.is_some() || total == 0 {
        return Ok(counted);
    }
    let first = total.saturating_sub(count);
    // The last chunk that starts at or before line `first`.
    let checkpoints = pass.checkpoints.unwrap_or_default();
    let (pos, line) = checkpoints
        .iter()
        .rev()
        .find(|(_, line)| *line <= first)
        .copied()
        .unwrap_or((0, 0));
    file.seek(SeekFrom::Start(pos))?;
    let mut pass = Pass::new(first, count);
    pass.line = line;
    pass.run(file, pos, false)?;
    let mut w = pass.finish();
    w.total_lines = total;
    Ok(w)
}

struct Pass {
    first: usize,
    count: usize,
    /// 0-based number of the line being read.
    line: usize,
    lines: Vec<RawLine>,
    /// The line being collected, when it is in the window.
    current: Option<RawLine>,
    last_byte: Option<u8>,
    binary_at: Option<u64>,
    /// (file offset, line number) at the start of each chunk.
    checkpoints: Option<Vec<(u64, usize)>>,
}

impl Pass {
    fn new(first: usize, count: usize) -> Self {
        Pass {
            first,
            count,
            line: 0,
            lines: vec![],
            current: None,
            last_byte: None,
            binary_at: None,
            checkpoints: None,
        }
    }

    fn in_window(&self) -> bool {
        self.line >= self.first && self.line - self.first < self.count
    }

    /// Reads from offset `pos` to the end, or (when `to_end` is false) until
    /// the window is complete.
    fn run(&mut self, file: &mut File, mut pos: u64, to_end: bool) -> std::io::Result<()> {
        // A small file's buffer is its size: zeroing and touching a whole
        // chunk of fresh guest memory was most of a short read's cost.
        let left = file
            .metadata()
            .map_or(CHUNK as u64, |m| m.len().saturating_sub(pos));
        let size = usize::try_from(left).map_or(CHUNK, |n| n.saturating_add(1).min(CHUNK));
        let mut buf = vec![0u8; size];
        loop {
            if !to_end && self.line >= self.first.saturating_add(self.count) {
                return Ok(());
            }
            let n = match file.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if let Some(c) = &mut self.checkpoints {
                c.push((pos, self.line));
            }
            let chunk = &buf[..n];
            if self.binary_at.is_none()
                && let Some(i) = memchr(0, chunk)
            {
                self.binary_at = Some(pos + i as u64);
            }
            self.chunk(chunk);
            self.last_byte = chunk.last().copied();
            pos += n as u64;
        }
    }

    fn chunk(&mut self, chunk: &[u8]) {
        let mut i = 0;
        while i < chunk.len() {
            if self.in_window() {
                let cur = self.current.get_or_insert_with(RawLine::default);
                let (end, next) = match memchr(b'\n', &chunk[i..]) {
                    Some(j) => (i + j, Some(i + j + 1)),
                    None => (chunk.len(), None),
                };
                let room = MAX_LINE_BYTES - cur.bytes.len().min(MAX_LINE_BYTES);
                let take = (end - i).min(room);
                cur.bytes.extend_from_slice(&chunk[i..i + take]);
                cur.cut |= take < end - i;
                match next {
                    Some(next) => {
                        self.end_line();
                        i = next;
                    }
                    None => i = chunk.len(),
                }
            } else if self.line < self.first {
                // Skip to the window's first line.
                let need = self.first - self.line;
                let rest = &chunk[i..];
                let here = count_newlines(rest);
                match (here >= need)
                    .then(|| memchr_iter(b'\n', rest).nth(need - 1))
                    .flatten()
                {
                    Some(j) => {
                        self.line += need;
                        i += j + 1;
                    }
                    None => {
                        self.line += here;
                        i = chunk.len();
                    }
                }
            } else {
                // Past the window: only count.
                self.line += count_newlines(&chunk[i..]);
                i = chunk.len();
            }
        }
    }

    fn end_line(&mut self) {
        if let Some(line) = self.current.take() {
            self.lines.push(line);
        }
        self.line += 1;
    }

    fn finish(&mut self) -> Window {
        // A last line without a final newline.
        if self.last_byte.is_some_and(|b| b != b'\n') {
            self.end_line();
        }
        Window {
            first: self.first.min(self.line),
            lines: std::mem::take(&mut self.lines),
            total_lines: self.line,
            binary_at: self.binary_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(bytes: &[u8]) -> (tempfile::NamedTempFile, File) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        let h = File::open(f.path()).unwrap();
        (f, h)
    }

    fn text(w: &Window) -> Vec<String> {
        w.lines
            .iter()
            .map(|l| String::from_utf8(l.bytes.clone()).unwrap())
            .collect()
    }

    #[test]
    fn windows_across_chunks() {
        let all: String = (1..=200_000).map(|i| format!("line {i:>10}\n")).collect();
        assert!(all.len() > 3 * CHUNK);
        let (_f, mut h) = file(all.as_bytes());
        let w = window(&mut h, 99_990, 20).unwrap();
        assert_eq!(w.total_lines, 200_000);
        assert_eq!(w.first, 99_990);
        let expect: Vec<String> = (99_991..=100_010)
            .map(|i| format!("line {i:>10}"))
            .collect();
        assert_eq!(text(&w), expect);
        let (_f, mut h) = file(all.as_bytes());
        let w = tail(&mut h, 3).unwrap();
        assert_eq!(w.first, 199_997);
        assert_eq!(w.total_lines, 200_000);
        assert_eq!(
            text(&w),
            vec!["line     199998", "line     199999", "line     200000"]
        );
        let (_f, mut h) = file(all.as_bytes());
        let w = tail(&mut h, 500_000).unwrap();
        assert_eq!(w.first, 0);
        assert_eq!(w.lines.len(), 200_000);
    }

    #[test]
    fn last_line_without_newline_long_lines_and_nul() {
        let (_f, mut h) = file(b"a\nb");
        let w = window(&mut h, 0, 10).unwrap();
        assert_eq!(w.total_lines, 2);
        assert_eq!(text(&w), vec!["a", "b"]);
        let (_f, mut h) = file(b"a\nb");
        assert_eq!(text(&tail(&mut h, 1).unwrap()), vec!["b"]);
        let long = format!("{}\nshort\n", "x".repeat(3 * CHUNK));
        let (_f, mut h) = file(long.as_bytes());
        let w = window(&mut h, 0, 10).unwrap();
        assert_eq!(w.lines[0].bytes.len(), MAX_LINE_BYTES);
        assert!(w.lines[0].cut);
        assert_eq!(text(&w)[1], "short");
        let (_f, mut h) = file(b"ok\nbin\0ary\n");
        assert_eq!(window(&mut h, 0, 1).unwrap().binary_at, Some(6));
        let (_f, mut h) = file(b"");
        let w = window(&mut h, 0, 10).unwrap();
        assert_eq!((w.total_lines, w.lines.len()), (0, 0));
    }
}
