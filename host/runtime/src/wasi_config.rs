//! `wasi:config/store`: a component's configuration values, as
//! wassette-era components read them (an API key, say). toolhost serves
//! them from the call's policy alone: the environment it grants (`[env]
//! allow`, from the host's environment, and `set`), the very values the
//! component also sees as environment variables. Both published versions
//! of the proposal are linked (`0.2.0-draft`, `0.2.0-rc.1`): a prerelease
//! version only matches itself.

use crate::sandbox::HostState;

/// `wasi:config@0.2.0-draft`.
mod draft {
    wasmtime::component::bindgen!({
        path: "wit/wasi-config/v0.2.0-draft",
        world: "imports",
    });
}

/// `wasi:config@0.2.0-rc.1`.
mod rc1 {
    wasmtime::component::bindgen!({
        path: "wit/wasi-config/v0.2.0-rc.1",
        world: "imports",
    });
}

/// One version's `store`, served from the call's configuration values.
macro_rules! store_host {
    ($v:ident) => {
        impl $v::wasi::config::store::Host for HostState {
            fn get(
                &mut self,
                key: String,
            ) -> Result<Option<String>, $v::wasi::config::store::ConfigError> {
                Ok(self
                    .config_vars()
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| v.clone()))
            }

            fn get_all(
                &mut self,
            ) -> Result<Vec<(String, String)>, $v::wasi::config::store::ConfigError> {
                Ok(self.config_vars().to_vec())
            }
        }
    };
}

store_host!(draft);
store_host!(rc1);

/// Links both versions of `wasi:config/store`.
pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<HostState>,
) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    draft::Imports::add_to_linker::<HostState, HasSelf<HostState>>(linker, |s| s)?;
    rc1::Imports::add_to_linker::<HostState, HasSelf<HostState>>(linker, |s| s)
}
