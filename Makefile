# toolhost: the two commands a fresh machine needs.
#
#   make demo   builds everything needed and runs real tools through the sandbox
#   make test   runs every check: formatting, lints, API docs, host tests,
#               guest tool tests, MCP client and conformance tests, and the
#               benchmarks in quick mode
#   make bench  the benchmarks, optimized (builds the release profile)
#   make cassettes  records the demo session's cassette again (after a
#               built-in tool changed on purpose; tests replay it)
#   make fuzz   the fuzz targets for 10 minutes each (tests/fuzz/run.sh)
#   make soak   100,000 sequential calls: RSS and open files must not grow
#               (make test runs 5,000)
#   make dist   the release binary packed into target/dist/: a wheel (uvx,
#               pip), npm packages (npx), an MCP bundle (.mcpb), SHA256SUMS;
#               and every crate, verified, in target/dist/crates/ (for
#               cargo install toolhost once they are published)
#
# Guest components are built from source by host/guests/build.rs (which also
# installs the wasm32-wasip2 target when it is missing, and the code
# runner's C toolchain).

CARGO ?= cargo

# Clippy rides on make test's build instead of checking everything first.
# clippy-driver is rustc with Clippy's lints (what `cargo clippy` runs in
# check mode); as the compiler of the workspace's own crates it lints each of
# them while compiling it for the tests, with the flags `cargo clippy -- -D
# warnings` passes, so the dependencies are compiled once rather than checked
# and then compiled. Every cargo command of make test that builds the
# workspace sets it: the wrapper is part of the workspace crates' fingerprint,
# and a command without it would build them again.
LINTED = RUSTC_WORKSPACE_WRAPPER="$$(rustc --print sysroot)/bin/clippy-driver" \
	CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__

# The host's target triple.
HOST = $$(rustc -vV | sed -n 's/^host: //p')

.PHONY: demo test bench setup cassettes fuzz soak dist

setup:
	rustup target add wasm32-wasip2
	rustup component add rustfmt clippy
	# The C toolchain of the code runner (QuickJS) and the C kit: pinned
	# Debian packages, installed as root when missing.
	bash -c 'source guest-tools/c/toolchain.sh && th_c_toolchain make'

demo: setup
	$(CARGO) run -p toolhost --example demo

# Every host the tests start ranks its searches with the real model, read
# from one copy the tests share (fetched once, checked against its pin),
# instead of fetching it into each test's own HOME.
test: export TOOLHOST_SEARCH_MODEL = $(CURDIR)/target/search-model/wordllama-0.4.0.post1-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl

test: setup
	bash tests/search-model/fetch.sh
	$(CARGO) fmt --all --check
	$(CARGO) fmt --all --check --manifest-path guest-tools/Cargo.toml
	# Linted builds (LINTED, above): the benchmarks first (cargo test does not
	# build them), then every other target as cargo test builds it, all before
	# the first test runs.
	$(LINTED) $(CARGO) test --workspace --benches --no-run
	# While the tests run, the fuzz smoke's build (below) runs in the
	# background at the lowest priority, on the CPU they leave idle (they
	# kept 2 cores 80 % busy). It is stopped when cargo test ends, however
	# it ends; the smoke's own build then finishes whatever is left and
	# reports any error. Its log: target/fuzz-prebuild.log.
	nice -n 19 bash tests/fuzz/run.sh --smoke --build-only >target/fuzz-prebuild.log 2>&1 & \
		trap 'kill $$! 2>/dev/null' EXIT; \
		$(LINTED) $(CARGO) test --workspace
	# Every crate packages (no path-only dependency left), and the
	# built-ins build from toolhost-guests' packaged sources alone
	# (make dist verifies every crate, which takes long).
	bash deploy/dist/crates.sh --quick
	# The API docs build without a broken or private link.
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace
	# guest-tools' tests name the host's triple: its proc macros (serde's,
	# wit-bindgen's) are then built as host units, which the wasm32 Clippy
	# after it reuses instead of compiling them again.
	$(LINTED) $(CARGO) test --manifest-path guest-tools/Cargo.toml --target $(HOST)
	$(CARGO) clippy --manifest-path guest-tools/Cargo.toml --target wasm32-wasip2 -- -D warnings
	# The code runner (its own cargo project): its script tests natively
	# (QuickJS built with the host's C compiler), its lints for both targets.
	$(CARGO) fmt --check --manifest-path guest-tools/code/Cargo.toml
	$(CARGO) test --manifest-path guest-tools/code/Cargo.toml
	$(CARGO) clippy --manifest-path guest-tools/code/Cargo.toml --all-targets -- -D warnings
	# The other languages' own unit tests (tests/languages.rs builds each
	# component from source and runs it through the pipeline).
	bash guest-tools/python/test.sh
	bash guest-tools/c/test.sh
	bash guest-tools/js/test.sh
	bash guest-tools/go/test.sh
	# Coverage-guided fuzzing (libFuzzer) of what reads untrusted bytes: the
	# policy and toolbox parsers, a wassette policy's import, the session-log reader, a call's arguments
	# through the stages before dispatch, the MCP request path, the serving
	# side of a worker's channel and of its answers; 15 s each, a
	# smoke, so the targets cannot rot.
	bash tests/fuzz/run.sh --smoke 15
	# The benchmarks in quick mode on the test build, so they cannot rot
	# (figures from this build are not the optimized ones: see make bench).
	# cargo test runs the bench binaries the linted build above made (their
	# own main: harness = false), one after another with --quick; `cargo
	# bench --profile dev` would build each again first.
	$(LINTED) $(CARGO) test -p toolhost --bench overhead --bench stdio --bench scale \
		--bench startup --bench supply --bench effects --bench descriptors --bench team \
		--bench code --bench discovery --bench plain -- --quick

bench: setup
	bash guest-tools/python/build.sh
	bash guest-tools/c/build.sh
	bash guest-tools/js/build.sh
	bash guest-tools/go/build.sh
	$(CARGO) bench -p toolhost --bench overhead
	$(CARGO) bench -p toolhost --bench stdio
	$(CARGO) bench -p toolhost --bench calls
	$(CARGO) bench -p toolhost --bench scale
	$(CARGO) bench -p toolhost --bench startup
	$(CARGO) bench -p toolhost --bench supply
	$(CARGO) bench -p toolhost --bench effects
	$(CARGO) bench -p toolhost --bench descriptors
	$(CARGO) bench -p toolhost --bench team
	$(CARGO) bench -p toolhost --bench code
	$(CARGO) bench -p toolhost --bench discovery
	$(CARGO) bench -p toolhost --bench plain

cassettes: setup
	rm -rf target/demo-workspace
	mkdir -p target
	cp -r host/cli/examples/demo/workspace target/demo-workspace
	$(CARGO) run -p toolhost -- record host/cli/examples/demo/calls.jsonl \
		--out tests/cassettes/demo.cassette.jsonl --dir target/demo-workspace --yes

fuzz: setup
	bash tests/fuzz/run.sh 600

soak: setup
	TOOLHOST_SOAK_CALLS=100000 $(CARGO) test -p toolhost-tests --test soak -- --nocapture

# The host's platform only. Another target (aarch64-unknown-linux-gnu) is
# its own release build (`--target`, with a linker for it) whose binary is
# one more argument to pack.py: each binary gets its wheel, npm platform
# package and bundle, and the main npm package names them all.
# pack.py strips the debug info from the copy it packs (the symbols stay, for
# backtraces); host/cli/tests/dist.rs installs and runs what it writes.
dist: setup
	$(CARGO) build --release -p toolhost --locked
	rm -rf target/dist
	python3 deploy/dist/pack.py target/release/toolhost --out target/dist --strip debug
	bash deploy/dist/crates.sh --out target/dist/crates
