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
        }
    }
}
