//! The fixture tools the MCP conformance suite (`@modelcontextprotocol/
//! conformance`) calls by name, written as an ordinary contract 0.3.0
//! component and served by `toolhost serve` like any toolbox
//! (`tests/conformance/toolhost.toml`).
//!
//! Each returns what the suite's scenario describes: text, an image, audio,
//! an embedded resource, all of them, a failure; and two report while they
//! run, through the `context` import: progress (0, 50, 100 of 100) and
//! three log messages, about 50 ms apart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use toolhost_kit::{Annotations, Content, LogLevel, ResourceContents, Tool, ToolError};

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// The value of every fixture: that it ran.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Ran {
    /// Always true.
    pub ok: bool,
}

/// A 1×1 red PNG.
pub const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// Eight samples of silence: 16-bit mono PCM at 8 kHz.
pub const SILENT_WAV: &str =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA";

/// The pause between reports, as the suite asks.
const PAUSE: Duration = Duration::from_millis(50);

/// Declares a fixture tool that returns `Ran` and renders `$render`.
macro_rules! fixture {
    ($ty:ident, $name:literal, $description:literal, |$args:ident| $execute:block, $render:expr) => {
        #[doc = $description]
        pub struct $ty;

        impl Tool for $ty {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = $description;
            type Args = NoArgs;
            type Output = Ran;

            fn annotations() -> Annotations {
                Annotations::READ_ONLY_IDEMPOTENT
            }

            fn execute($args: NoArgs) -> Result<Ran, ToolError> {
                $execute
            }

            fn render(_: &NoArgs, _: &Ran) -> Option<Vec<Content>> {
                Some($render)
            }
        }
    };
}

fixture!(
    SimpleText,
    "test_simple_text",
    "Returns one text block (conformance fixture).",
    |_a| { Ok(Ran { ok: true }) },
    vec![Content::text("This is a simple text response for testing.")]
);

fixture!(
    ImageContent,
    "test_image_content",
    "Returns a 1x1 red PNG (conformance fixture).",
    |_a| { Ok(Ran { ok: true }) },
    vec![Content::Image {
        data_base64: RED_PIXEL_PNG.into(),
        mime_type: "image/png".into(),
    }]
);

fixture!(
    AudioContent,
    "test_audio_content",
    "Returns a short silent WAV clip (conformance fixture).",
    |_a| { Ok(Ran { ok: true }) },
    vec![Content::Audio {
        data_base64: SILENT_WAV.into(),
        mime_type: "audio/wav".into(),
    }]
);

fixture!(
    EmbeddedResource,
    "test_embedded_resource",
    "Returns an embedded text resource (conformance fixture).",
    |_a| { Ok(Ran { ok: true }) },
    vec![Content::Resource {
        uri: "test://embedded-resource".into(),
        mime_type: Some("text/plain".into()),
        contents: ResourceContents::Text("This is an embedded resource content.".into()),
    }]
);

fixture!(
    MultipleContentTypes,
    "test_multiple_content_types",
    "Returns text, an image and an embedded resource (conformance fixture).",
    |_a| { Ok(Ran { ok: true }) },
    vec![
        Content::text("Multiple content types test:"),
        Content::Image {
            data_base64: RED_PIXEL_PNG.into(),
            mime_type: "image/png".into(),
        },
        Content::Resource {
            uri: "test://mixed-content-resource".into(),
            mime_type: Some("application/json".into()),
            contents: ResourceContents::Text(r#"{"test":"data","value":123}"#.into()),
        },
    ]
);

fixture!(
    ToolWithLogging,
    "test_tool_with_logging",
    "Logs three messages at info level, 50 ms apart, while it runs (conformance fixture).",
    |_a| {
        let ctx = toolhost_kit::ctx();
        ctx.log(LogLevel::Info, "Tool execution started");
        std::thread::sleep(PAUSE);
        ctx.log(LogLevel::Info, "Tool processing data");
        std::thread::sleep(PAUSE);
        ctx.log(LogLevel::Info, "Tool execution completed");
        Ok(Ran { ok: true })
    },
    vec![Content::text("Tool with logging executed successfully")]
);

fixture!(
    ToolWithProgress,
    "test_tool_with_progress",
    "Reports progress 0, 50 and 100 of 100, 50 ms apart (conformance fixture).",
    |_a| {
        let ctx = toolhost_kit::ctx();
        for (i, done) in [0, 50, 100].into_iter().enumerate() {
            if i > 0 {
                std::thread::sleep(PAUSE);
            }
            if ctx.cancelled() {
                return Err(ToolError::new("cancelled", "the caller cancelled"));
            }
            ctx.progress(done, Some(100), None);
        }
        Ok(Ran { ok: true })
    },
    vec![Content::text("Tool with progress executed successfully")]
);

/// Always fails (conformance fixture).
pub struct ErrorHandling;

impl Tool for ErrorHandling {
    const NAME: &'static str = "test_error_handling";
    const DESCRIPTION: &'static str = "Always fails (conformance fixture).";
    type Args = NoArgs;
    type Output = Ran;

    fn annotations() -> Annotations {
        Annotations::READ_ONLY_IDEMPOTENT
    }

    fn execute(_: NoArgs) -> Result<Ran, ToolError> {
        Err(ToolError::new(
            "intentional_error",
            "This tool intentionally returns an error for testing",
        ))
    }

    fn host_renders() -> bool {
        true
    }
}

toolhost_kit::export_tools!(
    SimpleText,
    ImageContent,
    AudioContent,
    EmbeddedResource,
    MultipleContentTypes,
    ToolWithLogging,
    ToolWithProgress,
    ErrorHandling,
);

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_kit::context::{Report, take_reports};

    #[test]
    fn the_reporting_fixtures_report_what_the_suite_expects() {
        take_reports();
        assert!(ToolWithProgress::execute(NoArgs {}).is_ok());
        let done: Vec<u64> = take_reports()
            .into_iter()
            .map(|r| match r {
                Report::Progress { done, total, .. } => {
                    assert_eq!(total, Some(100));
                    done
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(done, [0, 50, 100]);
        assert!(ToolWithLogging::execute(NoArgs {}).is_ok());
        assert_eq!(take_reports().len(), 3);
        assert_eq!(
            ErrorHandling::execute(NoArgs {}).err().map(|e| e.code),
            Some("intentional_error".into())
        );
    }
}
