import { randomBytes } from 'node:crypto';
import { clip, decodeEntities, decodeReport, parseJUnit } from '../../src/core/junit';

// What jest-junit 16 writes (default options).
const JEST_JUNIT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="jest tests" tests="3" failures="1" errors="0" time="1.234">
  <testsuite name="math" errors="0" failures="1" skipped="1" timestamp="2024-05-01T10:00:00" time="0.8" tests="3">
    <testcase classname="math adds" name="math adds" time="0.002">
    </testcase>
    <testcase classname="math subtracts" name="math subtracts" time="0.004">
      <failure>Error: expect(received).toBe(expected) // Object.is equality

Expected: 1
Received: 2
    at Object.&lt;anonymous&gt; (/repo/math.test.js:9:17)</failure>
    </testcase>
    <testcase classname="math skips" name="math skips" time="0">
      <skipped/>
    </testcase>
  </testsuite>
</testsuites>
`;

// pytest --junitxml (xunit2, the default since pytest 6), on one line as pytest writes it.
const PYTEST =
  '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="2" skipped="1" tests="5" time="0.050" timestamp="2024-05-01T10:00:00.000000" hostname="box">' +
  '<testcase classname="tests.test_math" name="test_add" time="0.001" />' +
  '<testcase classname="tests.test_math" name="test_sub" time="0.002"><failure message="assert (1 - 0) == 2">def test_sub():\n&gt;       assert 1 - 0 == 2\nE       assert 1 == 2\n\ntests/test_math.py:5: AssertionError</failure></testcase>' +
  '<testcase classname="tests.test_math" name="test_skip" time="0.000"><skipped type="pytest.skip" message="not today">/repo/tests/test_math.py:8: not today</skipped></testcase>' +
  '<testcase classname="tests.test_math" name="test_fixture" time="0.000"><error message="failed on setup with &quot;RuntimeError: boom&quot;">@pytest.fixture\ndef broken():\n&gt;   raise RuntimeError("boom")\nE   RuntimeError: boom</error></testcase>' +
  '<testcase classname="tests.test_io" name="test_print[a-1]" time="0.001"><failure message="AssertionError">assert False</failure><system-out>--- Captured stdout call ---\nhello from stdout</system-out><system-err>oops</system-err></testcase>' +
  '</testsuite></testsuites>';

// Maven surefire 3 (its XSD, properties, CDATA, rerun and flaky elements).
const SUREFIRE = `<?xml version="1.0" encoding="UTF-8"?>
<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="https://maven.apache.org/surefire/maven-surefire-plugin/xsd/surefire-test-report-3.0.xsd" version="3.0" name="com.example.AppTest" time="0.031" tests="4" errors="1" skipped="0" failures="1">
  <properties>
    <property name="java.version" value="17.0.2"/>
    <property name="line.separator" value="&#10;"/>
  </properties>
  <testcase name="testOk" classname="com.example.AppTest" time="0.001"/>
  <testcase name="testFail" classname="com.example.AppTest" time="0.012">
    <failure message="expected:&lt;1&gt; but was:&lt;2&gt;" type="java.lang.AssertionError"><![CDATA[java.lang.AssertionError: expected:<1> but was:<2>
	at com.example.AppTest.testFail(AppTest.java:20)
]]></failure>
    <system-out><![CDATA[some stdout & <stuff>]]></system-out>
  </testcase>
  <testcase name="testBoom" classname="com.example.AppTest" time="1,234.5">
    <error message="boom" type="java.lang.IllegalStateException">java.lang.IllegalStateException: boom
	at com.example.AppTest.testBoom(AppTest.java:30)</error>
  </testcase>
  <testcase name="testFlaky" classname="com.example.AppTest" time="0.002">
    <flakyFailure message="first try" type="java.lang.AssertionError"><stackTrace>at x</stackTrace></flakyFailure>
  </testcase>
</testsuite>
`;

// go-junit-report: nested suites, classname missing on some cases.
const GO = `<testsuites tests="2" failures="1">
  <testsuite name="example.com/pkg" tests="2" failures="1" time="0.010">
    <properties><property name="go.version" value="go1.22"></property></properties>
    <testcase name="TestA" time="0.000"></testcase>
    <testcase name="TestB" classname="" time="abc"><failure message="Failed" type="">pkg_test.go:12: nope</failure></testcase>
  </testsuite>
</testsuites>`;

describe('parseJUnit over real flavours', () => {
  it('reads jest-junit', () => {
    const { cases, notes } = parseJUnit(JEST_JUNIT);
    expect(notes).toEqual([]);
    expect(cases).toEqual([
      { classname: 'math adds', name: 'math adds', status: 'passed', time: 0.002, message: null, output: null },
      {
        classname: 'math subtracts',
        name: 'math subtracts',
        status: 'failed',
        time: 0.004,
        message: 'Error: expect(received).toBe(expected) // Object.is equality',
        output: expect.stringContaining('at Object.<anonymous> (/repo/math.test.js:9:17)'),
      },
      { classname: 'math skips', name: 'math skips', status: 'skipped', time: 0, message: null, output: null },
    ]);
  });

  it('reads pytest', () => {
    const { cases, notes } = parseJUnit(PYTEST);
    expect(notes).toEqual([]);
    expect(cases.map((c) => [c.classname, c.name, c.status, c.message])).toEqual([
      ['tests.test_math', 'test_add', 'passed', null],
      ['tests.test_math', 'test_sub', 'failed', 'assert (1 - 0) == 2'],
      ['tests.test_math', 'test_skip', 'skipped', 'not today'],
      ['tests.test_math', 'test_fixture', 'error', 'failed on setup with "RuntimeError: boom"'],
      ['tests.test_io', 'test_print[a-1]', 'failed', 'AssertionError'],
    ]);
    expect(cases[1]!.output).toBe('def test_sub():\n>       assert 1 - 0 == 2\nE       assert 1 == 2\n\ntests/test_math.py:5: AssertionError');
    expect(cases[4]!.output).toBe('assert False\n\n[system-out]\n--- Captured stdout call ---\nhello from stdout\n\n[system-err]\noops');
    // A skip keeps its message, not its text.
    expect(cases[2]!.output).toBeNull();
  });

  it('reads surefire', () => {
    const { cases, notes } = parseJUnit(SUREFIRE);
    expect(notes).toEqual([]);
    expect(cases.map((c) => [c.name, c.status, c.time])).toEqual([
      ['testOk', 'passed', 0.001],
      ['testFail', 'failed', 0.012],
      ['testBoom', 'error', 1234.5],
      // A flaky test passed in the end; its earlier failure is not the verdict.
      ['testFlaky', 'passed', 0.002],
    ]);
    expect(cases[1]).toMatchObject({
      classname: 'com.example.AppTest',
      message: 'expected:<1> but was:<2>',
      output: 'java.lang.AssertionError: expected:<1> but was:<2>\n\tat com.example.AppTest.testFail(AppTest.java:20)\n\n[system-out]\nsome stdout & <stuff>',
    });
    expect(cases[2]!.message).toBe('boom');
  });

  it('reads go-junit-report, taking the suite name when a case has no classname', () => {
    const { cases, notes } = parseJUnit(GO);
    expect(notes).toEqual([]);
    expect(cases).toEqual([
      { classname: 'example.com/pkg', name: 'TestA', status: 'passed', time: 0, message: null, output: null },
      // An empty classname attribute is what the file says; time "abc" is no time.
      { classname: '', name: 'TestB', status: 'failed', time: null, message: 'Failed', output: 'pkg_test.go:12: nope' },
    ]);
  });

  it('takes the innermost named suite for nested suites, and a testsuite root without testsuites', () => {
    const xml = `<testsuites><testsuite name="outer"><testsuite name="inner"><testcase name="a"/></testsuite><testcase name="b"/></testsuite></testsuites>`;
    expect(parseJUnit(xml).cases.map((c) => [c.classname, c.name])).toEqual([
      ['inner', 'a'],
      ['outer', 'b'],
    ]);
    expect(parseJUnit('<testsuite name="s"><testcase classname="k" name="n"/></testsuite>').cases).toHaveLength(1);
  });

  it('prefers failure over error over skipped when a case has several', () => {
    const xml = (inner: string) => `<testsuite><testcase name="t">${inner}</testcase></testsuite>`;
    expect(parseJUnit(xml('<error message="teardown"/><failure message="assert"/>')).cases[0]).toMatchObject({ status: 'failed', message: 'assert' });
    expect(parseJUnit(xml('<skipped/><error message="e"/>')).cases[0]).toMatchObject({ status: 'error', message: 'e' });
  });

  it('handles BOM, comments, processing instructions, DOCTYPE (never expanding entities) and entities', () => {
    const xml =
      '\ufeff<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>' +
      '<!-- a comment with <testcase name="fake"/> --><testsuites><testsuite name="s">' +
      `<testcase name="a &amp; b &#65;&#x42; &lol2; &#0; &#xD800;" classname='single "quoted"'/></testsuite></testsuites>`;
    const { cases, notes } = parseJUnit(xml);
    expect(notes).toEqual([]);
    expect(cases).toEqual([expect.objectContaining({ name: 'a & b AB &lol2; \ufffd \ufffd', classname: 'single "quoted"' })]);
  });

  it('neither fetches nor expands an external entity, a parameter entity included', () => {
    const xml =
      '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd"><!ENTITY web SYSTEM "http://127.0.0.1:1/x">' +
      '<!ENTITY % p SYSTEM "http://127.0.0.1:1/p.dtd"> %p;]><testsuite><testcase name="&xxe;" classname="&web;"/></testsuite>';
    expect(parseJUnit(xml)).toEqual({ cases: [expect.objectContaining({ name: '&xxe;', classname: '&web;' })], notes: [] });
  });

  it('reads past control characters, raw or as references, undefined entities and text after the root', () => {
    const xml = '<testsuite><testcase name="a&nbsp;b" classname="k"><failure>\x1b[31mred\x1b[0m &#27;[0m</failure></testcase></testsuite>\ntrailing';
    const { cases, notes } = parseJUnit(xml);
    expect(notes).toEqual([]);
    expect(cases[0]).toMatchObject({ name: 'a&nbsp;b', output: '\x1b[31mred\x1b[0m \x1b[0m' });
  });
});

describe('parseJUnit over garbage', () => {
  it('never throws, and says what was wrong', () => {
    const samples: [string, RegExp][] = [
      ['', /no XML elements/],
      ['   \n', /no XML elements/],
      ['hello world', /malformed XML at line 1: text before the root element/],
      ['<html><body>Not Found</body></html>', /not a JUnit report: the root element is <html>/],
      ['{"tests": []}', /malformed XML/],
      ['<testsuite><testcase name="a"></testsuite>', /malformed XML at line 1: end tag <\/testsuite> where <\/testcase> was expected/],
      ['<testsuite><testcase name=a/></testsuite>', /attribute name of <testcase is not quoted/],
      ['<testsuite><testcase name="a"/></testsuite><testsuite/>', /a second root element/],
      ['<testsuite>\n\n<testcase name="a"/>\n<', /malformed XML at line 4/],
      ['<testsuite></testcase>', /end tag <\/testcase> where <\/testsuite> was expected/],
      ['<testsuite><!-- never closed', /unterminated comment/],
      ['<testsuite><![CDATA[ x', /unterminated CDATA/],
      ['<testsuite attr="x', /unterminated attribute/],
    ];
    for (const [xml, note] of samples) {
      const result = parseJUnit(xml);
      expect(result.notes).toEqual([expect.stringMatching(note)]);
    }
  });

  it('keeps the cases before an end tag that does not match', () => {
    const mismatch = parseJUnit('<testsuite><testcase name="a"/><testcase name="b"></testsuite>');
    expect(mismatch.cases.map((c) => c.name)).toEqual(['a']);
  });

  it('keeps the cases before a problem: a truncated report', () => {
    const cut = SUREFIRE.slice(0, SUREFIRE.indexOf('<testcase name="testBoom"') + 10);
    const { cases, notes } = parseJUnit(cut);
    expect(cases.map((c) => c.name)).toEqual(['testOk', 'testFail']);
    expect(notes).toHaveLength(1);

    const atBoundary = SUREFIRE.slice(0, SUREFIRE.indexOf('<testcase name="testBoom"'));
    const r = parseJUnit(atBoundary);
    expect(r.cases).toHaveLength(2);
    expect(r.notes).toEqual([expect.stringMatching(/ends early: <testsuite> is not closed/)]);
  });

  it('survives every truncation of every flavour and random bytes', () => {
    for (const xml of [JEST_JUNIT, PYTEST, SUREFIRE, GO]) {
      for (let n = 0; n <= xml.length; n += 7) {
        const result = parseJUnit(xml.slice(0, n));
        expect(Array.isArray(result.cases)).toBe(true);
      }
    }
    for (let i = 0; i < 200; i++) {
      const bytes = randomBytes(1 + (i % 64) * 16);
      const text = i % 2 === 0 ? bytes.toString('latin1') : `<testsuite>${bytes.toString('utf8')}`;
      expect(() => parseJUnit(text)).not.toThrow();
    }
  });

  it('caps input, cases and strings', () => {
    const many = `<testsuite>${Array.from({ length: 50 }, (_, i) => `<testcase name="t${i}"/>`).join('')}</testsuite>`;
    const capped = parseJUnit(many, { maxCases: 10 });
    expect(capped.cases).toHaveLength(10);
    expect(capped.notes).toEqual(['more than 10 test cases; only the first 10 were kept']);

    const big = parseJUnit(many, { maxInput: 100 });
    expect(big.notes[0]).toMatch(/larger than 100 characters; only its beginning was read/);
    expect(big.cases.length).toBeGreaterThan(0);
    expect(big.cases.length).toBeLessThan(50);

    const long = 'x'.repeat(100_000);
    const one = parseJUnit(`<testsuite><testcase name="${long}" classname="${long}"><failure message="${long}">${long}</failure></testcase></testsuite>`).cases[0]!;
    expect(one.name.length).toBe(1000);
    expect(one.classname.endsWith('…')).toBe(true);
    expect(one.message!.length).toBe(2000);
    expect(one.output!.length).toBe(8 * 1024);
  });

  it('gives an unnamed case a name', () => {
    expect(parseJUnit('<testsuite><testcase/></testsuite>').cases[0]!.name).toBe('(unnamed)');
  });
});

describe('helpers', () => {
  it('clip cuts with an ellipsis and never splits a surrogate pair', () => {
    expect(clip('abc', 3)).toBe('abc');
    expect(clip('abcd', 3)).toBe('ab…');
    expect(clip('a😀b', 3)).toBe('a…');
  });

  it('decodeReport reads UTF-8, and UTF-16 either way round by its byte-order mark', () => {
    const xml = '<testsuite><testcase name="ü ✓"/></testsuite>';
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(xml, 'utf16le')]);
    const be = Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(Buffer.from(xml, 'utf16le')).swap16()]);
    for (const bytes of [Buffer.from(xml), Buffer.from(`\ufeff${xml}`), le, be]) {
      expect(parseJUnit(decodeReport(bytes)).cases[0]!.name).toBe('ü ✓');
    }
    // An odd byte left at the end (a file cut short) is dropped, not an error.
    expect(decodeReport(Buffer.concat([le, Buffer.from([0x41])]))).toBe(xml);
    expect(decodeReport(Buffer.from([0xc3, 0x28]))).toBe('\ufffd(');
  });

  it('decodeEntities leaves unknown entities alone', () => {
    expect(decodeEntities('&nbsp; &lt;&gt;&amp;&quot;&apos; &#128512;')).toBe('&nbsp; <>&"\' 😀');
  });
});
