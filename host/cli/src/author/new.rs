//! `toolhost new`: a tool project from a kit language's template.

use super::{AuthorError, Lang, io, kits, tool_name};
use std::path::{Path, PathBuf};

/// A project `create` wrote.
#[derive(Debug)]
pub struct Created {
    /// Its directory.
    pub dir: PathBuf,
    /// The tool's name (also the component's file name).
    pub tool: String,
    /// Its language.
    pub lang: Lang,
}

/// The toolbox of a project: `build` writes the component it names, and
/// `call`, `serve` and `dev` in the project serve it under the policy.
fn toolbox(tool: &str) -> String {
    format!(
        "# This tool project's toolbox: `toolhost build` writes the component\n\
         # below; `toolhost call`, `serve` and `dev` here serve it under the policy.\n\
         version = 1\n\n\
         [[component]]\n\
         source = \"target/{tool}.wasm\"\n\
         policy = \"policy.toml\"\n"
    )
}

/// Writes the project `name` (a directory of that name in `parent`) from
/// `lang`'s template. Nothing is left behind when it fails: the project is
/// written beside its place and moved there whole.
pub fn create(name: &str, lang: Lang, parent: &Path, cache: &Path) -> Result<Created, AuthorError> {
    let tool = tool_name(name)?;
    let dir = parent.join(name);
    if dir.exists() {
        return Err(AuthorError::Exists(dir));
    }
    let kit = kits::extract(cache)?;
    let kit_crate = kit.join("guest-tools/kit");
    let render = |text: &str| {
        text.replace("{{name}}", &tool)
            .replace("{{kebab}}", &tool.replace('_', "-"))
            .replace("{{kit}}", &kit_crate.to_string_lossy())
    };
    let partial = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    let written = (|| {
        let mut files: Vec<(String, Vec<u8>)> = kits::template(lang)
            .map(|(rel, bytes)| {
                let bytes = match std::str::from_utf8(bytes) {
                    Ok(text) => render(text).into_bytes(),
                    Err(_) => bytes.to_vec(),
                };
                (render(rel), bytes)
            })
            .collect();
        files.push(("toolhost.toml".into(), toolbox(&tool).into_bytes()));
        files.push(("target/.gitkeep".into(), Vec::new()));
        files.push((".gitignore".into(), b"/target/\n".to_vec()));
        if lang == Lang::Rust {
            // The versions the kit is tested with, and wasm SIMD (which
            // the kit's text scanning uses) for the component target.
            for (from, to) in [
                ("guest-tools/Cargo.lock", "Cargo.lock"),
                (".cargo/config.toml", ".cargo/config.toml"),
            ] {
                if let Some(bytes) = kits::file(from) {
                    files.push((to.into(), bytes.to_vec()));
                }
            }
        }
        for (rel, bytes) in files {
            let path = partial.join(&rel);
            if let Some(p) = path.parent() {
                std::fs::create_dir_all(p).map_err(io(format!("creating {}", p.display())))?;
            }
            std::fs::write(&path, bytes).map_err(io(format!("writing {}", path.display())))?;
        }
        std::fs::rename(&partial, &dir).map_err(io(format!("creating {}", dir.display())))
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    Ok(Created { dir, tool, lang })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_each_template_with_its_names_filled_in() -> Result<(), AuthorError> {
        let tmp = tempfile::tempdir().map_err(io("tempdir"))?;
        let cache = tmp.path().join("cache");
        for lang in Lang::ALL {
            let name = format!("word-count-{lang}");
            let made = create(&name, lang, tmp.path(), &cache)?;
            assert_eq!(made.tool, format!("word_count_{lang}"));
            let toolbox =
                std::fs::read_to_string(made.dir.join("toolhost.toml")).map_err(io("toolbox"))?;
            assert!(toolbox.contains(&format!("target/{}.wasm", made.tool)));
            for entry in walk(&made.dir) {
                let text = std::fs::read(&entry).map_err(io("read"))?;
                let text = String::from_utf8_lossy(&text);
                for placeholder in ["{{name}}", "{{kebab}}", "{{kit}}"] {
                    assert!(
                        !text.contains(placeholder),
                        "{} keeps {placeholder}",
                        entry.display()
                    );
                    assert!(!entry.to_string_lossy().contains(placeholder));
                }
            }
            assert!(matches!(
                create(&name, lang, tmp.path(), &cache),
                Err(AuthorError::Exists(_))
            ));
        }
        let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
            .map_err(io("list"))?
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains("partial"))
            .collect();
        assert!(leftovers.is_empty());
        Ok(())
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }
}
