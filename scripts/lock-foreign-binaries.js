#!/usr/bin/env node
/**
 * The registry this project is developed against serves only Linux x64 builds of native
 * packages, so `npm install` leaves other platforms' optional binaries (@swc/core-darwin-arm64,
 * ...) out of package-lock.json, and `npm ci` then refuses the lock as out of sync. This adds
 * an entry for each missing one, marked optional and for its own os/cpu, so npm skips them
 * here and resolves them normally elsewhere. Run it after `npm install` changes the lock:
 *   node scripts/lock-foreign-binaries.js
 */
const fs = require('node:fs');
const path = require('node:path');

const lockPath = path.join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(lockPath, 'utf8'));
const OS = ['darwin', 'linux', 'win32', 'android', 'freebsd', 'openharmony', 'sunos', 'netbsd', 'openbsd', 'aix'];
const CPU = ['arm64', 'x64', 'arm', 'ia32', 'ppc64', 's390x', 'loong64', 'riscv64', 'mips64el'];

let added = 0;
for (const [where, pkg] of Object.entries(lock.packages)) {
  for (const [name, range] of Object.entries(pkg.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    const nested = `${where}/node_modules/${name}`;
    if (lock.packages[key] || lock.packages[nested]) continue;
    const parts = name.split('/').pop().split('-');
    const os = parts.find((p) => OS.includes(p));
    const cpu = parts.find((p) => CPU.includes(p)) ?? (parts.includes('wasm32') ? 'wasm32' : undefined);
    if (!os && !cpu) continue; // not a platform binary: leave it to npm
    const entry = { version: range.replace(/^[\^~=]/, ''), optional: true };
    if (os) entry.os = [os];
    if (cpu) entry.cpu = [cpu];
    if (parts.includes('musl') || parts.includes('musleabihf')) entry.libc = ['musl'];
    else if (os === 'linux' && parts.some((p) => p.startsWith('gnu'))) entry.libc = ['glibc'];
    lock.packages[key] = entry;
    added += 1;
  }
}
fs.writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} foreign optional binaries to package-lock.json`);
