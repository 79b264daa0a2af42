/**
 * What `sluice watch` prints of interleaved live output (src/cli/outputPrinter.ts): lanes' text
 * arrives in pieces, cut anywhere; each source's lines come out whole, under its own label.
 */
import { OutputPrinter } from '../../src/cli/outputPrinter';
import { table } from '../../src/cli/render';

const file = (path: string, worker: number) => ({ kind: 'file' as const, key: `file/${worker}/1/1/${path}`, path, worker });
const end = { status: 'failed', exit_code: 1, duration_ms: 1500 };

describe('OutputPrinter', () => {
  it('joins pieces of a line per source, so interleaved lanes never mix inside a line', () => {
    let out = '';
    const p = new OutputPrinter((s) => (out += s));
    const a = file('test/a.sh', 1);
    const b = file('test/b.sh', 2);
    p.add({ event: 'output', seq: 1, source: a, text: 'alpha one\nalpha t', end: null });
    p.add({ event: 'output', seq: 2, source: b, text: 'beta o', end: null });
    p.add({ event: 'output', seq: 3, source: a, text: 'wo\n', end: null });
    p.add({ event: 'output', seq: 4, source: b, text: 'ne\r\nbeta last, no newline', end });
    expect(out).toBe(
      ['test/a.sh | alpha one', 'test/a.sh | alpha two', 'test/b.sh | beta one', 'test/b.sh | beta last, no newline', '-- test/b.sh: failed, exit 1, 1.5 s', ''].join('\n'),
    );
  });

  it('prints what is left of an unfinished line when the build is over, and stored output like streamed', () => {
    let out = '';
    const p = new OutputPrinter((s) => (out += s));
    p.add({ event: 'output', seq: 1, source: file('t.sh', 1), text: 'half a line', end: null });
    p.flush();
    p.stored('hook pre_setup', 'npm ERR! missing\n', { status: 'failed', exit_code: 2, duration_ms: 80 });
    expect(out).toBe('t.sh | half a line\nhook pre_setup | npm ERR! missing\n-- hook pre_setup: failed, exit 2, 80 ms\n');
  });

  it("keeps a label's control characters off the terminal", () => {
    let out = '';
    new OutputPrinter((s) => (out += s)).add({ event: 'output', seq: 1, source: file('x\u001b[2Jy.sh', 1), text: 'hi\n', end: null });
    expect(out).toBe('x [2Jy.sh | hi\n');
  });
});

describe('table', () => {
  it('pads columns to their widest cell, shows empty cells as -, and cuts long ones', () => {
    expect(table(['ID', 'NAME', 'NOTE'], [[1, 'app', null], [12, 'a-much-longer-name', 'x'.repeat(80)]])).toBe(
      `ID  NAME                NOTE\n1   app                 -\n12  a-much-longer-name  ${'x'.repeat(59)}…\n`,
    );
    expect(table(['ID'], [], '(no builds)')).toBe('(no builds)\n');
  });
});
