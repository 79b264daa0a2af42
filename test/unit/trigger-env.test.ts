/**
 * The trigger `env` policy (core/triggerEnv.ts): a trigger comes from whoever holds the webhook
 * URL, so its variables may not change how programs load, where they connect or what the build
 * is. Each refusal names the variable.
 */
import { MAX_ENV_TOTAL_BYTES, MAX_ENV_VALUE_BYTES, MAX_ENV_VARS, triggerEnvProblem } from '../../src/core/triggerEnv';

describe('trigger env', () => {
  it('accepts ordinary build settings', () => {
    expect(triggerEnvProblem({ LOG_LEVEL: 'debug', FEATURE_X: '1', _PRIVATE: '', DEPLOY_ENV: 'staging', ENVIRONMENT: 'ci' })).toBeUndefined();
  });

  it.each([
    // how programs load
    'LD_PRELOAD', 'LD_LIBRARY_PATH', 'DYLD_INSERT_LIBRARIES', 'NODE_OPTIONS', 'NODE_PATH', 'NODE_TLS_REJECT_UNAUTHORIZED',
    'PYTHONPATH', 'PYTHONSTARTUP', 'PERL5OPT', 'RUBYOPT', 'JAVA_TOOL_OPTIONS', 'BASH_ENV', 'ENV', 'BASH_FUNC_X%%',
    'GCONV_PATH', 'MALLOC_CHECK_', 'NPM_CONFIG_REGISTRY',
    // where they connect, whom they trust
    'HTTPS_PROXY', 'HTTP_PROXY', 'ALL_PROXY', 'NO_PROXY', 'SSL_CERT_FILE', 'CURL_CA_BUNDLE',
    // what the build is
    'PATH', 'HOME', 'TMPDIR', 'IFS', 'GIT_DIR', 'GIT_SSH_COMMAND', 'SSH_AUTH_SOCK', 'SLUICE', 'SLUICE_SECRET_KEY', 'CI',
  ])('refuses %s, naming it', (name) => {
    const problem = triggerEnvProblem({ OK: 'x', [name]: 'value' });
    expect(problem).toMatchObject({ field: `env.${name}` });
    if (/^[A-Z_][A-Z0-9_]*$/.test(name)) expect(problem!.message).toMatch(/^is not allowed in a trigger/);
  });

  it.each(['lower', 'Mixed_Case', '1ABC', 'A-B', 'A.B', 'A B', ''])('refuses the name %j', (name) => {
    expect(triggerEnvProblem({ [name]: 'x' })).toEqual({ field: `env.${name}`, message: expect.stringMatching(/^not a valid variable name/) });
  });

  it('caps a value, the names and values in all, and their number', () => {
    expect(triggerEnvProblem({ BIG: 'x'.repeat(MAX_ENV_VALUE_BYTES) })).toBeUndefined();
    expect(triggerEnvProblem({ BIG: 'x'.repeat(MAX_ENV_VALUE_BYTES + 1) })).toEqual({ field: 'env.BIG', message: `must be at most ${MAX_ENV_VALUE_BYTES} bytes` });
    // Multi-byte characters count as their UTF-8 bytes.
    expect(triggerEnvProblem({ BIG: 'é'.repeat(MAX_ENV_VALUE_BYTES / 2 + 1) })).toMatchObject({ field: 'env.BIG' });
    const many = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`V${i}`, 'x'.repeat(MAX_ENV_VALUE_BYTES - 3)]));
    expect(triggerEnvProblem(many)).toEqual({ field: 'env', message: `names and values must total at most ${MAX_ENV_TOTAL_BYTES} bytes` });
    const count = Object.fromEntries(Array.from({ length: MAX_ENV_VARS + 1 }, (_, i) => [`V${i}`, '']));
    expect(triggerEnvProblem(count)).toEqual({ field: 'env', message: `must have at most ${MAX_ENV_VARS} variables` });
    expect(triggerEnvProblem({ ['A'.repeat(129)]: 'x' })).toMatchObject({ field: expect.stringMatching(/^env\.A{40}…$/) });
  });
});
