/**
 * Secrets (the admin token, a build secret's value) come from stdin or a prompt that does not
 * echo, never from the command line, where `ps` and the shell's history show them.
 */
import { CliError, EXIT } from './errors';

/** Far above what the API takes for one secret (32 KiB): past it the input is not a secret. */
const MAX_BYTES = 64 * 1024;

/**
 * The secret: typed at a hidden prompt on a terminal, else all of stdin without one trailing
 * newline (what `echo` and a file end with), so `printf %s "$V" | …` and `… < file` both work.
 */
export async function readSecret(prompt: string): Promise<string> {
  const value = process.stdin.isTTY ? await hiddenPrompt(prompt) : stripNewline(await readAll(process.stdin));
  if (value === '') throw new CliError('no value given on stdin', EXIT.usage);
  return value;
}

const stripNewline = (s: string): string => s.replace(/\r?\n$/, '');

async function readAll(stream: NodeJS.ReadStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += b.length;
    if (size > MAX_BYTES) throw new CliError(`stdin holds more than ${MAX_BYTES} bytes`, EXIT.usage);
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads a line from the terminal in raw mode, echoing nothing; Ctrl-C ends the process. */
function hiddenPrompt(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (then: () => void) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      then();
    };
    const onData = (data: Buffer) => {
      for (const ch of data.toString('utf8')) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return finish(() => resolve(value));
        if (ch === '\u0003') return finish(() => reject(new CliError('interrupted', EXIT.interrupted)));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on('data', onData);
  });
}
