//! Compiles the JavaScript runner's prelude (`src/prelude.js`) to QuickJS
//! bytecode, which the runner loads at every script's start instead of
//! parsing the source (see `Cargo.toml`). The bytecode is a module whose
//! default export is the prelude's function.

fn main() {
    println!("cargo:rerun-if-changed=src/prelude.js");
    #[cfg(feature = "javascript")]
    prelude::compile();
}

#[cfg(feature = "javascript")]
mod prelude {
    use rquickjs::module::WriteOptions;
    use rquickjs::{Context, Module, Runtime};
    use std::path::PathBuf;

    pub fn compile() {
        let source = std::fs::read_to_string("src/prelude.js").expect("reading src/prelude.js");
        let module = format!("export default {source};\n");
        let rt = Runtime::new().expect("a QuickJS runtime");
        let cx = Context::full(&rt).expect("a QuickJS context");
        let bytes = cx.with(|ctx| {
            Module::declare(ctx, "prelude.js", module)
                .and_then(|m| m.write(WriteOptions::default()))
                .expect("compiling src/prelude.js")
        });
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        std::fs::write(out.join("prelude.qjsbc"), bytes).expect("writing the prelude's bytecode");
    }
}
