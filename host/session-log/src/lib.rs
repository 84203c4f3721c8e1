//! `toolhost-session-log`: the durable session log: JSON Lines, one event per line, append-only,
//! flushed and synced per event.
//!
//! A crash can leave a torn last line. Opening a log for append moves such a
//! fragment aside (to `<log>.torn-<offset>`, so nothing is lost) before
//! writing, or, when the fragment is a whole event that only lost its
//! newline, completes the line (so the reader's count never shrinks); reading skips a torn last line and reports it. A malformed line
//! anywhere else is an error naming its line: never silently merged.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use toolhost_contract::SessionEvent;

/// A session log could not be opened, written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// I/O failed.
    #[error("session log {path}: {source}")]
    Io {
        /// The log.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line in the middle of the log is not an event.
    #[error("session log {path}:{line}: not a session event: {reason}")]
    Malformed {
        /// The log.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// Why.
        reason: String,
    },
}

/// Appends events to a log file.
#[derive(Debug)]
pub struct SessionLog {
    path: PathBuf,
    file: Mutex<File>,
}

impl SessionLog {
    /// Opens (creating) `path` for appending; a torn last line left by a
    /// crash is moved to a side file first.
    pub fn open(path: &Path) -> Result<SessionLog, LogError> {
        let io = |source| LogError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        if let Some((start, fragment)) = torn_tail(&mut file).map_err(io)? {
            if serde_json::from_slice::<SessionEvent>(&fragment).is_ok() {
                // A whole event whose newline was lost: [`read_log`] already
                // counts it, so complete the line rather than drop it.
                file.write_all(b"\n").map_err(io)?;
                file.sync_data().map_err(io)?;
                return Ok(SessionLog {
                    path: path.to_owned(),
                    file: Mutex::new(file),
                });
            }
            let side = path.with_extension(format!("torn-{start}"));
            std::fs::write(&side, &fragment).map_err(io)?;
            file.set_len(start).map_err(io)?;
            file.seek(SeekFrom::End(0)).map_err(io)?;
            tracing::warn!(log = %path.display(), side = %side.display(), "moved a torn last line aside");
        }
        Ok(SessionLog {
            path: path.to_owned(),
            file: Mutex::new(file),
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event as one line, then flushes and syncs it to disk.
    pub fn append(&self, event: &SessionEvent) -> Result<(), LogError> {
        let io = |source| LogError::Io {
            path: self.path.clone(),
            source,
        };
        let mut line = serde_json::to_vec(event).map_err(|e| io(e.into()))?;
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(&line).map_err(io)?;
        f.flush().map_err(io)?;
        f.sync_data().map_err(io)
    }
}

/// The offset and bytes of an unterminated last line, read backwards from
/// the end in chunks (opening a long log does not read all of it).
fn torn_tail(file: &mut File) -> std::io::Result<Option<(u64, Vec<u8>)>> {
    const CHUNK: u64 = 64 * 1024;
    let len = file.seek(SeekFrom::End(0))?;
    let mut end = len;
    let mut tail: Vec<u8> = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let mut chunk = vec![0; usize::try_from(end - start).unwrap_or(0)];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        if end == len && chunk.last() == Some(&b'\n') {
            return Ok(None);
        }
        if let Some(i) = chunk.iter().rposition(|b| *b == b'\n') {
            let cut = start + i as u64 + 1;
            chunk.drain(..=i);
            chunk.extend_from_slice(&tail);
            return Ok(Some((cut, chunk)));
        }
        chunk.extend_from_slice(&tail);
        tail = chunk;
        end = start;
    }
    Ok((!tail.is_empty()).then_some((0, tail)))
}

/// What [`read_log`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct LogContents {
    /// The events, in order.
    pub events: Vec<SessionEvent>,
    /// A torn last line that was skipped.
    pub torn_tail: Option<String>,
}

/// Reads a whole log.
pub fn read_log(path: &Path) -> Result<LogContents, LogError> {
    let bytes = std::fs::read(path).map_err(|source| LogError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse_log(&bytes, path)
}

/// Reads every log (`*.jsonl`) in `dir`, one per replica, merged in time
/// order (events of one log keep their order; equal times keep the logs'
/// name order). Torn last lines are skipped; the first one found is
/// reported.
pub fn read_log_dir(dir: &Path) -> Result<LogContents, LogError> {
    let io = |source| LogError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .collect();
    files.sort();
    let mut all: Vec<(u64, usize, usize, SessionEvent)> = Vec::new();
    let mut torn_tail = None;
    for (f, path) in files.iter().enumerate() {
        let log = read_log(path)?;
        torn_tail = torn_tail.or(log.torn_tail);
        all.extend(
            log.events
                .into_iter()
                .enumerate()
                .map(|(i, e)| (e.ts_ms(), f, i, e)),
        );
    }
    all.sort_by_key(|(ts, f, i, _)| (*ts, *f, *i));
    Ok(LogContents {
        events: all.into_iter().map(|(_, _, _, e)| e).collect(),
        torn_tail,
    })
}

/// Parses the contents of a log (`path` names it in errors): the events in
/// order, and a torn last line (no newline, not an event) reported apart.
/// Invalid UTF-8 is read lossily; a malformed line anywhere else is an
/// error naming its line.
pub fn parse_log(bytes: &[u8], path: &Path) -> Result<LogContents, LogError> {
    let text = String::from_utf8_lossy(bytes);
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut events = Vec::new();
    let mut torn_tail = None;
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<SessionEvent>(line) {
            Ok(e) => events.push(e),
            Err(_) if i + 1 == lines.len() && !complete => torn_tail = Some((*line).to_owned()),
            Err(e) => {
                return Err(LogError::Malformed {
                    path: path.to_owned(),
                    line: i + 1,
                    reason: e.to_string(),
                });
            }
        }
    }
    Ok(LogContents { events, torn_tail })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_tail_finds_the_unterminated_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        let check = |content: &[u8]| {
            std::fs::write(&p, content).unwrap();
            torn_tail(&mut File::open(&p).unwrap()).unwrap()
        };
        assert_eq!(check(b""), None);
        assert_eq!(check(b"a\nb\n"), None);
        assert_eq!(check(b"a\nbc"), Some((2, b"bc".to_vec())));
        assert_eq!(check(b"only"), Some((0, b"only".to_vec())));
        // A fragment longer than one chunk, after a complete line.
        let mut big = b"x\n".to_vec();
        big.extend(std::iter::repeat_n(b'y', 200_000));
        assert_eq!(check(&big), Some((2, vec![b'y'; 200_000])));
    }
}
