//! Progressive discovery, the way users meet it: a toolbox of the real
//! tool lists of 29 public MCP servers (`tests/discovery/catalog/`, one
//! catalog component per server, 645 tools) served by `toolhost`. Past
//! `defer_over` the servers' tools are deferred: `tools/list` offers the
//! built-ins and `search_tools`, the search finds the rest, and they are
//! called by name with their policies unchanged. The list is compared as
//! bytes across restarts and reloads, and a hot-added component's tools
//! come after the ones advertised before.
//!
//! The figures (advertised bytes eager against deferred, recall of the
//! search over MCP) are printed; run with `--nocapture` to see them.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;
use std::time::Duration;
use support::stdio::Server;
use support::{text, toolhost_cached};

/// A project serving `builtin:read` and the catalog servers named, each as
/// `catalog/SERVER.wasm` allowed, except Slack's tools, which ask.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new(servers: &[String], top: &str) -> Project {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("catalog")).unwrap();
        let p = Project { dir };
        p.write(servers, top);
        p
    }

    fn all(top: &str) -> Project {
        Project::new(&toolhost_guests::catalog_servers(), top)
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// (Re)writes the toolbox: `top` goes before the components.
    fn write(&self, servers: &[String], top: &str) {
        let mut toml = format!("version = 1\n{top}\n[[component]]\nsource = \"builtin:read\"\n");
        for s in servers {
            let wasm = self.path().join(format!("catalog/{s}.wasm"));
            if !wasm.exists() {
                std::fs::write(&wasm, toolhost_guests::catalog_guest(s)).unwrap();
            }
            let decision = if s == "slack" { "ask" } else { "allow" };
            toml.push_str(&format!(
                "\n[[component]]\nsource = \"catalog/{s}.wasm\"\n[component.policy]\ndecision = \"{decision}\"\n"
            ));
        }
        std::fs::write(self.path().join("toolhost.toml"), toml).unwrap();
    }

    fn toolhost(&self, args: &[&str]) -> Output {
        let out = toolhost_cached()
            .args(args)
            .current_dir(self.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "toolhost {args:?}:\n{}", text(&out));
        out
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_slice(&self.toolhost(args).stdout).unwrap()
    }
}

fn names(tools: &Value) -> Vec<&str> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

/// The servers in file order up to 500 tools and a little past (501:
/// Atlassian to Playwright), for the issue's "500 tools" figure.
fn servers_for_500() -> Vec<String> {
    let mut out = Vec::new();
    let mut n = 0;
    for s in toolhost_guests::catalog_servers() {
        let file =
            Path::new(toolhost_guests::REPO_ROOT).join(format!("tests/discovery/catalog/{s}.json"));
        let v: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        n += v["tools"].as_array().unwrap().len();
        out.push(s);
        if n >= 500 {
            break;
        }
    }
    out
}

/// Past `defer_over` (50 by default) the components' tools are deferred:
/// the MCP list offers `read` and `search_tools`, the table marks the
/// others, the Anthropic projection defers them with its own search, and
/// a deferred tool is called by name. Advertised bytes for 501 tools drop
/// by more than 90 %.
#[test]
fn a_big_toolbox_lists_a_search_and_defers_the_rest() {
    let servers = servers_for_500();
    let p = Project::new(&servers, "");
    let deferred = p.json(&["tools", "--format", "mcp"]);
    assert_eq!(names(&deferred), ["read", "search_tools"]);

    let table = String::from_utf8(p.toolhost(&["tools"]).stdout).unwrap();
    assert!(
        table.contains("deferred: 501 of 503 tools"),
        "{}",
        &table[..table.len().min(2000)]
    );
    let line = table
        .lines()
        .skip_while(|l| !l.starts_with("browser_navigate "))
        .nth(1)
        .unwrap();
    assert!(
        line.contains(
            "/catalog/playwright.wasm (process); model: by name (deferred: found by search_tools);"
        ),
        "{line}"
    );
    let line = table
        .lines()
        .skip_while(|l| !l.starts_with("read "))
        .nth(1)
        .unwrap();
    assert!(
        line.contains("from builtin:read (in-process); model: listed;"),
        "{line}"
    );

    // The same toolbox advertising everything, for the figure.
    p.write(&servers, "defer_over = 100000");
    let eager = p.json(&["tools", "--format", "mcp"]);
    assert_eq!(eager.as_array().unwrap().len(), 502);
    let (e, d) = (eager.to_string().len(), deferred.to_string().len());
    let fewer = 100.0 * (1.0 - d as f64 / e as f64);
    println!(
        "advertised tools/list bytes for 501 tools of {} servers: eager {e}, deferred {d} ({fewer:.1} % fewer)",
        servers.len()
    );
    assert!(fewer >= 90.0, "{fewer:.1} % fewer");

    // The Anthropic projection: every tool, the deferred ones marked, and
    // the API's own search in place of the host's.
    p.write(&servers, "");
    let anthropic = p.json(&["tools", "--format", "anthropic"]);
    let all = anthropic.as_array().unwrap();
    assert_eq!(all.len(), 1 + 1 + 501);
    assert_eq!(all[0]["name"], "read");
    assert!(all[0].get("defer_loading").is_none());
    assert_eq!(
        all[1],
        json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
    );
    assert!(all[2..].iter().all(|t| t["defer_loading"] == json!(true)
        && t["input_schema"]["type"] == "object"
        && t["description"].is_string()));
    assert!(!names(&anthropic).contains(&"search_tools"));

    // From the shell, the same search; and a deferred tool called by name.
    let found = String::from_utf8(
        p.toolhost(&[
            "tools",
            "--search",
            "take a screenshot of the page with playwright",
        ])
        .stdout,
    )
    .unwrap();
    assert!(
        found
            .lines()
            .next()
            .unwrap()
            .contains("browser_take_screenshot (deferred)"),
        "{found}"
    );
    let value = p.json(&[
        "tools",
        "--search",
        "list the tags of a git repository",
        "--limit",
        "3",
        "--format",
        "mcp",
    ]);
    assert_eq!(value["tools"].as_array().unwrap().len(), 3);
    assert!(value["tools"][0]["inputSchema"].is_object());
    let out = p.toolhost(&["call", "git_status", "--args", r#"{"repo_path":"/tmp"}"#]);
    assert!(text(&out).contains("git_status"), "{}", text(&out));
}

/// Over MCP: the list is short, `search_tools` answers the labelled
/// queries with the tools they name (recall printed, and no lower than
/// the ranking's own test asks), a result carries what `tools/list` would
/// have shown, and the tool found is called by name.
#[test]
fn search_tools_over_mcp_finds_the_labelled_tools() {
    let p = Project::all("");
    let mut s = Server::start(p.path(), false);
    let listed = s.tool_names(1);
    assert_eq!(listed, ["read", "search_tools"]);
    let queries: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(toolhost_guests::REPO_ROOT).join("tests/discovery/queries.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let (mut at1, mut at5) = (0, 0);
    for (i, q) in queries.iter().enumerate() {
        let r = s.request(json!({"jsonrpc":"2.0","id":100 + i,"method":"tools/call",
            "params":{"name":"search_tools","arguments":{"query": q["query"], "limit": 5}}}));
        let value = &r["result"]["structuredContent"];
        let found = names(&value["tools"]);
        let mut right = vec![q["expect"].as_str().unwrap()];
        right.extend(
            q["also"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str),
        );
        match found.iter().position(|n| right.contains(n)) {
            Some(0) => (at1, at5) = (at1 + 1, at5 + 1),
            Some(_) => at5 += 1,
            None => {}
        }
    }
    let n = queries.len() as f64;
    let (r1, r5) = (at1 as f64 / n, at5 as f64 / n);
    println!(
        "search_tools over MCP: recall@1 {r1:.3}, recall@5 {r5:.3} ({} queries, 645 tools)",
        queries.len()
    );
    assert!(r5 >= 0.64, "recall@5 {r5:.3}");

    let r = s.request(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"search_tools","arguments":{"query":"what time is it in a time zone","limit":2}}}));
    let found = r["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap();
    let t = found
        .iter()
        .find(|t| t["name"] == "get_current_time")
        .unwrap_or_else(|| panic!("{r}"));
    for key in ["description", "inputSchema", "outputSchema", "annotations"] {
        assert!(t.get(key).is_some(), "{key} missing: {t}");
    }
    let r = s.request(json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
        "params":{"name":"get_current_time","arguments":{"timezone":"Asia/Tokyo"}}}));
    assert_eq!(
        r["result"]["structuredContent"]["tool"], "get_current_time",
        "{r}"
    );
    // A bad search is the model's error, said plainly.
    let r = s.request(json!({"jsonrpc":"2.0","id":4,"method":"tools/call",
        "params":{"name":"search_tools","arguments":{"limit": 500}}}));
    assert_eq!(r["result"]["isError"], true, "{r}");
}

/// The `"tools"` array of a `tools/list` response line, as its bytes.
fn tools_bytes(line: &str) -> &str {
    let start = line.find("\"tools\":[").expect("a tools array") + "\"tools\":".len();
    let bytes = line.as_bytes();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return &line[start..=i];
                }
            }
            _ => {}
        }
    }
    panic!("an unterminated tools array")
}

/// Every page of `tools/list`, its tools arrays' bytes joined into one.
fn list(s: &mut Server) -> String {
    s.tool_names(1);
    let mut pages = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let line =
            s.raw(json!({"jsonrpc":"2.0","id":"list","method":"tools/list","params":params}));
        let page = tools_bytes(&line);
        pages.push(page[1..page.len() - 1].to_owned());
        let r: Value = serde_json::from_str(&line).unwrap();
        cursor = r["result"]["nextCursor"].clone();
        if cursor.is_null() {
            return format!("[{}]", pages.join(","));
        }
    }
}

/// `tools/list` is the same bytes after a restart and after a reload that
/// changes nothing; a component added by hot reload appends its tools,
/// and the list before is a byte prefix of the list after. Everything is
/// advertised here (`defer_over` above the count), so every byte of 640
/// schemas is compared.
#[test]
fn the_advertised_list_is_byte_stable_and_grows_at_its_end() {
    let mut servers = toolhost_guests::catalog_servers();
    // `fetch_fetch` sorts early by name: only an append puts it last.
    servers.retain(|s| s != "fetch");
    let p = Project::new(&servers, "defer_over = 100000");
    let first = {
        let mut s = Server::start(p.path(), false);
        list(&mut s)
    };
    assert_eq!(
        serde_json::from_str::<Value>(&first)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        1 + 644
    );
    let mut s = Server::start(p.path(), true);
    assert!(list(&mut s) == first, "tools/list changed across a restart");

    // A reload that changes nothing (the file rewritten as it was).
    std::thread::sleep(Duration::from_millis(1_100));
    p.write(&servers, "defer_over = 100000");
    s.said("toolbox reloaded");
    assert!(
        list(&mut s) == first,
        "tools/list changed across an idle reload"
    );

    // A component added: its tools come after every tool before.
    std::thread::sleep(Duration::from_millis(1_100));
    let mut more = servers.clone();
    more.insert(7, "fetch".into());
    p.write(&more, "defer_over = 100000");
    s.said("toolbox reloaded");
    let grown = list(&mut s);
    let old = first.strip_suffix(']').unwrap();
    assert!(
        grown.starts_with(old) && grown[old.len()..].starts_with(','),
        "the old list is not a prefix of the new one"
    );
    let tail: Value = serde_json::from_str(&format!("[{}", &grown[old.len() + 1..])).unwrap();
    assert_eq!(names(&tail), ["fetch_fetch"]);

    // A new server process sorts the same tools by name: the append lasts
    // as long as the process, as a prompt cache does.
    drop(s);
    let mut s = Server::start(p.path(), false);
    let restarted = list(&mut s);
    let mut a: Vec<Value> = serde_json::from_str(&grown).unwrap();
    let b: Vec<Value> = serde_json::from_str(&restarted).unwrap();
    a.sort_by(|x, y| x["name"].as_str().cmp(&y["name"].as_str()));
    assert_eq!(a, b);
}

/// In code mode the search returns, with each tool, the TypeScript a
/// script calls it by, and a script calls a deferred tool through the
/// pipeline like any other.
#[test]
fn in_code_mode_a_search_gives_declarations_and_scripts_call_deferred_tools() {
    let p = Project::new(&servers_for_500(), "mode = \"code\"");
    let value = p.json(&[
        "tools",
        "--search",
        "show the accessibility snapshot of the page",
        "--format",
        "mcp",
    ]);
    let declarations = value["declarations"].as_str().unwrap();
    assert!(
        declarations.contains("declare namespace tools"),
        "{declarations}"
    );
    assert!(
        declarations.contains("function browser_snapshot("),
        "{declarations}"
    );

    let mut s = Server::start(p.path(), false);
    let listed = s.tool_names(1);
    assert_eq!(listed, ["run_code", "search_tools"]);
    let r = s.request(
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name":"search_tools","arguments":{"query":"navigate the browser to a URL"}}}),
    );
    let found = &r["result"]["structuredContent"];
    assert!(
        found["declarations"]
            .as_str()
            .unwrap()
            .contains("function browser_navigate("),
        "{r}"
    );
    let r = s.request(json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
        "name":"run_code","arguments":{"code":
        "const r = await tools.browser_navigate({url: \"https://example.com\"}); return r.tool;"}}}));
    assert_eq!(
        r["result"]["structuredContent"]["result"], "browser_navigate",
        "{r}"
    );
}
