//! What an operator scrapes: `/metrics` in the Prometheus text format
//! (version 0.0.4), kept with atomics and one small map, no metrics crate.
//!
//! - `toolhost_calls_total{tool,code}`: finished calls by tool and result
//!   code (`ok`, or the stable failure code; a tool's own codes count as
//!   `tool_error`, and a name no tool has as tool `(unknown)`, so a client
//!   cannot grow the label set);
//! - `toolhost_call_duration_seconds{group}`: a latency histogram per stage
//!   group: `host` (every stage outside the sandbox), `sandbox` (the
//!   around-dispatch wrappers and the tool body) and `total`;
//! - `toolhost_calls_in_flight`, `toolhost_pool_slots`,
//!   `toolhost_pool_slots_in_use`, `toolhost_pool_queue_depth`;
//! - `toolhost_artifact_store_bytes`, `toolhost_compile_cache_loads_total{outcome}`;
//! - `toolhost_rejected_total{reason}`: requests refused before any call
//!   ran (authentication, scope, quota).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use toolhost_contract::{ErrorCode, FailureCode, StageVerdict, ToolResult};

/// Upper bounds of the latency buckets, in microseconds (10 µs to 60 s).
const BUCKETS_US: [u64; 16] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 1_000_000,
    10_000_000, 60_000_000,
];

/// A cumulative-on-render latency histogram.
#[derive(Default)]
struct Histogram {
    /// Observations per bucket (not cumulative); the last slot is `+Inf`.
    counts: [AtomicU64; BUCKETS_US.len() + 1],
    sum_us: AtomicU64,
}

impl Histogram {
    fn observe(&self, us: u64) {
        let i = BUCKETS_US
            .iter()
            .position(|b| us <= *b)
            .unwrap_or(BUCKETS_US.len());
        self.counts[i].fetch_add(1, Relaxed);
        self.sum_us.fetch_add(us, Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, group: &str) {
        let mut cumulative = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            cumulative += c.load(Relaxed);
            let le = match BUCKETS_US.get(i) {
                Some(us) => format!("{}", *us as f64 / 1e6),
                None => "+Inf".into(),
            };
            let _ = writeln!(
                out,
                "{name}_bucket{{group=\"{group}\",le=\"{le}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            out,
            "{name}_sum{{group=\"{group}\"}} {}",
            self.sum_us.load(Relaxed) as f64 / 1e6
        );
        let _ = writeln!(out, "{name}_count{{group=\"{group}\"}} {cumulative}");
    }
}

/// Why a request or a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// No valid credentials (401).
    Unauthenticated,
    /// Valid credentials without the scope (403).
    Forbidden,
    /// Over the principal's quota (429).
    Quota,
}

impl Rejection {
    /// The refusal a call's result is, if it is one: over quota, or denied
    /// by the caller's reach (a scope its token lacks).
    fn of(result: &ToolResult) -> Option<Rejection> {
        if result.failed_with(FailureCode::QuotaExceeded) {
            return Some(Rejection::Quota);
        }
        let by_reach = result.failed_with(FailureCode::Denied)
            && result.meta().trace.entries.last().is_some_and(|e| {
                e.verdict == StageVerdict::Deny && e.by == toolhost_pipeline::REACH
            });
        by_reach.then_some(Rejection::Forbidden)
    }

    fn label(self) -> &'static str {
        match self {
            Rejection::Unauthenticated => "unauthenticated",
            Rejection::Forbidden => "forbidden",
            Rejection::Quota => "quota",
        }
    }
}

/// The server's counters.
#[derive(Default)]
pub struct Metrics {
    /// Calls by tool, then by result code.
    calls: Mutex<BTreeMap<String, BTreeMap<&'static str, u64>>>,
    host: Histogram,
    sandbox: Histogram,
    total: Histogram,
    rejected: [AtomicU64; 3],
    /// MCP tasks, by [`TaskEvent`].
    tasks: [AtomicU64; 4],
}

/// What happened to an MCP task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEvent {
    /// A call became a task.
    Created,
    /// It ended with its result.
    Completed,
    /// It was cancelled.
    Cancelled,
    /// It ended without a result.
    Failed,
}

impl TaskEvent {
    const ALL: [TaskEvent; 4] = [
        TaskEvent::Created,
        TaskEvent::Completed,
        TaskEvent::Cancelled,
        TaskEvent::Failed,
    ];

    fn label(self) -> &'static str {
        match self {
            TaskEvent::Created => "created",
            TaskEvent::Completed => "completed",
            TaskEvent::Cancelled => "cancelled",
            TaskEvent::Failed => "failed",
        }
    }
}

/// The gauges read from the host when scraped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    /// Calls running now.
    pub in_flight: usize,
    /// The runtime's pool and cache.
    pub runtime: toolhost_runtime::RuntimeStats,
    /// Bytes the artifact store holds.
    pub artifact_bytes: u64,
    /// Tools served.
    pub tools: usize,
}

impl Metrics {
    /// Counts a finished call of `tool` (`known`: a served tool's name),
    /// and the refusal it is, if it is one.
    pub fn record(&self, tool: &str, known: bool, result: &ToolResult) {
        if let Some(why) = Rejection::of(result) {
            self.reject(why);
        }
        let code: &'static str = match result.error() {
            None => "ok",
            Some(f) => match &f.code {
                ErrorCode::Host(c) => c.as_str(),
                ErrorCode::Tool(_) => "tool_error",
            },
        };
        let tool = if known { tool } else { "(unknown)" };
        {
            let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
            // The tool's name is allocated once, at its first call.
            let by_code = match calls.get_mut(tool) {
                Some(by_code) => by_code,
                None => calls.entry(tool.to_owned()).or_default(),
            };
            *by_code.entry(code).or_default() += 1;
        }
        let t = result.meta().timings;
        self.total.observe(t.total_us);
        self.sandbox.observe(t.dispatch_us);
        self.host.observe(t.total_us.saturating_sub(t.dispatch_us));
    }

    /// Counts a refused request.
    pub fn reject(&self, why: Rejection) {
        self.rejected[why as usize].fetch_add(1, Relaxed);
    }

    /// Counts what happened to a task.
    pub fn task(&self, event: TaskEvent) {
        self.tasks[event as usize].fetch_add(1, Relaxed);
    }

    /// Everything, in the Prometheus text format.
    pub fn render(&self, g: &Gauges) -> String {
        let mut out = String::with_capacity(4096);
        let head = |out: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        head(
            &mut out,
            "toolhost_calls_total",
            "counter",
            "Tool calls finished, by tool and result code (ok, or the stable failure code).",
        );
        for (tool, by_code) in self.calls.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            for (code, n) in by_code {
                let _ = writeln!(
                    out,
                    "toolhost_calls_total{{tool=\"{}\",code=\"{code}\"}} {n}",
                    escape(tool)
                );
            }
        }
        let name = "toolhost_call_duration_seconds";
        head(
            &mut out,
            name,
            "histogram",
            "Call latency by stage group: host (the stages outside the sandbox), sandbox (wrappers and tool body), total.",
        );
        self.host.render(&mut out, name, "host");
        self.sandbox.render(&mut out, name, "sandbox");
        self.total.render(&mut out, name, "total");
        let gauges: [(&str, &str, u64); 7] = [
            (
                "toolhost_calls_in_flight",
                "Calls running now.",
                g.in_flight as u64,
            ),
            (
                "toolhost_pool_slots",
                "Sandbox instances that may run at once.",
                g.runtime.slots as u64,
            ),
            (
                "toolhost_pool_slots_in_use",
                "Sandbox instances running now.",
                g.runtime.slots_in_use as u64,
            ),
            (
                "toolhost_pool_queue_depth",
                "Calls waiting for a free sandbox instance.",
                g.runtime.queued as u64,
            ),
            (
                "toolhost_artifact_store_bytes",
                "Bytes of truncated results kept for paging.",
                g.artifact_bytes,
            ),
            ("toolhost_tools", "Tools served.", g.tools as u64),
            ("toolhost_up", "1 while the server runs.", 1),
        ];
        for (name, help, v) in gauges {
            head(&mut out, name, "gauge", help);
            let _ = writeln!(out, "{name} {v}");
        }
        head(
            &mut out,
            "toolhost_compile_cache_loads_total",
            "counter",
            "Component loads by how they were compiled: hit (from the cache), miss (compiled), precompiled (built-in).",
        );
        for (outcome, n) in [
            ("hit", g.runtime.cache_hits),
            ("miss", g.runtime.cache_misses),
            ("precompiled", g.runtime.precompiled),
        ] {
            let _ = writeln!(
                out,
                "toolhost_compile_cache_loads_total{{outcome=\"{outcome}\"}} {n}"
            );
        }
        head(
            &mut out,
            "toolhost_rejected_total",
            "counter",
            "Requests refused before any call ran, by reason.",
        );
        for why in [
            Rejection::Unauthenticated,
            Rejection::Forbidden,
            Rejection::Quota,
        ] {
            let _ = writeln!(
                out,
                "toolhost_rejected_total{{reason=\"{}\"}} {}",
                why.label(),
                self.rejected[why as usize].load(Relaxed)
            );
        }
        head(
            &mut out,
            "toolhost_tasks_total",
            "counter",
            "Calls that became MCP tasks (created), and how the tasks this replica ran ended.",
        );
        for event in TaskEvent::ALL {
            let _ = writeln!(
                out,
                "toolhost_tasks_total{{event=\"{}\"}} {}",
                event.label(),
                self.tasks[event as usize].load(Relaxed)
            );
        }
        out
    }
}

/// A label value escaped for the text format.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::{Stage, ToolFailure};

    #[test]
    fn refusals_are_told_apart_by_their_code_and_who_denied() {
        let denied_by = |by: &'static str| {
            let mut r = ToolResult::from_failure(ToolFailure::new(FailureCode::Denied, "no"));
            r.meta_mut()
                .trace
                .push(Stage::Lookup, StageVerdict::Deny, by, None);
            r
        };
        let over = ToolResult::from_failure(ToolFailure::new(FailureCode::QuotaExceeded, "wait"));
        assert_eq!(Rejection::of(&over), Some(Rejection::Quota));
        assert_eq!(
            Rejection::of(&denied_by(toolhost_pipeline::REACH)),
            Some(Rejection::Forbidden)
        );
        assert_eq!(Rejection::of(&denied_by("policy")), None);
        let m = Metrics::default();
        m.record("edit", true, &denied_by(toolhost_pipeline::REACH));
        m.record("edit", true, &over);
        m.record("edit", true, &denied_by("policy"));
        let text = m.render(&Gauges::default());
        for line in [
            "toolhost_rejected_total{reason=\"forbidden\"} 1",
            "toolhost_rejected_total{reason=\"quota\"} 1",
            "toolhost_calls_total{tool=\"edit\",code=\"denied\"} 2",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
    }

    #[test]
    fn counts_calls_by_tool_and_code_and_bounds_unknown_names() {
        let m = Metrics::default();
        let ok = ToolResult::from_failure(ToolFailure::new(FailureCode::Denied, "no"));
        m.record("read", true, &ok);
        m.record("nope\"\n", false, &ok);
        let text = m.render(&Gauges::default());
        assert!(text.contains("toolhost_calls_total{tool=\"read\",code=\"denied\"} 1"));
        assert!(text.contains("toolhost_calls_total{tool=\"(unknown)\",code=\"denied\"} 1"));
        assert!(text.contains("toolhost_call_duration_seconds_count{group=\"total\"} 2"));
        assert!(
            text.contains("toolhost_call_duration_seconds_bucket{group=\"host\",le=\"+Inf\"} 2")
        );
    }

    #[test]
    fn buckets_are_cumulative() {
        let h = Histogram::default();
        h.observe(5);
        h.observe(5_000);
        h.observe(u64::MAX / 4);
        let mut out = String::new();
        h.render(&mut out, "x", "g");
        assert!(out.contains("x_bucket{group=\"g\",le=\"0.00001\"} 1"));
        assert!(out.contains("x_bucket{group=\"g\",le=\"0.005\"} 2"));
        assert!(out.contains("x_bucket{group=\"g\",le=\"+Inf\"} 3"));
    }
}
