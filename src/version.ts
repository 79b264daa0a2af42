/** Sluice's version, from package.json (one directory above both src/ and dist/). */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const SLUICE_VERSION: string = (JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
