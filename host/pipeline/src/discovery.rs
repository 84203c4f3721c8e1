//! Progressive discovery's search: which tools a query is about, ranked
//! with BM25 over what a model would match a need against.
//!
//! Each tool is one document of weighted fields (BM25F): its name split
//! into words (`browser_take_screenshot`, `getFileContents` → browser,
//! take, screenshot / get, file, contents) counts most, then its title,
//! its input properties' names, its description and its properties'
//! descriptions. Words are lowercased and stemmed lightly (plurals, `-ing`,
//! `-ed`), and stop words dropped. No network and no model: the index is a
//! few hash maps, built once per change of the tools, and a search reads
//! only the postings of the query's words.
//!
//! Results are deterministic: by score, ties by the tools' advertised
//! order.

use crate::tool::RegisteredTool;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

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

/// An index of tools for [`SearchIndex::search`].
#[derive(Debug, Default)]
pub struct SearchIndex {
    tools: Vec<Arc<RegisteredTool>>,
    /// Each tool's weighted length.
    lengths: Vec<f64>,
    average: f64,
    /// word → (tool index, weighted frequency), by tool index.
    postings: HashMap<String, Vec<(usize, f64)>>,
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
        }
    }

    /// The tools `query` is about, best first, at most `limit`; tools that
    /// share no word with the query are not returned.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Arc<RegisteredTool>> {
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
            .into_iter()
            .take(limit)
            .map(|(i, _)| self.tools[i].clone())
            .collect()
    }
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
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev: Option<char> = None;
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            let w = std::mem::take(word).to_lowercase();
            if !STOP.contains(&w.as_str()) {
                out.push(stem(&w));
            }
        }
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            // A hump: `fileContents`, `HTTPServer` → file contents, http server.
            if c.is_uppercase() && prev.is_some_and(char::is_lowercase) {
                flush(&mut word, &mut out);
            }
            word.push(c);
        } else {
            flush(&mut word, &mut out);
        }
        prev = Some(c);
    }
    flush(&mut word, &mut out);
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
    }
}
