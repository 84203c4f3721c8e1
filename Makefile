# toolhost: the two commands a fresh machine needs.
#
#   make demo   builds everything needed and runs real tools through the sandbox
#   make test   runs every check: formatting, lints, host tests, guest tool tests
#
# Guest components are built from source by host/guests/build.rs (which also
# installs the wasm32-wasip2 target when it is missing).

CARGO ?= cargo

.PHONY: demo test setup

setup:
	rustup target add wasm32-wasip2
	rustup component add rustfmt clippy

demo: setup
	$(CARGO) run -p toolhost --example demo

test: setup
	$(CARGO) fmt --all --check
	$(CARGO) fmt --all --check --manifest-path guest-tools/Cargo.toml
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) test --workspace
	$(CARGO) test --manifest-path guest-tools/Cargo.toml
