//! The network stage: every declared URL argument must name a host and port
//! on the policy's network allow-list, checked before anyone is asked to
//! approve the call (nobody should approve what the host will refuse).
//!
//! This is an early refusal, not the enforcement point: the runtime's egress
//! gate checks every request the guest actually makes (redirects included).

use serde_json::Value;
use toolhost_contract::{FailureCode, ToolDescriptor, ToolFailure};
use toolhost_policy::Sandbox;

/// The `host:port` of each declared URL argument present in `args`, or the
/// first refusal.
pub fn check_urls(
    tool: &ToolDescriptor,
    args: &Value,
    sandbox: &Sandbox,
) -> Result<Vec<String>, ToolFailure> {
    let mut out = Vec::new();
    for pointer in &tool.urls {
        let Some(v) = args.pointer(pointer) else {
            continue;
        };
        let Some(text) = v.as_str() else {
            return Err(ToolFailure::new(
                FailureCode::InvalidArguments,
                format!("`{pointer}` must be a URL string"),
            ));
        };
        let url = url::Url::parse(text).map_err(|e| {
            ToolFailure::new(
                FailureCode::InvalidArguments,
                format!("`{pointer}` is not a valid URL ({e})"),
            )
        })?;
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return Err(ToolFailure::new(
                FailureCode::InvalidArguments,
                format!("`{pointer}` must be an http or https URL with a host"),
            ));
        };
        let authority = format!("{host}:{port}");
        if !sandbox.allows_network(host, port) {
            let allowed: Vec<String> = sandbox.network.iter().map(ToString::to_string).collect();
            return Err(ToolFailure::new(
                FailureCode::NetworkDenied,
                format!(
                    "{authority} is not on the network allow-list ({}), so the call was not run",
                    if allowed.is_empty() {
                        "which is empty".to_owned()
                    } else {
                        format!("allowed: {}", allowed.join(", "))
                    }
                ),
            )
            .with_info(serde_json::json!({"denied": [authority]})));
        }
        out.push(authority);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_contract::Annotations;
    use toolhost_policy::{Decision, PolicyBuilder};

    fn fetch() -> ToolDescriptor {
        ToolDescriptor::from_raw(
            "fetch".into(),
            "".into(),
            r#"{"type":"object"}"#,
            r#"{"type":"object"}"#,
            Annotations::default(),
            vec![],
        )
        .and_then(|d| d.with_v2(None, vec!["/url".into()]))
        .expect("descriptor")
    }

    fn sandbox(allow: &str) -> Sandbox {
        PolicyBuilder::new()
            .decision(Decision::Allow)
            .network(allow)
            .build()
            .expect("policy")
            .component()
            .sandbox
    }

    #[test]
    fn urls_are_checked_against_the_allow_list() {
        let sb = sandbox("example.com:443");
        let ok = check_urls(&fetch(), &json!({"url": "https://example.com/a"}), &sb);
        assert_eq!(ok.expect("allowed"), ["example.com:443"]);
        for (url, code) in [
            ("https://evil.example.net/x", "network_denied"),
            ("http://example.com/", "network_denied"),
            ("https://example.com@evil.net/", "network_denied"),
            ("https://example.com:8443/", "network_denied"),
            ("not a url", "invalid_arguments"),
            ("file:///etc/passwd", "invalid_arguments"),
        ] {
            let err = check_urls(&fetch(), &json!({"url": url}), &sb).expect_err(url);
            assert_eq!(err.code.as_str(), code, "{url}");
        }
        // Absent optional URL arguments are skipped.
        assert!(check_urls(&fetch(), &json!({}), &sb).is_ok());
    }
}
