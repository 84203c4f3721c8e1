//! Least privilege at the door: what a component asks for (its imports,
//! its tools with their path and URL arguments and annotations), and the
//! smallest policy that would run it, written for a person to review
//! before anything is granted. Path arguments become file-system grants
//! left as placeholders to fill in, URL arguments an empty network
//! allow-list, tools that write `ask`; nothing else is granted. A
//! publisher's own idea of a policy is never read, let alone applied.

use toolhost_contract::{PathAccess, ToolDescriptor};
use toolhost_runtime::LoadedComponent;

/// What `component` imports and declares, for a person to read.
pub fn describe(component: &LoadedComponent) -> String {
    let mut out = String::new();
    let kind = match component.contract_version() {
        Some(v) => format!("contract {v}"),
        None => "plain: its exported functions are its tools".to_owned(),
    };
    out.push_str(&format!("component sha256:{} ({kind})\n", component.id()));
    out.push_str("imports:\n");
    for i in component.imports() {
        out.push_str(&format!("  {i}\n"));
    }
    out.push_str("tools:\n");
    for t in component.tools() {
        out.push_str(&format!(
            "  {}: {}\n",
            t.name,
            t.description.lines().next().unwrap_or("")
        ));
        let a = &t.annotations;
        out.push_str(&format!(
            "    read_only={} destructive={} idempotent={} open_world={}\n",
            a.read_only, a.destructive, a.idempotent, a.open_world
        ));
        for p in &t.paths {
            out.push_str(&format!(
                "    path argument {} ({})\n",
                p.pointer,
                access_word(p.access)
            ));
        }
        for u in &t.urls {
            out.push_str(&format!("    URL argument {u}\n"));
        }
    }
    for u in component.unserved() {
        out.push_str(&format!("  not served: {}: {}\n", u.function, u.reason));
    }
    for (tool, found) in component.escaped() {
        out.push_str(&format!(
            "warning: `{tool}`: its descriptor held {found} that a person cannot see (shown escaped, as \\u{{…}})\n"
        ));
    }
    out
}

fn access_word(a: PathAccess) -> &'static str {
    match a {
        PathAccess::Read => "reads a file",
        PathAccess::List => "lists a directory",
        PathAccess::Create => "creates a file",
        PathAccess::Overwrite => "replaces a file",
        PathAccess::Patch => "edits a file",
        PathAccess::Write => "creates or replaces a file",
    }
}

/// Whether a tool changes anything (so its calls are asked).
fn writes(t: &ToolDescriptor) -> bool {
    !t.annotations.read_only
        || t.annotations.destructive
        || t.paths.iter().any(|p| p.access.is_write())
}

/// The smallest policy that runs `component`, as a policy file's text
/// (valid as it stands: until its placeholders are filled in, it grants
/// no directory and no host).
pub fn minimal_policy(component: &LoadedComponent, source: &str) -> String {
    let tools = component.tools();
    let writers: Vec<&ToolDescriptor> = tools.iter().filter(|t| writes(t)).collect();
    let decision = if writers.len() == tools.len() && !tools.is_empty() {
        "ask"
    } else {
        "allow"
    };
    let mut out = String::new();
    out.push_str(&format!(
        "# The smallest policy that runs {source}\n\
         # (suggested by toolhost from what the component declares: review it).\n\
         # Nothing is granted until you fill in the placeholders below.\n\
         version = 1\n\
         decision = \"{decision}\"\n"
    ));
    let with_paths: Vec<(&ToolDescriptor, String)> = tools
        .iter()
        .filter(|t| !t.paths.is_empty())
        .map(|t| {
            let uses: Vec<String> = t
                .paths
                .iter()
                .map(|p| {
                    format!(
                        "{} {}",
                        p.pointer.trim_start_matches('/'),
                        access_word(p.access)
                    )
                })
                .collect();
            (t, uses.join(", "))
        })
        .collect();
    if !with_paths.is_empty() {
        let rw = with_paths
            .iter()
            .any(|(t, _)| t.paths.iter().any(|p| p.access.is_write()));
        out.push_str("\n# Directories: the tools take paths:\n");
        for (t, uses) in &with_paths {
            out.push_str(&format!("#   {}: {uses}\n", t.name));
        }
        out.push_str(&format!(
            "# Grant the one directory they may use (and nothing more), e.g.:\n\
             # [[fs]]\n\
             # host = \"FILL IN: a directory on this machine\"\n\
             # guest = \"/workspace\"\n\
             # mode = \"{}\"\n",
            if rw { "rw" } else { "ro" }
        ));
    }
    let with_urls: Vec<&ToolDescriptor> = tools.iter().filter(|t| !t.urls.is_empty()).collect();
    let networked = component
        .imports()
        .iter()
        .any(|i| i.starts_with("wasi:http/") || i.starts_with("wasi:sockets/"));
    if !with_urls.is_empty() || networked {
        out.push_str("\n# Network: ");
        if with_urls.is_empty() {
            out.push_str("the component imports networking.\n");
        } else {
            let names: Vec<String> = with_urls
                .iter()
                .map(|t| format!("{} ({})", t.name, t.urls.join(", ")))
                .collect();
            out.push_str(&format!("the tools take URLs: {}.\n", names.join("; ")));
        }
        out.push_str(
            "# List the exact host:port pairs they may reach; empty, nothing is reachable.\n\
             [network]\n\
             allow = []\n",
        );
    }
    if component.is_plain() {
        out.push_str(&plain_declarations(component));
    }
    for t in &writers {
        if decision == "allow" {
            out.push_str(&format!(
                "\n# `{}` changes things: each call is asked.\n[tools.{}]\ndecision = \"ask\"\n",
                t.name, t.name
            ));
        }
    }
    out
}

/// For a plain component (exported functions, no `toolhost:tool`): what
/// it cannot declare itself, as commented `[tools.NAME]` tables to fill
/// in. A string argument named like a path is a candidate path argument
/// when the component reads files, one named like a URL a candidate URL
/// argument when it makes requests.
fn plain_declarations(component: &LoadedComponent) -> String {
    let imports = component.imports();
    let files = imports.iter().any(|i| i.starts_with("wasi:filesystem/"));
    let http = imports.iter().any(|i| i.starts_with("wasi:http/"));
    let mut out = String::new();
    if files && component.tools().iter().all(|t| t.paths.is_empty()) {
        out.push_str(
            "\n# Directories: it imports wasi:filesystem. Grant the one directory it\n\
             # may use (and nothing more), e.g.:\n\
             # [[fs]]\n\
             # host = \"FILL IN: a directory on this machine\"\n\
             # guest = \"/workspace\"\n\
             # mode = \"ro\"\n",
        );
    }
    out.push_str(
        "\n# A plain component cannot say which arguments are paths or URLs, nor\n\
         # whether a tool only reads: say it per tool, so the path stage, the\n\
         # network check and the approval see it, e.g.\n",
    );
    let mut any = false;
    for t in component.tools() {
        let Some(props) = t.input_schema.get("properties").and_then(|p| p.as_object()) else {
            continue;
        };
        let strings = props
            .iter()
            .filter(|(_, s)| s.get("type").and_then(|t| t.as_str()) == Some("string"))
            .map(|(name, _)| name.as_str());
        let mut paths = Vec::new();
        let mut urls = Vec::new();
        for name in strings {
            let n = name.to_ascii_lowercase();
            if files
                && ["path", "file", "dir", "folder"]
                    .iter()
                    .any(|w| n.contains(w))
            {
                paths.push(format!("{{ pointer = \"/{name}\", access = \"read\" }}"));
            } else if http && ["url", "uri", "endpoint"].iter().any(|w| n.contains(w)) {
                urls.push(format!("\"/{name}\""));
            }
        }
        if paths.is_empty() && urls.is_empty() {
            continue;
        }
        any = true;
        out.push_str(&format!("# [tools.{}]\n", t.name));
        if !paths.is_empty() {
            out.push_str(&format!(
                "# paths = [{}]   # read, list, create, overwrite, patch or write\n",
                paths.join(", ")
            ));
        }
        if !urls.is_empty() {
            out.push_str(&format!("# urls = [{}]\n", urls.join(", ")));
        }
        out.push_str("# annotations = { read_only = true }\n");
    }
    if !any {
        out.push_str(
            "# [tools.NAME]\n# paths = [{ pointer = \"/path\", access = \"read\" }]\n\
             # annotations = { read_only = true }\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_words_cover_writes() {
        for a in [
            PathAccess::Create,
            PathAccess::Overwrite,
            PathAccess::Patch,
            PathAccess::Write,
        ] {
            assert!(a.is_write());
            assert!(!access_word(a).is_empty());
        }
    }
}
