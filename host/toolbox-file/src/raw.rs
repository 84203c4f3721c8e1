//! The serde shapes of a toolbox file, as written: every table rejects
//! unknown keys, and values keep their spans so that [`crate::lower`] can
//! point its errors at them.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;
use toolhost_policy::{InlinePolicy, Language, Mode};

use crate::types::Advertise;

/// First pass over a file: only `version`, everything else ignored, so that a
/// file of another version is reported as such rather than as unknown keys.
#[derive(Deserialize)]
pub(crate) struct VersionProbe {
    pub(crate) version: Option<Spanned<toml::Value>>,
}

/// The whole file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawToolbox {
    /// Checked by [`VersionProbe`]; listed here so it is a known key.
    #[serde(rename = "version")]
    _version: Option<IgnoredAny>,
    pub(crate) component: Option<Spanned<RawComponents>>,
    pub(crate) registries: Option<BTreeMap<Spanned<String>, Spanned<RawRegistry>>>,
    pub(crate) trust: Option<Vec<Spanned<RawTrust>>>,
    pub(crate) journal: Option<RawJournal>,
    pub(crate) tasks: Option<RawTasks>,
    pub(crate) mode: Option<Mode>,
    pub(crate) language: Option<Language>,
    pub(crate) defer_over: Option<usize>,
}

/// `[journal]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawJournal {
    pub(crate) max_mib: Option<u64>,
    pub(crate) max_days: Option<u64>,
    pub(crate) sync: Option<bool>,
}

/// `[tasks]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTasks {
    pub(crate) after_ms: Option<Spanned<u64>>,
    pub(crate) keep_secs: Option<Spanned<u64>>,
    pub(crate) max_result_kib: Option<Spanned<u64>>,
}

/// `[registries."HOST:PORT"]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRegistry {
    pub(crate) insecure: Option<bool>,
    pub(crate) auth_env: Option<Spanned<String>>,
    pub(crate) deadline_secs: Option<Spanned<u64>>,
    pub(crate) min_rate: Option<u64>,
}

/// `[[trust]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTrust {
    pub(crate) prefix: Spanned<String>,
    pub(crate) key: Option<Spanned<String>>,
    pub(crate) identity: Option<Spanned<String>>,
    pub(crate) issuer: Option<Spanned<String>>,
    pub(crate) trusted_root: Option<Spanned<String>>,
    pub(crate) signature: Option<Spanned<String>>,
}

/// `component`: an array of tables, whose error says so when it is not one
/// (a `[component]` written with single brackets is a table).
pub(crate) struct RawComponents(pub(crate) Vec<Spanned<RawComponent>>);

impl<'de> Deserialize<'de> for RawComponents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawComponentsVisitor)
    }
}

struct RawComponentsVisitor;

impl<'de> Visitor<'de> for RawComponentsVisitor {
    type Value = RawComponents;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of `[[component]]` tables (double brackets)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawComponents, A::Error> {
        let mut components = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(component) = seq.next_element()? {
            components.push(component);
        }
        Ok(RawComponents(components))
    }
}

/// One `[[component]]` entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawComponent {
    pub(crate) source: Spanned<String>,
    pub(crate) digest: Option<Spanned<String>>,
    pub(crate) policy: Option<Spanned<RawPolicySource>>,
    pub(crate) prefix: Option<Spanned<String>>,
    pub(crate) advertise: Option<Advertise>,
}

/// `policy`: a file path or an inline table.
pub(crate) enum RawPolicySource {
    File(String),
    /// Boxed: a raw policy is large next to a path.
    Inline(Box<InlinePolicy>),
}

impl<'de> Deserialize<'de> for RawPolicySource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawPolicySourceVisitor)
    }
}

struct RawPolicySourceVisitor;

impl<'de> Visitor<'de> for RawPolicySourceVisitor {
    type Value = RawPolicySource;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a policy file path or an inline policy table")
    }

    fn visit_str<E: de::Error>(self, path: &str) -> Result<RawPolicySource, E> {
        Ok(RawPolicySource::File(path.to_owned()))
    }

    /// The table's own map access, so the policy's keys and values keep
    /// their positions in the toolbox file.
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawPolicySource, A::Error> {
        InlinePolicy::deserialize(MapAccessDeserializer::new(map))
            .map(|inline| RawPolicySource::Inline(Box::new(inline)))
    }
}
