// What the audit trail keeps of a request body (src/api/access/audit.ts): secrets only as set,
// at any depth; credentials cut from URLs; long text and deep structures cut.
import { auditDetails } from '../../src/api/access/audit';

it('keeps what changed and blanks every secret, however deep', () => {
  expect(
    auditDetails({
      _csrf: 'x',
      name: 'master',
      value: 'npm_s3cr3t',
      password: 'hunter2',
      webhook_secret: 'whsec',
      hooks: { pre_setup: 'make deps' },
      services: [{ kind: 'postgresql', env: { PGPASSWORD: 'p' } }],
      profiles: [{ name: 'ci', env: { API_TOKEN: 't' } }],
      chat_url: 'https://user:pa55@chat.example/hook',
    }),
  ).toEqual({
    name: 'master',
    value: '(set)',
    password: '(set)',
    webhook_secret: '(set)',
    hooks: { pre_setup: 'make deps' },
    services: [{ kind: 'postgresql', env: '(set)' }],
    profiles: [{ name: 'ci', env: '(set)' }],
    chat_url: 'https://(set)@chat.example/hook',
  });
  expect(JSON.stringify(auditDetails({ closure: 'x'.repeat(5000) })).length).toBeLessThan(300);
  expect(auditDetails(undefined)).toEqual({});
  expect(auditDetails('text')).toEqual({});
});
