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
