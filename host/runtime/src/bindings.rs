//! Host bindings for the `toolhost:tool` world (private: generated code
//! never leaks out of this crate).

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "tool-provider",
    exports: { default: async },
});

#[allow(unused_imports)]
pub(crate) use exports::toolhost::tool::tool as guest;
pub(crate) use toolhost::tool::types;
