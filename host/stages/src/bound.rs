//! Result bounding: what enters the model's context is bounded; the
//! overflow is kept as an artifact the model can page through by reference.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use toolhost_contract::ContentBlock;

/// URI scheme of stored overflow.
pub const ARTIFACT_SCHEME: &str = "toolhost://artifacts/";

/// Default bound on the bytes all artifacts of one store may hold: 64 MiB.
///
/// A long-running server sees many truncated results; without a bound the
/// overflow it keeps for paging would grow without end. The oldest
/// artifacts are evicted first.
pub const DEFAULT_ARTIFACT_CAPACITY: usize = 64 * 1024 * 1024;

/// Full texts of truncated results, kept for paging, in a store bounded by
/// bytes: putting a new artifact evicts the oldest ones until it fits, and
/// one artifact larger than the whole store keeps only its first
/// `capacity` bytes.
///
/// Each artifact belongs to the principal whose call made it (`owner`; ""
/// when the front end names none): only the same owner reads it, and to
/// anyone else it does not exist.
///
/// Two backings: this process's memory ([`Artifacts::with_capacity`]), or
/// a directory that several replicas share ([`Artifacts::in_dir`]), where
/// an artifact is a file named by the digest of its owner and its text
/// (content-addressed: the same result stored twice is one file), so any
/// replica serves any artifact its caller owns.
#[derive(Debug)]
pub struct Artifacts {
    capacity: usize,
    backing: Backing,
}

#[derive(Debug)]
enum Backing {
    Memory(Mutex<Stored>),
    Dir(PathBuf),
}

#[derive(Debug, Default)]
struct Stored {
    /// id → (owner, text).
    items: HashMap<String, (String, String)>,
    /// Insertion order, oldest first.
    order: VecDeque<String>,
    bytes: usize,
    evicted: u64,
}

impl Default for Artifacts {
    fn default() -> Self {
        Artifacts::with_capacity(DEFAULT_ARTIFACT_CAPACITY)
    }
}

/// An artifact file's first line: this tag and the owner's digest.
const OWNER_LINE: &str = "toolhost-artifact-v1 owner=";

/// Bytes of an artifact file before its text: the owner line.
const HEADER_LEN: u64 = (OWNER_LINE.len() + 32 + 1) as u64;

/// The digest an artifact file records its owner by (hex, 128 bits).
fn owner_digest(owner: &str) -> String {
    toolhost_contract::sha256_hex(owner.as_bytes())[..32].to_owned()
}

/// Whether `id` could name an artifact file (no separators, no dots first).
fn file_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Artifacts {
    /// A store in this process's memory, holding at most `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Artifacts {
        Artifacts {
            capacity,
            backing: Backing::Memory(Mutex::new(Stored::default())),
        }
    }

    /// A store in the directory `dir` (created if missing), shared with
    /// every process that uses the same directory, holding at most
    /// `capacity` bytes of artifact text (the oldest files go first).
    pub fn in_dir(dir: &Path, capacity: usize) -> std::io::Result<Artifacts> {
        std::fs::create_dir_all(dir)?;
        Ok(Artifacts {
            capacity,
            backing: Backing::Dir(dir.to_owned()),
        })
    }

    fn lock(stored: &Mutex<Stored>) -> std::sync::MutexGuard<'_, Stored> {
        stored.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores `text` under `id` with no owner (evicting the oldest
    /// artifacts if needed); returns its URI.
    pub fn put(&self, id: &str, text: String) -> String {
        self.put_owned("", id, text)
    }

    /// Stores `text` for `owner`; returns its URI. In memory it is kept
    /// under `id`; in a directory under the digest of owner and text.
    pub fn put_owned(&self, owner: &str, id: &str, mut text: String) -> String {
        if text.len() > self.capacity {
            text.truncate(text.floor_char_boundary(self.capacity));
        }
        match &self.backing {
            Backing::Memory(stored) => {
                let mut s = Self::lock(stored);
                if let Some((_, old)) = s.items.remove(id) {
                    s.bytes -= old.len();
                    s.order.retain(|k| k != id);
                }
                while s.bytes + text.len() > self.capacity {
                    let Some(oldest) = s.order.pop_front() else {
                        break;
                    };
                    if let Some((_, old)) = s.items.remove(&oldest) {
                        s.bytes -= old.len();
                        s.evicted += 1;
                    }
                }
                s.bytes += text.len();
                s.order.push_back(id.to_owned());
                s.items.insert(id.to_owned(), (owner.to_owned(), text));
                format!("{ARTIFACT_SCHEME}{id}")
            }
            Backing::Dir(dir) => {
                let owner = owner_digest(owner);
                let mut h = Vec::with_capacity(owner.len() + 1 + text.len());
                h.extend_from_slice(owner.as_bytes());
                h.push(0);
                h.extend_from_slice(text.as_bytes());
                let id = toolhost_contract::sha256_hex(&h)[..32].to_owned();
                let path = dir.join(&id);
                if !path.exists() {
                    self.make_room(dir, text.len());
                    // Written aside, then renamed: a reader sees all or nothing.
                    // Not the pid: replicas sharing the directory may
                    // all be PID 1.
                    let tmp = dir.join(format!(
                        ".{id}.{}",
                        toolhost_contract::unique::unique_name()
                    ));
                    let written = std::fs::write(&tmp, format!("{OWNER_LINE}{owner}\n{text}"))
                        .and_then(|()| std::fs::rename(&tmp, &path));
                    if let Err(e) = written {
                        let _ = std::fs::remove_file(&tmp);
                        tracing::warn!("could not store artifact {}: {e}", path.display());
                    }
                }
                format!("{ARTIFACT_SCHEME}{id}")
            }
        }
    }

    /// Deletes the oldest artifact files until `incoming` more bytes fit.
    fn make_room(&self, dir: &Path, incoming: usize) {
        let mut files = dir_files(dir);
        let mut total: u64 = files.iter().map(|f| f.2).sum();
        files.sort_by_key(|f| f.1);
        for (path, _, len) in files {
            if total + incoming as u64 <= self.capacity as u64 {
                break;
            }
            // Another replica may have taken it already.
            if std::fs::remove_file(&path).is_ok() {
                EVICTED_FROM_DIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            total = total.saturating_sub(len);
        }
    }

    /// A page of an unowned artifact (see [`page_owned`](Self::page_owned)).
    pub fn page(&self, uri_or_id: &str, offset: usize, limit: usize) -> Option<(String, usize)> {
        self.page_owned("", uri_or_id, offset, limit)
    }

    /// A page of an artifact of `owner`: `limit` bytes from `offset`
    /// (clamped to char boundaries), and the total size. `None` when there
    /// is no such artifact of this owner (never stored, evicted, or
    /// another's).
    pub fn page_owned(
        &self,
        owner: &str,
        uri_or_id: &str,
        offset: usize,
        limit: usize,
    ) -> Option<(String, usize)> {
        let id = uri_or_id.strip_prefix(ARTIFACT_SCHEME).unwrap_or(uri_or_id);
        let slice = |text: &str| {
            let start = text.floor_char_boundary(offset);
            let end = text.floor_char_boundary(start.saturating_add(limit));
            (text[start..end].to_owned(), text.len())
        };
        match &self.backing {
            Backing::Memory(stored) => {
                let s = Self::lock(stored);
                let (by, text) = s.items.get(id)?;
                (by == owner).then(|| slice(text))
            }
            Backing::Dir(dir) => {
                if !file_id(id) {
                    return None;
                }
                let raw = std::fs::read_to_string(dir.join(id)).ok()?;
                let (first, text) = raw.split_once('\n')?;
                (first.strip_prefix(OWNER_LINE)? == owner_digest(owner)).then(|| slice(text))
            }
        }
    }

    /// Bytes held now (never more than the capacity).
    pub fn bytes(&self) -> usize {
        match &self.backing {
            Backing::Memory(stored) => Self::lock(stored).bytes,
            Backing::Dir(dir) => dir_files(dir).iter().map(|f| f.2 as usize).sum(),
        }
    }

    /// Artifacts held now.
    pub fn len(&self) -> usize {
        match &self.backing {
            Backing::Memory(stored) => Self::lock(stored).items.len(),
            Backing::Dir(dir) => dir_files(dir).len(),
        }
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Artifacts evicted so far to stay within the capacity (a directory
    /// store: by this process).
    pub fn evicted(&self) -> u64 {
        match &self.backing {
            Backing::Memory(stored) => Self::lock(stored).evicted,
            Backing::Dir(_) => EVICTED_FROM_DIRS.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// Files this process evicted from directory stores.
static EVICTED_FROM_DIRS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The artifact files of `dir`: path, modification time, length of text.
fn dir_files(dir: &Path) -> Vec<(PathBuf, std::time::SystemTime, u64)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(file_id))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((
                e.path(),
                m.modified().unwrap_or(std::time::UNIX_EPOCH),
                m.len().saturating_sub(HEADER_LEN),
            ))
        })
        .collect()
}

/// Bounds `content` to `budget` bytes of text. Returns `None` when it fits;
/// otherwise the bounded content (ending in a truncation marker and a link
/// to the artifact, named by `artifact_id()`, called only then, and
/// owned by `owner`) and the total size.
pub fn bound(
    content: &[ContentBlock],
    budget: usize,
    owner: &str,
    artifact_id: impl FnOnce() -> String,
    artifacts: &Artifacts,
) -> Option<(Vec<ContentBlock>, usize)> {
    let total: usize = content.iter().map(ContentBlock::byte_len).sum();
    if total <= budget {
        return None;
    }
    let artifact_id = &artifact_id();
    let full: String = content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.clone(),
            other => serde_json::to_string(other).unwrap_or_default(),
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    let uri = artifacts.put_owned(owner, artifact_id, full);
    let artifact_id = uri
        .strip_prefix(ARTIFACT_SCHEME)
        .unwrap_or(artifact_id)
        .to_owned();
    let mut out = Vec::new();
    let mut left = budget;
    for b in content {
        let n = b.byte_len();
        if n <= left {
            out.push(b.clone());
            left -= n;
            continue;
        }
        if let ContentBlock::Text { text } = b {
            let cut = text.floor_char_boundary(left);
            // Prefer cutting at a line end.
            let cut = text[..cut].rfind('\n').map_or(cut, |i| i + 1);
            out.push(ContentBlock::text(&text[..cut]));
        }
        break;
    }
    let shown: usize = out.iter().map(ContentBlock::byte_len).sum();
    out.push(ContentBlock::text(format!(
        "[truncated: showing {shown} of {total} bytes. The full result is kept as {uri}; page through it by reference.]"
    )));
    out.push(ContentBlock::ResourceLink {
        uri,
        name: format!("{artifact_id} (full result)"),
        mime_type: Some("text/plain".into()),
        description: Some(format!("{total} bytes")),
    });
    Some((out, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_results_pass_and_big_ones_are_kept() {
        let a = Artifacts::default();
        assert!(bound(&[ContentBlock::text("short")], 100, "", || "c1".into(), &a).is_none());
        let long = "line\n".repeat(100);
        let (out, total) = bound(
            &[ContentBlock::text(long.clone())],
            52,
            "",
            || "c2".into(),
            &a,
        )
        .unwrap();
        assert_eq!(total, 500);
        match &out[0] {
            ContentBlock::Text { text } => assert_eq!(text, &"line\n".repeat(10)),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&out[1], ContentBlock::Text { text } if text.contains("truncated: showing 50 of 500"))
        );
        assert!(
            matches!(&out[2], ContentBlock::ResourceLink { uri, .. } if uri == "toolhost://artifacts/c2")
        );
        let (page, size) = a.page("toolhost://artifacts/c2", 495, 100).unwrap();
        assert_eq!((page.as_str(), size), ("line\n", 500));
        // Multi-byte characters are never split.
        let (out, _) = bound(
            &[ContentBlock::text("é".repeat(10))],
            3,
            "",
            || "c3".into(),
            &a,
        )
        .unwrap();
        assert!(matches!(&out[0], ContentBlock::Text { text } if text == "é"));
    }

    #[test]
    fn the_store_is_bounded_and_evicts_the_oldest() {
        let a = Artifacts::with_capacity(100);
        for i in 0..50 {
            a.put(&format!("a{i}"), "x".repeat(30));
            assert!(a.bytes() <= 100);
        }
        assert_eq!(a.len(), 3);
        assert_eq!(a.evicted(), 47);
        assert!(a.page("a46", 0, 10).is_none(), "evicted");
        assert_eq!(a.page("a49", 0, 10).unwrap().1, 30);
        // One artifact larger than the store keeps its first `capacity` bytes.
        a.put("big", "é".repeat(100));
        assert_eq!(a.len(), 1);
        assert_eq!(a.page("big", 0, 1000).unwrap().1, 100);
        // Re-putting an id replaces it instead of counting it twice.
        a.put("big", "y".repeat(10));
        assert_eq!((a.len(), a.bytes()), (1, 10));
    }

    #[test]
    fn artifacts_belong_to_their_owner() {
        let a = Artifacts::default();
        let uri = a.put_owned("alice", "c1", "secret".into());
        assert!(a.page_owned("alice", &uri, 0, 10).is_some());
        assert!(a.page_owned("bob", &uri, 0, 10).is_none());
        assert!(a.page(&uri, 0, 10).is_none());
    }

    #[test]
    fn a_directory_store_is_shared_content_addressed_owned_and_bounded() {
        let dir = tempfile::tempdir().expect("tmp");
        let one = Artifacts::in_dir(dir.path(), 100).expect("store");
        let two = Artifacts::in_dir(dir.path(), 100).expect("store");
        let uri = one.put_owned("alice", "ignored", "x".repeat(30));
        // Another process over the same directory serves it, to its owner only.
        assert_eq!(
            two.page_owned("alice", &uri, 0, 5),
            Some(("xxxxx".into(), 30))
        );
        assert!(two.page_owned("bob", &uri, 0, 5).is_none());
        // The same text of the same owner is one file; another owner's is another.
        assert_eq!(two.put_owned("alice", "again", "x".repeat(30)), uri);
        assert_ne!(two.put_owned("bob", "again", "x".repeat(30)), uri);
        assert_eq!(one.len(), 2);
        // Bounded: the oldest files go first.
        for i in 0..10 {
            std::thread::sleep(std::time::Duration::from_millis(5));
            one.put_owned("alice", "n", format!("{i:02}{}", "y".repeat(28)));
            assert!(one.bytes() <= 100, "{}", one.bytes());
        }
        assert!(one.len() <= 3, "{}", one.len());
        // Ids that are not a file's name are nobody's.
        for bad in ["../x", "", ".hidden", "a/b"] {
            assert!(one.page_owned("alice", bad, 0, 5).is_none());
        }
    }
}
