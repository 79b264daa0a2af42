/**
 * Package setup: installing a checkout's dependencies. A `package_setup` hook says how; without
 * one, Sluice looks at the checkout and runs what its lock files call for (Solano did the same
 * for its languages); `package_setup: false` runs nothing. Each manager found runs as a
 * `package_setup` hook of its own, with what was detected shown beside it.
 *
 * A manager also says what a cache entry of its dependencies holds by default (when the build
 * configures no `cache`), and whether a cache hit on exactly its lock file makes installing
 * needless: node_modules restored from an entry keyed by package-lock.json is what `npm ci`
 * would make, and one keyed by a lone package.json what `npm install` would leave as it is, so
 * the install is skipped (the warm build's speed); a virtualenv is not (its
 * scripts name the checkout's path, which differs from build to build), so pip still runs,
 * from its restored download cache.
 */
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { CacheSettings } from '../core/buildSetup';

export interface PackageManager {
  /** Shown on the build page: what was found and what runs. */
  detail: string;
  command: string;
  /** The entry this manager's dependencies make when the build configures no cache. */
  cache: CacheSettings;
  /** The checkout (or `~/`) path the install fills: restored from an exact cache hit, the install is needless. */
  installs: string | null;
  /** Variables every process of the worker gets (where the install put things). */
  env(tree: string, home: string): Record<string, string>;
}

const none = () => ({});

/** In the order they are looked for; a lock file wins over a bare manifest of the same language. */
const MANAGERS: Array<{ file: string; unless?: string[]; manager: PackageManager }> = [
  {
    file: 'pnpm-lock.yaml',
    manager: {
      detail: 'pnpm-lock.yaml: pnpm install --frozen-lockfile',
      command: 'pnpm install --frozen-lockfile',
      cache: { key_paths: ['pnpm-lock.yaml'], save_paths: ['node_modules'] },
      installs: 'node_modules',
      env: none,
    },
  },
  {
    file: 'yarn.lock',
    manager: {
      detail: 'yarn.lock: yarn install --frozen-lockfile',
      command: 'yarn install --frozen-lockfile',
      cache: { key_paths: ['yarn.lock'], save_paths: ['node_modules'] },
      installs: 'node_modules',
      env: none,
    },
  },
  {
    file: 'package-lock.json',
    unless: ['pnpm-lock.yaml', 'yarn.lock'],
    manager: {
      detail: 'package-lock.json: npm ci',
      command: 'npm ci --no-audit --no-fund',
      cache: { key_paths: ['package-lock.json'], save_paths: ['node_modules'] },
      installs: 'node_modules',
      env: none,
    },
  },
  {
    file: 'package.json',
    unless: ['pnpm-lock.yaml', 'yarn.lock', 'package-lock.json', 'npm-shrinkwrap.json'],
    manager: {
      detail: 'package.json without a lock file: npm install',
      command: 'npm install --no-audit --no-fund',
      // Without a lock file two installs may differ, but not over a node_modules an install of
      // exactly this package.json made: npm keeps every installed package that satisfies it
      // (node_modules/.package-lock.json says which), so that install changes nothing and is
      // skipped as npm ci's is (express: 0.7-0.9 s of a 5 s warm build, issue 49).
      cache: { key_paths: ['package.json'], save_paths: ['node_modules'] },
      installs: 'node_modules',
      env: none,
    },
  },
  {
    file: 'requirements.txt',
    manager: {
      detail: 'requirements.txt: pip install into a virtualenv of this checkout (.venv)',
      command: 'python3 -m venv .venv && .venv/bin/pip install --disable-pip-version-check -r requirements.txt',
      cache: { key_paths: ['requirements.txt'], save_paths: ['~/.cache/pip'] },
      installs: null,
      env: (tree) => ({ VIRTUAL_ENV: path.join(tree, '.venv'), PATH: `${path.join(tree, '.venv', 'bin')}:` }),
    },
  },
  {
    file: 'Gemfile',
    manager: {
      detail: 'Gemfile: bundle install (into vendor/bundle)',
      command: 'bundle install',
      cache: { key_paths: ['Gemfile', 'Gemfile.lock'], save_paths: ['vendor/bundle'] },
      installs: null,
      env: (tree) => ({ BUNDLE_PATH: path.join(tree, 'vendor', 'bundle') }),
    },
  },
  {
    file: 'go.mod',
    manager: {
      detail: 'go.mod: go mod download',
      command: 'go mod download',
      cache: { key_paths: ['go.mod', 'go.sum'], save_paths: ['~/go/pkg/mod'] },
      installs: '~/go/pkg/mod',
      // Go makes its module cache read-only, which would keep the build's home from being removed.
      env: () => ({ GOFLAGS: '-modcacherw' }),
    },
  },
];

/** A regular file at the checkout's top (a symlink does not count: it could point anywhere). */
async function hasFile(tree: string, name: string): Promise<boolean> {
  const info = await lstat(path.join(tree, name)).catch(() => null);
  return info?.isFile() === true;
}

/** The package managers the checkout's files call for, in the order they install. */
export async function detectPackageManagers(tree: string): Promise<PackageManager[]> {
  const found: PackageManager[] = [];
  for (const { file, unless = [], manager } of MANAGERS) {
    if (!(await hasFile(tree, file))) continue;
    let shadowed = false;
    for (const other of unless) if (await hasFile(tree, other)) shadowed = true;
    if (!shadowed) found.push(manager);
  }
  return found;
}

/** One cache entry for every manager found: their key files and what they install, together. */
export function defaultCache(managers: readonly PackageManager[]): CacheSettings | null {
  if (managers.length === 0) return null;
  const unique = (xs: string[]) => [...new Set(xs)];
  return {
    key_paths: unique(managers.flatMap((m) => m.cache.key_paths)),
    save_paths: unique(managers.flatMap((m) => m.cache.save_paths)),
  };
}

/**
 * The variables of a worker's processes that its managers ask for. A PATH given here goes in
 * front of the base PATH (the caller joins them).
 */
export function packageEnv(managers: readonly PackageManager[], tree: string, home: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of managers) {
    for (const [name, value] of Object.entries(m.env(tree, home))) env[name] = name === 'PATH' ? (env.PATH ?? '') + value : value;
  }
  return env;
}
