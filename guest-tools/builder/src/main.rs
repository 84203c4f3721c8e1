//! `toolhost-guest-builder`: the steps of building a C or Go tool component
//! that need the component-model tooling, in one small binary (instead of
//! installing `wit-bindgen-cli` and `wasm-tools`).
//!
//! ```text
//! toolhost-guest-builder bindings <wit dir>[:<wit dir>...] <world> <out dir>
//! toolhost-guest-builder componentize <core.wasm> <out.wasm> [<wit dir>[:...] <world>]
//! toolhost-guest-builder wit <file.wasm>
//! ```
//!
//! * `bindings` resolves the WIT directories in order (each one may use the
//!   packages of the ones before it, and its own `deps/`), selects `world`
//!   (e.g. `toolhost:c-guest/tool-provider`) and writes wit-bindgen-c's
//!   output: `<world>.h`, `<world>.c` and `<world>_component_type.o` (the
//!   `component-type` custom section, linked into the core module).
//! * `componentize` wraps a `wasm32-wasi` (preview 1) reactor module into a
//!   component with wasmtime 48's preview 1 reactor adapter, validating the
//!   result. When the module carries no `component-type` section (it was
//!   stripped, or the bindings object was not linked), the WIT directories
//!   and world must be given and the section is embedded first.
//!   `--grow-memory` makes the adapter allocate its state and stack with
//!   `memory.grow` instead of the module's `cabi_realloc`: Go's runtime
//!   cannot serve an allocation while `_initialize` is still starting it,
//!   and the adapter's first allocation happens there (the runtime's first
//!   WASI call); see guest-tools/go/README.md. `--forbid-import PREFIX`
//!   fails (and writes nothing) when the component imports an interface
//!   whose name starts with PREFIX, e.g. `wasi:sockets/`: the host refuses
//!   such a component unless its policy grants the network.
//! * `wit` prints the imports and exports of a component (or of a core
//!   module's `component-type` section), one per line, for checks.

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use wasi_preview1_component_adapter_provider::{
    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
};
use wit_bindgen_core::Files;
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::{Resolve, WorldId, WorldItem, WorldKey};

const USAGE: &str = "usage:
  toolhost-guest-builder bindings <wit dir>[:<wit dir>...] <world> <out dir>
  toolhost-guest-builder componentize [--grow-memory] [--forbid-import PREFIX]... <core.wasm> <out.wasm> [<wit dir>[:<wit dir>...] <world>]
  toolhost-guest-builder wit <file.wasm>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["bindings", wit, world, out] => bindings(wit, world, Path::new(out)),
        ["componentize", rest @ ..] => match ComponentizeArgs::parse(rest) {
            Some(a) => componentize(&a),
            None => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        },
        ["wit", file] => print_wit(Path::new(file)),
        ["-h" | "--help" | "help"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("toolhost-guest-builder: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves `dirs` (colon-separated) in order and selects `world` among
/// the packages of the last one.
fn resolve_world(dirs: &str, world: &str) -> Result<(Resolve, WorldId)> {
    let mut resolve = Resolve::default();
    let mut last = None;
    for dir in dirs.split(':').filter(|d| !d.is_empty()) {
        let (pkg, _sources) = resolve
            .push_dir(dir)
            .with_context(|| format!("reading WIT directory {dir}"))?;
        last = Some(pkg);
    }
    let pkg = last.ok_or_else(|| anyhow!("no WIT directory given"))?;
    let id = resolve
        .select_world(&[pkg], Some(world))
        .with_context(|| format!("selecting world {world}"))?;
    Ok((resolve, id))
}

fn bindings(dirs: &str, world: &str, out: &Path) -> Result<()> {
    let (mut resolve, id) = resolve_world(dirs, world)?;
    let mut files = Files::default();
    let opts = wit_bindgen_c::Opts::default();
    opts.build()
        .generate(&mut resolve, id, &mut files)
        .context("generating C bindings")?;
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    for (name, contents) in files.iter() {
        let path = out.join(name);
        fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("toolhost-guest-builder: wrote {}", path.display());
    }
    Ok(())
}

fn has_component_type(module: &[u8]) -> Result<bool> {
    let (_, bindgen) =
        wit_component::metadata::decode(module).context("reading the core module")?;
    let world = &bindgen.resolve.worlds[bindgen.world];
    Ok(!world.exports.is_empty() || !world.imports.is_empty())
}

/// The arguments of `componentize`.
struct ComponentizeArgs<'a> {
    core: &'a Path,
    out: &'a Path,
    /// The WIT directories and the world, to embed when the module has no
    /// component-type section.
    wit: Option<(&'a str, &'a str)>,
    grow_memory: bool,
    forbidden: Vec<&'a str>,
}

impl<'a> ComponentizeArgs<'a> {
    fn parse(mut args: &'a [&'a str]) -> Option<Self> {
        let (mut grow_memory, mut forbidden) = (false, Vec::new());
        loop {
            match args {
                ["--grow-memory", rest @ ..] => (grow_memory, args) = (true, rest),
                ["--forbid-import", prefix, rest @ ..] => {
                    forbidden.push(*prefix);
                    args = rest;
                }
                _ => break,
            }
        }
        let (core, out, wit) = match args {
            [core, out] => (core, out, None),
            [core, out, dirs, world] => (core, out, Some((*dirs, *world))),
            _ => return None,
        };
        Some(Self {
            core: Path::new(core),
            out: Path::new(out),
            wit,
            grow_memory,
            forbidden,
        })
    }
}

fn componentize(a: &ComponentizeArgs<'_>) -> Result<()> {
    let core = a.core;
    let mut module = fs::read(core).with_context(|| format!("reading {}", core.display()))?;
    if !has_component_type(&module)? {
        let Some((dirs, world)) = a.wit else {
            bail!(
                "{} has no component-type section: link the bindings' *_component_type.o, \
                 or pass the WIT directories and the world",
                core.display()
            );
        };
        let (resolve, id) = resolve_world(dirs, world)?;
        wit_component::embed_component_metadata(&mut module, &resolve, id, StringEncoding::UTF8)
            .context("embedding the component-type section")?;
    }
    let mut encoder = ComponentEncoder::default();
    encoder.realloc_via_memory_grow(a.grow_memory);
    let component = encoder
        .module(&module)
        .context("decoding the core module")?
        .adapter(
            WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )
        .context("adding the wasi_snapshot_preview1 reactor adapter")?
        .validate(true)
        .encode()
        .context("encoding the component")?;
    let items = world_items(&component)?;
    let imports: Vec<&str> = items
        .iter()
        .filter(|(kind, _)| *kind == "import")
        .map(|(_, name)| name.as_str())
        .collect();
    let refused: Vec<&str> = imports
        .iter()
        .copied()
        .filter(|name| a.forbidden.iter().any(|p| name.starts_with(p)))
        .collect();
    if !refused.is_empty() {
        bail!(
            "the component imports {} (forbidden: {}); nothing written",
            refused.join(", "),
            a.forbidden.join(", ")
        );
    }
    let out = a.out;
    if let Some(dir) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    fs::write(out, &component).with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "toolhost-guest-builder: wrote {} ({} bytes; {} imports)",
        out.display(),
        component.len(),
        imports.len()
    );
    Ok(())
}

/// The imports and exports of a component (or of a core module's
/// `component-type` section), as (`import`|`export`, name).
fn world_items(bytes: &[u8]) -> Result<Vec<(&'static str, String)>> {
    let (resolve, world) = if wasmparser_is_component(bytes) {
        match wit_component::decode(bytes).context("decoding the component")? {
            wit_component::DecodedWasm::Component(resolve, world) => (resolve, world),
            wit_component::DecodedWasm::WitPackage(..) => {
                bail!("a WIT package, not a component")
            }
        }
    } else {
        let (_, bindgen) = wit_component::metadata::decode(bytes)?;
        (bindgen.resolve, bindgen.world)
    };
    let w = &resolve.worlds[world];
    let mut out = Vec::new();
    for (kind, items) in [("import", &w.imports), ("export", &w.exports)] {
        for (key, item) in items.iter() {
            let name = match (key, item) {
                (_, WorldItem::Interface { id, .. }) => resolve
                    .id_of(*id)
                    .unwrap_or_else(|| resolve.name_world_key(key)),
                (WorldKey::Name(n), WorldItem::Function(_)) => format!("func {n}"),
                (key, _) => format!("type {}", resolve.name_world_key(key)),
            };
            out.push((kind, name));
        }
    }
    Ok(out)
}

fn print_wit(file: &Path) -> Result<()> {
    let bytes = fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    for (kind, name) in world_items(&bytes).with_context(|| file.display().to_string())? {
        println!("{kind} {name}");
    }
    Ok(())
}

/// A component's preamble has layer 1 (bytes 6..8 of the header).
fn wasmparser_is_component(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[0..4] == *b"\0asm" && bytes[6..8] == [1, 0]
}
