//! The model: a tokenizer and a table of token vectors; a text's
//! embedding is the normalized mean of its tokens' rows.

use crate::{EmbedError, Pinned, Tokenizer, safetensors, wheel};
use std::path::Path;
use toolhost_contract::sha256_hex;

/// Most characters of a text embedded: a tool's description says what it
/// does well before this, and a search's cost stays bounded.
pub const MAX_TEXT: usize = 8 * 1024;

/// A static sentence-embedding model.
#[derive(Debug)]
pub struct Model {
    tokenizer: Tokenizer,
    /// Row-major, `rows` × `dim`.
    table: Vec<f32>,
    dim: usize,
}

/// A text's embedding: unit length, so the dot product of two is their
/// cosine similarity.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding(Box<[f32]>);

impl Embedding {
    /// `v` scaled to unit length (as an embedding kept on disk is read
    /// back), or `None` when it is zero or not finite.
    pub fn from_vec(v: Vec<f32>) -> Option<Embedding> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        (norm > 0.0 && norm.is_finite())
            .then(|| Embedding(v.into_iter().map(|x| x / norm).collect()))
    }

    /// Cosine similarity with `other` (of the same model).
    pub fn cosine(&self, other: &Embedding) -> f32 {
        self.0.iter().zip(other.0.iter()).map(|(a, b)| a * b).sum()
    }

    /// The vector.
    pub fn as_slice(&self) -> &[f32] {
        &self.0
    }
}

impl Model {
    /// The model in the wheel file at `path`, which must be the `pinned`
    /// one (its SHA-256 is checked before anything in it is read).
    pub fn from_wheel_file(path: &Path, pinned: &Pinned) -> Result<Model, EmbedError> {
        let bytes = std::fs::read(path).map_err(|e| EmbedError::Io {
            file: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let got = sha256_hex(&bytes);
        if got != pinned.sha256 {
            return Err(EmbedError::Digest {
                file: path.display().to_string(),
                expected: pinned.sha256.into(),
                got,
            });
        }
        Model::from_wheel(&bytes, pinned)
    }

    /// The model in the wheel `archive` laid out as `pinned` says.
    pub fn from_wheel(archive: &[u8], pinned: &Pinned) -> Result<Model, EmbedError> {
        let weights = wheel::entry(archive, pinned.weights)?;
        let tokenizer = wheel::entry(archive, pinned.tokenizer)?;
        Model::from_parts(&weights, pinned.tensor, &tokenizer)
    }

    /// The model of a safetensors file (`tensor` the token table) and a
    /// `tokenizer.json`.
    pub fn from_parts(weights: &[u8], tensor: &str, tokenizer: &[u8]) -> Result<Model, EmbedError> {
        let tokenizer = Tokenizer::from_json(tokenizer)?;
        let (table, rows, dim) = safetensors::f16_matrix(weights, tensor)?;
        if rows < tokenizer.vocab_size() || dim == 0 {
            return Err(EmbedError::Weights(format!(
                "{rows} rows of {dim} for a vocabulary of {}",
                tokenizer.vocab_size()
            )));
        }
        Ok(Model {
            tokenizer,
            table,
            dim,
        })
    }

    /// The width of an embedding.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The bytes the model holds in memory (its table).
    pub fn table_bytes(&self) -> usize {
        self.table.len() * size_of::<f32>()
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The embedding of `text` (its first [`MAX_TEXT`] characters), or
    /// `None` when it has no token.
    pub fn embed(&self, text: &str) -> Option<Embedding> {
        self.pool(&self.tokens(text))
    }

    /// The tokens of `text` (its first [`MAX_TEXT`] characters).
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        let text = match text.char_indices().nth(MAX_TEXT) {
            Some((cut, _)) => &text[..cut],
            None => text,
        };
        self.tokenizer.encode(text)
    }

    /// The embedding of a text of tokens `ids`: their vectors' mean,
    /// normalized, or `None` when there are none.
    pub fn pool(&self, ids: &[u32]) -> Option<Embedding> {
        let mut sum = vec![0f32; self.dim];
        let mut n = 0usize;
        for &id in ids {
            let start = id as usize * self.dim;
            // Ids come from the tokenizer's vocabulary, which the table
            // was checked to cover; a row past it would be skipped.
            let Some(row) = self.table.get(start..start + self.dim) else {
                continue;
            };
            for (s, v) in sum.iter_mut().zip(row) {
                *s += v;
            }
            n += 1;
        }
        // The mean's direction is the sum's: normalizing skips dividing.
        let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
        if n == 0 || norm == 0.0 || !norm.is_finite() {
            return None;
        }
        Some(Embedding(sum.into_iter().map(|v| v / norm).collect()))
    }
}
