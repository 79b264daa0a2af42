/**
 * What one delivery may ask for (providers/parse.ts): refs a delivery changes (each is a
 * session with its own events) and form fields (parsed in one pass), refused with 400 and a
 * clear message beyond their caps.
 */
import { MAX_FORM_FIELDS, MAX_REFS_PER_DELIVERY, parseDelivery } from '../../../src/providers/parse';
import { generic } from '../../../src/providers/generic';
import { stash } from '../../../src/providers/stash';
import { fixture } from './helpers';

const JSON_CT = 'application/json';

/** A Bitbucket Server push changing `n` branches. */
function refsChanged(n: number): string {
  const body = fixture('stash', 'repo-refs-changed-multi');
  const [change] = body.changes as Array<Record<string, unknown>>;
  body.changes = Array.from({ length: n }, (_, i) => ({
    ...change,
    ref: { id: `refs/heads/b${i}`, displayId: `b${i}`, type: 'BRANCH' },
    refId: `refs/heads/b${i}`,
  }));
  return JSON.stringify(body);
}

describe('refs per delivery', () => {
  const deliver = (n: number) => parseDelivery(stash, { contentType: JSON_CT, body: refsChanged(n), headers: { 'x-event-key': 'repo:refs_changed' } });

  it(`builds up to ${MAX_REFS_PER_DELIVERY} refs of one delivery`, () => {
    const r = deliver(MAX_REFS_PER_DELIVERY);
    expect(r.ok && 'events' in r && r.events.length).toBe(MAX_REFS_PER_DELIVERY);
  });

  it('refuses a delivery that changes more, saying how many', () => {
    expect(deliver(8000)).toEqual({
      ok: false,
      status: 400,
      field: 'body',
      message: `this delivery changes 8000 refs; Sluice builds at most ${MAX_REFS_PER_DELIVERY} from one delivery (push fewer refs at a time)`,
    });
  });
});

describe('form fields', () => {
  const form = (body: string) => parseDelivery(generic, { contentType: 'application/x-www-form-urlencoded', body });

  it('reads a form of up to the cap, repeats included', () => {
    const fields = ['branch=dev', ...Array.from({ length: MAX_FORM_FIELDS - 1 }, (_, i) => `x${i % 7}=${i}`)].join('&');
    expect(form(fields)).toMatchObject({ ok: true, events: [expect.objectContaining({ branch: 'dev' })] });
  });

  it('refuses more fields', () => {
    const fields = Array.from({ length: MAX_FORM_FIELDS + 1 }, (_, i) => `f${i}=x`).join('&');
    expect(form(fields)).toEqual({ ok: false, status: 400, field: 'body', message: `a form may have at most ${MAX_FORM_FIELDS} fields` });
  });
});
