//! What the model reads.

use serde::{Deserialize, Serialize};

/// One block of model-readable content (the MCP content shapes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Base64 of the bytes.
        data: String,
        /// e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource the model can fetch separately (e.g. the
    /// artifact holding a result's overflow).
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// A short name.
        name: String,
        /// Its media type.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none", default)]
        mime_type: Option<String>,
        /// What it is.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        description: Option<String>,
    },
    /// Audio (contract 0.3.0).
    Audio {
        /// Base64 of the bytes.
        data: String,
        /// e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource's contents, embedded (contract 0.3.0).
    Resource {
        /// The resource.
        resource: EmbeddedResource,
    },
}

/// An embedded resource: `{"uri", "mimeType", "text" | "blob"}`, as MCP
/// writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// Its media type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none", default)]
    pub mime_type: Option<String>,
    /// Its contents.
    #[serde(flatten)]
    pub contents: ResourceContents,
}

/// What an embedded resource holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Base64 of binary content.
    Blob(String),
}

impl ResourceContents {
    /// The text or the base64.
    pub fn as_str(&self) -> &str {
        match self {
            ResourceContents::Text(s) | ResourceContents::Blob(s) => s,
        }
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text { text: text.into() }
    }

    /// Approximate size in bytes as the model sees it.
    pub fn byte_len(&self) -> usize {
        match self {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Image { data, mime_type } => data.len() + mime_type.len(),
            ContentBlock::ResourceLink {
                uri,
                name,
                mime_type,
                description,
            } => {
                uri.len()
                    + name.len()
                    + mime_type.as_ref().map_or(0, String::len)
                    + description.as_ref().map_or(0, String::len)
            }
            ContentBlock::Audio { data, mime_type } => data.len() + mime_type.len(),
            ContentBlock::Resource { resource: r } => {
                r.uri.len()
                    + r.mime_type.as_ref().map_or(0, String::len)
                    + r.contents.as_str().len()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_serialize_as_mcp_writes_them() {
        let audio = ContentBlock::Audio {
            data: "UklGRg==".into(),
            mime_type: "audio/wav".into(),
        };
        assert_eq!(
            serde_json::to_value(&audio).expect("encodes"),
            serde_json::json!({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"})
        );
        let embedded = ContentBlock::Resource {
            resource: EmbeddedResource {
                uri: "test://x".into(),
                mime_type: Some("text/plain".into()),
                contents: ResourceContents::Text("hi".into()),
            },
        };
        let wire = serde_json::json!({"type": "resource", "resource":
            {"uri": "test://x", "mimeType": "text/plain", "text": "hi"}});
        assert_eq!(serde_json::to_value(&embedded).expect("encodes"), wire);
        let back: ContentBlock = serde_json::from_value(wire).expect("decodes");
        assert_eq!(back, embedded);
        let blob: ContentBlock = serde_json::from_value(serde_json::json!(
            {"type": "resource", "resource": {"uri": "test://b", "blob": "AAE="}}))
        .expect("decodes");
        assert_eq!(blob.byte_len(), "test://b".len() + 4);
    }
}
