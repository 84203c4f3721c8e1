//! Result bounding: what enters the model's context is bounded; the
//! overflow is kept as an artifact the model can page through by reference.

use std::collections::{HashMap, VecDeque};
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
#[derive(Debug)]
pub struct Artifacts {
    capacity: usize,
    inner: Mutex<Stored>,
}

#[derive(Debug, Default)]
struct Stored {
    items: HashMap<String, String>,
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

impl Artifacts {
    /// A store holding at most `capacity` bytes of artifact text.
    pub fn with_capacity(capacity: usize) -> Artifacts {
        Artifacts {
            capacity,
            inner: Mutex::new(Stored::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Stored> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores `text` under `id` (evicting the oldest artifacts if needed);
    /// returns its URI.
    pub fn put(&self, id: &str, mut text: String) -> String {
        if text.len() > self.capacity {
            text.truncate(text.floor_char_boundary(self.capacity));
        }
        let mut s = self.lock();
        if let Some(old) = s.items.remove(id) {
            s.bytes -= old.len();
            s.order.retain(|k| k != id);
        }
        while s.bytes + text.len() > self.capacity {
            let Some(oldest) = s.order.pop_front() else {
                break;
            };
            if let Some(old) = s.items.remove(&oldest) {
                s.bytes -= old.len();
                s.evicted += 1;
            }
        }
        s.bytes += text.len();
        s.order.push_back(id.to_owned());
        s.items.insert(id.to_owned(), text);
        format!("{ARTIFACT_SCHEME}{id}")
    }

    /// A page of an artifact: `limit` bytes from `offset` (clamped to char
    /// boundaries), and the total size. `None` when there is no such
    /// artifact (never stored, or evicted).
    pub fn page(&self, uri_or_id: &str, offset: usize, limit: usize) -> Option<(String, usize)> {
        let id = uri_or_id.strip_prefix(ARTIFACT_SCHEME).unwrap_or(uri_or_id);
        let s = self.lock();
        let text = s.items.get(id)?;
        let start = text.floor_char_boundary(offset);
        let end = text.floor_char_boundary(start.saturating_add(limit));
        Some((text[start..end].to_owned(), text.len()))
    }

    /// Bytes held now (never more than the capacity).
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Artifacts held now.
    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Artifacts evicted so far to stay within the capacity.
    pub fn evicted(&self) -> u64 {
        self.lock().evicted
    }
}

/// Bounds `content` to `budget` bytes of text. Returns `None` when it fits;
/// otherwise the bounded content (ending in a truncation marker and a link
/// to the artifact, named by `artifact_id()`, called only then) and the
/// total size.
pub fn bound(
    content: &[ContentBlock],
    budget: usize,
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
    let uri = artifacts.put(artifact_id, full);
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
        assert!(bound(&[ContentBlock::text("short")], 100, || "c1".into(), &a).is_none());
        let long = "line\n".repeat(100);
        let (out, total) =
            bound(&[ContentBlock::text(long.clone())], 52, || "c2".into(), &a).unwrap();
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
        let (out, _) = bound(&[ContentBlock::text("é".repeat(10))], 3, || "c3".into(), &a).unwrap();
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
}
