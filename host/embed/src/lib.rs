//! Sentence embeddings that run in the host, on CPU, with no service:
//! what lets progressive discovery find "get the elevation of a point" for
//! "how high above sea level", which share no word.
//!
//! The model is WordLlama's `l2_supercat_256` (MIT): a static embedding
//! of each of Llama 2's 32,000 tokens, 256 wide, trained so that the mean
//! of a text's token vectors places it near texts that mean the same. A
//! text's embedding is that mean, normalized: no network, no attention, a
//! few microseconds a query. Its weights and its tokenizer come from the
//! PyPI wheel that ships them ([`WORDLLAMA`], pinned by SHA-256), read
//! here without Python: the zip archive ([`wheel`]), the safetensors
//! tensor, and the tokenizer (Llama 2's byte-fallback BPE) are parsed by
//! this crate.

mod model;
mod safetensors;
mod tokenizer;
pub mod wheel;

pub use model::{Embedding, MAX_TEXT, Model};
pub use tokenizer::{MAX_PIECE, Tokenizer};

/// Why a model could not be read.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The archive is not the pinned one.
    #[error("{file}: SHA-256 {got}, but {expected} is pinned")]
    Digest {
        /// The file read.
        file: String,
        /// The pinned digest.
        expected: String,
        /// The file's digest.
        got: String,
    },
    /// The archive could not be read.
    #[error("the wheel: {0}")]
    Wheel(String),
    /// The weights could not be read.
    #[error("the weights: {0}")]
    Weights(String),
    /// The tokenizer could not be read.
    #[error("the tokenizer: {0}")]
    Tokenizer(String),
    /// Reading a file failed.
    #[error("{file}: {reason}")]
    Io {
        /// The file.
        file: String,
        /// What failed.
        reason: String,
    },
}

/// A model's weights, as a registry serves them: the file, where to fetch
/// it, what it must hash to, and where its parts are inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pinned {
    /// The archive's file name (how it is kept in a cache).
    pub file: &'static str,
    /// Where it is fetched from.
    pub url: &'static str,
    /// Its SHA-256, hex.
    pub sha256: &'static str,
    /// Its size in bytes.
    pub size: u64,
    /// The safetensors file of the token embeddings, inside it.
    pub weights: &'static str,
    /// The tensor's name in that file.
    pub tensor: &'static str,
    /// The tokenizer (Hugging Face's `tokenizer.json` format), inside it.
    pub tokenizer: &'static str,
}

/// WordLlama 0.4.0.post1's wheel on PyPI. The weights and tokenizer are
/// the same in every platform's wheel; this is the CPython 3.12 Linux
/// x86-64 one, read as a zip archive on any platform.
pub const WORDLLAMA: Pinned = Pinned {
    file: "wordllama-0.4.0.post1-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    url: "https://files.pythonhosted.org/packages/f4/01/b7f3d70ad44c1c7d35914f0db93893882ce0f5e2cb7341215dc89a153cfa/wordllama-0.4.0.post1-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    sha256: "2dc004ed04438e4a9ce263ef69b1d7dcc5099da7277e08ddedfd35810428ba31",
    size: 19_089_827,
    weights: "wordllama/weights/l2_supercat_256.safetensors",
    tensor: "embedding.weight",
    tokenizer: "wordllama/tokenizers/l2_supercat_tokenizer_config.json",
};
