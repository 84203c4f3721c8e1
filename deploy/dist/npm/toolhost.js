#!/usr/bin/env node
// The `toolhost` command of the npm package: runs the toolhost binary of the
// platform package npm installed beside this one (an optional dependency
// per platform, each with `os`, `cpu` and `libc`, so npm installs only the
// one that fits: the esbuild pattern). Nothing is downloaded and there is no
// install script.
//
// The binary inherits stdin, stdout and stderr: an MCP client speaks to it
// over stdio, so not a byte may pass through this process. Signals that
// stop this process are passed on, and it ends the way the binary ended.
'use strict';

const { spawn } = require('node:child_process');
const path = require('node:path');
const os = require('node:os');

const pkg = require('../package.json');

// glibc or musl: Node's report names the glibc it runs on, and no glibc on
// Linux means musl.
function libc() {
  try {
    process.report.excludeNetwork = true;
    const report = process.report.getReport();
    return report.header && report.header.glibcVersionRuntime ? 'gnu' : 'musl';
  } catch {
    return 'gnu';
  }
}

function fail(message) {
  process.stderr.write(`toolhost: ${message}\n`);
  process.exit(1);
}

const key =
  process.platform === 'linux'
    ? `${process.platform}-${process.arch}-${libc()}`
    : `${process.platform}-${process.arch}`;
const name = `@toolhost/${key}`;
const supported = Object.keys(pkg.optionalDependencies || {});

if (!supported.includes(name)) {
  const have = supported.map((p) => p.replace('@toolhost/', '')).join(', ');
  fail(
    `no prebuilt binary for this platform (${key}); this release has: ${have}.\n` +
      'toolhost builds from source with Rust: cargo install toolhost',
  );
}

let dir;
try {
  dir = path.dirname(require.resolve(`${name}/package.json`));
} catch {
  fail(
    `the package ${name} that holds the binary for this platform (${key}) is not installed.\n` +
      'npm leaves it out when optional dependencies are omitted (--omit=optional, --no-optional);\n' +
      `install again with them, or install ${name}@${pkg.version} next to toolhost`,
  );
}
const binary = path.join(dir, 'bin', 'toolhost');

const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit' });

const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
for (const signal of forwarded) {
  process.on(signal, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  });
}

child.on('error', (err) => {
  fail(`could not start ${binary}: ${err.message}`);
});

child.on('exit', (code, signal) => {
  if (signal) {
    // End by the same signal, so whoever started this sees what happened to
    // the binary; the exit status is the shell's convention if that fails.
    for (const s of forwarded) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    process.exit(128 + (os.constants.signals[signal] || 0));
  }
  process.exit(code === null ? 1 : code);
});
