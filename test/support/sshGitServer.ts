/**
 * A real SSH git server for tests: an `ssh2` Server on loopback that authenticates by public
 * key (with proper signature verification) and serves `git-upload-pack` / `git-receive-pack`
 * by spawning the real git binaries. The OpenSSH client and git talk to it exactly as they
 * would to GitHub or a gitolite box, so the pull path is tested end to end without mocks.
 *
 * It serves Mercurial too: `hg -R <abs path> serve --stdio`, the command hg's SSH transport
 * runs on the remote side, is answered by the real hg binary (pull and push alike). Use
 * `hgUrl(path)` for hg: hg reads `ssh://host/path` as relative to the remote home directory
 * and needs `ssh://host//abs/path` for an absolute one.
 */
import { spawn } from 'node:child_process';
import { timingSafeEqual } from 'node:crypto';
import { isAbsolute } from 'node:path';
import { Server, utils, type Connection, type ParsedKey } from 'ssh2';
import { generateRepoKeyPair } from '../../src/ssh/keys';

export interface SshGitServer {
  port: number;
  /** `ssh://git@127.0.0.1:<port><repoPath>`; repoPath is an absolute path on this machine. */
  url(repoPath: string): string;
  /** `ssh://hg@127.0.0.1:<port>/<repoPath>` (two slashes before an absolute path), for hg. */
  hgUrl(repoPath: string): string;
  /** Replaces the authorized keys; takes effect for the next authentication. */
  setAuthorizedKeys(keys: string[]): void;
  /** Every command a client asked to run, accepted or not, in order (for assertions). */
  commands: string[];
  close(): Promise<void>;
}

export interface SshGitServerOptions {
  /** OpenSSH public key lines (`ssh-ed25519 AAAA... comment`). */
  authorizedKeys: string[];
}

const SERVICES = new Set(['git-upload-pack', 'git-receive-pack']);

/**
 * `git-upload-pack '/abs/path'` → service and path. Git quotes the path with single quotes
 * (`'` itself as `'\''`); anything else (pipes, extra arguments, other programs) is refused.
 */
export function parseGitCommand(command: string): { service: string; path: string } | null {
  const match = /^(git-upload-pack|git-receive-pack) '((?:[^']|'\\'')*)'$/.exec(command.trim());
  if (!match || !SERVICES.has(match[1]!)) return null;
  const path = match[2]!.replace(/'\\''/g, "'");
  if (!isAbsolute(path)) return null;
  return { service: match[1]!, path };
}

/**
 * `hg -R /abs/path serve --stdio` → the path. hg quotes the path like a POSIX shell word when
 * it holds anything but `[A-Za-z0-9_@%+=:,./-]` (single quotes, `'` itself as `'\''`);
 * anything else is refused.
 */
export function parseHgCommand(command: string): { path: string } | null {
  const match = /^hg -R ('(?:[^']|'\\'')*'|[A-Za-z0-9_@%+=:,./-]+) serve --stdio$/.exec(command.trim());
  if (!match) return null;
  const word = match[1]!;
  const path = word.startsWith("'") ? word.slice(1, -1).replace(/'\\''/g, "'") : word;
  if (!isAbsolute(path)) return null;
  return { path };
}

/** What to spawn for an accepted command. */
function serviceFor(command: string, gitProtocol: string | undefined): { program: string; args: string[]; env: NodeJS.ProcessEnv } | null {
  const PATH = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
  const git = parseGitCommand(command);
  if (git) {
    return {
      program: 'git',
      args: [git.service.slice('git-'.length), git.path],
      env: { PATH, HOME: git.path, GIT_CONFIG_NOSYSTEM: '1', ...(gitProtocol ? { GIT_PROTOCOL: gitProtocol } : {}) },
    };
  }
  const hg = parseHgCommand(command);
  if (hg) {
    // HGRCPATH empty: no user or system config, only the served repository's own .hg/hgrc.
    return { program: 'hg', args: ['-R', hg.path, 'serve', '--stdio'], env: { PATH, HOME: hg.path, HGRCPATH: '', HGPLAIN: '1' } };
  }
  return null;
}

function parsePublicKey(line: string): ParsedKey {
  const key = utils.parseKey(line);
  if (key instanceof Error) throw new Error(`invalid authorized key: ${key.message}`);
  return key;
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function startSshGitServer(options: SshGitServerOptions): Promise<SshGitServer> {
  let authorized = options.authorizedKeys.map(parsePublicKey);
  const commands: string[] = [];
  const clients = new Set<Connection>();
  // A fresh host key per server. generateRepoKeyPair, not ssh2's generateKeyPairSync alone:
  // about 1 ed25519 key in 128 comes out malformed (a public key starting with 0), and the
  // server then refused to start ("Cannot parse privateKey"), failing a whole test file.
  const hostKey = generateRepoKeyPair('sluice-test-host').privateKey;

  const server = new Server({ hostKeys: [hostKey] }, (client) => {
    clients.add(client);
    // As OpenSSH's sshd and the hosting sites' servers answer: each packet at once. Node's default
    // (Nagle's algorithm) held ssh2's packets, written in pieces, for the client's delayed ACK:
    // 40 ms on each of the six round trips of a connection, a quarter second on every fetch.
    // (ssh2 has the method; its published types lack it.)
    (client as Connection & { setNoDelay(noDelay: boolean): void }).setNoDelay(true);
    client.on('close', () => clients.delete(client));
    client.on('error', () => clients.delete(client));

    client.on('authentication', (ctx) => {
      if (ctx.method !== 'publickey') return ctx.reject(['publickey']);
      const key = authorized.find(
        (k) => k.type === ctx.key.algo && sameBytes(ctx.key.data, k.getPublicSSH()),
      );
      if (!key) return ctx.reject(['publickey']);
      // Without a signature the client only asks whether this key would do; with one, the
      // signature over the session blob proves it holds the private half.
      if (ctx.signature && ctx.blob && key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) {
        return ctx.reject(['publickey']);
      }
      ctx.accept();
    });

    client.on('ready', () => {
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        let gitProtocol: string | undefined;
        // git asks OpenSSH to send GIT_PROTOCOL (protocol v2); honour that one variable only.
        session.on('env', (accept, reject, info) => {
          if (info.key === 'GIT_PROTOCOL') {
            gitProtocol = info.val;
            accept?.();
          } else {
            reject?.();
          }
        });
        session.on('pty', (_accept, reject) => reject?.());
        session.on('shell', (_accept, reject) => reject());
        session.on('subsystem', (_accept, reject) => reject());
        session.on('exec', (accept, reject, info) => {
          commands.push(info.command);
          const service = serviceFor(info.command, gitProtocol);
          if (!service) return reject();
          const stream = accept();
          const child = spawn(service.program, service.args, { stdio: ['pipe', 'pipe', 'pipe'], env: service.env });
          stream.pipe(child.stdin);
          child.stdout.pipe(stream, { end: false });
          child.stderr.pipe(stream.stderr, { end: false });
          child.stdin.on('error', () => undefined); // client hung up mid-pack
          child.on('error', (err) => {
            stream.stderr.write(`sluice test server: ${err.message}\n`);
            stream.exit(127);
            stream.end();
          });
          // 'close' comes after the child's stdout/stderr have ended, so every byte has
          // been handed to the channel before the exit status goes out.
          child.on('close', (code) => {
            stream.exit(code ?? 1);
            stream.end();
          });
          stream.on('close', () => {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
          });
        });
      });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('ssh git server has no TCP address');
  const port = address.port;

  return {
    port,
    url: (repoPath) => `ssh://git@127.0.0.1:${port}${repoPath}`,
    hgUrl: (repoPath) => `ssh://hg@127.0.0.1:${port}/${repoPath}`,
    setAuthorizedKeys(keys) {
      authorized = keys.map(parsePublicKey);
    },
    commands,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of clients) client.end();
        server.close(() => resolve());
      }),
  };
}
