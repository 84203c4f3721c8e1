//! `toolhost serve` over stdio fed what a broken or hostile client sends:
//! lines that are not JSON, JSON that is not JSON-RPC, unknown methods,
//! arguments of the wrong type, a deeply nested document and a large one.
//! Each gets its JSON-RPC error, a tool error the model can read, or (a
//! line that does not parse, as the official SDKs do: there is no id to
//! answer) nothing; and the session keeps serving: a well-formed call
//! afterwards succeeds, and is the next message on stdout. Driven with raw
//! JSON lines, so nothing here trusts an MCP client library.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use serde_json::{Value, json};
use support::stdio::Server;

/// A well-formed tools/call of `read` answers: the session still serves.
fn still_serving(s: &mut Server, id: u64) {
    let r = s.request_next(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":"read","arguments":{"path":"a.txt"}}}));
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello"),
        "{r}"
    );
}

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    ws
}

fn error_code(m: &Value) -> i64 {
    m["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("a JSON-RPC error: {m}"))
}

#[test]
fn lines_that_are_not_json_rpc_are_dropped_or_refused_and_the_session_goes_on() {
    let ws = workspace();
    let mut s = Server::start(ws.path(), false);
    still_serving(&mut s, 1);
    // Not JSON: skipped without an answer (nothing to answer to); the next
    // message on stdout is the next request's response.
    for garbage in [
        "this is not json",
        "{\"jsonrpc\":\"2.0\",\"id\":",
        "[1, 2",
        "\u{0}\u{1}binary\u{7f}",
        "\u{feff}",
    ] {
        s.send_line(garbage);
    }
    still_serving(&mut s, 2);
    // JSON that is not a JSON-RPC message: an Invalid Request error.
    s.send_line(r#"{"foo":"bar"}"#);
    assert_eq!(error_code(&s.next()), -32600);
    still_serving(&mut s, 3);
}

#[test]
fn wrong_requests_get_their_json_rpc_errors() {
    let ws = workspace();
    let mut s = Server::start(ws.path(), false);
    let unknown = s.request_next(json!({"jsonrpc":"2.0","id":10,"method":"no/such/method"}));
    assert_eq!(error_code(&unknown), -32601, "{unknown}");
    // rmcp matches a request against the methods with their parameters,
    // so `tools/call` without parameters, or with parameters of the wrong
    // shape, is answered as an unknown method (not -32602).
    let no_params = s.request_next(json!({"jsonrpc":"2.0","id":11,"method":"tools/call"}));
    assert_eq!(error_code(&no_params), -32601, "{no_params}");
    let bad_params =
        s.request_next(json!({"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":7}}));
    assert_eq!(error_code(&bad_params), -32601, "{bad_params}");
    still_serving(&mut s, 13);
}

#[test]
fn bad_tool_arguments_are_tool_errors_the_model_can_read() {
    let ws = workspace();
    let mut s = Server::start(ws.path(), false);
    // Arguments that are not an object, an unknown tool, a path outside
    // the workspace: each a result with isError and a stable code.
    for (id, params, code) in [
        (
            20,
            json!({"name":"read","arguments":{"path":7}}),
            "invalid_arguments",
        ),
        (
            21,
            json!({"name":"read","arguments":{"path":"/etc/passwd"}}),
            "path_denied",
        ),
        (
            22,
            json!({"name":"no_such_tool","arguments":{}}),
            "unknown_tool",
        ),
    ] {
        let r =
            s.request_next(json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}));
        let result = if r.get("result").is_some() {
            &r["result"]
        } else {
            panic!("a result, not a protocol error: {r}")
        };
        assert_eq!(result["isError"], true, "{r}");
        assert_eq!(result["_meta"]["toolhost"]["error"]["code"], code, "{r}");
    }
    still_serving(&mut s, 23);
}

#[test]
fn a_deeply_nested_or_large_document_does_not_bring_the_server_down() {
    let ws = workspace();
    let mut s = Server::start(ws.path(), false);
    // 100,000 levels: a parser that recursed would overflow its stack.
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":29,\"method\":\"tools/call\",\"params\":{{\"name\":\"read\",\"arguments\":{{\"path\":{}1{}}}}}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    s.send_line(&deep);
    // serde_json stops at 128 levels: the line does not parse, and is
    // skipped like any other that does not (the next message is the next
    // response).
    still_serving(&mut s, 30);
    // 8 MB of arguments: an error or a tool error, never a crash.
    let big = json!({"jsonrpc":"2.0","id":31,"method":"tools/call",
        "params":{"name":"read","arguments":{"path":"x".repeat(8 << 20)}}});
    let r = s.request_next(big);
    assert!(
        r.get("error").is_some() || r["result"]["isError"] == true,
        "refused"
    );
    still_serving(&mut s, 32);
}

#[test]
fn a_call_with_a_progress_token_gets_its_response() {
    // The relay that forwards a call's progress ends when the call's last
    // sink drops; a sandbox kept past the call must not hold it open, or
    // the response waits behind it for ever (as it once did over stdio).
    let ws = workspace();
    let mut s = Server::start(ws.path(), false);
    for id in 40..43 {
        let r = s.request(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"read","arguments":{"path":"a.txt"},
                "_meta":{"progressToken":format!("p{id}")}}}));
        assert_eq!(r["result"]["isError"], false, "{r}");
    }
    still_serving(&mut s, 43);
}
