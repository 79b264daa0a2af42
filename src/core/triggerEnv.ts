/**
 * Which environment variables a trigger may give a build (its `env`). Whoever holds a webhook
 * URL can send a trigger, so its variables are untrusted: they may not change how programs are
 * loaded (LD_PRELOAD, NODE_OPTIONS, BASH_ENV, ...), where they connect or whom they trust
 * (HTTPS_PROXY, SSL_CERT_FILE, ...), or what the build is (PATH, HOME, GIT_*, SSH_*, SLUICE*).
 * Pure.
 */

export const MAX_ENV_VARS = 64;
export const MAX_ENV_NAME_LENGTH = 128;
export const MAX_ENV_VALUE_BYTES = 4 * 1024;
export const MAX_ENV_TOTAL_BYTES = 32 * 1024;

/** Upper case, digits and `_`, not starting with a digit: what a shell and every tool agree on. */
export const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** Refused by name: loaders, shells, interpreters, locales of code, trust and identity. */
const DENIED_NAMES = new Set([
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'PWD', 'OLDPWD', 'TMPDIR', 'TMP', 'TEMP',
  'ENV', 'BASH_ENV', 'SHELLOPTS', 'BASHOPTS', 'IFS', 'CDPATH', 'GLOBIGNORE', 'PS4', 'PROMPT_COMMAND',
  'CI', 'SLUICE',
  // glibc's list of variables unsafe for set-uid programs (they load code or read files)
  'GCONV_PATH', 'GETCONF_DIR', 'HOSTALIASES', 'LOCALDOMAIN', 'LOCPATH', 'MALLOC_TRACE', 'NIS_PATH',
  'NLSPATH', 'RESOLV_HOST_CONF', 'RES_OPTIONS', 'TZDIR',
  // interpreters' code-loading switches
  'RUBYOPT', 'RUBYLIB', 'PERL5OPT', 'PERL5LIB', 'PERLLIB', 'JAVA_TOOL_OPTIONS', '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS', 'CLASSPATH', 'GEM_HOME', 'GEM_PATH', 'BUNDLE_GEMFILE',
  // whom TLS trusts
  'SSL_CERT_FILE', 'SSL_CERT_DIR', 'CURL_CA_BUNDLE', 'REQUESTS_CA_BUNDLE',
]);

/** Refused by prefix. */
const DENIED_PREFIXES = ['LD_', 'DYLD_', 'NODE_', 'NPM_CONFIG_', 'PYTHON', 'GIT_', 'SSH_', 'SLUICE_', 'MALLOC_', 'BASH_FUNC_'];

/** Refused by suffix: proxies (`HTTPS_PROXY`, `NO_PROXY`, ...). */
const DENIED_SUFFIXES = ['_PROXY'];

/** Why the variable `name` may not come from a trigger, or undefined when it may. */
export function deniedEnvName(name: string): string | undefined {
  const upper = name.toUpperCase();
  if (DENIED_NAMES.has(upper)) return 'is not allowed in a trigger: Sluice sets it, or it changes how programs load or run';
  const prefix = DENIED_PREFIXES.find((p) => upper.startsWith(p));
  if (prefix) return `is not allowed in a trigger: ${prefix}… variables change how programs load, run or connect`;
  if (DENIED_SUFFIXES.some((s) => upper.endsWith(s))) return 'is not allowed in a trigger: proxy variables change where programs connect';
  return undefined;
}

export interface EnvProblem {
  /** `env`, or `env.<NAME>`. */
  field: string;
  message: string;
}

/** Checks a trigger's `env` (already known to be an object of strings by name); the first problem, or undefined. */
export function triggerEnvProblem(env: Record<string, string>): EnvProblem | undefined {
  const entries = Object.entries(env);
  if (entries.length > MAX_ENV_VARS) return { field: 'env', message: `must have at most ${MAX_ENV_VARS} variables` };
  let total = 0;
  for (const [name, value] of entries) {
    const field = `env.${name}`;
    if (name.length > MAX_ENV_NAME_LENGTH) return { field: `env.${name.slice(0, 40)}…`, message: `names must be at most ${MAX_ENV_NAME_LENGTH} characters` };
    if (!ENV_NAME.test(name)) return { field, message: 'not a valid variable name: upper-case letters, digits and _, not starting with a digit' };
    const denied = deniedEnvName(name);
    if (denied) return { field, message: denied };
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > MAX_ENV_VALUE_BYTES) return { field, message: `must be at most ${MAX_ENV_VALUE_BYTES} bytes` };
    total += bytes + Buffer.byteLength(name, 'utf8');
  }
  if (total > MAX_ENV_TOTAL_BYTES) return { field: 'env', message: `names and values must total at most ${MAX_ENV_TOTAL_BYTES} bytes` };
  return undefined;
}
