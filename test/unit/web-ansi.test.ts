import { ansiHtml } from '../../src/api/web/ansi';

const ESC = '\u001b';

describe('ansiHtml', () => {
  it('renders a jest frame’s grey line numbers and red marker as classes, the rest as text', () => {
    const jest = `${ESC}[0m ${ESC}[90m 536 |${ESC}[39m   expect(sum(1, 2))${ESC}[33m.${ESC}[39mtoBe(${ESC}[35m4${ESC}[39m)\n${ESC}[31m${ESC}[1m>${ESC}[22m${ESC}[39m${ESC}[90m 537 |${ESC}[39m`;
    const html = ansiHtml(jest);
    expect(html).toContain('<span class="ansi-bright-black-fg"> 536 |</span>');
    expect(html).toContain('<span class="ansi-yellow-fg">.</span>');
    expect(html).toContain('<span class="ansi-red-fg ansi-bold">&gt;</span>');
    expect(html).not.toContain(ESC);
    // The text, once the markup is taken away, is what a terminal would show.
    expect(html.replace(/<[^>]+>/g, '').replace(/&gt;/g, '>')).toBe('  536 |   expect(sum(1, 2)).toBe(4)\n> 537 |');
  });

  it('escapes what a build printed, coloured or not', () => {
    expect(ansiHtml('<script>alert(1)</script> & "x"')).toBe('&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot;');
    const html = ansiHtml(`${ESC}[32m<img src=x onerror=alert(1)>${ESC}[0m`);
    expect(html).toBe('<span class="ansi-green-fg">&lt;img src=x onerror=alert(1)&gt;</span>');
  });

  it('drops escapes that are not colours or styles (cursor moves, erased lines), and broken ones', () => {
    const html = ansiHtml(`one${ESC}[2K${ESC}[1Gtwo ${ESC}[38;5;196mred-ish${ESC}[0m ${ESC}[`);
    expect(html).not.toContain(ESC);
    expect(html.replace(/<[^>]+>/g, '')).toContain('red-ish');
  });
});
