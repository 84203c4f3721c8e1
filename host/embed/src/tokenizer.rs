//! Llama 2's tokenizer, as Hugging Face's `tokenizer.json` describes it:
//! spaces become `▁` and one is put in front, then byte-pair merges by
//! rank, with any character outside the vocabulary spelled as its UTF-8
//! bytes (`<0xF0>`…). Only that shape of tokenizer is read; another is
//! refused rather than tokenized wrongly.
//!
//! No token of this vocabulary holds a `▁` after another character, so a
//! text is cut before each run of `▁` and its pieces merged apart: the
//! same tokens, and a merge loop over a word instead of a text. A piece
//! longer than [`MAX_PIECE`] characters (a hash, base64) is cut too.

use crate::EmbedError;
use serde_json::Value;
use std::collections::HashMap;

/// SentencePiece's word boundary.
const SPACE: char = '\u{2581}';

/// The most characters merged as one piece.
pub const MAX_PIECE: usize = 64;

/// A byte-pair-encoding tokenizer with byte fallback.
#[derive(Debug)]
pub struct Tokenizer {
    vocab: HashMap<String, u32>,
    /// (left, right) → (rank, merged).
    merges: HashMap<(u32, u32), (u32, u32)>,
    /// `<0x00>`…`<0xFF>`.
    bytes: Vec<u32>,
}

impl Tokenizer {
    /// Reads a `tokenizer.json` of Llama 2's shape.
    pub fn from_json(json: &[u8]) -> Result<Tokenizer, EmbedError> {
        let bad = |what: String| EmbedError::Tokenizer(what);
        let t: Value = serde_json::from_slice(json).map_err(|e| bad(e.to_string()))?;
        let expected_normalizer = serde_json::json!({
            "type": "Sequence",
            "normalizers": [
                {"type": "Prepend", "prepend": "\u{2581}"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "\u{2581}"}
            ]
        });
        if t["normalizer"] != expected_normalizer || !t["pre_tokenizer"].is_null() {
            return Err(bad(
                "not Llama 2's normalization (prepend ▁, spaces as ▁, no pre-tokenizer)".into(),
            ));
        }
        let model = &t["model"];
        if model["type"] != "BPE" || model["byte_fallback"] != true {
            return Err(bad("not a byte-fallback BPE model".into()));
        }
        let vocab: HashMap<String, u32> = model["vocab"]
            .as_object()
            .ok_or_else(|| bad("no vocabulary".into()))?
            .iter()
            .map(|(k, v)| {
                let id = v.as_u64().and_then(|v| u32::try_from(v).ok());
                id.map(|id| (k.clone(), id))
                    .ok_or_else(|| bad(format!("the id of {k:?} is not a number")))
            })
            .collect::<Result<_, _>>()?;
        if vocab
            .keys()
            .any(|k| k.trim_start_matches(SPACE).contains(SPACE))
        {
            return Err(bad("a token holds ▁ inside it".into()));
        }
        let bytes = (0..=255u8)
            .map(|b| {
                vocab
                    .get(&format!("<0x{b:02X}>"))
                    .copied()
                    .ok_or_else(|| bad(format!("no byte token <0x{b:02X}>")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let list = model["merges"]
            .as_array()
            .ok_or_else(|| bad("no merges".into()))?;
        let mut merges = HashMap::with_capacity(list.len());
        for (rank, m) in list.iter().enumerate() {
            // "a b", or ["a", "b"] in newer files.
            let (left, right) = match m {
                Value::String(s) => s.split_once(' ').unwrap_or((s, "")),
                Value::Array(pair) => (
                    pair.first().and_then(Value::as_str).unwrap_or_default(),
                    pair.get(1).and_then(Value::as_str).unwrap_or_default(),
                ),
                _ => ("", ""),
            };
            let id = |s: &str| vocab.get(s).copied();
            let (Some(l), Some(r), Some(merged)) =
                (id(left), id(right), id(&[left, right].concat()))
            else {
                return Err(bad(format!(
                    "merge {rank} ({m}) names a token not in the vocabulary"
                )));
            };
            merges.entry((l, r)).or_insert((rank as u32, merged));
        }
        Ok(Tokenizer {
            vocab,
            merges,
            bytes,
        })
    }

    /// The number of tokens.
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// The token ids of `text` (no `<s>`), appended to `out`.
    pub fn encode_into(&self, text: &str, out: &mut Vec<u32>) {
        if text.is_empty() {
            return;
        }
        let mut piece = String::new();
        let mut chars = 0;
        let mut after_word = false;
        for c in
            std::iter::once(SPACE).chain(text.chars().map(|c| if c == ' ' { SPACE } else { c }))
        {
            let boundary = (c == SPACE && after_word) || chars == MAX_PIECE;
            if boundary && !piece.is_empty() {
                self.merge_piece(&piece, out);
                piece.clear();
                chars = 0;
            }
            after_word = c != SPACE;
            piece.push(c);
            chars += 1;
        }
        self.merge_piece(&piece, out);
    }

    /// The token ids of `text`.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        self.encode_into(text, &mut out);
        out
    }

    /// One piece's tokens: its characters (or their bytes), merged pair
    /// by pair, the lowest rank first and the leftmost of equals first.
    fn merge_piece(&self, piece: &str, out: &mut Vec<u32>) {
        if let Some(&id) = self.vocab.get(piece) {
            out.push(id);
            return;
        }
        let mut symbols: Vec<u32> = Vec::with_capacity(piece.len());
        let mut buf = [0u8; 4];
        for c in piece.chars() {
            match self.vocab.get(c.encode_utf8(&mut buf) as &str) {
                Some(&id) => symbols.push(id),
                None => symbols.extend(
                    c.encode_utf8(&mut buf)
                        .bytes()
                        .map(|b| self.bytes[b as usize]),
                ),
            }
        }
        loop {
            let best = symbols
                .windows(2)
                .enumerate()
                .filter_map(|(i, w)| {
                    self.merges
                        .get(&(w[0], w[1]))
                        .map(|&(rank, id)| (rank, i, id))
                })
                .min();
            let Some((_, i, id)) = best else { break };
            symbols[i] = id;
            symbols.remove(i + 1);
        }
        out.extend(symbols);
    }
}
