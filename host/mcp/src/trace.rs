//! W3C trace context in (SEP-414): a request's `_meta.traceparent` (and
//! `tracestate`) parents the span of the request, and so every span of the
//! call under it: admission, each stage, the body, a worker, a script's
//! calls. The spans carry names, ids and digests, never values. With no
//! exporter installed they are disabled and cost a check each.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use rmcp::model::JsonObject;
use std::str::FromStr;
use toolhost_contract::SPAN_TARGET;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The client's span, from `traceparent` (`00-TRACE-SPAN-FLAGS`, W3C Trace
/// Context level 1), with its `tracestate`; `None` when absent or malformed
/// (a malformed one is ignored, as the W3C spec says: the request is not).
pub(crate) fn remote_parent(meta: &JsonObject) -> Option<SpanContext> {
    let header = meta.get("traceparent")?.as_str()?;
    let mut parts = header.trim().split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    // Version 00 has exactly four parts; a later version may add more.
    if version == "ff" || (version == "00" && parts.next().is_some()) {
        return None;
    }
    let hex = toolhost_contract::is_hex;
    if !hex(version, 2) || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    let flags = TraceFlags::new(u8::from_str_radix(flags, 16).ok()? & TraceFlags::SAMPLED.to_u8());
    let state = meta
        .get("tracestate")
        .and_then(|v| v.as_str())
        .and_then(|s| TraceState::from_str(s).ok())
        .unwrap_or_default();
    Some(SpanContext::new(trace_id, span_id, flags, true, state))
}

/// The span of one request (`method`, on `tool` for a `tools/call`),
/// parented to the client's span when `meta` carries one. A task's id is
/// not in it: the id is a handle to the task's result.
pub(crate) fn request_span(method: &str, tool: Option<&str>, meta: &JsonObject) -> tracing::Span {
    let span = tracing::info_span!(
        target: SPAN_TARGET,
        "request",
        otel.name = match tool {
            Some(t) => format!("{method} {t}"),
            None => method.to_owned(),
        },
        otel.kind = "server",
        mcp.method.name = method,
        gen_ai.tool.name = tool,
    );
    if !span.is_disabled()
        && let Some(p) = remote_parent(meta)
    {
        let cx = opentelemetry::Context::new().with_remote_span_context(p);
        // Only fails when no OpenTelemetry layer records the span.
        let _ = span.set_parent(cx);
    }
    span
}

/// The trace the request being served is part of, for the session log:
/// its span's (the client's trace, or, with an exporter and no client
/// trace, the one it started), else the client's from `meta`.
pub(crate) fn trace_of(meta: &JsonObject) -> Option<String> {
    let span = tracing::Span::current();
    if !span.is_disabled() {
        let id = span.context().span().span_context().trace_id();
        if id != TraceId::INVALID {
            return Some(id.to_string());
        }
    }
    remote_parent(meta).map(|p| p.trace_id().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(traceparent: &str) -> JsonObject {
        let mut m = JsonObject::new();
        m.insert("traceparent".into(), traceparent.into());
        m.insert("tracestate".into(), "vendor=1".into());
        m
    }

    #[test]
    fn a_well_formed_traceparent_parents_the_request() {
        let p = remote_parent(&meta(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ))
        .unwrap();
        assert_eq!(p.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(p.span_id().to_string(), "00f067aa0ba902b7");
        assert!(p.is_sampled() && p.is_remote());
        assert_eq!(p.trace_state().get("vendor"), Some("1"));
    }

    #[test]
    fn a_malformed_traceparent_is_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01",
        ] {
            assert!(remote_parent(&meta(bad)).is_none(), "{bad}");
        }
    }

    #[test]
    fn without_an_exporter_the_clients_trace_is_still_recorded() {
        let m = meta("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        let span = request_span("tools/call", Some("read"), &m);
        assert!(span.is_disabled());
        let trace = span.in_scope(|| trace_of(&m));
        assert_eq!(trace.as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
    }
}
