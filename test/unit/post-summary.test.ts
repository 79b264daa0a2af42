/**
 * What the chat message and the e-mail say: pure builders of post/summary.ts.
 */
import { buildLabel, chatMessage, countsText, emailSubject, emailText, escapeMrkdwn, totalTests } from '../../src/activities/post/summary';
import type { BuildSummary } from '../../src/activities/types';
import { emptyCounts } from '../../src/core/counts';

function summary(overrides: Partial<BuildSummary> = {}): BuildSummary {
  return {
    session: 12,
    repo: { orgName: 'acme', name: 'app' },
    branch: 'master',
    commitId: '0123456789abcdef0123456789abcdef01234567',
    status: 'passed',
    reason: null,
    counts: { ...emptyCounts(), passed: 3 },
    url: 'https://ci.acme.test/1/reports/12',
    profileName: 'default',
    ...overrides,
  };
}

const blockTexts = (blocks: unknown[]): string => JSON.stringify(blocks);

describe('counts', () => {
  it('names the four that always matter, and the file total', () => {
    expect(countsText({ ...emptyCounts(), passed: 3, failed: 1 })).toBe('3 passed, 1 failed, 0 errors, 0 skipped (4 test files)');
    expect(countsText({ ...emptyCounts(), error: 1 })).toBe('0 passed, 0 failed, 1 error, 0 skipped (1 test file)');
  });

  it('adds not started, running and pending only when a build left some', () => {
    expect(countsText({ ...emptyCounts(), passed: 1, notstarted: 2, started: 1, pending: 4 })).toBe(
      '1 passed, 0 failed, 0 errors, 0 skipped, 2 not started, 1 running, 4 pending (8 test files)',
    );
    expect(totalTests({ notstarted: 1, started: 1, passed: 1, failed: 1, pending: 1, skipped: 1, error: 1 })).toBe(7);
  });
});

describe('chat message', () => {
  it('has status, counts, the report link, repository @ branch and commit in text and blocks', () => {
    const m = chatMessage(summary());
    expect(m.text).toBe(
      ':white_check_mark: acme/app @ master #12 passed: 3 passed, 0 failed, 0 errors, 0 skipped (3 test files), commit 0123456789ab (<https://ci.acme.test/1/reports/12|report>)',
    );
    expect(m.blocks[0]).toEqual({
      type: 'section',
      text: { type: 'mrkdwn', text: ':white_check_mark: *<https://ci.acme.test/1/reports/12|acme/app @ master #12>* passed' },
    });
    expect(m.blocks[1]).toEqual({
      type: 'section',
      fields: [
        { type: 'mrkdwn', text: '*Status*\npassed' },
        { type: 'mrkdwn', text: '*Commit*\n0123456789ab' },
        { type: 'mrkdwn', text: '*Tests*\n3 passed, 0 failed, 0 errors, 0 skipped (3 test files)' },
        { type: 'mrkdwn', text: '*Profile*\ndefault' },
      ],
    });
    expect(m.blocks).toHaveLength(2);
    // Serializable as the webhook body.
    expect(JSON.parse(JSON.stringify(m))).toEqual(m);
  });

  it('marks each status its own way', () => {
    expect(chatMessage(summary({ status: 'failed' })).text).toMatch(/^:x: /);
    expect(chatMessage(summary({ status: 'error' })).text).toMatch(/^:warning: /);
    expect(chatMessage(summary({ status: 'skipped' })).text).toMatch(/^:fast_forward: /);
    expect(chatMessage(summary({ status: 'stopped' })).text).toMatch(/^:black_square_for_stop: /);
  });

  it('lists the first failing files, then how many more', () => {
    const failing = Array.from({ length: 12 }, (_, i) => ({ path: `test/t${String(i).padStart(2, '0')}_test.sh`, status: i % 2 ? 'error' : 'failed' }));
    const m = chatMessage(summary({ status: 'failed', counts: { ...emptyCounts(), failed: 6, error: 6 } }), failing);
    const section = m.blocks[2] as { text: { text: string } };
    expect(section.text.text.split('\n')).toEqual([
      '*Failing*',
      ...failing.slice(0, 10).map((t) => `• ${t.path} (${t.status})`),
      '… and 2 more',
    ]);
  });

  it('shows the reason on one line, and a build without a commit', () => {
    const m = chatMessage(summary({ status: 'error', commitId: null, reason: 'could not pull:\nPermission denied' }));
    expect(m.text).toContain('commit (none)');
    expect(m.blocks[m.blocks.length - 1]).toEqual({ type: 'context', elements: [{ type: 'mrkdwn', text: 'could not pull: Permission denied' }] });
  });

  it('strips a terminal’s colours from the reason, in chat and e-mail alike (issue 37)', () => {
    const reason = 'hook setup failed:\n\u001b[31m\u001b[1mnpm ERR!\u001b[22m\u001b[39m missing script';
    const m = chatMessage(summary({ status: 'error', reason }));
    expect(m.blocks[m.blocks.length - 1]).toEqual({ type: 'context', elements: [{ type: 'mrkdwn', text: 'hook setup failed: npm ERR! missing script' }] });
    expect(emailText(summary({ status: 'error', reason }))).toContain('Reason:  hook setup failed: npm ERR! missing script\n');
  });

  it('escapes what Slack would read as links or mentions, everywhere', () => {
    expect(escapeMrkdwn('a <b> & <!channel>')).toBe('a &lt;b&gt; &amp; &lt;!channel&gt;');
    const m = chatMessage(
      summary({ branch: 'x<!here>', reason: '<https://evil.test|click>', repo: { orgName: 'a&b', name: 'r' } }),
      [{ path: 'test/<@U123>.sh', status: 'failed' }],
    );
    const all = m.text + blockTexts(m.blocks);
    expect(all).not.toContain('<!here>');
    expect(all).not.toContain('<@U123>');
    expect(all).not.toContain('<https://evil.test');
    expect(all).toContain('x&lt;!here&gt;');
    expect(all).toContain('a&amp;b/r');
  });

  it('keeps a link intact whatever the report URL holds', () => {
    const m = chatMessage(summary({ url: 'https://ci.test/1/reports/12?a=1&b=<x>|y' }));
    expect(m.text).toContain('<https://ci.test/1/reports/12?a=1&amp;b=%3Cx%3E%7Cy|report>');
  });

  it('omits the profile field when there is none', () => {
    const { profileName: _, ...rest } = summary();
    const fields = (chatMessage(rest).blocks[1] as { fields: unknown[] }).fields;
    expect(fields).toHaveLength(3);
  });
});

describe('e-mail', () => {
  it('subject: [Sluice] org/repo branch #session status', () => {
    expect(emailSubject(summary())).toBe('[Sluice] acme/app master #12 passed');
    expect(emailSubject(summary({ status: 'failed', branch: 'feature/x', session: 7 }))).toBe('[Sluice] acme/app feature/x #7 failed');
  });

  it('body: status, commit, counts, failing files and the report link', () => {
    const text = emailText(summary({ status: 'failed', counts: { ...emptyCounts(), passed: 1, failed: 1, error: 1 } }), [
      { path: 'test/b_test.sh', status: 'failed' },
      { path: 'test/c_test.sh', status: 'error' },
    ]);
    expect(text).toBe(
      [
        'acme/app @ master #12: failed',
        '',
        'Status:  failed',
        'Commit:  0123456789abcdef0123456789abcdef01234567',
        'Profile: default',
        'Tests:   1 passed, 1 failed, 1 error, 0 skipped (3 test files)',
        '',
        'Failing test files:',
        '  failed  test/b_test.sh',
        '  error   test/c_test.sh',
        '',
        'Report:  https://ci.acme.test/1/reports/12',
        '',
        '-- ',
        'Sluice',
        '',
      ].join('\n'),
    );
  });

  it('body: the reason, on one line, and no failing section when nothing failed', () => {
    const text = emailText(summary({ status: 'error', reason: 'no file matches\nthe pattern' }));
    expect(text).toContain('Reason:  no file matches the pattern\n');
    expect(text).not.toContain('Failing');
  });

  it('body: caps a long list of failing files', () => {
    const failing = Array.from({ length: 105 }, (_, i) => ({ path: `t/${i}.sh`, status: 'failed' }));
    const text = emailText(summary({ status: 'failed' }), failing);
    expect(text.match(/^ {2}failed {2}t\//gm)).toHaveLength(100);
    expect(text).toContain('  … and 5 more\n');
  });

  it('the subject is one line whatever it is given', () => {
    expect(emailSubject(summary({ branch: 'a\r\nBcc: x@evil.test' }))).toBe('[Sluice] acme/app a Bcc: x@evil.test #12 passed');
  });

  it('label', () => {
    expect(buildLabel(summary())).toBe('acme/app @ master #12');
  });
});
