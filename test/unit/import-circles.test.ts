/**
 * `npm run lint` ends with scripts/import-circles.js: src/ holds no import circle (type-only
 * imports included), and a circle planted in a tree of files fails it, naming the files.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const check = (dir?: string) => spawnSync(process.execPath, [path.join(root, 'scripts/import-circles.js'), ...(dir ? [dir] : [])], { cwd: root, encoding: 'utf8' });

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-circles-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

describe('import circles', () => {
  test('src/ has none', () => {
    const out = check();
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
  });

  test('a circle through a type-only import, across folders and an index, fails and is named', () => {
    const dir = tree({
      'a/types.ts': "import type { Row } from '../db/rows';\nexport interface Input { row: Row }\n",
      'db/rows.ts': "import { helper } from '../delivery';\nexport interface Row { id: number }\nexport const x = helper;\n",
      'delivery/index.ts': "import type { Input } from '../a/types';\nexport const helper = (i?: Input) => i;\n",
      'core/pure.ts': "export const one = 1;\n",
      'core/uses.ts': "import { one } from './pure';\nexport const two = one + 1;\n",
    });
    try {
      const out = check(dir);
      expect(out.status).toBe(1);
      expect(out.stderr).toMatch(/import circle: .*a\/types\.ts → .*db\/rows\.ts → .*delivery\/index\.ts → .*a\/types\.ts/);
      expect(out.stderr).not.toMatch(/core\//);
      expect(out.stderr).toMatch(/1 import circle\(s\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a tree without circles passes', () => {
    const dir = tree({ 'core/pure.ts': "export const one = 1;\n", 'core/uses.ts': "import { one } from './pure';\nexport type T = typeof one;\n" });
    try {
      expect(check(dir).status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
