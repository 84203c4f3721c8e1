//! Result bounding: what enters the model's context is bounded; the
//! overflow is kept as an artifact the model can page through by reference.

use std::collections::HashMap;
use std::sync::Mutex;
use toolhost_contract::ContentBlock;

/// URI scheme of stored overflow.
pub const ARTIFACT_SCHEME: &str = "toolhost://artifacts/";

/// Full texts of truncated results, kept for paging.
#[derive(Debug, Default)]
pub struct Artifacts {
    items: Mutex<HashMap<String, String>>,
}

impl Artifacts {
    /// Stores `text` under `id`; returns its URI.
    pub fn put(&self, id: &str, text: String) -> String {
        self.items
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_owned(), text);
        format!("{ARTIFACT_SCHEME}{id}")
    }

    /// A page of an artifact: `limit` bytes from `offset` (clamped to char
    /// boundaries), and the total size.
    pub fn page(&self, uri_or_id: &str, offset: usize, limit: usize) -> Option<(String, usize)> {
        let id = uri_or_id.strip_prefix(ARTIFACT_SCHEME).unwrap_or(uri_or_id);
        let items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let text = items.get(id)?;
        let start = text.floor_char_boundary(offset);
        let end = text.floor_char_boundary(start.saturating_add(limit));
        Some((text[start..end].to_owned(), text.len()))
    }
}

/// Bounds `content` to `budget` bytes of text. Returns `None` when it fits;
/// otherwise the bounded content (ending in a truncation marker and a link
/// to the artifact) and the total size.
pub fn bound(
    content: &[ContentBlock],
    budget: usize,
    artifact_id: &str,
    artifacts: &Artifacts,
) -> Option<(Vec<ContentBlock>, usize)> {
    let total: usize = content.iter().map(ContentBlock::byte_len).sum();
    if total <= budget {
        return None;
    }
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
        assert!(bound(&[ContentBlock::text("short")], 100, "c1", &a).is_none());
        let long = "line\n".repeat(100);
        let (out, total) = bound(&[ContentBlock::text(long.clone())], 52, "c2", &a).unwrap();
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
        let (out, _) = bound(&[ContentBlock::text("é".repeat(10))], 3, "c3", &a).unwrap();
        assert!(matches!(&out[0], ContentBlock::Text { text } if text == "é"));
    }
}
