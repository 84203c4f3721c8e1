//! Record and replay: a session's calls kept in a cassette, and played back
//! in one of two layers, with a report that points at the first mismatch.
//!
//! - **Record** runs every call (deterministically) and writes its result.
//! - **Replay** is strict: a call that is not in the cassette is not run;
//!   it fails with `not_recorded` and is reported with the nearest recorded
//!   calls. Two layers:
//!   - [`Layer::Cassette`] returns the recorded result without running
//!     the component at all;
//!   - [`Layer::Verify`] re-runs the call in the recorded call's virtual
//!     environment and reports the first field that differs (and a
//!     component, policy or schema that changed since the recording).
//! - **Replay-or-record** replays what is recorded and records the rest.
//! - **Passthrough** runs everything and records nothing.
//!
//! Calls are matched by [`CallKey`] (tool, canonical arguments, occurrence),
//! never by the client's request id. A harness test is a few lines:
//!
//! ```no_run
//! # async fn demo(registry: toolhost_pipeline::Registry) -> Result<(), Box<dyn std::error::Error>> {
//! use toolhost_pipeline::replay::{Layer, Mode, Replay};
//! use toolhost_pipeline::Pipeline;
//! let replay = Replay::open("tests/cassettes/demo.jsonl".as_ref(), Mode::Replay, Layer::Cassette)?;
//! let pipeline = Pipeline::builder(registry).cassette(replay.clone()).build();
//! pipeline.execute(toolhost_contract::ToolCall::new("1", "read", r#"{"path":"a.txt"}"#), Default::default()).await;
//! replay.assert_no_divergence();
//! # Ok(()) }
//! ```

pub mod cassette;
pub mod divergence;
pub mod key;

use crate::call::FrozenCall;
use crate::registry::Registry;
use cassette::{CassetteError, Entry, Header, Line, Recording, Writer};
pub use divergence::{Candidate, Divergence, DivergenceReport, Field};
pub use key::{CallKey, canonical_json, canonical_sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use toolhost_contract::{FailureCode, ToolFailure, ToolResult};

/// Nearest recorded calls named when a call is not found.
const CANDIDATES: usize = 3;

/// What a cassette is used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Run every call and record it (the file is created or truncated).
    Record,
    /// Play back; a call not in the cassette is an error (the default in tests).
    Replay,
    /// Play back what is recorded; run and record (appending) the rest.
    ReplayOrRecord,
    /// Run every call, record nothing.
    Passthrough,
}

/// How a recorded call is played back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layer {
    /// Return the recorded result; run nothing.
    #[default]
    Cassette,
    /// Re-run the component deterministically and compare with the recording.
    Verify,
}

/// What the pipeline does with one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Run it; record it when `record`.
    Live {
        /// Write the result to the cassette.
        record: bool,
    },
    /// Return entry `i`'s result.
    Cassette(usize),
    /// Run it in entry `i`'s environment and compare.
    Verify(usize),
    /// Strict replay, and the cassette does not have it.
    Missing,
}

/// A cassette in use: the recording (when playing back), what was used of
/// it, the divergences found, and the writer (when recording).
#[derive(Debug)]
pub struct Replay {
    mode: Mode,
    layer: Layer,
    path: PathBuf,
    recording: Option<Recording>,
    by_key: HashMap<CallKey, usize>,
    /// The entries of the calls each script made, by the key of the call
    /// that ran the script.
    children: HashMap<CallKey, Vec<usize>>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    occurrences: HashMap<(String, String), u32>,
    used: Vec<bool>,
    divergences: Vec<Divergence>,
    writer: Option<Writer>,
    next_index: u64,
    started: bool,
}

impl Replay {
    /// Opens the cassette at `path` for `mode`: reads it to play back
    /// (replay-or-record starts a new one when the file does not exist);
    /// creates or truncates it to record.
    pub fn open(path: &Path, mode: Mode, layer: Layer) -> Result<Arc<Replay>, CassetteError> {
        let recording = match mode {
            Mode::Replay => Some(Recording::read(path)?),
            Mode::ReplayOrRecord if path.exists() => Some(Recording::read(path)?),
            _ => None,
        };
        let writer = match (mode, &recording) {
            (Mode::Record, _) | (Mode::ReplayOrRecord, None) => Some(Writer::create(path)?),
            (Mode::ReplayOrRecord, Some(_)) => Some(Writer::append(path)?),
            _ => None,
        };
        let entries = recording.as_ref().map_or(&[][..], |r| &r.entries[..]);
        let by_key = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.key.clone(), i))
            .collect();
        let mut children: HashMap<CallKey, Vec<usize>> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            if let Some(parent) = &e.parent {
                children.entry(parent.clone()).or_default().push(i);
            }
        }
        let state = State {
            used: vec![false; entries.len()],
            next_index: entries.len() as u64,
            writer,
            ..State::default()
        };
        Ok(Arc::new(Replay {
            mode,
            layer,
            path: path.to_owned(),
            recording,
            by_key,
            children,
            state: Mutex::new(state),
        }))
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The cassette's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recorded session seed, when playing back a recording.
    pub fn recorded_seed(&self) -> Option<u64> {
        self.recording.as_ref().map(|r| r.header.seed)
    }

    /// The recorded calls (empty when recording).
    pub fn entries(&self) -> &[Entry] {
        self.recording.as_ref().map_or(&[][..], |r| &r.entries[..])
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called once when a pipeline is built over it: writes a new
    /// cassette's header, or (verify) compares the recorded header with
    /// what runs now.
    pub(crate) fn start(&self, registry: &Registry, seed: u64) {
        let mut st = self.lock();
        if std::mem::replace(&mut st.started, true) {
            return;
        }
        let live = Header::describe(registry, seed);
        if let Some(rec) = &self.recording {
            if self.layer == Layer::Verify {
                st.divergences
                    .extend(header_divergences(&rec.header, &live));
            }
        } else if let Some(w) = st.writer.as_mut()
            && let Err(e) = w.write(&Line::Header(live))
        {
            st.divergences.push(Divergence::Write {
                message: e.to_string(),
            });
        }
    }

    /// Keys `call` (counting its occurrence: call this in position order)
    /// and decides what to do with it.
    pub(crate) fn admit(&self, call: &FrozenCall) -> (CallKey, Plan) {
        let args = key::arguments_hash(call.arguments());
        let mut st = self.lock();
        let n = st
            .occurrences
            .entry((call.name().to_owned(), args.clone()))
            .or_insert(0);
        let key = CallKey {
            tool: call.name().to_owned(),
            args,
            n: *n,
        };
        *n += 1;
        let plan = match (self.mode, self.by_key.get(&key)) {
            (Mode::Passthrough, _) => Plan::Live { record: false },
            (Mode::Record, _) => Plan::Live { record: true },
            (Mode::Replay | Mode::ReplayOrRecord, Some(&i)) => {
                if let Some(u) = st.used.get_mut(i) {
                    *u = true;
                }
                match self.layer {
                    Layer::Cassette => Plan::Cassette(i),
                    Layer::Verify => Plan::Verify(i),
                }
            }
            (Mode::ReplayOrRecord, None) => Plan::Live { record: true },
            (Mode::Replay, None) => Plan::Missing,
        };
        (key, plan)
    }

    /// The call `parent` was played back from the cassette without
    /// running: the calls its script made count as played too.
    pub(crate) fn children_played(&self, parent: &CallKey) {
        let Some(children) = self.children.get(parent) else {
            return;
        };
        let mut st = self.lock();
        for &i in children {
            if let Some(u) = st.used.get_mut(i) {
                *u = true;
            }
        }
    }

    /// Entry `i`'s recorded result.
    pub(crate) fn recorded(&self, i: usize) -> Option<&Entry> {
        self.entries().get(i)
    }

    /// Records that `call` (at `position`) is not in the cassette, and the
    /// failure its caller gets.
    pub(crate) fn missing(&self, call: &FrozenCall, position: u64, key: &CallKey) -> ToolFailure {
        let arguments = key::arguments_text(call);
        let mut candidates: Vec<Candidate> = self
            .entries()
            .iter()
            .filter(|e| e.key.tool == key.tool)
            .map(|e| {
                let text = e
                    .raw_arguments
                    .clone()
                    .unwrap_or_else(|| canonical_json(&e.arguments));
                Candidate {
                    index: e.index,
                    key: e.key.clone(),
                    similarity: divergence::similarity(&arguments, &text),
                    arguments: divergence::clip(&text),
                }
            })
            .collect();
        candidates.sort_by(|a, b| {
            b.similarity
                .total_cmp(&a.similarity)
                .then(a.index.cmp(&b.index))
        });
        candidates.truncate(CANDIDATES);
        let nearest = candidates
            .first()
            .map(|c| format!("; the nearest recorded call is #{} ({})", c.index, c.key))
            .unwrap_or_default();
        let message = format!(
            "replay: this call of `{}` is not in the cassette {} (key {key}){nearest}",
            key.tool,
            self.path.display()
        );
        self.lock().divergences.push(Divergence::NotRecorded {
            position,
            key: key.clone(),
            arguments: divergence::clip(&arguments),
            candidates,
        });
        ToolFailure::new(FailureCode::NotRecorded, message)
    }

    /// Compares a re-run of entry `i` with its recording.
    pub(crate) fn verify(&self, i: usize, live: &ToolResult) {
        let Some(entry) = self.recorded(i) else {
            return;
        };
        if let Some((field, expected, actual, diff)) = divergence::compare(&entry.result, live) {
            self.lock().divergences.push(Divergence::Mismatch {
                index: entry.index,
                key: entry.key.clone(),
                field,
                expected,
                actual,
                diff,
            });
        }
    }

    /// Writes one call to the cassette (in position order: the pipeline
    /// calls this from its in-order writer).
    pub(crate) fn write(
        &self,
        position: u64,
        key: CallKey,
        parent: Option<CallKey>,
        call: &FrozenCall,
        result: ToolResult,
    ) {
        let mut st = self.lock();
        let index = st.next_index;
        let entry = Entry::new(index, position, key, parent, call, result);
        let Some(w) = st.writer.as_mut() else {
            return;
        };
        match w.write(&Line::Call(entry)) {
            Ok(()) => st.next_index += 1,
            Err(e) => st.divergences.push(Divergence::Write {
                message: e.to_string(),
            }),
        }
    }

    /// Every divergence so far, and (playing back) the recorded calls not
    /// made yet.
    pub fn report(&self) -> DivergenceReport {
        let st = self.lock();
        let mut divergences = st.divergences.clone();
        if matches!(self.mode, Mode::Replay | Mode::ReplayOrRecord) {
            let unused: Vec<(u64, CallKey)> = self
                .entries()
                .iter()
                .zip(&st.used)
                .filter(|(_, used)| !**used)
                .map(|(e, _)| (e.index, e.key.clone()))
                .collect();
            if !unused.is_empty() {
                divergences.push(Divergence::Unused { entries: unused });
            }
        }
        DivergenceReport { divergences }
    }

    /// `Ok` when the session matched its recording (every recorded call
    /// made, nothing else, nothing different).
    pub fn finish(&self) -> Result<(), DivergenceReport> {
        let report = self.report();
        if report.is_empty() {
            Ok(())
        } else {
            Err(report)
        }
    }

    /// Panics with the report when the session diverged (for tests).
    #[track_caller]
    pub fn assert_no_divergence(&self) {
        if let Err(report) = self.finish() {
            panic!("{report}");
        }
    }
}

/// What differs between a recorded and a live header.
fn header_divergences(recorded: &Header, live: &Header) -> Vec<Divergence> {
    let mut out = Vec::new();
    let mut tools: Vec<&String> = recorded
        .components
        .keys()
        .chain(live.components.keys())
        .collect();
    tools.sort();
    tools.dedup();
    for tool in tools {
        let (a, b) = (recorded.components.get(tool), live.components.get(tool));
        if a != b {
            out.push(Divergence::Component {
                tool: tool.clone(),
                expected: a.cloned(),
                actual: b.cloned(),
            });
        }
    }
    for (tool, digest) in &recorded.policies {
        if live.policies.get(tool) != Some(digest) {
            out.push(Divergence::Policy { tool: tool.clone() });
        }
    }
    // Cassettes recorded before descriptor digests have none to compare.
    for (tool, digest) in &recorded.descriptors {
        if live.descriptors.get(tool).is_some_and(|d| d != digest) {
            out.push(Divergence::Descriptor { tool: tool.clone() });
        }
    }
    if recorded.schemas != live.schemas {
        out.push(Divergence::Schemas);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn header(descriptors: &[(&str, &str)]) -> Header {
        Header {
            format: cassette::FORMAT.into(),
            version: cassette::VERSION,
            seed: 1,
            components: BTreeMap::new(),
            policies: BTreeMap::new(),
            schemas: "s".into(),
            descriptors: descriptors
                .iter()
                .map(|(t, d)| ((*t).to_owned(), (*d).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn a_changed_descriptor_is_a_divergence_and_an_old_cassette_has_none() {
        let recorded = header(&[("notes", "sha256:a"), ("lookup", "sha256:b")]);
        let live = header(&[("notes", "sha256:c"), ("lookup", "sha256:b")]);
        let found = header_divergences(&recorded, &live);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].to_string(),
            "tool `notes` describes itself differently from the recording (its descriptor digest differs)"
        );
        // Recorded before descriptor digests: nothing to compare.
        assert!(header_divergences(&header(&[]), &live).is_empty());
    }
}
