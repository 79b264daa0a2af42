import { skipTagReason } from '../../src/core/skipTags';

describe('skipTagReason', () => {
  it.each([
    '[no ci]',
    '[no-ci]',
    'Update docs [no ci]',
    '[No CI] case does not matter',
    '[NO-CI]',
    'first line [no ci]\r\nsecond',
    'first [no-ci]\rsecond',
  ])('%j: skipped by a tag in the first line', (message) => {
    expect(skipTagReason(message)).toMatch(/^skip tag \[no[ -]ci\] in the first line of the head commit's message$/);
  });

  it.each([
    '@wip',
    '@wip refactor',
    'Refactor @wip',
    'Refactor (@wip)',
    'Refactor @wip.',
    'Refactor @WIP',
    'Refactor\n\nThis is still @wip, do not build',
    'x\r\n@wip',
  ])('%j: skipped by @wip anywhere', (message) => {
    expect(skipTagReason(message)).toBe("skip tag @wip in the head commit's message");
  });

  it.each([
    '',
    'Plain commit',
    'Docs\n\n[no ci]',
    'Docs\r\n[no-ci]',
    'Docs\r[no ci]',
    '[noci]',
    '[no_ci]',
    'no ci',
    '[ no ci ]',
    'Signed-off-by: Dev <dev@wipro.example>',
    'cc @wipeout',
    'ping @wip-team',
    'mail foo@wip',
    'wip',
    '[wip]',
  ])('%j: built', (message) => {
    expect(skipTagReason(message)).toBeUndefined();
  });
});
