#!/usr/bin/env node
// The `sky` command of @agentsky/sky: finds the native binary for this platform and runs it with the
// same arguments, standard streams and exit status. The binary comes from the optional dependency
// @agentsky/sky-<platform>-<arch> that npm installed for this machine (see ../README.md for why the
// CLI ships as native binaries rather than WASI). AGENTSKY_SKY_BINARY overrides the lookup.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const platformPackage = `@agentsky/sky-${process.platform}-${process.arch}`;
const exe = process.platform === 'win32' ? 'sky.exe' : 'sky';

function findBinary() {
  if (process.env.AGENTSKY_SKY_BINARY) return process.env.AGENTSKY_SKY_BINARY;
  try {
    return require.resolve(`${platformPackage}/bin/${exe}`);
  } catch {
    return null;
  }
}

const binary = findBinary();
if (!binary) {
  process.stderr.write(
    `@agentsky/sky: no sky binary for ${process.platform}-${process.arch}.\n` +
      `It comes from the optional package ${platformPackage}, which npm did not install: either this\n` +
      `platform has no build yet, or optional dependencies were skipped (--omit=optional, --no-optional).\n` +
      `Build it from the agentsky repository with npm/sky/build.sh, or set AGENTSKY_SKY_BINARY to a sky binary.\n`,
  );
  process.exit(1);
}

// npm may unpack without the executable bit on some setups; restore it rather than fail.
if (process.platform !== 'win32') {
  try {
    fs.accessSync(binary, fs.constants.X_OK);
  } catch {
    try {
      fs.chmodSync(binary, 0o755);
    } catch {}
  }
}

const result = spawnSync(binary, process.argv.slice(2), { stdio: 'inherit', windowsHide: false });
if (result.error) {
  process.stderr.write(`@agentsky/sky: could not run ${path.basename(binary)}: ${result.error.message}\n`);
  process.exit(1);
}
if (result.signal) {
  // Die of the same signal, so a shell sees what happened.
  process.kill(process.pid, result.signal);
}
process.exit(result.status ?? 1);
