//! What a person cannot see, made visible. A tool's descriptor goes into
//! the model's context and onto a reviewer's screen; characters that render
//! as nothing (Unicode tags, zero-width characters, variation selectors) or
//! that reorder what is shown (bidi controls) let a description say one
//! thing to the person and another to the model. toolhost escapes each such
//! character as `\u{XXXX}` in every text it advertises, so both read the
//! same thing, and it says which tools had any.
//!
//! Escaping, not refusing: an honest tool may carry one (a zero-width
//! joiner inside an emoji, a byte-order mark pasted from an editor), and it
//! keeps working, visibly; a hostile one loses its hiding place.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The kind of an invisible character, for a person reading a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invisible {
    /// U+E0000–U+E007F: tag characters, which can spell ASCII unseen.
    Tag,
    /// Directional formatting (embeddings, overrides, isolates, marks).
    Bidi,
    /// Zero-width spaces, joiners and the byte-order mark.
    ZeroWidth,
    /// Variation selectors (U+FE00–FE0F, U+E0100–E01EF).
    VariationSelector,
    /// C0 and C1 control characters other than tab and line breaks.
    Control,
    /// Other format characters that render as nothing (soft hyphen,
    /// fillers, invisible operators, annotation marks).
    Format,
}

impl Invisible {
    /// A short name.
    pub fn as_str(self) -> &'static str {
        match self {
            Invisible::Tag => "tag characters",
            Invisible::Bidi => "bidi controls",
            Invisible::ZeroWidth => "zero-width characters",
            Invisible::VariationSelector => "variation selectors",
            Invisible::Control => "control characters",
            Invisible::Format => "invisible format characters",
        }
    }
}

/// What kind of invisible character `c` is, if it is one.
pub fn invisible(c: char) -> Option<Invisible> {
    let u = u32::from(c);
    Some(match u {
        0xE0000..=0xE007F => Invisible::Tag,
        0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069 => Invisible::Bidi,
        0x200B..=0x200D | 0x2060 | 0xFEFF => Invisible::ZeroWidth,
        0xFE00..=0xFE0F | 0xE0100..=0xE01EF | 0x180B..=0x180D | 0x180F => {
            Invisible::VariationSelector
        }
        0x09 | 0x0A | 0x0D => return None,
        0x00..=0x1F | 0x7F..=0x9F => Invisible::Control,
        0x00AD
        | 0x034F
        | 0x115F
        | 0x1160
        | 0x17B4
        | 0x17B5
        | 0x180E
        | 0x2061..=0x2065
        | 0x206A..=0x206F
        | 0x3164
        | 0xFFA0
        | 0xFFF9..=0xFFFB
        | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A => Invisible::Format,
        _ => return None,
    })
}

/// What escaping found in one text or in a whole descriptor: how many
/// characters of each kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Escaped {
    /// Count per kind.
    pub kinds: std::collections::BTreeMap<Invisible, usize>,
}

impl Escaped {
    /// Whether nothing was escaped.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// How many characters were escaped.
    pub fn total(&self) -> usize {
        self.kinds.values().sum()
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &Escaped) {
        for (k, n) in &other.kinds {
            *self.kinds.entry(*k).or_default() += n;
        }
    }
}

impl std::fmt::Display for Escaped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .kinds
            .iter()
            .map(|(k, n)| format!("{n} {}", k.as_str()))
            .collect();
        f.write_str(&parts.join(", "))
    }
}

/// `text` with every invisible character written as `\u{XXXX}`; borrowed
/// when there is none (the common case costs one scan).
pub fn escape_invisible<'a>(text: &'a str, found: &mut Escaped) -> Cow<'a, str> {
    let Some(first) = text.char_indices().find(|(_, c)| invisible(*c).is_some()) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first.0]);
    for c in text[first.0..].chars() {
        match invisible(c) {
            Some(kind) => {
                *found.kinds.entry(kind).or_default() += 1;
                let _ = write!(out, "\\u{{{:X}}}", u32::from(c));
            }
            None => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Escapes in place, recording what was found.
pub fn escape_string(text: &mut String, found: &mut Escaped) {
    if let Cow::Owned(escaped) = escape_invisible(text, found) {
        *text = escaped;
    }
}

/// Escapes every string of a JSON value in place: values and object keys
/// (titles, descriptions, enum values, defaults, examples, property names).
pub fn escape_json(value: &mut serde_json::Value, found: &mut Escaped) {
    use serde_json::Value;
    match value {
        Value::String(s) => escape_string(s, found),
        Value::Array(items) => items.iter_mut().for_each(|v| escape_json(v, found)),
        Value::Object(map) => {
            if map
                .keys()
                .any(|k| k.chars().any(|c| invisible(c).is_some()))
            {
                let old = std::mem::take(map);
                for (k, v) in old {
                    let k = escape_invisible(&k, found).into_owned();
                    map.insert(k, v);
                }
            }
            map.values_mut().for_each(|v| escape_json(v, found));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn invisible_characters_are_escaped_and_counted() {
        let mut found = Escaped::default();
        assert!(matches!(
            escape_invisible("plain text, ünïcode ✓\n\t", &mut found),
            Cow::Borrowed(_)
        ));
        assert!(found.is_empty());
        let hidden = "a\u{E0041}\u{200B}b\u{202E}c\u{FEFF}\u{FE0F}\u{7}";
        let shown = escape_invisible(hidden, &mut found);
        assert_eq!(
            shown,
            "a\\u{E0041}\\u{200B}b\\u{202E}c\\u{FEFF}\\u{FE0F}\\u{7}"
        );
        assert_eq!(found.total(), 6);
        assert_eq!(
            found.to_string(),
            "1 tag characters, 1 bidi controls, 2 zero-width characters, 1 variation selectors, 1 control characters"
        );
    }

    #[test]
    fn every_string_of_a_schema_is_escaped_keys_too() {
        let mut v = json!({
            "title": "T\u{200B}",
            "properties": {"k\u{E0061}": {"enum": ["x\u{2066}"], "default": "y\u{AD}"}},
            "n": 1
        });
        let mut found = Escaped::default();
        escape_json(&mut v, &mut found);
        assert_eq!(found.total(), 4);
        assert_eq!(
            v,
            json!({
                "title": "T\\u{200B}",
                "properties": {"k\\u{E0061}": {"enum": ["x\\u{2066}"], "default": "y\\u{AD}"}},
                "n": 1
            })
        );
    }
}
