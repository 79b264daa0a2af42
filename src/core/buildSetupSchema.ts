/**
 * The rules of a build's setup keys (`hooks`, `cache`, `services`, `artifacts`, `image`), one zod schema
 * for sluice.yml (core/sluiceYml.ts, which words its errors with the line) and the suites API
 * alike, so both refuse the same mistakes. What the keys mean is in core/buildSetup.ts. Uses zod: workflow code
 * must not import this file (it gets the parsed settings).
 */
import { z } from 'zod';
import { parseImageRef } from './imageRef';
import { HOOK_NAMES, MAX_ARTIFACT_PATTERNS, MAX_CACHE_PATHS, MAX_HOOK_COMMAND, SERVICE_NAMES, type BuildSetupSettings, type HookName, type HookSettings } from './buildSetup';

const MAX_PATH = 1_000;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f\x7f]/;
// eslint-disable-next-line no-control-regex
const CONTROL_BUT_NEWLINE_AND_TAB = /[\x00-\x08\x0b-\x1f\x7f]/;

/** A hook's command: shell text run with `sh -c`; several lines are fine. */
const command = z
  .string({ error: 'must be a command (a string run with sh -c)' })
  .trim()
  .min(1, 'must not be empty (leave the hook out, or null, for none)')
  .max(MAX_HOOK_COMMAND, `must be at most ${MAX_HOOK_COMMAND} characters`)
  .refine((c) => !CONTROL_BUT_NEWLINE_AND_TAB.test(c), 'must not contain control characters');

const hook = command.nullable().optional();
export const hooksSchema = z.strictObject(
  {
    pre_setup: hook,
    package_setup: z.union([command, z.literal(false)], { error: 'must be a command, or false for no package setup' }).nullable().optional(),
    worker_setup: hook,
    post_setup: hook,
    post_worker: hook,
    post_build: hook,
  },
  { error: `must be a mapping of hook names (${HOOK_NAMES.join(', ')}) to commands` },
);

/** Why a path of the checkout (or of the home, with `~/`) is not acceptable, or null. */
function pathProblem(p: string, allowHome: boolean): string | null {
  if (CONTROL.test(p)) return 'must not contain control characters';
  const rest = allowHome && p.startsWith('~/') ? p.slice(2) : p;
  if (rest.startsWith('/') || rest.startsWith('~') || /^[a-zA-Z]:/.test(rest)) {
    return allowHome ? 'must be relative to the checkout, or start with ~/ for the build\'s home' : 'must be relative to the checkout';
  }
  const segments = rest.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.length === 0) return 'must name something inside, not the whole directory';
  if (segments.includes('..')) return "must not contain '..'";
  if (segments[0] === '.git') return 'must not be inside .git';
  return null;
}

const path = (allowHome: boolean) =>
  z
    .string({ error: 'must be a path (a string)' })
    .trim()
    .min(1, 'must not be empty')
    .max(MAX_PATH, `must be at most ${MAX_PATH} characters`)
    .superRefine((p, ctx) => {
      const problem = pathProblem(p, allowHome);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });

const pathList = (allowHome: boolean, what: string) =>
  z
    .array(path(allowHome), { error: `must be a list of ${what}` })
    .min(1, `must list at least one ${what.replace(/s$/, '')}`)
    .max(MAX_CACHE_PATHS, `must list at most ${MAX_CACHE_PATHS} ${what}`);

export const cacheSchema = z
  .union(
    [
      z.strictObject(
        { key_paths: pathList(false, 'files'), save_paths: pathList(true, 'paths'), link: z.boolean({ error: 'must be true or false' }).optional() },
        { error: 'must be a mapping with key_paths and save_paths' },
      ),
      z.literal(false),
    ],
    { error: 'must be a mapping with key_paths and save_paths, or false for no cache' },
  )
  .nullable();

export const servicesSchema = z
  .array(z.enum(SERVICE_NAMES, { error: `must be one of ${SERVICE_NAMES.join(', ')}` }), {
    error: `must be a list of services (${SERVICE_NAMES.join(', ')})`,
  })
  .max(SERVICE_NAMES.length)
  .refine((names) => new Set(names).size === names.length, 'must not list a service twice');

/** Globs of files to keep after each worker's tests, relative to the checkout. */
export const artifactsSchema = z
  .array(path(false), { error: 'must be a list of glob patterns' })
  .max(MAX_ARTIFACT_PATTERNS, `must list at most ${MAX_ARTIFACT_PATTERNS} patterns`);

/** An OCI image reference (`node:22`, `registry.example.com/team/ci:3@sha256:…`); null: none. */
export const imageSchema = z
  .string({ error: 'must be an image reference (a string such as node:22), or null for none' })
  .trim()
  .superRefine((text, ctx) => {
    const parsed = parseImageRef(text);
    if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.error });
  })
  .nullable();

/** Hooks as validated, minus what says nothing (`package_setup: null` is detection, as if left out). */
export function hookSettingsOf(hooks: z.infer<typeof hooksSchema>): HookSettings {
  const { package_setup, ...others } = hooks;
  const out: HookSettings = {};
  for (const [name, value] of Object.entries(others) as [Exclude<HookName, 'package_setup'>, string | null | undefined][]) {
    if (value !== undefined) out[name] = value;
  }
  if (package_setup !== undefined && package_setup !== null) out.package_setup = package_setup;
  return out;
}

/** The five keys, each optional, as sluice.yml and the suites API take them. */
export const buildSetupShape = {
  hooks: hooksSchema.nullable().optional(),
  cache: cacheSchema.optional(),
  services: servicesSchema.nullable().optional(),
  artifacts: artifactsSchema.nullable().optional(),
  image: imageSchema.optional(),
} as const;

/**
 * Settings as validated (nulls mean "none here": a hook turned off, no cache, no services, no
 * artifacts) into what core/buildSetup.ts resolves. A `package_setup: null` means "detect",
 * the same as leaving it out.
 */
export function setupSettingsOf(parsed: {
  hooks?: z.infer<typeof hooksSchema> | null;
  cache?: { key_paths: string[]; save_paths: string[] } | false | null;
  services?: (typeof SERVICE_NAMES)[number][] | null;
  artifacts?: string[] | null;
  image?: string | null;
}): BuildSetupSettings {
  const out: BuildSetupSettings = {};
  if (parsed.hooks !== undefined) out.hooks = hookSettingsOf(parsed.hooks ?? {});
  if (parsed.cache !== undefined) out.cache = parsed.cache;
  if (parsed.services !== undefined) out.services = parsed.services ?? [];
  if (parsed.artifacts !== undefined) out.artifacts = parsed.artifacts ?? [];
  if (parsed.image !== undefined) out.image = parsed.image;
  return out;
}
