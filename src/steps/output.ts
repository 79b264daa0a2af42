/** Test output as it is stored: with every secret value masked. */
import { maskSecrets } from '../core/mask';

/** How runTestFile marks output it cut at the front (TailBuffer). */
const TRUNCATED_MARKER = /^\[sluice\] output truncated: [^\n]*\n/;

/** Test output with every secret value masked; a front cut may have split one. */
export function maskOutput(output: string, secrets: string[]): string {
  if (secrets.length === 0) return output;
  const marker = TRUNCATED_MARKER.exec(output);
  if (!marker) return maskSecrets(output, secrets);
  return marker[0] + maskSecrets(output.slice(marker[0].length), secrets, { cutAtStart: true });
}
