import { branchNameProblem } from '../../../src/core/names';
import type { TriggerEvent } from '../../../src/core/types';
import { mediaType, parseDelivery, type Delivery } from '../../../src/providers/parse';
import { generic } from '../../../src/providers/generic';

/** A delivery to `/1/builds/<KEY>` (or, with `provider`, to the generic adapter under another name). */
type TriggerRequest = Delivery & { provider?: string };
type TriggerResult = { ok: true; event: TriggerEvent } | { ok: false; status: number; field: string; message: string };

function parseTrigger({ provider, ...delivery }: TriggerRequest): TriggerResult {
  const r = parseDelivery(provider === undefined ? generic : { ...generic, name: provider }, delivery);
  if (!r.ok) return r;
  if ('ignore' in r || r.events.length !== 1) throw new Error(`expected one event, got ${JSON.stringify(r)}`);
  return { ok: true, event: r.events[0] };
}

const JSON_CT = 'application/json';
const FORM_CT = 'application/x-www-form-urlencoded';

function parse(req: Partial<TriggerRequest>): TriggerResult {
  return parseTrigger({ contentType: undefined, body: undefined, ...req });
}

function event(req: Partial<TriggerRequest>): TriggerEvent {
  const r = parse(req);
  if (!r.ok) throw new Error(`expected ok, got ${r.field}: ${r.message}`);
  return r.event;
}

function json(body: unknown, extra: Partial<TriggerRequest> = {}): TriggerResult {
  return parse({ contentType: JSON_CT, body: JSON.stringify(body), ...extra });
}

function jsonEvent(body: unknown, extra: Partial<TriggerRequest> = {}): TriggerEvent {
  return event({ contentType: JSON_CT, body: JSON.stringify(body), ...extra });
}

function problem(r: TriggerResult): { field: string; message: string } {
  if (r.ok) throw new Error(`expected a problem, got ${JSON.stringify(r.event)}`);
  expect(r.status).toBe(400);
  return { field: r.field, message: r.message };
}

const DEFAULT_EVENT: TriggerEvent = {
  provider: 'builds',
  op: 'push',
  branch: 'master',
  head: 'HEAD',
  scm: 'git',
  force: false,
  queuePosition: 'tail',
  env: {},
};

describe('empty body', () => {
  it.each([
    ['undefined', undefined, undefined],
    ['null', null, undefined],
    ['empty string', '', undefined],
    ['empty buffer', Buffer.alloc(0), undefined],
    ['whitespace', ' \n\t', JSON_CT],
    ['empty with JSON content type', '', JSON_CT],
    ['empty with form content type', '', FORM_CT],
    ['empty with an odd content type', '', 'text/plain'],
  ])('%s builds master at HEAD', (_name, body, contentType) => {
    expect(event({ body, contentType })).toEqual(DEFAULT_EVENT);
  });

  it('builds tip on a Mercurial repository', () => {
    expect(event({ repoScm: 'hg' })).toEqual({ ...DEFAULT_EVENT, scm: 'hg', head: 'tip' });
  });

  it('takes the branch from ?branch=', () => {
    expect(event({ query: { branch: 'release/1.2' } }).branch).toBe('release/1.2');
  });

  it('treats an empty ?branch= as not given', () => {
    expect(event({ query: { branch: '' } }).branch).toBe('master');
  });

  it('rejects ?branch= given twice', () => {
    expect(problem(parse({ query: { branch: ['a', 'b'] } }))).toEqual({ field: 'query.branch', message: 'given more than once' });
  });

  it('rejects a bad ?branch=', () => {
    expect(problem(parse({ query: { branch: 'a..b' } })).field).toBe('query.branch');
  });

  it('records the provider', () => {
    expect(event({ provider: 'custom' }).provider).toBe('custom');
  });
});

describe('generic JSON', () => {
  it('reads every field of spec §2', () => {
    const e = jsonEvent({
      source: 'sluice',
      op: 'push',
      force: true,
      queue_position: 'head',
      scm: 'git',
      head: 'a'.repeat(40),
      branch: 'feature/x',
      ref: 'refs/pull/42/head',
      profile_name: 'nightly',
      full: true,
      refspec: ['+refs/heads/*:refs/remotes/origin/*', 'refs/pull/42/head'],
      changeset: { kind: 'github', id: '42', url: 'https://example.com/pr/42' },
      env: { FOO: 'bar', _X1: '' },
      queue: 'big-machines',
    });
    expect(e).toEqual({
      provider: 'builds',
      op: 'push',
      force: true,
      queuePosition: 'head',
      scm: 'git',
      head: 'a'.repeat(40),
      branch: 'feature/x',
      ref: 'refs/pull/42/head',
      profileName: 'nightly',
      full: true,
      refspec: ['+refs/heads/*:refs/remotes/origin/*', 'refs/pull/42/head'],
      changeset: { kind: 'github', id: '42', url: 'https://example.com/pr/42' },
      env: { FOO: 'bar', _X1: '' },
      queue: 'big-machines',
    });
  });

  it('applies the defaults to an empty object', () => {
    expect(jsonEvent({})).toEqual(DEFAULT_EVENT);
  });

  it('ignores unknown fields', () => {
    expect(jsonEvent({ branch: 'dev', whatever: { deep: [1, 2] }, commits: [] })).toEqual({ ...DEFAULT_EVENT, branch: 'dev' });
  });

  it('accepts a charset parameter and +json types', () => {
    expect(event({ contentType: 'application/json; charset=utf-8', body: '{"branch":"a"}' }).branch).toBe('a');
    expect(event({ contentType: 'Application/JSON', body: '{"branch":"b"}' }).branch).toBe('b');
    expect(event({ contentType: 'application/vnd.example+json', body: '{"branch":"c"}' }).branch).toBe('c');
  });

  it('accepts a Buffer body', () => {
    expect(event({ contentType: JSON_CT, body: Buffer.from('{"branch":"é"}') }).branch).toBe('é');
  });

  it('rejects a body that is not UTF-8', () => {
    expect(problem(parse({ contentType: JSON_CT, body: Buffer.from([0x7b, 0xff, 0x7d]) }))).toEqual({
      field: 'body',
      message: 'not valid UTF-8',
    });
  });

  it('treats null and "" as not given', () => {
    expect(jsonEvent({ branch: null, head: '', ref: null, profile_name: '', queue: null, force: null, env: null, scm: null })).toEqual(
      DEFAULT_EVENT,
    );
  });

  it('reads an empty scm as git', () => {
    expect(jsonEvent({ scm: '' })).toMatchObject({ scm: 'git', head: 'HEAD' });
  });

  it('defaults head to tip for hg', () => {
    expect(jsonEvent({ scm: 'hg' })).toMatchObject({ scm: 'hg', head: 'tip' });
  });

  it('uses the repository SCM when the body names none', () => {
    expect(jsonEvent({ branch: 'default' }, { repoScm: 'hg' })).toMatchObject({ scm: 'hg', head: 'tip', branch: 'default' });
  });

  it('refuses a body naming the other SCM', () => {
    expect(problem(json({ scm: 'git' }, { repoScm: 'hg' }))).toEqual({ field: 'scm', message: 'this repository uses hg' });
  });

  it('strips refs/heads/ from the branch', () => {
    expect(jsonEvent({ branch: 'refs/heads/main' }).branch).toBe('main');
  });

  it('lets the body branch win over ?branch=', () => {
    expect(jsonEvent({ branch: 'body' }, { query: { branch: 'query' } }).branch).toBe('body');
  });

  it('uses ?branch= when the body has none', () => {
    expect(jsonEvent({ force: true }, { query: { branch: 'query' } }).branch).toBe('query');
  });

  it('does not take the branch from ref', () => {
    expect(jsonEvent({ ref: 'refs/heads/other' })).toMatchObject({ branch: 'master', ref: 'refs/heads/other' });
  });

  it('defaults the changeset kind to generic', () => {
    expect(jsonEvent({ changeset: { id: '7' } }).changeset).toEqual({ kind: 'generic', id: '7' });
  });

  it.each(['github', 'gerrit', 'review', 'generic'])('accepts changeset kind %s', (kind) => {
    expect(jsonEvent({ changeset: { kind } }).changeset).toEqual({ kind });
  });

  describe('malformed bodies', () => {
    it('rejects bad JSON', () => {
      const p = problem(parse({ contentType: JSON_CT, body: '{"branch":' }));
      expect(p.field).toBe('body');
      expect(p.message).toMatch(/^invalid JSON/);
    });

    it.each([['[]'], ['[{"branch":"x"}]'], ['"master"'], ['42'], ['true'], ['null']])('rejects %s: not an object', (body) => {
      expect(problem(parse({ contentType: JSON_CT, body }))).toEqual({ field: 'body', message: 'expected a JSON object' });
    });

    it('refuses a non-empty body with no content type', () => {
      expect(problem(parse({ body: '{"branch":"x"}' })).field).toBe('content-type');
    });

    it('refuses a non-empty body of another content type', () => {
      const p = problem(parse({ contentType: 'text/plain', body: 'branch=x' }));
      expect(p.field).toBe('content-type');
      expect(p.message).toContain('"text/plain"');
    });
  });

  describe('wrong types name the field', () => {
    it.each<[string, unknown, string, string]>([
      ['force as string', { force: 'true' }, 'force', 'expected boolean'],
      ['force as number', { force: 1 }, 'force', 'expected boolean'],
      ['op other than push', { op: 'delete' }, 'op', 'expected "push"'],
      ['queue_position', { queue_position: 'middle' }, 'queue_position', 'expected one of "tail", "head"'],
      ['scm', { scm: 'svn' }, 'scm', 'expected one of "git", "hg", ""'],
      ['branch as number', { branch: 5 }, 'branch', 'expected string'],
      ['head as object', { head: {} }, 'head', 'expected string'],
      ['ref as array', { ref: ['a'] }, 'ref', 'expected string'],
      ['profile_name as bool', { profile_name: true }, 'profile_name', 'expected string'],
      ['full as string', { full: 'yes' }, 'full', 'expected boolean'],
      ['source as number', { source: 1 }, 'source', 'expected string'],
      ['refspec as string', { refspec: 'a' }, 'refspec', 'expected array'],
      ['refspec item', { refspec: ['a', 2] }, 'refspec.1', 'expected string'],
      ['changeset as string', { changeset: 'x' }, 'changeset', 'expected object'],
      ['changeset.kind', { changeset: { kind: 'gitlab' } }, 'changeset.kind', 'expected one of "github", "gerrit", "review", "generic"'],
      ['changeset.id as number', { changeset: { id: 42 } }, 'changeset.id', 'expected string'],
      ['changeset.url javascript:', { changeset: { url: 'javascript:alert(1)' } }, 'changeset.url', 'expected an http or https URL'],
      ['changeset.url not a URL', { changeset: { url: 'nope' } }, 'changeset.url', 'expected an http or https URL'],
      ['env as array', { env: ['A=b'] }, 'env', 'expected object'],
      ['env as string', { env: 'A=b' }, 'env', 'expected object'],
      ['env value number', { env: { A: 1 } }, 'env.A', 'expected string'],
      ['env value null', { env: { A: null } }, 'env.A', 'expected string'],
      ['env name with =', { env: { 'A=B': 'x' } }, 'env.A=B', 'not a valid variable name: upper-case letters, digits and _, not starting with a digit'],
      ['env name starting with digit', { env: { '1A': 'x' } }, 'env.1A', 'not a valid variable name: upper-case letters, digits and _, not starting with a digit'],
      ['env value with NUL', { env: { A: 'x\u0000y' } }, 'env.A', 'must not contain NUL'],
      ['env LD_PRELOAD', { env: { LD_PRELOAD: '/tmp/x.so' } }, 'env.LD_PRELOAD', 'is not allowed in a trigger: LD_… variables change how programs load, run or connect'],
      ['env HTTPS_PROXY', { env: { HTTPS_PROXY: 'http://evil.example:3128' } }, 'env.HTTPS_PROXY', 'is not allowed in a trigger: proxy variables change where programs connect'],
      ['env lower-case name', { env: { path: '/tmp' } }, 'env.path', 'not a valid variable name: upper-case letters, digits and _, not starting with a digit'],
      ['env value over 4 KiB', { env: { A: 'x'.repeat(4097) } }, 'env.A', 'must be at most 4096 bytes'],
      ['queue as number', { queue: 3 }, 'queue', 'expected string'],
    ])('%s', (_name, body, field, message) => {
      expect(problem(json(body))).toEqual({ field, message });
    });

    it('rejects an env __proto__ key without touching any prototype', () => {
      const p = problem(parse({ contentType: JSON_CT, body: '{"env":{"__proto__":{"polluted":"yes"}}}' }));
      expect(p.field).toBe('env.__proto__');
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });

    it('rejects too many refspecs', () => {
      expect(problem(json({ refspec: Array.from({ length: 65 }, (_, i) => `r${i}`) }))).toEqual({
        field: 'refspec',
        message: 'must have at most 64 items',
      });
    });

    it('rejects too many env variables', () => {
      const env = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`V${i}`, 'x']));
      expect(problem(json({ env })).field).toBe('env');
    });
  });

  describe('names that could reach git as options or garbage', () => {
    it.each<[string, Record<string, unknown>, string]>([
      ['head starting with -', { head: '--upload-pack=evil' }, 'head'],
      ['head with a space', { head: 'a b' }, 'head'],
      ['head with a newline', { head: 'a\nb' }, 'head'],
      ['ref starting with -', { ref: '-x' }, 'ref'],
      ['profile_name with a tab', { profile_name: 'a\tb' }, 'profile_name'],
      ['refspec starting with -', { refspec: ['ok', '--force'] }, 'refspec.1'],
      ['head too long', { head: 'a'.repeat(256) }, 'head'],
      ['queue with a space', { queue: 'a b' }, 'queue'],
      ['queue starting with -', { queue: '-q' }, 'queue'],
      ['queue too long', { queue: 'q'.repeat(201) }, 'queue'],
      ['changeset.id with control', { changeset: { id: 'a\u0007' } }, 'changeset.id'],
    ])('rejects %s', (_name, body, field) => {
      expect(problem(json(body)).field).toBe(field);
    });

    it('accepts a 255-byte head', () => {
      expect(jsonEvent({ head: 'a'.repeat(255) }).head).toHaveLength(255);
    });
  });
});

describe('Mercurial changegroup hook', () => {
  it('reads the hook body', () => {
    const body = { source: 'sluice', op: 'push', force: false, branch: 'default', ref: 'default', head: '0123456789ab' };
    expect(jsonEvent(body, { repoScm: 'hg' })).toEqual({
      ...DEFAULT_EVENT,
      scm: 'hg',
      branch: 'default',
      ref: 'default',
      head: '0123456789ab',
    });
  });

  it('reads the hook body with scm given', () => {
    expect(jsonEvent({ source: 'sluice', op: 'push', force: false, scm: 'hg', branch: 'stable', ref: 'stable' })).toMatchObject({
      scm: 'hg',
      head: 'tip',
      branch: 'stable',
    });
  });
});

describe('form-encoded', () => {
  function form(fields: Record<string, string> | string, extra: Partial<TriggerRequest> = {}): TriggerResult {
    const body = typeof fields === 'string' ? fields : new URLSearchParams(fields).toString();
    return parse({ contentType: FORM_CT, body, ...extra });
  }
  function formEvent(fields: Record<string, string> | string, extra: Partial<TriggerRequest> = {}): TriggerEvent {
    const r = form(fields, extra);
    if (!r.ok) throw new Error(`${r.field}: ${r.message}`);
    return r.event;
  }

  it('reads branch, head and force', () => {
    expect(formEvent({ branch: 'dev', head: 'abc123', force: 'true' })).toEqual({ ...DEFAULT_EVENT, branch: 'dev', head: 'abc123', force: true });
  });

  it('accepts a charset parameter', () => {
    expect(event({ contentType: `${FORM_CT}; charset=UTF-8`, body: 'branch=x' }).branch).toBe('x');
  });

  it.each([
    ['true', true],
    ['TRUE', true],
    ['false', false],
    ['', false],
  ])('force=%s', (value, expected) => {
    expect(formEvent({ force: value }).force).toBe(expected);
  });

  it('rejects other force values', () => {
    expect(problem(form({ force: 'yes' }))).toEqual({ field: 'force', message: 'expected "true" or "false"' });
  });

  it('takes the branch from payload.ref', () => {
    expect(formEvent({ payload: JSON.stringify({ ref: 'refs/heads/feature/y', after: 'abc' }) }).branch).toBe('feature/y');
  });

  it('prefers the branch field over payload.ref', () => {
    expect(formEvent({ branch: 'field', payload: JSON.stringify({ ref: 'refs/heads/payload' }) }).branch).toBe('field');
  });

  it('prefers payload.ref over ?branch=', () => {
    expect(formEvent({ payload: JSON.stringify({ ref: 'refs/heads/payload' }) }, { query: { branch: 'q' } }).branch).toBe('payload');
  });

  it('uses ?branch= when the form names no branch', () => {
    expect(formEvent({ head: 'abc' }, { query: { branch: 'q' } }).branch).toBe('q');
  });

  it('uses master when the payload has no ref', () => {
    expect(formEvent({ payload: '{}' }).branch).toBe('master');
  });

  it('rejects a payload that is not JSON', () => {
    const p = problem(form({ payload: '{nope' }));
    expect(p.field).toBe('payload');
    expect(p.message).toMatch(/^invalid JSON/);
  });

  it('rejects a payload that is not an object', () => {
    expect(problem(form({ payload: '[1]' }))).toEqual({ field: 'payload', message: 'expected a JSON object' });
  });

  it('rejects a tag ref in the payload', () => {
    expect(problem(form({ payload: JSON.stringify({ ref: 'refs/tags/v1' }) }))).toEqual({
      field: 'payload.ref',
      message: 'expected refs/heads/<branch>',
    });
  });

  it('rejects a payload ref of the wrong type', () => {
    expect(problem(form({ payload: JSON.stringify({ ref: 5 }) }))).toEqual({ field: 'payload.ref', message: 'expected string' });
  });

  it('names payload.ref when its branch is invalid', () => {
    expect(problem(form({ payload: JSON.stringify({ ref: 'refs/heads/a..b' }) })).field).toBe('payload.ref');
  });

  it('rejects a field given twice', () => {
    expect(problem(form('branch=a&branch=b'))).toEqual({ field: 'branch', message: 'given more than once' });
  });

  it('ignores unknown fields', () => {
    expect(formEvent({ branch: 'x', colour: 'blue' })).toEqual({ ...DEFAULT_EVENT, branch: 'x' });
  });

  it('rejects a head that could be an option', () => {
    expect(problem(form({ head: '-x' })).field).toBe('head');
  });

  it('decodes percent-encoding and +', () => {
    expect(formEvent('branch=feature%2Fz&head=a%2Bb').branch).toBe('feature/z');
  });
});

describe('branch names', () => {
  it.each(['master', 'main', 'feature/x', 'release-1.2', 'user/j.doe/fix_1', 'a@b', 'é', 'x'.repeat(255)])('accepts %j', (name) => {
    expect(branchNameProblem(name)).toBeUndefined();
  });

  it.each([
    ['', 'must not be empty'],
    ['x'.repeat(256), 'must be at most 255 bytes'],
    ['é'.repeat(128), 'must be at most 255 bytes'],
    ['a b', 'must not contain whitespace'],
    ['a\u0001b', 'must not contain control characters'],
    ['a\u007fb', 'must not contain control characters'],
    ['-x', 'must not start with "-"'],
    ['a..b', 'must not contain ".."'],
    ['a~1', 'must not contain any of ~ ^ : ? * [ \\'],
    ['a^', 'must not contain any of ~ ^ : ? * [ \\'],
    ['a:b', 'must not contain any of ~ ^ : ? * [ \\'],
    ['a?', 'must not contain any of ~ ^ : ? * [ \\'],
    ['a*', 'must not contain any of ~ ^ : ? * [ \\'],
    ['a[b', 'must not contain any of ~ ^ : ? * [ \\'],
    ['a\\b', 'must not contain any of ~ ^ : ? * [ \\'],
    ['@', 'must not be "@" or contain "@{"'],
    ['a@{1}', 'must not be "@" or contain "@{"'],
    ['/a', 'must not start or end with "/" or contain "//"'],
    ['a/', 'must not start or end with "/" or contain "//"'],
    ['a//b', 'must not start or end with "/" or contain "//"'],
    ['a.', 'must not end with "."'],
    ['.a', 'no part may start with "."'],
    ['a/.b', 'no part may start with "."'],
    ['a.lock', 'no part may end with ".lock"'],
    ['a.lock/b', 'no part may end with ".lock"'],
  ])('rejects %j', (name, message) => {
    expect(branchNameProblem(name)).toBe(message);
  });

  it('names the field in a trigger', () => {
    expect(problem(json({ branch: 'a b' }))).toEqual({ field: 'branch', message: 'must not contain whitespace' });
  });

  it('checks the branch left after stripping refs/heads/', () => {
    expect(problem(json({ branch: 'refs/heads/' }))).toEqual({ field: 'branch', message: 'must not be empty' });
  });
});

describe('mediaType', () => {
  it.each([
    [undefined, ''],
    ['', ''],
    ['application/json', 'application/json'],
    [' Application/JSON ; charset=utf-8', 'application/json'],
  ])('%j → %j', (input, expected) => {
    expect(mediaType(input)).toBe(expected);
  });
});
