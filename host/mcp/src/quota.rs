//! Per-principal quotas as an around-dispatch wrapper: the pipeline admits
//! a call that passed every check, and the quota decides whether it runs
//! now.
//!
//! A script's calls are part of their script, which was admitted once: they
//! neither take a slot nor count towards the rate (a script holding the only
//! slot would otherwise be refused its own calls).

use serde_json::json;
use std::sync::Arc;
use toolhost_auth::Quotas;
use toolhost_contract::{FailureCode, ToolFailure};
use toolhost_pipeline::wrappers::{DispatchCtx, Next, Wrapper};
use toolhost_runtime::{Execution, ExecutionReport};

/// Refuses a call over its principal's quota `quota_exceeded`, with the
/// seconds to wait in the failure's info (`retryAfterS`).
pub(crate) struct QuotaWrapper(pub(crate) Arc<Quotas>);

/// What the quotas count a call without a principal as (the CLI's calls,
/// a test's): one caller.
const NOBODY: &str = "local";

#[async_trait::async_trait]
impl Wrapper for QuotaWrapper {
    fn name(&self) -> &str {
        "quota"
    }

    async fn around(&self, ctx: &mut DispatchCtx<'_>, next: Next<'_>) -> Box<Execution> {
        if ctx.call().parent().is_some() {
            return next.run(ctx).await;
        }
        let principal = ctx.call().principal().unwrap_or(NOBODY);
        let _running = match self.0.admit(principal) {
            Ok(running) => running,
            Err(over) => {
                let failure = ToolFailure::new(
                    FailureCode::QuotaExceeded,
                    format!(
                        "over quota: {}; try again in {} s",
                        over.message, over.retry_after_s
                    ),
                )
                .with_info(json!({ "retryAfterS": over.retry_after_s }));
                return Box::new(Execution::new(Err(failure), ExecutionReport::default()));
            }
        };
        next.run(ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio_util::sync::CancellationToken;
    use toolhost_contract::{ToolCall, ToolDescriptor};
    use toolhost_pipeline::{Invocation, Pipeline, Registry, Scope, ToolBody, ToolSpec};
    use toolhost_policy::{Decision, PolicyBuilder};

    /// Counts the calls that reached it.
    struct Counted(Arc<AtomicUsize>);

    #[async_trait::async_trait]
    impl ToolBody for Counted {
        async fn execute(&self, _: Invocation<'_>) -> Execution {
            self.0.fetch_add(1, Ordering::SeqCst);
            Execution::new(Ok("{}".into()), ExecutionReport::default())
        }
    }

    fn call(id: &str, principal: &str, parent: Option<&str>) -> ToolCall {
        // Arguments of their own: the repeat check refuses a call the same
        // as one that just failed.
        let mut call = ToolCall::new(id, "probe", format!(r#"{{"id":{id:?}}}"#));
        call.principal = Some(principal.into());
        call.parent = parent.map(str::to_owned);
        call
    }

    #[tokio::test]
    async fn a_call_over_quota_runs_nothing_and_says_when_to_come_back() {
        let ran = Arc::new(AtomicUsize::new(0));
        let descriptor = ToolDescriptor::from_raw(
            "probe".into(),
            "probe".into(),
            r#"{"type":"object"}"#,
            r#"{"type":"object"}"#,
            Default::default(),
            Vec::new(),
        )
        .expect("descriptor");
        let policy = PolicyBuilder::new()
            .decision(Decision::Allow)
            .build()
            .expect("policy")
            .component();
        let registry = Registry::new();
        let _registered = registry
            .register(
                Scope::Global,
                vec![ToolSpec {
                    descriptor,
                    policy,
                    body: Arc::new(Counted(ran.clone())),
                    source: "test".into(),
                    deferred: false,
                    listed_with_handles: None,
                }],
            )
            .expect("registers");
        let quotas = Arc::new(Quotas::new(toolhost_auth::QuotaLimits {
            concurrent: None,
            per_minute: Some(1),
        }));
        let pipeline = Pipeline::builder(registry)
            .outer_wrapper(Arc::new(QuotaWrapper(quotas)))
            .build();
        let run = |c| pipeline.execute(c, CancellationToken::new());

        assert!(!run(call("1", "alice", None)).await.is_error());
        let over = run(call("2", "alice", None)).await;
        assert!(over.failed_with(FailureCode::QuotaExceeded), "{over:?}");
        let wait = over
            .error()
            .and_then(|e| e.info.as_ref())
            .and_then(|i| i["retryAfterS"].as_u64());
        assert!(wait.is_some_and(|s| (1..=60).contains(&s)), "{over:?}");
        // Another principal has a quota of its own; a script's call is its
        // script's, admitted once.
        let bob = run(call("3", "bob", None)).await;
        assert!(!bob.is_error(), "{bob:?}");
        assert!(!run(call("1#1", "alice", Some("1"))).await.is_error());
        assert_eq!(
            ran.load(Ordering::SeqCst),
            3,
            "the refused call ran nothing"
        );
    }
}
