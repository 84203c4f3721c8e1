//! Streaming search of one file: the file is read in chunks of complete lines,
//! each chunk searched as a whole, so memory stays bounded by the chunk size
//! (plus the longest line) whatever the file's size.

use std::io::Read;

use memchr::{memchr, memrchr};
use regex_automata::meta::Regex;
use toolhost_kit::text::count_newlines;
use toolhost_kit::text::truncate_chars;

use crate::Match;

/// Bytes searched at a time, at most.
pub const CHUNK: usize = 1 << 20;
/// Bytes asked of one read (what WASI hands over per call anyway). A file's
/// first round searches one read's worth, and rounds double up to
/// [`CHUNK`], so a small file never makes the buffer grow past what it needs.
pub const READ: usize = 64 << 10;
/// A file with a line longer than this is skipped (`longLine`): searching it
/// would need the whole line in memory.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Why a file was not searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// A NUL byte: a binary file.
    Binary,
    /// Not valid UTF-8.
    NotUtf8,
    /// A line over [`MAX_LINE_BYTES`].
    LongLine,
    /// Could not be opened or read.
    Unreadable,
}

/// What searching one file did.
pub enum Outcome {
    /// Searched to the end (or to the match limit); the bytes searched.
    Searched(u64),
    /// Not searched; any matches it produced were withdrawn.
    Skipped(Skip),
}

/// Per-search settings and the shared match list.
pub struct Searcher<'a> {
    /// The line-confined pattern.
    pub regex: &'a Regex,
    /// Lines of context before and after.
    pub context: usize,
    /// Match limit.
    pub max: usize,
    /// Line text is cut to this many characters.
    pub max_line_chars: usize,
    /// Matches found so far (all files).
    pub matches: &'a mut Vec<Match>,
    /// Set when a match beyond `max` exists.
    pub truncated: &'a mut bool,
    /// The read buffer, reused from file to file: its length is what was
    /// ever allocated (and zeroed) and only grows, so a small file costs no
    /// fresh chunk.
    pub buf: &'a mut Vec<u8>,
}

/// A match whose after-context continues in the next chunk.
struct Pending {
    index: usize,
    remaining: usize,
}

impl Searcher<'_> {
    /// Searches `reader` (the file shown as `shown`) to its end, or until the
    /// match limit is passed.
    pub fn search(&mut self, reader: impl Read, shown: &str) -> Outcome {
        let mut buf = std::mem::take(self.buf);
        let outcome = self.search_with(&mut buf, reader, shown);
        *self.buf = buf;
        outcome
    }

    fn search_with(&mut self, buffer: &mut Vec<u8>, mut reader: impl Read, shown: &str) -> Outcome {
        let first_match = self.matches.len();
        let mut filled = 0usize;
        // Line number of the first line in `buf` (`buf` starts at a line start).
        let mut base_line = 1usize;
        // Bytes of `buf` already searched (carried context lines).
        let mut searched = 0usize;
        let mut pending: Vec<Pending> = vec![];
        let mut total = 0u64;
        let mut eof = false;
        // How many unsearched bytes to have in `buf` before searching: a
        // chunk, or more while one line is longer than that.
        let mut want = READ;
        loop {
            while !eof && filled - searched < want {
                if buffer.len() < filled + READ {
                    buffer.resize(filled + READ, 0);
                }
                match reader.read(&mut buffer[filled..filled + READ]) {
                    Ok(0) => eof = true,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        self.withdraw(first_match);
                        return Outcome::Skipped(Skip::Unreadable);
                    }
                }
            }
            // The region to search: complete lines only, unless at the end.
            let buf = &buffer[..filled];
            let end = if eof {
                buf.len()
            } else {
                match memrchr(b'\n', &buf[searched..]) {
                    Some(i) => searched + i + 1,
                    None if buf.len() - searched > MAX_LINE_BYTES => {
                        self.withdraw(first_match);
                        return Outcome::Skipped(Skip::LongLine);
                    }
                    None => {
                        want += CHUNK;
                        continue;
                    }
                }
            };
            want = (want * 2).min(CHUNK);
            let region = &buf[searched..end];
            if memchr(0, region).is_some() {
                self.withdraw(first_match);
                return Outcome::Skipped(Skip::Binary);
            }
            if simdutf8::basic::from_utf8(region).is_err() {
                self.withdraw(first_match);
                return Outcome::Skipped(Skip::NotUtf8);
            }
            total += region.len() as u64;
            let mut lines = Lines {
                buf: &buf[..end],
                pos: 0,
                line: base_line,
            };
            self.fill_pending(&mut pending, &buf[..end], searched);
            if !self.search_region(&buf[..end], searched, &mut lines, &mut pending, shown) {
                return Outcome::Searched(total);
            }
            if eof {
                return Outcome::Searched(total);
            }
            // Keep the last `context` lines (for before-context) and the
            // incomplete line after `end`.
            let mut keep = end;
            for _ in 0..self.context {
                match keep.checked_sub(1).and_then(|k| memrchr(b'\n', &buf[..k])) {
                    Some(i) => keep = i + 1,
                    None => {
                        keep = 0;
                        break;
                    }
                }
            }
            base_line = lines.line_at(end) - count_newlines(&buf[keep..end]);
            buffer.copy_within(keep..filled, 0);
            filled -= keep;
            searched = end - keep;
        }
    }

    /// Removes the matches of the current file (it turned out not to be text).
    fn withdraw(&mut self, first_match: usize) {
        self.matches.truncate(first_match);
    }

    /// Gives pending matches their after-context from the lines at `from`.
    fn fill_pending(&mut self, pending: &mut Vec<Pending>, buf: &[u8], from: usize) {
        for p in pending.iter_mut() {
            let mut at = from;
            while p.remaining > 0 && at < buf.len() {
                let (line, next) = line_at(buf, at);
                let line = self.cut(line).to_string();
                self.matches[p.index].after.push(line);
                p.remaining -= 1;
                at = next;
            }
        }
        pending.retain(|p| p.remaining > 0);
    }

    /// Searches `buf[from..]` (complete lines); false once the match limit
    /// is passed.
    fn search_region(
        &mut self,
        buf: &[u8],
        from: usize,
        lines: &mut Lines<'_>,
        pending: &mut Vec<Pending>,
        shown: &str,
    ) -> bool {
        let mut at = from;
        while at < buf.len() {
            let Some(m) = self
                .regex
                .search(&regex_automata::Input::new(buf).range(at..))
            else {
                break;
            };
            // An empty match after the final line break is not on a line.
            if m.start() == buf.len() && (buf.is_empty() || buf.ends_with(b"\n")) {
                break;
            }
            let start = memrchr(b'\n', &buf[..m.start()]).map_or(0, |i| i + 1);
            let (text, next) = line_at(buf, start);
            if self.matches.len() == self.max {
                *self.truncated = true;
                return false;
            }
            let line = lines.line_at(start);
            let mut before = vec![];
            let mut b = start;
            while before.len() < self.context && b > 0 {
                let s = memrchr(b'\n', &buf[..b - 1]).map_or(0, |i| i + 1);
                before.push(self.cut(line_at(buf, s).0).to_string());
                b = s;
            }
            before.reverse();
            let mut after = vec![];
            let mut a = next;
            while after.len() < self.context && a < buf.len() {
                let (l, n) = line_at(buf, a);
                after.push(self.cut(l).to_string());
                a = n;
            }
            if after.len() < self.context {
                pending.push(Pending {
                    index: self.matches.len(),
                    remaining: self.context - after.len(),
                });
            }
            self.matches.push(Match {
                path: shown.to_string(),
                line,
                text: self.cut(text).to_string(),
                before,
                after,
            });
            at = next;
        }
        true
    }

    fn cut<'b>(&self, line: &'b str) -> &'b str {
        truncate_chars(line, self.max_line_chars).0
    }
}

/// The line starting at `start` (without its `\n` and a `\r` before it) and
/// the start of the next line.
fn line_at(buf: &[u8], start: usize) -> (&str, usize) {
    let (end, next) = match memchr(b'\n', &buf[start..]) {
        Some(i) => (start + i, start + i + 1),
        None => (buf.len(), buf.len()),
    };
    let mut bytes = &buf[start..end];
    if let Some(stripped) = bytes.strip_suffix(b"\r") {
        bytes = stripped;
    }
    // The region was validated as UTF-8 and is cut at line boundaries.
    (std::str::from_utf8(bytes).unwrap_or_default(), next)
}

/// Line numbers by position, counted incrementally (positions only grow).
struct Lines<'a> {
    buf: &'a [u8],
    pos: usize,
    line: usize,
}

impl Lines<'_> {
    fn line_at(&mut self, pos: usize) -> usize {
        self.line += count_newlines(&self.buf[self.pos..pos]);
        self.pos = pos;
        self.line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pattern: &str, text: &[u8], context: usize, max: usize) -> (Vec<Match>, bool, Outcome) {
        let regex = crate::matcher::compile(pattern, false).unwrap();
        let mut matches = vec![];
        let mut truncated = false;
        let outcome = Searcher {
            regex: &regex,
            context,
            max,
            max_line_chars: 500,
            matches: &mut matches,
            truncated: &mut truncated,
            buf: &mut vec![],
        }
        .search(text, "f");
        (matches, truncated, outcome)
    }

    /// A reader that returns at most `n` bytes per read, to cross chunk
    /// boundaries at awkward places.
    struct Trickle<'a>(&'a [u8], usize);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(out.len()).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn matches_across_chunks_with_context_and_line_numbers() {
        // ~3 chunks of numbered lines; every 10,000th line matches.
        let text: String = (1..=150_000)
            .map(|i| {
                if i % 10_000 == 0 {
                    format!("hit {i:>20}\r\n")
                } else {
                    format!("line {i:>20}\n")
                }
            })
            .collect();
        assert!(text.len() > 3 * CHUNK);
        let (m, truncated, outcome) = run("^hit", text.as_bytes(), 2, 100);
        assert!(!truncated);
        assert!(matches!(outcome, Outcome::Searched(n) if n == text.len() as u64));
        assert_eq!(m.len(), 15);
        for (k, m) in m.iter().enumerate() {
            let n = (k + 1) * 10_000;
            assert_eq!(m.line, n);
            assert_eq!(m.text, format!("hit {n:>20}"));
            assert_eq!(
                m.before,
                vec![format!("line {:>20}", n - 2), format!("line {:>20}", n - 1)]
            );
            let after: Vec<String> = (n + 1..=n + 2)
                .filter(|&a| a <= 150_000)
                .map(|a| format!("line {a:>20}"))
                .collect();
            assert_eq!(m.after, after, "after-context of line {n}");
        }
        // The same through tiny reads.
        let regex = crate::matcher::compile("^hit", false).unwrap();
        let (mut matches, mut truncated) = (vec![], false);
        Searcher {
            regex: &regex,
            context: 2,
            max: 100,
            max_line_chars: 500,
            matches: &mut matches,
            truncated: &mut truncated,
            buf: &mut vec![],
        }
        .search(Trickle(text.as_bytes(), 4099), "f");
        assert_eq!(matches, m);
    }

    #[test]
    fn skips_are_detected_late_and_withdraw_matches() {
        let mut text = b"hit\nhit\n".to_vec();
        text.extend(b"aaa\n".repeat(CHUNK));
        text.extend_from_slice(b"bin\0ary\n");
        // The limit is passed before the NUL: the search stops there.
        let (m, truncated, outcome) = run("hit", &text, 0, 1);
        assert_eq!(m.len(), 1);
        assert!(truncated);
        assert!(matches!(outcome, Outcome::Searched(_)));
        let (m, truncated, outcome) = run("hit", &text, 0, 100);
        assert!(m.is_empty() && !truncated);
        assert!(matches!(outcome, Outcome::Skipped(Skip::Binary)));
        let mut text = b"hit\n".to_vec();
        text.extend(b"aaa\n".repeat(CHUNK));
        text.extend_from_slice(b"caf\xe9\n");
        let (m, _, outcome) = run("hit", &text, 0, 100);
        assert!(m.is_empty());
        assert!(matches!(outcome, Outcome::Skipped(Skip::NotUtf8)));
    }

    #[test]
    fn empty_matches_stay_on_real_lines() {
        let (m, _, _) = run("^$", b"a\n\nb\r\n", 0, 10);
        assert_eq!(m.iter().map(|m| m.line).collect::<Vec<_>>(), vec![2]);
        let (m, _, _) = run("$", b"a\nb", 0, 10);
        assert_eq!(m.iter().map(|m| m.line).collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn long_lines() {
        let mut text = "x".repeat(3 * CHUNK);
        text.push_str(" hit\nnext hit\n");
        let (m, _, _) = run("hit", text.as_bytes(), 0, 10);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].line, 1);
        assert_eq!(m[0].text.chars().count(), 500);
        assert_eq!(m[1].line, 2);
        let huge = "y".repeat(MAX_LINE_BYTES + CHUNK);
        let (m, _, outcome) = run("y", huge.as_bytes(), 0, 10);
        assert!(m.is_empty());
        assert!(matches!(outcome, Outcome::Skipped(Skip::LongLine)));
    }

    #[test]
    fn last_line_without_newline_and_empty_file() {
        let (m, _, _) = run("end", b"a\nthe end", 1, 10);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].line, 2);
        assert_eq!(m[0].before, vec!["a"]);
        let (m, _, outcome) = run("x", b"", 0, 10);
        assert!(m.is_empty());
        assert!(matches!(outcome, Outcome::Searched(0)));
    }
}
