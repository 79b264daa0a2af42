import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import examples from '@octokit/webhooks-examples';
import { branchNameProblem } from '../../../src/core/names';
import { providers } from '../../../src/providers';
import type { ProviderResult } from '../../../src/providers/types';
import { fixture } from './helpers';

/**
 * Thousands of mutated real payloads through every adapter: each answer is a well-formed
 * result (never an exception), and every trigger holds only names git can take safely.
 */

// A small seeded generator (mulberry32), so a failure replays.
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NASTY: unknown[] = [
  null,
  undefined,
  0,
  -1,
  1e308,
  true,
  '',
  ' ',
  '-x',
  '--upload-pack=touch /tmp/pwned',
  'refs/heads/../../etc',
  'refs/heads/a\u0000b',
  'refs/heads/\u202e',
  'refs/tags/',
  'refs/heads/',
  'x'.repeat(5000),
  '0000000000000000000000000000000000000000',
  'constructor',
  '__proto__',
  'refs/heads/main',
  'refs/tags/v1',
  'deadbeef',
  'javascript:alert(1)',
  [],
  [{}],
  {},
  { __proto__: { polluted: true } },
];

function mutate(value: unknown, random: () => number, depth = 0): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  if (random() < 0.04) return pick(NASTY);
  if (Array.isArray(value)) {
    const out = value.map((v) => mutate(v, random, depth + 1));
    if (random() < 0.05) out.push(pick(NASTY));
    if (random() < 0.05) out.splice(0, 1);
    return out;
  }
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (random() < 0.04) continue;
      out[k] = depth > 12 ? v : mutate(v, random, depth + 1);
    }
    if (random() < 0.03) out[pick(['type', 'ref', 'action', 'refChanges', 'newrev', 'payload', 'object_kind'])] = pick(NASTY);
    return out;
  }
  if (typeof value === 'string' && random() < 0.05) return value + pick(['..', '\n', ' ', '~', '.lock', '@{', '/']);
  return value;
}

const HEADERS: Record<string, { header: string; events: string[] }> = {
  github: { header: 'x-github-event', events: ['push', 'create', 'delete', 'pull_request', 'ping', 'issues'] },
  gitlab: { header: 'x-gitlab-event', events: ['Push Hook', 'Tag Push Hook', 'Merge Request Hook', 'System Hook', 'Note Hook'] },
  bitbucket: { header: 'x-event-key', events: ['repo:push', 'pullrequest:created', 'pullrequest:updated', 'pullrequest:fulfilled', 'pullrequest:rejected', 'repo:fork'] },
  stash: { header: 'x-event-key', events: ['repo:refs_changed', 'pr:opened', 'pr:from_ref_updated', 'pr:merged', 'pr:declined', 'diagnostics:ping', ''] },
  gitea: { header: 'x-gitea-event', events: ['push', 'create', 'delete', 'pull_request', 'issues'] },
  gogs: { header: 'x-gogs-event', events: ['push', 'create', 'delete', 'pull_request', 'release'] },
  gerrit: { header: 'x-unused', events: [''] },
};

function seeds(provider: string): unknown[] {
  if (provider === 'github') {
    return examples.filter((d) => ['push', 'create', 'delete', 'pull_request', 'ping'].includes(d.name)).flatMap((d) => d.examples as unknown[]);
  }
  const dir = join(__dirname, '../../fixtures/providers', provider);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => fixture(provider, f.replace(/\.json$/, '')));
}

const KINDS = new Set(['push', 'branch-create', 'branch-delete', 'tag', 'tag-delete', 'pull-request']);

/** Why `result` is not well-formed, or undefined. Plain checks: `expect` per field is slow at this volume. */
function resultProblem(result: ProviderResult): string | undefined {
  const SHA = /^[0-9a-f]{7,64}$/i;
  if (!result.ok) {
    if (result.status !== 400 && result.status !== 422) return `status ${result.status}`;
    if (typeof result.field !== 'string' || result.field === '') return 'no field';
    // Answers stay short whatever the input: nothing huge is echoed back.
    if (typeof result.message !== 'string' || result.message.length === 0 || result.message.length > 400) return `message ${result.message}`;
    return undefined;
  }
  if ('ignore' in result) return typeof result.ignore === 'string' && result.ignore.length < 400 ? undefined : `ignore ${result.ignore}`;
  if (result.triggers.length === 0) return 'no triggers';
  for (const t of result.triggers) {
    if (t.kind === undefined || !KINDS.has(t.kind)) return `kind ${t.kind}`;
    if (t.branch !== null && branchNameProblem(t.branch)) return `branch ${t.branch}`;
    if (t.head !== null && !SHA.test(t.head)) return `head ${t.head}`;
    if (t.ref !== null && (!t.ref.startsWith('refs/') || branchNameProblem(t.ref))) return `ref ${t.ref}`;
    if (t.scm !== 'git' && t.scm !== 'hg') return `scm ${t.scm}`;
    if ((t.kind === 'pull-request') !== (t.pullRequest !== undefined)) return 'pullRequest present iff kind pull-request';
    if (t.kind.endsWith('-delete') && t.head !== null) return 'a delete with a head';
    for (const c of t.commits) {
      if (!SHA.test(c.id) || typeof c.message !== 'string' || typeof c.author !== 'string') return `commit ${JSON.stringify(c)}`;
    }
    if (t.pullRequest?.url !== undefined && !/^https?:\/\//.test(t.pullRequest.url)) return `url ${t.pullRequest.url}`;
  }
  return undefined;
}

// The hosting providers; the generic format (`builds`: no event header, heads like `HEAD`, any
// ref) has its own tests (generic.test.ts) and goes through the HTTP fuzz (triggers-fuzz).
describe.each(Object.keys(providers).filter((name) => name !== 'builds'))('fuzz: %s', (name) => {
  const adapter = providers[name]!;
  const { header, events } = HEADERS[name]!;
  const bodies = seeds(name);

  it('answers 2000 mutated payloads with a well-formed result', () => {
    const random = rng([...name].reduce((h, ch) => h * 31 + ch.charCodeAt(0), 7));
    const outcomes = { trigger: 0, ignore: 0, problem: 0 };
    for (let i = 0; i < 2000; i++) {
      const seed = bodies[i % bodies.length];
      const event = events[Math.floor(random() * events.length)]!;
      const body = mutate(seed, random);
      const query = random() < 0.2 ? { branch: String(NASTY[Math.floor(random() * NASTY.length)]) } : {};
      const headers = { [header]: event || undefined };
      let result: ProviderResult;
      try {
        result = adapter.parse({ headers, body, query });
      } catch (err) {
        throw new Error(`${name} threw on case ${i} (${event}): ${JSON.stringify(body).slice(0, 2000)}`, { cause: err });
      }
      const problem = resultProblem(result);
      if (problem) throw new Error(`${name} case ${i} (${event}): ${problem}\n${JSON.stringify(result).slice(0, 1000)}`);
      if (!result.ok) outcomes.problem++;
      else if ('ignore' in result) outcomes.ignore++;
      else outcomes.trigger++;
    }
    // The mutations are mild enough that real payloads still get through now and then.
    expect(outcomes.trigger).toBeGreaterThan(100);
    expect(outcomes.problem).toBeGreaterThan(100);
  });

  it('answers non-object bodies with 400 body', () => {
    for (const body of [null, undefined, 'x', 1, true, [], [1]]) {
      const result = adapter.parse({ headers: { [header]: events[0] }, body, query: {} });
      expect(result).toMatchObject({ ok: false, status: 400, field: 'body' });
    }
  });
});
