import { isMaskable, MASK, maskSecrets, maskTargets } from '../../src/core/mask';

describe('maskSecrets', () => {
  it('replaces every occurrence of a value', () => {
    expect(maskSecrets('token=hunter22; again hunter22.', ['hunter22'])).toBe('token=****; again ****.');
    expect(MASK).toBe('****');
  });

  it('leaves text without secrets alone, and is a no-op without secrets', () => {
    expect(maskSecrets('nothing to see', ['hunter22'])).toBe('nothing to see');
    expect(maskSecrets('nothing to see', [])).toBe('nothing to see');
    expect(maskSecrets('', ['hunter22'])).toBe('');
  });

  it('masks only values of at least 4 characters', () => {
    expect(isMaskable('abc')).toBe(false);
    expect(isMaskable('abcd')).toBe(true);
    expect(maskSecrets('1 passed in dev on abcd', ['1', 'on', 'dev', 'abcd'])).toBe('1 passed in dev on ****');
  });

  it('masks the longer of two nested values as a whole (longest first)', () => {
    expect(maskSecrets('x s3cr3t-long y s3cr3t z', ['s3cr3t', 's3cr3t-long'])).toBe('x **** y **** z');
    expect(maskSecrets('x s3cr3t-long y', ['s3cr3t-long', 's3cr3t'])).toBe('x **** y');
    expect(maskTargets(['abcd', 'abcdefgh', 'abcdef'])).toEqual(['abcdefgh', 'abcdef', 'abcd']);
  });

  it('hides every character of overlapping values, as one mask', () => {
    // Replacing `abcdef` first would leave `gh` of `cdefgh` behind.
    expect(maskSecrets('<abcdefgh>', ['abcdef', 'cdefgh'])).toBe('<****>');
    expect(maskSecrets('<abcdefgh>', ['cdefgh', 'abcdef'])).toBe('<****>');
    // Overlapping occurrences of one value.
    expect(maskSecrets('[aaaaaa]', ['aaaa'])).toBe('[****]');
    // Adjacent occurrences make one run too: the mask says nothing about how many there were.
    expect(maskSecrets('s3cr3ts3cr3t!', ['s3cr3t'])).toBe('****!');
  });

  it('masks multi-line values whole, line by line, and with other line ends', () => {
    const key = '-----BEGIN KEY-----\nAAAAline1AAAA\nBBBBline2BBBB\n-----END KEY-----';
    expect(maskSecrets(`before\n${key}\nafter`, [key])).toBe('before\n****\nafter');
    expect(maskSecrets('only BBBBline2BBBB here', [key])).toBe('only **** here');
    expect(maskSecrets(key.replace(/\n/g, '\r\n'), [key])).toBe('****\r\n****\r\n****\r\n****');
    // Indented lines are found by their trimmed content; short lines are not targets.
    expect(maskSecrets('    AAAAline1AAAA', ['ab\n  AAAAline1AAAA  \n'])).toBe('    ****');
    expect(maskTargets(['ab\ncd\nlonger'])).toEqual(['ab\ncd\nlonger', 'longer']);
  });

  it('treats values literally, not as patterns', () => {
    expect(maskSecrets('a.*b a.*b axxb', ['a.*b'])).toBe('**** **** axxb');
    expect(maskSecrets('cost $1.00 (x)', ['$1.00 (x)'])).toBe('cost ****');
  });

  it('with cutAtStart, also masks the end of a secret the text begins with', () => {
    expect(maskSecrets('r3t22 and more', ['s3cr3t22'], { cutAtStart: true })).toBe('**** and more');
    expect(maskSecrets('2 and more', ['s3cr3t22'], { cutAtStart: true })).toBe('**** and more');
    // Not without the option, and never in the middle of the text.
    expect(maskSecrets('r3t22 and more', ['s3cr3t22'])).toBe('r3t22 and more');
    expect(maskSecrets('x r3t22', ['s3cr3t22'], { cutAtStart: true })).toBe('x r3t22');
    // A whole occurrence right at the start is still one mask.
    expect(maskSecrets('s3cr3t22!', ['s3cr3t22'], { cutAtStart: true })).toBe('****!');
  });

  it('handles non-ASCII values and text', () => {
    expect(maskSecrets('pässwörd → pässwörd', ['pässwörd'])).toBe('**** → ****');
  });
});
