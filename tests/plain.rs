//! Plain components: components that export ordinary functions and know
//! nothing of `toolhost:tool` (wassette's, and any other), served as tools
//! through the same host assembly and pipeline as the contract's. The same
//! world (`wit/test-plain/plain.wit`: a function over every WIT type, a
//! `result` error of each kind, a resource, doc comments) is built from
//! source in Rust, JavaScript (componentize-js) and Python
//! (componentize-py), each with its WIT docs injected as a published
//! component carries them, by `guest-tools/test-guests/plain-build.sh`.
#![allow(clippy::unwrap_used, missing_docs)]

use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;
use toolhost_contract::{ToolCall, ToolResult};
use toolhost_pipeline::Pipeline;
use toolhost_tests::{Workspace, guests, shared_cache};
use toolhost_toolbox::{Host, HostConfig, LoadReport, find_toolbox};

/// The languages of the plain test component.
const LANGUAGES: [&str; 3] = ["rust", "js", "python"];

/// The plain test component in `lang`, built (once per run of this
/// binary; the script skips a build whose sources did not change).
fn component(lang: &str) -> PathBuf {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let out = PathBuf::from(guests::REPO_ROOT)
        .join("target/plain-guests")
        .join(format!("plain_{lang}.wasm"));
    let mut built = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !built.iter().any(|l| l == lang) {
        let script =
            PathBuf::from(guests::REPO_ROOT).join("guest-tools/test-guests/plain-build.sh");
        let mut cmd = Command::new("bash");
        cmd.arg(&script).arg(lang).arg(&out);
        if lang == "rust" {
            cmd.arg(guests::GUEST_PLAIN);
        }
        let status = cmd.status().expect("running plain-build.sh");
        assert!(status.success(), "plain-build.sh {lang}: {status}");
        built.push(lang.to_owned());
    }
    out
}

/// A host serving the plain component in `lang` under `policy` (an inline
/// policy table's body), in this process unless the policy says.
async fn serve(lang: &str, ws: &Workspace, policy: &str) -> (Host, LoadReport) {
    let path = component(lang);
    let text = format!(
        "version = 1\n[[component]]\nsource = {:?}\n[component.policy]\nversion = 1\n{policy}\n",
        path.display().to_string()
    );
    let with_isolation = if policy.contains("isolation") {
        text
    } else {
        text.replace(
            "[component.policy]\nversion = 1\n",
            "[component.policy]\nversion = 1\nisolation = \"in-process\"\n",
        )
    };
    std::fs::write(ws.file("toolhost.toml"), with_isolation).unwrap();
    let toolbox = find_toolbox(None, ws.path()).unwrap();
    let host = Host::new(HostConfig {
        cache_dir: Some(shared_cache()),
        max_instances: 8,
        ..HostConfig::default()
    })
    .unwrap();
    let report = host
        .load(&toolbox)
        .await
        .unwrap_or_else(|e| panic!("{lang}: {e}"));
    (host, report)
}

async fn call(p: &Pipeline, tool: &str, args: Value) -> ToolResult {
    p.execute(
        ToolCall::new("c", tool, args.to_string()),
        CancellationToken::new(),
    )
    .await
}

/// The value of a call that must succeed.
async fn value(p: &Pipeline, lang: &str, tool: &str, args: Value) -> Value {
    let r = call(p, tool, args.clone()).await;
    match r.value() {
        Some(v) => v.clone(),
        None => panic!("{lang}: {tool}({args}) failed: {:?}", r.error()),
    }
}

const ALLOW: &str = "decision = \"allow\"";

#[tokio::test]
async fn every_function_is_a_tool_named_and_described_from_its_wit() {
    for lang in LANGUAGES {
        let ws = Workspace::new(&[]);
        let (host, report) = serve(lang, &ws, ALLOW).await;
        let mut served: Vec<&str> = report.served.iter().map(|s| s.name.as_str()).collect();
        served.sort_unstable();
        assert_eq!(
            served,
            [
                "add",
                "bytes",
                "fail",
                "find",
                "floats",
                "greet",
                "integers",
                "lookup_find",
                "maybe",
                "nothing",
                "outcome",
                "parse",
                "points",
                "setting",
                "shapes",
                "text",
                "zero"
            ],
            "{lang}"
        );
        // Not served, each with its reason: what takes or gives a
        // resource, and a type nested past the bound.
        let skipped: Vec<(&str, &str)> = report
            .skipped
            .iter()
            .map(|s| (s.name.as_str(), s.reason.as_str()))
            .collect();
        let reason = |f: &str| {
            skipped
                .iter()
                .find(|(n, _)| *n == f)
                .map(|(_, r)| *r)
                .unwrap_or_else(|| panic!("{lang}: {f} is not among the skipped: {skipped:?}"))
        };
        let counters = "toolhost-test:plain/counters@0.1.0";
        assert!(
            reason(&format!("{counters}#bump")).contains("`borrow<counter>`"),
            "{lang}: {skipped:?}"
        );
        assert!(reason(&format!("{counters}#make")).contains("`own<counter>`"));
        assert!(reason(&format!("{counters}#[constructor]counter")).contains("resource `counter`"));
        assert!(reason(&format!("{counters}#[method]counter.next")).contains("resource `counter`"));
        assert!(
            reason("deep").contains("deeper than 64"),
            "{lang}: {skipped:?}"
        );
        if lang == "python" {
            assert!(
                reason("exports#init").contains("componentize-py"),
                "{skipped:?}"
            );
        }

        let tool = |name: &str| {
            host.registry()
                .visible(None)
                .iter()
                .find(|t| t.descriptor.name == name)
                .map(|t| t.descriptor.clone())
                .unwrap_or_else(|| panic!("{lang}: no tool {name}"))
        };
        // Descriptions: the function's WIT docs, else a line naming it.
        assert_eq!(tool("greet").description, "Greets someone by name.");
        assert_eq!(
            tool("nothing").description,
            "Calls the component's function `nothing`."
        );
        assert_eq!(
            tool("lookup_find").description,
            "Looks up a number by name: `one` is 1, `two` is 2."
        );
        // The host renders a plain component's values.
        assert!(tool("greet").host_renders);
        // Schemas: one property per parameter, types' names and docs.
        let points = tool("points");
        let point = &points.input_schema["properties"]["items"]["items"];
        assert_eq!(point["title"], "point", "{lang}: {point}");
        assert_eq!(
            point["properties"]["x"]["description"],
            "Across, from the left."
        );
        assert_eq!(point["required"], json!(["x", "y"]));
        let shapes = tool("shapes");
        let color = &shapes.input_schema["properties"]["c"];
        assert_eq!(color["enum"], json!(["red", "green", "blue"]));
        assert!(
            color["description"]
                .as_str()
                .unwrap()
                .contains("`red`: The color of fire."),
            "{lang}: {color}"
        );
        assert_eq!(tool("greet").input_schema["required"], json!(["name"]));
        assert_eq!(tool("greet").output_schema, json!({"type": "string"}));
        // A function's `result` is its call's success or failure: the
        // output schema is `ok`'s.
        assert_eq!(
            tool("lookup_find").output_schema["type"],
            json!("integer"),
            "{lang}"
        );
        assert_eq!(tool("nothing").output_schema, json!({"type": "null"}));
        for t in host.registry().visible(None) {
            for s in [&t.descriptor.input_schema, &t.descriptor.output_schema] {
                assert!(
                    jsonschema::validator_for(s).is_ok(),
                    "{lang}: {} has an invalid schema: {s}",
                    t.descriptor.name
                );
            }
        }
    }
}

#[tokio::test]
async fn values_cross_exactly_both_ways() {
    for lang in LANGUAGES {
        let ws = Workspace::new(&[]);
        let (host, _) = serve(lang, &ws, ALLOW).await;
        let p = host.session().build();
        let v = |tool: &'static str, args: Value| {
            let p = &p;
            async move { value(p, lang, tool, args).await }
        };
        assert_eq!(v("add", json!({"a": 2, "b": 3})).await, json!(5));
        // Past 2^53 a 64-bit integer travels as a decimal string, both ways.
        assert_eq!(
            v("add", json!({"a": "9007199254740993", "b": 1})).await,
            json!("9007199254740994"),
            "{lang}"
        );
        if lang != "js" {
            // componentize-js 0.22.0 cannot return a negative `s64` (its
            // engine aborts lowering one), whatever the host sends.
            assert_eq!(v("add", json!({"a": -4, "b": 1})).await, json!(-3));
        }
        let ints = json!({
            "a": 255, "b": -128, "c": 65535, "d": -32768, "e": 4294967295u32,
            "f": -2147483648i32, "g": "18446744073709551615", "h": "-9223372036854775808",
        });
        assert_eq!(v("integers", json!({"v": ints})).await, ints, "{lang}");
        assert_eq!(
            v("floats", json!({"a": 0.1, "b": "NaN"})).await,
            json!([0.1, "NaN"]),
            "{lang}"
        );
        assert_eq!(
            v("floats", json!({"a": "-Infinity", "b": 2.5})).await,
            json!(["-Infinity", 2.5])
        );
        assert_eq!(
            v("text", json!({"c": "é", "s": "héllo\n", "b": true})).await,
            json!(["é", "héllo\n", true])
        );
        assert_eq!(
            v("bytes", json!({"data": "aGVsbG8="})).await,
            json!(["aGVsbG8=", 5]),
            "{lang}"
        );
        assert_eq!(
            v("bytes", json!({"data": [104, 105]})).await,
            json!(["aGk=", 2])
        );
        assert_eq!(
            v(
                "points",
                json!({"items": [{"x": 1, "y": -2}, {"x": 3, "y": 4, "label": "b"}]})
            )
            .await,
            json!([{"x": 1, "y": -2, "label": null}, {"x": 3, "y": 4, "label": "b"}]),
            "{lang}"
        );
        assert_eq!(
            v("maybe", json!({"v": 5, "nested": {"some": "x"}})).await,
            json!([5, {"some": "x"}]),
            "{lang}"
        );
        assert_eq!(
            v("maybe", json!({"nested": {"some": null}})).await,
            json!([null, {"some": null}]),
            "{lang}"
        );
        assert_eq!(
            v("maybe", json!({"v": null, "nested": null})).await,
            json!([null, null])
        );
        assert_eq!(
            v(
                "shapes",
                json!({"s": {"rect": [1.5, 2]}, "c": "green", "p": ["read", "exec"]})
            )
            .await,
            json!([{"rect": [1.5, 2.0]}, "green", ["read", "exec"]]),
            "{lang}"
        );
        assert_eq!(
            v("shapes", json!({"s": "empty", "c": "red", "p": []})).await,
            json!(["empty", "red", []]),
            "{lang}"
        );
        // A nested `result` is a value.
        assert_eq!(
            v("outcome", json!({"r": {"err": "no"}})).await,
            json!({"err": "no"}),
            "{lang}"
        );
        assert_eq!(
            v("outcome", json!({"r": {"ok": 7}})).await,
            json!({"ok": 7})
        );
        assert_eq!(
            v("find", json!({"word": "wasm"})).await,
            json!("a portable binary instruction format")
        );
        assert_eq!(v("find", json!({"word": "x"})).await, Value::Null);
        assert_eq!(v("lookup_find", json!({"name": "two"})).await, json!(2));
        assert_eq!(v("nothing", json!({})).await, Value::Null);
        assert_eq!(v("zero", json!({})).await, json!(0));
        // The host renders: a string as itself.
        let r = call(&p, "greet", json!({"name": "Ana"})).await;
        assert_eq!(r.value(), Some(&json!("Hello, Ana!")), "{lang}");
        assert_eq!(r.text(), "Hello, Ana!");
    }
}

#[tokio::test]
async fn a_result_err_is_a_failure_with_a_stable_code_and_the_error_in_info() {
    for lang in LANGUAGES {
        let ws = Workspace::new(&[]);
        let (host, _) = serve(lang, &ws, ALLOW).await;
        let p = host.session().build();
        let failed = |r: &ToolResult| {
            r.error()
                .cloned()
                .unwrap_or_else(|| panic!("{lang}: {r:?}"))
        };
        // An `enum` error: its case is the code.
        let e = failed(&call(&p, "lookup_find", json!({"name": "zzz"})).await);
        assert_eq!(e.code.as_str(), "not_found", "{lang}: {e:?}");
        assert_eq!(e.info, Some(json!({"error": "not-found"})));
        let e = failed(&call(&p, "lookup_find", json!({"name": ""})).await);
        assert_eq!(e.code.as_str(), "bad_name");
        // A `variant` error: its case, and its payload.
        let e = failed(&call(&p, "parse", json!({"text": "x1"})).await);
        assert_eq!(e.code.as_str(), "not_a_number", "{lang}: {e:?}");
        assert_eq!(e.message, "not-a-number: x1");
        assert_eq!(e.info, Some(json!({"error": {"not-a-number": "x1"}})));
        let e = failed(&call(&p, "parse", json!({"text": "99999999999999999999"})).await);
        assert_eq!(e.code.as_str(), "overflow", "{lang}: {e:?}");
        assert_eq!(
            value(&p, lang, "parse", json!({"text": "18446744073709551615"})).await,
            json!("18446744073709551615")
        );
        // A `string` error: `tool_error`, the string as the message.
        let e = failed(&call(&p, "fail", json!({"message": "it broke"})).await);
        assert_eq!(e.code.as_str(), "tool_error");
        assert_eq!(e.message, "it broke");
        assert_eq!(e.info, Some(json!({"error": "it broke"})));
    }
}

#[tokio::test]
async fn bad_arguments_name_their_field_and_nothing_runs() {
    let ws = Workspace::new(&[]);
    let (host, _) = serve("rust", &ws, ALLOW).await;
    let p = host.session().build();
    let ints = |field: &str, v: Value| {
        let mut all = json!({"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1, "h": 1});
        all[field] = v;
        json!({"v": all})
    };
    let cases = [
        ("integers", ints("a", json!(256)), "/v/a", ""),
        ("integers", ints("b", json!(-129)), "/v/b", ""),
        ("integers", ints("e", json!(1.5)), "/v/e", ""),
        ("integers", ints("g", json!(-1)), "/v/g", ""),
        // Past what the schema can say: a decimal string out of range.
        (
            "integers",
            ints("g", json!("18446744073709551616")),
            "/v/g",
            "out of range for u64",
        ),
        (
            "integers",
            ints("h", json!("9223372036854775808")),
            "/v/h",
            "out of range for s64",
        ),
        ("integers", json!({"v": {"a": 1}}), "/v", ""),
        ("text", json!({"c": "ab", "s": "", "b": true}), "/c", ""),
        (
            "bytes",
            json!({"data": "not base64!"}),
            "/data",
            "not base64",
        ),
        (
            "points",
            json!({"items": [{"x": 1, "y": 2, "z": 3}]}),
            "/items/0",
            "",
        ),
        (
            "shapes",
            json!({"s": {"hexagon": 1}, "c": "red", "p": []}),
            "/s",
            "",
        ),
        ("greet", json!({}), "name", ""),
    ];
    for (tool, args, pointer, says) in cases {
        let r = call(&p, tool, args.clone()).await;
        let e = r
            .error()
            .unwrap_or_else(|| panic!("{tool}({args}) succeeded: {r:?}"));
        assert_eq!(
            e.code.as_str(),
            "invalid_arguments",
            "{tool}({args}): {e:?}"
        );
        assert!(
            e.message.contains(pointer) && e.message.contains(says),
            "{tool}({args}): {}",
            e.message
        );
    }
    // What the schema cannot say is refused before the component runs:
    // no instance, no fuel.
    let component = toolhost_tests::runtime()
        .load(&component("rust"))
        .await
        .unwrap();
    let policy = toolhost_policy::Policy::deny_all().component();
    for args in [
        ints("g", json!("18446744073709551616")),
        json!({"data": "not base64!"}),
    ] {
        let text = args.to_string();
        let tool = if args.get("v").is_some() {
            "integers"
        } else {
            "bytes"
        };
        let mut inv = toolhost_runtime::Invocation::new(tool, &text, &policy);
        inv.budget = toolhost_runtime::Budget {
            fuel: 1_000_000_000,
            deadline: std::time::Duration::from_secs(10),
        };
        let e = component.execute(inv).await;
        let f = e.outcome.expect_err("refused");
        assert_eq!(f.code.as_str(), "invalid_arguments", "{f:?}");
        assert_eq!(e.report.fuel_consumed, 0, "{tool}: the component ran");
        assert_eq!(e.report.instantiate, std::time::Duration::ZERO);
    }
}

#[tokio::test]
async fn a_policy_declares_path_arguments_and_hints_for_a_plain_component() {
    let ws = Workspace::new(&[("notes.txt", "n\n")]);
    let policy = format!(
        "{ALLOW}\n[[component.policy.fs]]\nhost = {:?}\nguest = \"/workspace\"\n\
         [component.policy.tools.greet]\npaths = [{{ pointer = \"/name\", access = \"read\" }}]\n\
         annotations = {{ read_only = true, idempotent = true }}\n",
        ws.path().display().to_string()
    );
    let (host, _) = serve("rust", &ws, &policy).await;
    let greet = host
        .registry()
        .visible(None)
        .into_iter()
        .find(|t| t.descriptor.name == "greet")
        .unwrap();
    assert!(greet.descriptor.annotations.read_only && greet.descriptor.annotations.idempotent);
    assert_eq!(greet.descriptor.paths.len(), 1);
    let p = host.session().build();
    // The path stage checks the declared argument against the grants.
    let r = call(&p, "greet", json!({"name": "/etc/passwd"})).await;
    assert_eq!(r.code(), Some("path_denied"), "{r:?}");
    let r = call(&p, "greet", json!({"name": "/workspace/notes.txt"})).await;
    assert_eq!(
        r.value(),
        Some(&json!("Hello, /workspace/notes.txt!")),
        "{r:?}"
    );

    // A declaration that names no argument is refused at load, by line.
    let bad = format!(
        "{ALLOW}\n[component.policy.tools.greet]\npaths = [{{ pointer = \"/nmae\", access = \"read\" }}]\n"
    );
    let path = component("rust");
    std::fs::write(
        ws.file("toolhost.toml"),
        format!(
            "version = 1\n[[component]]\nsource = {:?}\n[component.policy]\nversion = 1\n{bad}",
            path.display().to_string()
        ),
    )
    .unwrap();
    let toolbox = find_toolbox(None, ws.path()).unwrap();
    let e = host.load(&toolbox).await.unwrap_err().to_string();
    assert!(
        e.contains("`/nmae` names no argument of `greet` (its arguments: name)")
            && e.contains("toolhost.toml:8"),
        "{e}"
    );
}

#[tokio::test]
async fn past_a_descriptor_bound_one_function_is_not_served_not_the_component() {
    let ws = Workspace::new(&[]);
    let policy = format!("{ALLOW}\n[component.policy.descriptors]\nmax_schema_bytes = 700\n");
    let (_, report) = serve("rust", &ws, &policy).await;
    let served: Vec<&str> = report.served.iter().map(|s| s.name.as_str()).collect();
    assert!(served.contains(&"greet"), "{served:?}");
    assert!(!served.contains(&"integers"), "{served:?}");
    let skipped = report
        .skipped
        .iter()
        .find(|s| s.name == "integers")
        .expect("integers is skipped");
    assert!(skipped.reason.contains("max_schema_bytes"), "{skipped:?}");
}

#[tokio::test]
async fn in_a_walled_worker_a_plain_component_runs_the_same() {
    let ws = Workspace::new(&[]);
    let (host, _) = serve(
        "rust",
        &ws,
        &format!("{ALLOW}\nisolation = \"process\"\nwalls = \"best-effort\""),
    )
    .await;
    let p = host.session().build();
    assert_eq!(
        value(&p, "rust", "add", json!({"a": "-9007199254740993", "b": 0})).await,
        json!("-9007199254740993")
    );
    let r = call(&p, "lookup_find", json!({"name": "zzz"})).await;
    assert_eq!(r.code(), Some("not_found"), "{r:?}");
    let r = call(&p, "text", json!({"c": "x", "s": "y", "b": false})).await;
    assert_eq!(r.value(), Some(&json!(["x", "y", false])), "{r:?}");
}

#[tokio::test]
async fn scripts_call_a_plain_components_tools_declared_from_its_wit() {
    let ws = Workspace::new(&[]);
    let path = component("rust");
    std::fs::write(
        ws.file("toolhost.toml"),
        format!(
            "version = 1\nmode = \"code\"\n[[component]]\nsource = {:?}\n\
             [component.policy]\nversion = 1\nisolation = \"in-process\"\n{ALLOW}\n",
            path.display().to_string()
        ),
    )
    .unwrap();
    let host = Host::new(HostConfig {
        cache_dir: Some(shared_cache()),
        max_instances: 8,
        ..HostConfig::default()
    })
    .unwrap();
    host.load(&find_toolbox(None, ws.path()).unwrap())
        .await
        .unwrap();
    // `run_code` declares the functions with the TypeScript of their WIT.
    let run_code = host.registry().resolve("run_code", None).unwrap();
    let d = &run_code.descriptor.description;
    for declared in [
        "function greet(args: {",
        "name: string;",
        "type GreetValue = string;",
        "function floats(args: {",
        "type FloatsValue = [",
        "function lookup_find(",
        "a: number | string",
    ] {
        assert!(d.contains(declared), "{declared} is not declared:\n{d}");
    }
    let p = host.session().build();
    let script = r#"
const hello = await tools.greet({ name: "Ana" });
const sum = await tools.add({ a: "9007199254740993", b: 1 });
let missing;
try { await tools.lookup_find({ name: "zzz" }); } catch (e) { missing = e.code; }
return { hello, sum, missing };
"#;
    let r = p
        .execute(
            ToolCall::new("s", "run_code", json!({ "code": script }).to_string()),
            CancellationToken::new(),
        )
        .await;
    let v = r.value().unwrap_or_else(|| panic!("{:?}", r.error()));
    assert_eq!(
        v["result"],
        json!({"hello": "Hello, Ana!", "sum": "9007199254740994", "missing": "not_found"}),
        "{v}"
    );
}

#[tokio::test]
async fn wasi_config_values_are_the_environment_the_policy_grants() {
    for lang in LANGUAGES {
        let ws = Workspace::new(&[]);
        let policy = format!("{ALLOW}\n[component.policy.env]\nset = {{ API_KEY = \"k-123\" }}\n");
        let (host, _) = serve(lang, &ws, &policy).await;
        let p = host.session().build();
        assert_eq!(
            value(&p, lang, "setting", json!({"key": "API_KEY"})).await,
            json!("k-123"),
            "{lang}"
        );
        // Nothing the policy does not grant: not the host's environment.
        assert_eq!(
            value(&p, lang, "setting", json!({"key": "PATH"})).await,
            Value::Null,
            "{lang}"
        );
    }
}

/// A component of `wit` (one package, world `w`) whose every function
/// traps, made with the Python kit's pinned wasm-tools.
fn dummy_component(dir: &std::path::Path, wit: &str) -> PathBuf {
    component("rust"); // installs the venv with wasm-tools when missing
    let wasm_tools =
        PathBuf::from(guests::REPO_ROOT).join("target/python-guests/venv/bin/wasm-tools");
    std::fs::create_dir_all(dir.join("wit")).unwrap();
    std::fs::write(dir.join("wit/w.wit"), wit).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(&wasm_tools)
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "wasm-tools {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "component",
        "embed",
        "--dummy",
        "wit",
        "-w",
        "w",
        "-o",
        "core.wasm",
    ]);
    run(&["component", "new", "core.wasm", "-o", "w.wasm"]);
    dir.join("w.wasm")
}

#[tokio::test]
async fn a_component_with_nothing_to_serve_or_built_for_wasi_03_says_why() {
    let ws = Workspace::new(&[]);
    let rt = toolhost_tests::runtime();
    // Only a resource's functions and a WASI entry point: nothing to serve.
    let only_resources = dummy_component(
        &ws.file("resources"),
        "package t:r@0.1.0;\ninterface files {\n  resource file;\n  open: func(path: string) -> file;\n}\n\
         world w {\n  export files;\n  export wasi:cli/run@0.2.6;\n}\n\
         package wasi:cli@0.2.6 { interface run { run: func() -> result; } }\n",
    );
    let e = rt.load(&only_resources).await.unwrap_err().to_string();
    assert!(
        e.contains("exports no function toolhost can serve")
            && e.contains("t:r/files@0.1.0#open: its result: a resource handle (`own<file>`) cannot cross JSON")
            && e.contains("wasi:cli/run@0.2.6#run: an entry point of a WASI world"),
        "{e}"
    );
    // A type that doubles at every level (2^14 leaves once expanded): its
    // function is not served, the others are. (An enum holds at most
    // 10,000 cases, and a type at most a million nodes once expanded, as
    // the component model's validator bounds them: a large enum's schema
    // fits.)
    let mut wit =
        String::from("package t:big@0.1.0;\ninterface big {\n  type d0 = tuple<u8, u8>;\n");
    for i in 1..=14 {
        wit.push_str(&format!("  type d{i} = tuple<d{}, d{}>;\n", i - 1, i - 1));
    }
    let cases: Vec<String> = (0..5_000).map(|i| format!("c{i}")).collect();
    wit.push_str(&format!("  enum many {{ {} }}\n", cases.join(", ")));
    wit.push_str(
        "  doubled: func(v: d14);\n  pick: func(m: many);\n  fine: func(x: u32) -> u32;\n}\n",
    );
    wit.push_str("world w {\n  export big;\n}\n");
    let big = dummy_component(&ws.file("big"), &wit);
    let c = rt.load(&big).await.unwrap();
    let names: Vec<&str> = c.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["pick", "fine"]);
    let reasons: Vec<String> = c
        .unserved()
        .iter()
        .map(|u| format!("{}: {}", u.function, u.reason))
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains(
            "#doubled: its parameter `v`: its types expand to more than 20000 schema nodes"
        )),
        "{reasons:?}"
    );
    // WASI 0.3: async functions.
    let p3 = dummy_component(
        &ws.file("p3"),
        "package t:p3@0.1.0;\nworld w {\n  export fetch: async func(url: string) -> string;\n}\n",
    );
    let e = rt.load(&p3).await.unwrap_err().to_string();
    assert!(
        e.contains("built for WASI 0.3") && e.contains("wasm32-wasip2"),
        "{e}"
    );
}

#[tokio::test]
async fn a_plain_components_calls_are_recorded_replayed_and_verified() {
    use toolhost_pipeline::replay::{Layer, Mode, Replay};
    use toolhost_pipeline::{Registry, Scope};
    let component = toolhost_tests::runtime()
        .load(&component("rust"))
        .await
        .unwrap();
    let policy = toolhost_tests::build(
        toolhost_policy::PolicyBuilder::new().decision(toolhost_policy::Decision::Allow),
    );
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("plain.cassette.jsonl");
    let calls = [
        ("greet", json!({"name": "Ana"})),
        ("add", json!({"a": "9007199254740993", "b": 1})),
        ("lookup_find", json!({"name": "zzz"})),
        (
            "shapes",
            json!({"s": {"circle": 1.5}, "c": "blue", "p": ["write"]}),
        ),
    ];
    async fn session(p: Pipeline, calls: &[(&str, Value)]) -> (Pipeline, Vec<ToolResult>) {
        let mut out = Vec::new();
        for (i, (tool, args)) in calls.iter().enumerate() {
            out.push(
                p.execute(
                    ToolCall::new(format!("c{i}"), *tool, args.to_string()),
                    CancellationToken::new(),
                )
                .await,
            );
        }
        (p, out)
    }
    let open = |mode, layer| {
        let registry = Registry::new();
        let reg = registry
            .register_component(Scope::Global, &component, &policy)
            .unwrap();
        let replay = Replay::open(&cassette, mode, layer).unwrap();
        let p = Pipeline::builder(registry)
            .deterministic(9)
            .cassette(replay.clone())
            .build();
        (p, replay, reg)
    };
    let (p, replay, _reg) = open(Mode::Record, Layer::Cassette);
    let (_, recorded) = session(p, &calls).await;
    replay.assert_no_divergence();
    assert_eq!(recorded[1].value(), Some(&json!("9007199254740994")));
    // Played back: nothing runs, every result the same.
    let (p, replay, _reg) = open(Mode::Replay, Layer::Cassette);
    let (p, again) = session(p, &calls).await;
    assert_eq!(p.dispatches(), 0);
    replay.assert_no_divergence();
    assert_eq!(
        serde_json::to_string(&again).unwrap(),
        serde_json::to_string(&recorded).unwrap()
    );
    // Verified: run again, and the same.
    let (p, replay, _reg) = open(Mode::Replay, Layer::Verify);
    let (p, _) = session(p, &calls).await;
    assert_eq!(p.dispatches(), 4);
    replay.assert_no_divergence();
}
