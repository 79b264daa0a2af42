/**
 * Test cases from the frameworks' own reporters (issue 37), end to end on a whole Sluice: a
 * mocha project (its xunit reporter) and a jest project (jest-junit), each installed from the npm
 * registry by package setup (`npm install`: no lock file), built in batches. Every case is kept
 * in its file with its time; the failing one says where it failed (its file and line, from the
 * stack trace the reporter wrote), and only its file fails.
 */
import { World } from '../support/world';

let w: World;
beforeAll(async () => {
  w = await World.start();
});
afterAll(() => w?.stop());

type Case = { test_file: string | null; classname: string; name: string; status: string; duration_ms: number | null; failure: { file: string; line: number } | null; message: string | null };
const casesOf = async (session: number) => (await w.sluice.admin<{ total: number; cases: Case[] }>('GET', `/api/v1/sessions/${session}/cases?per_page=500`));

const file = (content: string) => ({ content });

it('mocha’s xunit reporter: every case in its file, the failure at its line', async () => {
  const repo = await w.makeRepo(
    {
      'package.json': file(JSON.stringify({ name: 'mocha-fixture', private: true, devDependencies: { mocha: '11.7.5' } })),
      'test/math.test.js': file(
        ["const assert = require('node:assert');", "describe('math', () => {", "  it('adds', () => assert.strictEqual(1 + 1, 2));", "  it('multiplies', () => {", '    assert.strictEqual(2 * 3, 7);', '  });', '});', ''].join('\n'),
      ),
      'test/strings.test.js': file(["const assert = require('node:assert');", "describe('strings', () => {", "  it('joins', () => assert.strictEqual(['a', 'b'].join(''), 'ab'));", "  it('pads', () => assert.strictEqual('1'.padStart(2, '0'), '01'));", '});', ''].join('\n')),
    },
    { suite: { branch: 'master', test_pattern: 'test/*.test.js', test_command: 'node_modules/.bin/mocha --reporter xunit --reporter-option output=$SLUICE_REPORT_DIR/report.xml {files}', workers: 1 } },
  );
  const { session } = await w.build(repo);
  const stop = (await w.eventsOf(session)).at(-1)!;
  expect(stop).toMatchObject({ status: 'failed', counts: expect.objectContaining({ passed: 1, failed: 1 }) });
  const { total, cases } = await casesOf(session);
  expect(total).toBe(4);
  expect(cases[0]).toMatchObject({ test_file: 'test/math.test.js', classname: 'math', name: 'multiplies', status: 'failed', failure: { file: 'test/math.test.js', line: 5 } });
  expect(cases[0]!.message).toMatch(/strictly equal/);
  expect(cases.slice(1).map((c) => [c.test_file, c.name, c.status]).sort()).toEqual([
    ['test/math.test.js', 'adds', 'passed'],
    ['test/strings.test.js', 'joins', 'passed'],
    ['test/strings.test.js', 'pads', 'passed'],
  ]);
}, 300_000);

it('jest with jest-junit: every case in its file, the failure at its line', async () => {
  const repo = await w.makeRepo(
    {
      'package.json': file(JSON.stringify({ name: 'jest-fixture', private: true, devDependencies: { jest: '29.7.0', 'jest-junit': '16.0.0' }, jest: { testEnvironment: 'node' } })),
      'test/sum.test.js': file(["test('adds', () => {", '  expect(1 + 2).toBe(4);', '});', "test('subtracts', () => expect(3 - 1).toBe(2));", ''].join('\n')),
      'test/words.test.js': file(["test('uppercases', () => expect('a'.toUpperCase()).toBe('A'));", ''].join('\n')),
    },
    {
      suite: {
        branch: 'master',
        test_pattern: 'test/*.test.js',
        test_command: 'JEST_JUNIT_OUTPUT_DIR=$SLUICE_REPORT_DIR JEST_JUNIT_ADD_FILE_ATTRIBUTE=true node_modules/.bin/jest --ci -i --colors --reporters=default --reporters=jest-junit -- {files}',
        workers: 1,
      },
    },
  );
  const { session } = await w.build(repo);
  const stop = (await w.eventsOf(session)).at(-1)!;
  expect(stop).toMatchObject({ status: 'failed', counts: expect.objectContaining({ passed: 1, failed: 1 }) });
  const { total, cases } = await casesOf(session);
  expect(total).toBe(3);
  expect(cases[0]).toMatchObject({ test_file: 'test/sum.test.js', name: 'adds', status: 'failed', failure: { file: 'test/sum.test.js', line: 2 } });
  expect(cases.slice(1).map((c) => [c.test_file, c.name, c.status]).sort()).toEqual([
    ['test/sum.test.js', 'subtracts', 'passed'],
    ['test/words.test.js', 'uppercases', 'passed'],
  ]);
}, 300_000);
