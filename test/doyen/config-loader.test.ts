// loadNodeConfig: the CLI's configuration (flags, DOYEN_* variables, --config file, defaults) for
// apps that call startNode themselves. Same precedence, schema and messages as `doyen node`,
// every problem at once, syntax errors by line and column, secrets never echoed.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidConfigError } from '../../packages/core/src/index.js';
import { parseConfigFile } from '../../packages/doyen/src/config-file.js';
import { ConfigProblemsError, loadNodeConfig } from '../../packages/doyen/src/index.js';
import { jsonErrorOffset } from '../../packages/doyen/src/json-error-position.js';
import { thrownBy } from '../support/thrown.js';

const dir = mkdtempSync(join(tmpdir(), 'doyen-config-loader-'));
let files = 0;
function file(content: unknown, ext = 'json'): string {
  const path = join(dir, `c${++files}.${ext}`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return path;
}

/** The error `run` throws (the positive control that it does throw is inside). */
function thrown(run: () => unknown): ConfigProblemsError {
  const error = thrownBy(run, ConfigProblemsError);
  expect(error).toBeInstanceOf(InvalidConfigError);
  return error;
}

const SECRET = `s3cr3t-${randomBytes(12).toString('hex')}`;
const required = { DOYEN_CLUSTER: 'c', DOYEN_HOST: '127.0.0.1', DOYEN_SEEDS: '127.0.0.1:2552' };

describe('loadNodeConfig: flags > DOYEN_* environment > config file > defaults', () => {
  const defaults = {
    name: 'from-defaults',
    port: 1001,
    httpPort: 8001,
    roles: ['d'],
    clusterOptions: { joinTimeoutMs: 1, maxJoinAttempts: 7 },
    partitions: { count: 3, backupCount: 1 },
  };
  const fromFile = file({
    name: 'from-file',
    port: 1002,
    roles: ['f'],
    clusterOptions: { joinTimeoutMs: 2 },
    partitions: { count: 4 },
    logLevel: 'warn',
  });
  const env = { ...required, DOYEN_SECRET: SECRET, DOYEN_NAME: 'from-env', DOYEN_PORT: '1003' };
  const argv = ['--name', 'from-flag'];

  it('each setting comes from the highest layer that gives it; nested settings merge key by key', () => {
    const config = loadNodeConfig({ argv, env, file: fromFile, defaults });
    expect(config).toMatchObject({
      cluster: 'c',
      host: '127.0.0.1',
      seeds: [{ host: '127.0.0.1', port: 2552 }],
      name: 'from-flag',
      port: 1003,
      httpPort: 8001,
      roles: ['f'],
      logLevel: 'warn',
      secret: SECRET,
      clusterOptions: { joinTimeoutMs: 2, maxJoinAttempts: 7 },
      partitions: { count: 4, backupCount: 1 },
    });
  });

  it('taking a layer away shows the one below it (positive control for each step)', () => {
    expect(loadNodeConfig({ env, file: fromFile, defaults }).name).toBe('from-env');
    const noEnv = { ...required, DOYEN_SECRET: SECRET };
    expect(loadNodeConfig({ env: noEnv, file: fromFile, defaults })).toMatchObject({
      name: 'from-file',
      port: 1002,
    });
    expect(loadNodeConfig({ env: noEnv, defaults })).toMatchObject({
      name: 'from-defaults',
      port: 1001,
      roles: ['d'],
      clusterOptions: { joinTimeoutMs: 1, maxJoinAttempts: 7 },
    });
  });

  it('--config and DOYEN_CONFIG name the file before the `file` option does', () => {
    const other = file({ name: 'from-other-file', port: 1 });
    const base = { ...required, DOYEN_SECRET: SECRET };
    expect(loadNodeConfig({ env: { ...base, DOYEN_CONFIG: other }, file: fromFile }).name).toBe(
      'from-other-file',
    );
    expect(loadNodeConfig({ argv: ['--config', other], env: base, file: fromFile }).name).toBe(
      'from-other-file',
    );
    expect(loadNodeConfig({ env: base, file: fromFile }).name).toBe('from-file');
  });

  it('a layer giving seeds replaces the discovery of the layers below, and the other way round', () => {
    const dns = { method: 'dns' as const, service: 'doyen.default.svc' };
    const config = loadNodeConfig({
      env: { DOYEN_CLUSTER: 'c', DOYEN_HOST: '127.0.0.1', DOYEN_PORT: '2552', DOYEN_INSECURE: 'true' },
      file: file({ seeds: ['127.0.0.1:2552'] }),
      defaults: { discovery: dns, httpPort: 8558 },
    });
    expect(config.seeds).toEqual([{ host: '127.0.0.1', port: 2552 }]);
    expect(config.discovery).toBeUndefined();
    const found = loadNodeConfig({
      argv: ['--discovery', 'dns', '--service', 'doyen.default.svc'],
      env: { DOYEN_CLUSTER: 'c', DOYEN_HOST: '127.0.0.1', DOYEN_PORT: '2552', DOYEN_INSECURE: 'true' },
      file: file({ seeds: ['127.0.0.1:2552'], httpPort: 8558 }),
    });
    expect(found.discovery).toMatchObject(dns);
    expect(found.seeds).toBeUndefined();
  });

  it('defaults keep what only code can give (setup); the result is what startNode takes', () => {
    const setup = () => {};
    const config = loadNodeConfig({
      env: { ...required, DOYEN_PORT: '0', DOYEN_INSECURE: '1' },
      defaults: { setup },
    });
    expect(config.setup).toBe(setup);
    expect(config.insecure).toBe(true);
  });
});

describe('loadNodeConfig and process.env', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  });

  it('reads process.env by default and takes the secrets out of it; a given env is left as it is', () => {
    const token = `token-${randomBytes(8).toString('hex')}`;
    Object.assign(process.env, {
      ...required,
      DOYEN_PORT: '0',
      DOYEN_SECRET: SECRET,
      DOYEN_HTTP_TOKEN: token,
    });
    const env = { ...process.env };
    const fromGiven = loadNodeConfig({ env });
    expect(fromGiven).toMatchObject({ secret: SECRET, httpToken: token });
    // positive control: the secrets were in process.env, and a given env does not touch it
    expect(process.env.DOYEN_SECRET).toBe(SECRET);
    expect(env.DOYEN_SECRET).toBe(SECRET);
    const fromProcess = loadNodeConfig();
    expect(fromProcess).toMatchObject({ secret: SECRET, httpToken: token, cluster: 'c' });
    expect(process.env.DOYEN_SECRET).toBeUndefined();
    expect(process.env.DOYEN_HTTP_TOKEN).toBeUndefined();
  });

  it('--secret on argv still works, and warns through process.emitWarning (without the secret)', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const config = loadNodeConfig({ argv: ['--secret', SECRET], env: { ...required, DOYEN_PORT: '0' } });
      expect(config.secret).toBe(SECRET);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toMatch(/--secret puts the cluster secret on the command line/);
      expect(JSON.stringify(warn.mock.calls)).not.toContain(SECRET);
    } finally {
      warn.mockRestore();
    }
  });
});

describe('every problem at once', () => {
  it('a config file: every unknown key and wrong type, each named by its path', () => {
    const error = thrown(() =>
      parseConfigFile(
        JSON.stringify({ httpport: 1, clusterOptons: {}, port: '9000', clusterOptions: { downnig: 'x' } }),
        'c.json',
      ),
    );
    expect(error.problems).toHaveLength(4);
    expect(error.message).toMatch(/^4 problems:/);
    for (const path of [
      'httpport: unknown',
      'clusterOptons: unknown',
      'port: expected an integer, got "9000"',
      'clusterOptions.downnig: unknown',
    ])
      expect(error.message).toContain(`config c.json: ${path}`);
    // one problem reads as it always did
    expect(() => parseConfigFile('{"httpport": 1}', 'c.json')).toThrow(
      /^config c\.json: httpport: unknown setting/,
    );
  });

  it('flags, variables, the file and the whole: all reported together', () => {
    const error = thrown(() =>
      loadNodeConfig({
        argv: ['--on-downed', 'reboot', '--coordinator', 'raft'],
        env: {
          DOYEN_PORT: 'notaport',
          DOYEN_HTTP_PORT: '1.5',
          DOYEN_HOST: '127.0.0.1',
          DOYEN_SEEDS: '127.0.0.1:1',
        },
        file: file({ httpport: 1, logLevel: 'loud' }),
      }),
    );
    const expected = [
      /--on-downed must be restart or exit, got reboot/,
      /DOYEN_PORT must be an integer, got notaport/,
      /DOYEN_HTTP_PORT must be an integer, got 1\.5/,
      /httpport: unknown setting/,
      /logLevel: expected one of/,
      /cluster is required \(--cluster, DOYEN_CLUSTER\)/,
      /coordinator must be one of emergent, quorum, etcd/,
      /no cluster secret and no TLS/,
    ];
    for (const problem of expected) expect(error.problems.some((p) => problem.test(p))).toBe(true);
    expect(error.problems).toHaveLength(expected.length);
    // a refused port is not also reported missing
    expect(error.message).not.toMatch(/port is required/);
  });

  it('positive control: the same sources, corrected, load', () => {
    const config = loadNodeConfig({
      argv: ['--on-downed', 'exit', '--coordinator', 'quorum'],
      env: {
        DOYEN_PORT: '2552',
        DOYEN_HTTP_PORT: '8558',
        DOYEN_HOST: '127.0.0.1',
        DOYEN_SEEDS: '127.0.0.1:1',
        DOYEN_CLUSTER: 'c',
        DOYEN_SECRET: SECRET,
      },
      file: file({ httpPort: 1, logLevel: 'debug' }),
    });
    expect(config).toMatchObject({
      onDowned: 'exit',
      coordinator: 'quorum',
      port: 2552,
      httpPort: 8558,
      logLevel: 'debug',
    });
  });

  it('a file that does not parse is one problem, and the check of the whole is not guessed at', () => {
    const error = thrown(() => loadNodeConfig({ env: { DOYEN_PORT: 'x' }, file: file('{ "cluster": ') }));
    expect(error.problems).toHaveLength(2);
    expect(error.problems).toEqual(
      expect.arrayContaining([
        'DOYEN_PORT must be an integer, got x',
        expect.stringMatching(/c\d+\.json: not valid JSON: it ends too early$/),
      ]),
    );
  });
});

describe('JSON syntax errors by line and column', () => {
  it('names the line and column of the fault, not a byte offset', () => {
    const text = '{\n  "cluster": "c",\n  "port" 2552\n}\n';
    expect(() => parseConfigFile(text, 'n.json')).toThrow(
      /^config n\.json: not valid JSON at line 3, column 10$/,
    );
    expect(() => parseConfigFile('{\n  "a": [1, 2,, 3]\n}', 'n.json')).toThrow(/at line 2, column 14$/);
    expect(() => parseConfigFile('{"a": 1}\n\n  x', 'n.json')).toThrow(/at line 3, column 3$/);
  });

  it('the scanner agrees with JSON.parse on what is JSON, and on where V8 says the fault is', () => {
    const valid = [
      '{}',
      '[]',
      ' {"a": [1, -2.5e+3, true, false, null, "x\\u00e9\\n", {"b": {}}]} ',
      '"s"',
      '0',
      '[[[[[]]]]]',
    ];
    for (const text of valid) expect(jsonErrorOffset(text)).toBe(-1);
    const invalid = [
      '{',
      '{"a" 1}',
      '[1,]',
      '{"a":1,}',
      '01',
      '-',
      '1.',
      '"\t"',
      '"\\x"',
      '"\\u12"',
      'tru',
      '{a:1}',
      "{'a':1}",
      '[1 2]',
      '{"a":1}}',
      '',
    ];
    for (const text of invalid) expect(jsonErrorOffset(text), text).toBeGreaterThanOrEqual(0);
    // positive control: each is refused by JSON.parse, each valid one accepted
    for (const text of invalid) expect(() => JSON.parse(text), text).toThrow();
    for (const text of valid) expect(() => JSON.parse(text)).not.toThrow();
    // where V8 names a position, it is the scanner's
    for (const text of ['{"a":1} x', '[1]]', '{"a":1}\n\n"b"']) {
      const position = /at position (\d+)/.exec(
        (() => {
          try {
            JSON.parse(text);
            return '';
          } catch (error) {
            return (error as Error).message;
          }
        })(),
      );
      expect(position, text).not.toBeNull();
      expect(jsonErrorOffset(text)).toBe(Number(position![1]));
    }
  });

  it('mutations of a valid file: the scanner refuses exactly what JSON.parse refuses', () => {
    const text = JSON.stringify({
      cluster: 'c',
      seeds: ['h:1', { host: 'h', port: 2 }],
      x: [1.5, -3e2, true, null],
    });
    const alphabet = ['{', '}', '[', ']', ',', ':', '"', '\\', '-', '.', 'e', '1', 't', ' ', 'x'];
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let refused = 0;
    for (let i = 0; i < 2000; i++) {
      const at = random(text.length);
      const mutated =
        random(2) === 0
          ? text.slice(0, at) + alphabet[random(alphabet.length)] + text.slice(at + 1)
          : text.slice(0, at) + text.slice(at + 1);
      let parses = true;
      try {
        JSON.parse(mutated);
      } catch {
        parses = false;
      }
      if (!parses) refused++;
      expect(jsonErrorOffset(mutated) === -1, mutated).toBe(parses);
    }
    expect(refused).toBeGreaterThan(500);
  });
});

describe('the loader never echoes a secret', () => {
  it('neither in a refused variable, a misspelt file key, nor around a syntax error', () => {
    const error = thrown(() =>
      loadNodeConfig({
        env: { ...required, DOYEN_PORT: '0', DOYEN_INSECURE: SECRET, DOYEN_SECRET: SECRET },
        file: file({ secrt: SECRET, httpTls: SECRET }),
      }),
    );
    expect(error.message).toMatch(/DOYEN_INSECURE must be true, false, 1 or 0, got a string/);
    expect(error.message).toMatch(/secrt: unknown setting/);
    expect(error.message).toMatch(/httpTls: expected an object, got a string/);
    expect(error.message).not.toContain(SECRET.slice(0, 8));
    const syntax = thrown(() =>
      loadNodeConfig({ env: { ...required, DOYEN_PORT: '0' }, file: file(`{"secret": ${SECRET}}`) }),
    );
    expect(syntax.message).toMatch(/not valid JSON at line 1, column 12/);
    expect(syntax.message).not.toContain(SECRET.slice(0, 8));
  });

  it('positive control: the secret reached the loader (it is the config the same sources give when valid)', () => {
    const config = loadNodeConfig({ env: { ...required, DOYEN_PORT: '0', DOYEN_SECRET: SECRET } });
    expect(config.secret).toBe(SECRET);
  });
});
