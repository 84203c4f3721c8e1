//! Progressive discovery's search: which tools a query is about, ranked
//! by their words (BM25F) and, with a model, by meaning.
//!
//! Each tool is one document of weighted fields (BM25F): its name split
//! into words (`browser_take_screenshot`, `getFileContents` → browser,
//! take, screenshot / get, file, contents) counts most, then its title,
//! its input properties' names, its description and its properties'
//! descriptions. Words are lowercased and stemmed lightly (plurals, `-ing`,
//! `-ed`), and stop words dropped. The index is a few hash maps, built
//! once per change of the tools, and a search reads only the postings of
//! the query's words.
//!
//! With a sentence-embedding model ([`toolhost_embed::Model`]), the
//! search is hybrid: each tool's name, title and description are embedded
//! once, the query once per search, and the tools ranked by cosine
//! similarity too; the two rankings are fused by their ranks (reciprocal
//! rank fusion), so "how high above sea level" finds the elevation tool
//! with which it shares no word, and an exact name still comes first.
//! The fusion's constants were chosen on the labelled queries
//! (`tests/discovery/`); weighting the rankings apart, embedding a
//! description's sentences apart, or expanding a query's words by their
//! nearest words moved recall by less than two queries in 117. Without a
//! model the search is BM25 alone.
//!
//! Results are deterministic: by score, ties by the tools' advertised
//! order.

use crate::tool::RegisteredTool;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use toolhost_embed::{Embedding, Model};

/// The reserved tool that runs this search for a model (served by the
/// host assembly whenever a toolbox defers tools).
pub const SEARCH_TOOL: &str = "search_tools";

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalization.
const B: f64 = 0.75;

/// Weights of the fields: the words of a name say most about a tool.
const NAME: f64 = 3.0;
const TITLE: f64 = 2.0;
const PROPERTY: f64 = 1.5;
const DESCRIPTION: f64 = 1.5;
const PROPERTY_DESCRIPTION: f64 = 0.5;
/// The name of the component a tool comes from (`github.wasm`,
/// `oci://…/slack-mcp:1`): a query that names the service finds it.
const SOURCE: f64 = 2.0;

/// Most properties of one schema read (nested objects included).
const MAX_PROPERTIES: usize = 200;

/// Words too common to tell tools apart.
const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "how", "i", "if",
    "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please", "should", "so",
    "some", "that", "the", "their", "them", "then", "there", "these", "this", "to", "us", "use",
    "using", "was", "we", "what", "when", "where", "which", "who", "will", "with", "you", "your",
];

/// Reciprocal rank fusion's constant: a tool's fused score is the sum of
/// `1 / (RRF_K + rank)` over the rankings. Small enough that a first place
/// in one ranking outweighs middling places in both.
const RRF_K: f64 = 5.0;

/// The weight of the embedding's ranking against BM25's in the fusion.
const SEMANTIC_WEIGHT: f64 = 1.0;

/// How many of the embedding's nearest tools enter the fusion: beyond
/// them its ranks say little, and a query that matches nothing by words
/// still gets only tools that are near in meaning.
const SEMANTIC_DEPTH: usize = 30;

/// The least cosine similarity for a tool found by meaning alone: below
/// it, a query of noise would get whichever tools are least far.
const MIN_SIMILARITY: f32 = 0.3;

/// Embeddings kept beyond four times the tools served, before those of
/// tools no longer served are dropped.
const MEMO_SLACK: usize = 4096;

/// Embeddings of tools by their descriptor's digest, kept across index
/// builds: a registry that changes (a component loads, reloads) embeds
/// only the tools it has not embedded before.
pub type EmbeddingMemo = HashMap<String, Option<Arc<Embedding>>>;

/// An index of tools for [`SearchIndex::search`].
#[derive(Debug, Default)]
pub struct SearchIndex {
    tools: Vec<Arc<RegisteredTool>>,
    /// Each tool's weighted length.
    lengths: Vec<f64>,
    average: f64,
    /// word → (tool index, weighted frequency), by tool index.
    postings: HashMap<String, Vec<(usize, f64)>>,
    /// The model and each tool's embedding, when the search is hybrid.
    semantic: Option<Semantic>,
}

/// What a hybrid search ranks by meaning with.
#[derive(Debug)]
struct Semantic {
    model: Arc<Model>,
    /// Each tool's embedding, by tool index (`None`: it has no token).
    vectors: Vec<Option<Arc<Embedding>>>,
}

impl SearchIndex {
    /// Indexes `tools` (their order breaks ties in a search).
    pub fn new(tools: Vec<Arc<RegisteredTool>>) -> SearchIndex {
        let mut postings: HashMap<String, Vec<(usize, f64)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(tools.len());
        for (i, t) in tools.iter().enumerate() {
            let mut freq: HashMap<String, f64> = HashMap::new();
            let mut length = 0.0;
            let mut add = |text: &str, weight: f64| {
                for w in words(text) {
                    *freq.entry(w).or_default() += weight;
                    length += weight;
                }
            };
            let d = &t.descriptor;
            add(&d.name, NAME);
            add(source_name(&t.source), SOURCE);
            if let Some(title) = &d.title {
                add(title, TITLE);
            }
            add(&d.description, DESCRIPTION);
            let mut seen = 0;
            properties(&d.input_schema, &mut |name, about| {
                add(name, PROPERTY);
                if let Some(about) = about {
                    add(about, PROPERTY_DESCRIPTION);
                }
                seen += 1;
                seen < MAX_PROPERTIES
            });
            for (w, f) in freq {
                postings.entry(w).or_default().push((i, f));
            }
            lengths.push(length);
        }
        let average = if lengths.is_empty() {
            1.0
        } else {
            (lengths.iter().sum::<f64>() / lengths.len() as f64).max(1.0)
        };
        SearchIndex {
            tools,
            lengths,
            average,
            postings,
            semantic: None,
        }
    }

    /// Indexes `tools` for a hybrid search with `model`: each tool's
    /// embedding is taken from `memo` by its digest, or computed and kept
    /// there.
    pub fn with_model(
        tools: Vec<Arc<RegisteredTool>>,
        model: Arc<Model>,
        memo: &mut EmbeddingMemo,
    ) -> SearchIndex {
        let vectors: Vec<Option<Arc<Embedding>>> = tools
            .iter()
            .map(|t| {
                memo.entry(t.digest.clone())
                    .or_insert_with(|| model.embed(&embedded_text(t)).map(Arc::new))
                    .clone()
            })
            .collect();
        // Those of tools no longer served go once they outnumber the
        // served ones a few times over: a registry that changes often does
        // not grow without bound, and one still loading keeps what was
        // read from disk for the tools still to come.
        if memo.len() > 4 * tools.len() + MEMO_SLACK {
            let current: std::collections::HashSet<&str> =
                tools.iter().map(|t| t.digest.as_str()).collect();
            memo.retain(|d, _| current.contains(d.as_str()));
        }
        let mut index = SearchIndex::new(tools);
        index.semantic = Some(Semantic { model, vectors });
        index
    }

    /// Whether the search is hybrid (a model ranks by meaning too).
    pub fn is_hybrid(&self) -> bool {
        self.semantic.is_some()
    }

    /// The tools `query` is about, best first, at most `limit`: those that
    /// share a word with the query, and with a model those near it in
    /// meaning.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Arc<RegisteredTool>> {
        let lexical = self.lexical(query);
        let ranked = match &self.semantic {
            Some(Semantic { model, vectors }) => match model.embed(query) {
                Some(q) => fuse(&lexical, &nearest(&q, vectors)),
                None => lexical,
            },
            None => lexical,
        };
        ranked
            .into_iter()
            .take(limit)
            .map(|(i, _)| self.tools[i].clone())
            .collect()
    }

    /// The tools that share a word with `query`, by BM25F score, best first.
    fn lexical(&self, query: &str) -> Vec<(usize, f64)> {
        let n = self.tools.len() as f64;
        let mut terms = words(query);
        terms.sort();
        terms.dedup();
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for term in &terms {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(i, f) in list {
                let norm = K1 * (1.0 - B + B * self.lengths[i] / self.average);
                *scores.entry(i).or_default() += idf * f * (K1 + 1.0) / (f + norm);
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }
}

/// The text of a tool a model embeds: its name as words, its title, its
/// description (what a person would read to tell what it does).
fn embedded_text(t: &RegisteredTool) -> String {
    let d = &t.descriptor;
    let mut text = spaced(&d.name);
    if let Some(title) = &d.title {
        text.push_str(". ");
        text.push_str(title);
    }
    text.push_str(". ");
    text.push_str(&d.description);
    text
}

/// `browser_take_screenshot`, `getFileContents` → `browser take
/// screenshot`, `get File Contents`.
fn spaced(name: &str) -> String {
    split_words(name).join(" ")
}

/// The [`SEMANTIC_DEPTH`] tools nearest `query` in meaning (at least
/// [`MIN_SIMILARITY`]), nearest first.
fn nearest(query: &Embedding, vectors: &[Option<Arc<Embedding>>]) -> Vec<(usize, f64)> {
    let mut near: Vec<(usize, f64)> = vectors
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let s = v.as_ref()?.cosine(query);
            (s >= MIN_SIMILARITY).then_some((i, f64::from(s)))
        })
        .collect();
    near.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    near.truncate(SEMANTIC_DEPTH);
    near
}

/// Reciprocal rank fusion of two rankings: best first, ties by the
/// tools' order.
fn fuse(lexical: &[(usize, f64)], semantic: &[(usize, f64)]) -> Vec<(usize, f64)> {
    let mut fused: HashMap<usize, f64> = HashMap::new();
    for (rank, &(i, _)) in lexical.iter().enumerate() {
        *fused.entry(i).or_default() += 1.0 / (RRF_K + rank as f64 + 1.0);
    }
    for (rank, &(i, _)) in semantic.iter().enumerate() {
        *fused.entry(i).or_default() += SEMANTIC_WEIGHT / (RRF_K + rank as f64 + 1.0);
    }
    let mut ranked: Vec<(usize, f64)> = fused.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked
}

/// The last segment of a component's source, without its tag, digest or
/// extension: `catalog/github.wasm` → `github`.
fn source_name(source: &str) -> &str {
    let last = source.rsplit('/').next().unwrap_or(source);
    let last = last.split(['@', ':']).next().unwrap_or(last);
    last.strip_suffix(".wasm").unwrap_or(last)
}

/// The properties of an object schema and of the objects nested in it (by
/// `properties`, `items` and the `anyOf`/`oneOf`/`allOf` branches): each
/// property's name and description, until `each` returns false.
fn properties(schema: &Value, each: &mut dyn FnMut(&str, Option<&str>) -> bool) {
    fn walk(s: &Value, depth: usize, each: &mut dyn FnMut(&str, Option<&str>) -> bool) -> bool {
        if depth > 4 {
            return true;
        }
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (name, p) in props {
                if !each(name, p.get("description").and_then(Value::as_str)) {
                    return false;
                }
                if !walk(p, depth + 1, each) {
                    return false;
                }
            }
        }
        if let Some(items) = s.get("items")
            && !walk(items, depth + 1, each)
        {
            return false;
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            for branch in s.get(key).and_then(Value::as_array).into_iter().flatten() {
                if !walk(branch, depth + 1, each) {
                    return false;
                }
            }
        }
        true
    }
    walk(schema, 0, each);
}

/// The words of `text`: split at anything not a letter or digit and at
/// camelCase humps, lowercased, stop words dropped, stemmed.
pub fn words(text: &str) -> Vec<String> {
    split_words(text)
        .into_iter()
        .map(|w| w.to_lowercase())
        .filter(|w| !STOP.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

/// The words of `text` as written: split at anything not a letter or
/// digit and at camelCase humps (`fileContents`, `HTTPServer` → file
/// Contents, HTTPServer).
fn split_words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut prev: Option<char> = None;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() {
            if c.is_uppercase()
                && prev.is_some_and(char::is_lowercase)
                && let Some(s) = start
            {
                out.push(&text[s..i]);
                start = Some(i);
            }
            start.get_or_insert(i);
        } else if let Some(s) = start.take() {
            out.push(&text[s..i]);
        }
        prev = Some(c);
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

/// A light stemmer: enough that "files" finds "file", "listing" finds
/// "list", "created" finds "create" (a word keeps at least three letters).
fn stem(w: &str) -> String {
    let strip = |suffix: &str, add: &str| -> Option<String> {
        let base = w.strip_suffix(suffix)?;
        (base.chars().count() >= 3).then(|| format!("{base}{add}"))
    };
    let s = strip("ies", "y")
        .or_else(|| strip("sses", "ss"))
        .or_else(|| {
            (!w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is"))
                .then(|| strip("s", ""))
                .flatten()
        })
        .unwrap_or_else(|| w.to_owned());
    let w = s.as_str();
    let strip = |suffix: &str| -> Option<String> {
        let base = w.strip_suffix(suffix)?;
        (base.chars().count() >= 3).then(|| base.to_owned())
    };
    let s = strip("ing")
        .or_else(|| strip("ed"))
        .unwrap_or_else(|| w.to_owned());
    // "creat" (from "created", "creating") and "create" meet at "creat".
    s.strip_suffix('e')
        .filter(|b| b.chars().count() >= 3)
        .map_or(s.clone(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_names_humps_and_stems() {
        assert_eq!(
            words("browser_take_screenshot"),
            ["browser", "tak", "screenshot"]
        );
        assert_eq!(words("getFileContents"), ["get", "fil", "content"]);
        assert_eq!(words("Creates the issues"), ["creat", "issu"]);
        assert_eq!(words("creating an issue"), ["creat", "issu"]);
        assert_eq!(words("listing files"), ["list", "fil"]);
        assert_eq!(words("HTTPServer status"), ["httpserver", "status"]);
        assert_eq!(spaced("browser_take_screenshot"), "browser take screenshot");
        assert_eq!(spaced("__getFileContents__"), "get File Contents");
    }
}
