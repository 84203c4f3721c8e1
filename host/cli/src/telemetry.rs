//! Where the process's `tracing` goes: log lines to stderr (`TOOLHOST_LOG`,
//! default `warn`), and, when an OTLP endpoint is configured, a call's
//! spans (the `toolhost::span` target: the request, admission, each stage,
//! the body, a worker, a script's calls) exported by OTLP over HTTP. With
//! no endpoint nothing subscribes to the spans, so they cost a disabled
//! check each.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use std::time::Duration;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;

/// The environment variables that name an OTLP endpoint (the
/// OpenTelemetry SDKs' own): with neither, and no `--otlp-endpoint`,
/// nothing is exported.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// How long one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The exporter, when there is one: flushed and stopped by [`Telemetry::shutdown`].
pub struct Telemetry {
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

/// The process's subscriber, to install: log lines, and the spans'
/// exporter when `endpoint` (`--otlp-endpoint`, the traces URL, e.g.
/// `http://127.0.0.1:4318/v1/traces`) or the OpenTelemetry environment
/// variables name one; `runtime` is where its requests are sent from.
pub fn subscriber(
    endpoint: Option<&str>,
    runtime: tokio::runtime::Handle,
) -> anyhow::Result<(tracing::Dispatch, Telemetry)> {
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOLHOST_LOG")
                .unwrap_or_else(|_| "warn".into()),
        );
    let configured = endpoint.is_some()
        || ENDPOINT_VARS
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    if !configured {
        let dispatch = tracing_subscriber::registry().with(logs).into();
        return Ok((dispatch, Telemetry { provider: None }));
    }
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_timeout(EXPORT_TIMEOUT)
        .with_http_client(OnRuntime {
            runtime,
            client: opentelemetry_http::hyper::HyperClient::with_default_connector(
                EXPORT_TIMEOUT,
                None,
            ),
        });
    if let Some(url) = endpoint {
        exporter = exporter.with_endpoint(url);
    }
    let exporter = exporter.build()?;
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name("toolhost")
                .build(),
        )
        .build();
    // Without the attributes a trace of toolhost does not need (the
    // source line, the thread, busy and idle time), nor an OpenTelemetry
    // context made current at each poll (nothing inside reads one): each
    // costs every span.
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("toolhost"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_target(false)
        .with_context_activation(false)
        .with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target(toolhost_contract::SPAN_TARGET, tracing::Level::INFO),
        );
    let dispatch = tracing_subscriber::registry().with(logs).with(spans).into();
    Ok((
        dispatch,
        Telemetry {
            provider: Some(provider),
        },
    ))
}

/// Installs [`subscriber`] for the whole process.
pub fn init(endpoint: Option<&str>, runtime: tokio::runtime::Handle) -> anyhow::Result<Telemetry> {
    use tracing_subscriber::util::SubscriberInitExt as _;
    let (dispatch, telemetry) = subscriber(endpoint, runtime)?;
    // With `log`'s records (some dependencies log) turned into events.
    dispatch.try_init()?;
    Ok(telemetry)
}

impl Telemetry {
    /// Exports what is left and stops the exporter (a blocking wait: off
    /// the runtime's threads).
    pub async fn shutdown(self) {
        if let Some(provider) = self.provider {
            let stopped = tokio::task::spawn_blocking(move || provider.shutdown()).await;
            if let Ok(Err(e)) = stopped {
                eprintln!("toolhost: exporting the last spans failed: {e}");
            }
        }
    }
}

/// hyper on the serving runtime: the SDK's batch exporter runs on a thread
/// of its own, outside any runtime, and hyper needs one.
#[derive(Debug)]
struct OnRuntime {
    runtime: tokio::runtime::Handle,
    client: opentelemetry_http::hyper::HyperClient,
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for OnRuntime {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let client = self.client.clone();
        self.runtime
            .spawn(async move { client.send_bytes(request).await })
            .await?
    }
}
