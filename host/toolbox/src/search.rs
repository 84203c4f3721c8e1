//! Progressive discovery's reserved tool, `search_tools`: served whenever
//! the toolbox defers tools (not advertised, callable by name). It returns
//! the tools a query is about ([`Registry::search`]: BM25 fused with a
//! local embedding model's ranking once [`crate::model`] has read it) with
//! their whole descriptions, as `tools/list` shows them; in
//! code mode, also the TypeScript declarations a script calls them by.
//!
//! Its description never names the deferred tools or counts them: it is
//! part of the advertised prefix, which must not change when tools do.
//!
//! It never answers from part of the toolbox in silence: while components
//! are still loading (a server's first start compiles them in the
//! background), a search waits for them at most [`LOAD_WAIT`], then answers
//! with what it has and names what is still loading, so the model can
//! search again.

use crate::code;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use toolhost_contract::{Annotations, FailureCode, ToolDescriptor, ToolFailure};
use toolhost_pipeline::advertise::{Format, listed_descriptor, project};
use toolhost_pipeline::{
    Invocation, LOAD_WAIT, ModelState, Reach, RegisteredTool, Registry, ToolBody, ToolSpec,
};
use toolhost_policy::{Language, Mode, Policy, ToolPolicy};
use toolhost_runtime::{Execution, ExecutionReport};

/// The reserved tool's name.
pub const NAME: &str = toolhost_pipeline::discovery::SEARCH_TOOL;

/// Most tools one search returns.
pub const MAX_LIMIT: u64 = 20;

/// Results when the call names no limit.
pub const DEFAULT_LIMIT: u64 = 5;

/// Most bytes of declarations one search returns (code mode).
const MAX_DECLARATIONS_BYTES: usize = 24 * 1024;

/// The reserved tool's declaration (`code`: the toolbox runs scripts in
/// that language, so results carry their declarations too).
pub fn descriptor(code: Option<Language>) -> ToolDescriptor {
    let how = match code {
        Some(Language::Javascript) => {
            " Each match comes with its description and input schema, and `declarations` \
             gives the TypeScript a `run_code` script calls it by (`await tools.NAME(args)`)."
        }
        Some(Language::Python) => {
            " Each match comes with its description and input schema, and `declarations` \
             gives the Python stub a `run_code` script calls it by (`await tools.NAME(arg=...)`)."
        }
        None => {
            " Each match comes with its description and input schema; then call it by name \
             like any listed tool."
        }
    };
    ToolDescriptor {
        name: NAME.into(),
        title: Some("Search tools".into()),
        description: format!(
            "Finds tools by what they do. This toolbox has more tools than are listed: the \
             others can be called by name once found. Describe the task in a few words (\"post \
             a message to a Slack channel\", \"take a screenshot of the page\").{how}"
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 500,
                    "description": "What the tool should do, in a few words"
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "description": "Most tools to return (default 5)"
                }
            },
            "required": ["query"],
            "additionalProperties": false
        }),
        output_schema: json!({
            "type": "object",
            "properties": {
                "tools": {"type": "array", "items": {"type": "object"}},
                "declarations": {"type": "string"},
                "ranking": {
                    "type": "object",
                    "properties": {
                        "by": {"type": "string", "enum": ["words"]},
                        "note": {"type": "string"}
                    },
                    "required": ["by", "note"]
                },
                "loading": {
                    "type": "object",
                    "properties": {
                        "components": {"type": "array", "items": {"type": "string"}},
                        "note": {"type": "string"}
                    },
                    "required": ["components", "note"]
                }
            },
            "required": ["tools"]
        }),
        annotations: Annotations {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
        paths: Vec::new(),
        urls: Vec::new(),
        host_renders: true,
    }
}

/// Its policy: allowed, for the model alone (a script has its declarations
/// already), nothing granted.
pub fn policy() -> ToolPolicy {
    Policy::parse(
        "version = 1\ndecision = \"allow\"\ncallers = \"model\"\n",
        "search_tools (built in)",
        std::path::Path::new("."),
    )
    .map(|p| p.component())
    // The text above is fixed: it parses (a unit test says so); were it
    // not to, the tool is refused rather than allowed.
    .unwrap_or_default()
}

/// The spec to register for a toolbox in `mode` (its scripts in
/// `language`), searching `registry`.
pub fn spec(registry: &Registry, mode: Mode, language: Language) -> ToolSpec {
    ToolSpec {
        descriptor: descriptor(mode.runs_code().then_some(language)),
        policy: policy(),
        body: Arc::new(SearchTools {
            registry: registry.clone(),
            mode,
        }),
        source: "builtin:search_tools".into(),
        deferred: false,
        listed_with_handles: None,
    }
}

/// The tools `query` is about that a caller may use, best first, at most
/// `limit`: not a reserved tool, not refused by `reach` (the caller's
/// agent or script), and callable by the model (or, in code mode, by its
/// scripts). `search_tools` and `toolhost tools --search` both run it.
pub fn find(
    registry: &Registry,
    mode: Mode,
    query: &str,
    limit: usize,
    reach: Option<&dyn Reach>,
) -> Vec<Arc<RegisteredTool>> {
    registry
        .search(query, usize::MAX)
        .into_iter()
        .filter(|t| {
            t.descriptor.name != NAME
                && !t.policy.sandbox.call_tools
                && mode.reaches(t.policy.callers)
                && reach.is_none_or(|r| r.refuse(&t.descriptor.name).is_none())
        })
        .take(limit)
        .collect()
}

/// What `search_tools` returns for `found`: their descriptors as
/// `tools/list` shows them (escaped and bounded when they were loaded;
/// with their `baseline` argument when the host issues `handles`), in code
/// mode the declarations a script calls them by, and the components still
/// `loading`, whose tools were not searched.
pub fn value(
    found: &[Arc<RegisteredTool>],
    mode: Mode,
    language: Language,
    loading: &[String],
    handles: bool,
) -> Value {
    let described: Vec<_> = found
        .iter()
        .map(|t| (t, listed_descriptor(t, handles)))
        .collect();
    let tools: Vec<Value> = described
        .iter()
        .map(|(_, d)| project(d, Format::Mcp))
        .collect();
    let mut value = json!({ "tools": tools });
    if mode.runs_code() {
        let scripted: Vec<ToolDescriptor> = described
            .into_iter()
            .filter(|(t, _)| t.policy.callers.code())
            .map(|(_, d)| d.into_owned())
            .collect();
        if !scripted.is_empty() {
            value["declarations"] = json!(code::declarations(
                &scripted,
                MAX_DECLARATIONS_BYTES,
                language
            ));
        }
    }
    if !loading.is_empty() {
        let n = loading.len();
        value["loading"] = json!({
            "components": loading,
            "note": format!(
                "{n} component{} still loading: {} tools were not searched yet. \
                 Search again in a few seconds.",
                if n == 1 { " is" } else { "s are" },
                if n == 1 { "its" } else { "their" }
            ),
        });
    }
    value
}

/// Who asks a search: what they may call, and whether their host issues
/// baseline handles (the tools are shown as their `tools/list` shows them).
#[derive(Clone, Copy, Default)]
pub struct Asker<'a> {
    /// What the caller may call (`None`: everything).
    pub reach: Option<&'a dyn Reach>,
    /// Whether the caller's host issues baseline handles.
    pub handles: bool,
}

/// A search as `search_tools` answers it: when components are still
/// loading, it first waits for them at most `wait` (or until `cancel`),
/// then searches what is served and says what is still loading.
pub async fn answer(
    registry: &Registry,
    mode: Mode,
    query: &str,
    limit: usize,
    asker: Asker<'_>,
    wait: Duration,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Value, ToolFailure> {
    // The model is waited for only while it is read from disk (a fraction
    // of a second), never while it downloads.
    if registry.is_loading() || registry.model_state() == ModelState::Loading {
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                return Err(ToolFailure::new(
                    FailureCode::Cancelled,
                    "the search was cancelled while components were still loading",
                ));
            }
            () = async { registry.settled().await; registry.model_settled().await } => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
    // What is loading is read before the search: a component that
    // settles in between is searched and may still be named, never the
    // other way round.
    let loading = registry.availability().loading;
    let found = find(registry, mode, query, limit, asker.reach);
    let mut value = value(&found, mode, registry.language(), &loading, asker.handles);
    if registry.model_state() == ModelState::Fetching {
        // A first start: said, so a search in other words can come again.
        value["ranking"] = json!({
            "by": "words",
            "note": "The search model is still downloading: this search ranked tools by their \
                     words alone. A search in other words than the tools' own may find more in \
                     a few seconds.",
        });
    }
    Ok(value)
}

/// The body: a search of the registry.
struct SearchTools {
    registry: Registry,
    mode: Mode,
}

#[async_trait]
impl ToolBody for SearchTools {
    async fn execute(&self, input: Invocation<'_>) -> Execution {
        let args: Value = match serde_json::from_str(input.arguments) {
            Ok(a) => a,
            Err(e) => {
                let f = ToolFailure::new(FailureCode::InvalidArguments, format!("not JSON: {e}"));
                return Execution::new(Err(f), ExecutionReport::default());
            }
        };
        // The schema was checked before dispatch: a query, a limit in range.
        let query = args["query"].as_str().unwrap_or_default();
        let limit = args["limit"]
            .as_u64()
            .unwrap_or(DEFAULT_LIMIT)
            .clamp(1, MAX_LIMIT) as usize;
        let asker = Asker {
            reach: input.reach.as_deref(),
            handles: input.handles,
        };
        let answered = answer(
            &self.registry,
            self.mode,
            query,
            limit,
            asker,
            LOAD_WAIT,
            &input.cancel,
        )
        .await;
        Execution::new(answered.map(|v| v.to_string()), ExecutionReport::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_policy_allows_the_model_alone_and_grants_nothing() {
        let p = policy();
        assert_eq!(p.decision, toolhost_policy::Decision::Allow);
        assert_eq!(p.callers, toolhost_policy::Callers::Model);
        assert!(p.sandbox.fs.is_empty() && p.sandbox.network.is_empty());
    }

    #[test]
    fn its_description_is_the_same_whatever_the_tools() {
        assert_eq!(descriptor(None), descriptor(None));
        assert!(!descriptor(None).description.contains("declarations"));
        assert!(
            descriptor(Some(Language::Python))
                .description
                .contains("run_code")
        );
    }
}
