//! Host bindings for the `toolhost:tool` world (private: generated code
//! never leaks out of this crate).

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "tool-provider",
    exports: { default: async },
});

pub(crate) use toolhost::tool::types;
