import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  envNameOf,
  NODE_OPTIONS,
  nodeOptionsUsage,
  parseNodeArgs,
} from '../../packages/doyen/src/cli-options.js';
import { configFileJsonSchema, parseConfigFile } from '../../packages/doyen/src/config-file.js';
import { SECRET_ENV } from '../../packages/doyen/src/secret-sources.js';
import { type CliNode, getJson, killAll, nodeArgs, runCli, secretEnv } from '../support/cli-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const started: CliNode[] = [];
afterEach(() => killAll(started.splice(0)));

function cli(args: string[], env: Record<string, string | undefined> = {}, httpPort?: number): CliNode {
  const n = runCli(args, httpPort, env);
  started.push(n);
  return n;
}

const VERSION = (JSON.parse(readFileSync('packages/doyen/package.json', 'utf8')) as { version: string })
  .version;

describe('doyen node options: one table, a DOYEN_* variable for every flag', () => {
  it('every option in the table has its variable, and the variable has the effect of the flag', () => {
    for (const [name, option] of Object.entries(NODE_OPTIONS)) {
      const variable = envNameOf(name);
      expect(variable).toBe(`DOYEN_${name.toUpperCase().replaceAll('-', '_')}`);
      // the usage text lists both
      expect(nodeOptionsUsage()).toMatch(new RegExp(`--${name}\\b.* ${variable} `));
      if (variable === SECRET_ENV) continue; // read by resolveSecrets, so that only the flag warns
      const value = option.type === 'boolean' ? 'true' : 'v';
      const fromEnv = parseNodeArgs([], { [variable]: value });
      const fromFlag = parseNodeArgs(option.type === 'boolean' ? [`--${name}`] : [`--${name}`, 'v'], {});
      expect(fromEnv.values).toEqual(fromFlag.values);
      expect(fromEnv.sourceOf(name as keyof typeof NODE_OPTIONS)).toBe(variable);
      expect(fromFlag.sourceOf(name as keyof typeof NODE_OPTIONS)).toBe(`--${name}`);
    }
  });

  it('a flag wins over its variable; booleans take true|false|1|0 and nothing else', () => {
    expect(parseNodeArgs(['--port', '1'], { DOYEN_PORT: '2' }).values.port).toBe('1');
    expect(parseNodeArgs([], { DOYEN_INSECURE: '0' }).values.insecure).toBe(false);
    expect(parseNodeArgs([], { DOYEN_INSECURE: 'FALSE' }).values.insecure).toBe(false);
    expect(parseNodeArgs([], { DOYEN_INSPECT: '1' }).values.inspect).toBe(true);
    expect(parseNodeArgs([], { DOYEN_ENABLE_FAULT_INJECTION: 'yes', DOYEN_INSPECT: 'no' }).problems).toEqual([
      {
        name: 'enable-fault-injection',
        message: expect.stringMatching(/DOYEN_ENABLE_FAULT_INJECTION must be true, false, 1 or 0/),
      },
      { name: 'inspect', message: expect.stringMatching(/DOYEN_INSPECT must be true, false, 1 or 0/) },
    ]);
    // DOYEN_SECRET stays with resolveSecrets: it must not pose as --secret (which warns)
    expect(parseNodeArgs([], { DOYEN_SECRET: 's' }).values.secret).toBeUndefined();
  });
});

describe('--config files are checked', () => {
  const bad: [unknown, RegExp][] = [
    [{ clusterOptons: {}, httpport: 9999 }, /clusterOptons: unknown setting/],
    [{ httpport: 9999 }, /httpport: unknown setting/],
    [{ clusterOptions: { downnig: 'auto' } }, /clusterOptions\.downnig: unknown setting/],
    [{ clusterOptions: { sbr: { quorumsize: 2 } } }, /clusterOptions\.sbr\.quorumsize: unknown setting/],
    [{ port: '9000' }, /port: expected an integer, got "9000"/],
    [{ httpPort: 1.5 }, /httpPort: expected an integer/],
    [{ roles: 'a,b' }, /roles: expected an array of a string/],
    [{ seeds: [{ host: 'a', port: 'x' }] }, /seeds\[0\]\.port: expected an integer/],
    [{ onDowned: 'reboot' }, /onDowned: expected one of "restart", "exit"/],
    [{ wire: { tls: { caFile: 1 } } }, /wire\.tls\.caFile: expected a string/],
    [{ inspect: { uri: 'ws://x' } }, /inspect\.uri: unknown setting/],
    [{ secret: 's' }, /secret: secrets are not read from a config file/],
    [{ httpToken: 't' }, /httpToken: secrets are not read from a config file/],
    [{ wire: { secret: 's' } }, /wire\.secret: secrets are not read from a config file/],
    [[1], /the config: expected an object/],
  ];
  it.each(bad)('refuses %j naming the path', (content, message) => {
    expect(() => parseConfigFile(JSON.stringify(content), 'c.json')).toThrow(message);
  });

  it('accepts every kind of setting it knows (positive control)', () => {
    const file = parseConfigFile(
      JSON.stringify({
        cluster: 'c',
        host: '127.0.0.1',
        port: 1,
        seeds: ['127.0.0.1:1', { host: '127.0.0.1', port: 2 }],
        roles: ['a'],
        httpPort: 0,
        logLevel: 'debug',
        clusterOptions: {
          downing: 'static-quorum',
          sbr: { quorumSize: 2, downAllWhenUnstableMs: 'off' },
          failureDetector: { kind: 'deadline', acceptableHeartbeatPauseMs: 900 },
          maxJoinAttempts: 2,
        },
        wire: { maxFrameBytes: 1024, aliases: ['a:1'], tls: { caFile: 'a', certFile: 'b', keyFile: 'c' } },
        partitions: { count: 0 },
        coordinator: 'quorum',
        election: { voteFile: 'v', etcd: { endpoints: ['http://e'] }, timing: { leaderTimeoutMs: 5 } },
        lease: { endpoints: ['http://e'], ttlMs: 1 },
        insecure: true,
        inspect: { url: 'ws://127.0.0.1:1' },
      }),
      'c.json',
    );
    expect(file.seeds).toEqual([
      { host: '127.0.0.1', port: 1 },
      { host: '127.0.0.1', port: 2 },
    ]);
    expect(parseConfigFile('{"seeds": "127.0.0.1:3"}', 'c.json').seeds).toEqual([
      { host: '127.0.0.1', port: 3 },
    ]);
  });
});

describe('doyen CLI (child processes): help, version, environment, config', { timeout: 60_000 }, () => {
  it('--help and --version (-v, version) print to stdout and exit 0', async () => {
    const runs = [
      cli(['--help']),
      cli(['node', '--help']),
      cli(['inspector', '--help']),
      cli(['--version']),
      cli(['node', '--version']),
      cli(['config-schema']),
      cli(['-v']),
      cli(['version']),
      cli(['node', '-v']),
      cli(['inspector', '-v']),
    ];
    const stdout = runs.map((n) => {
      let out = '';
      n.process.stdout!.on('data', (c: Buffer) => (out += c.toString()));
      return () => out;
    });
    for (const n of runs) expect((await n.exited).code).toBe(0);
    expect(stdout[0]!()).toMatch(/usage: doyen node/);
    expect(stdout[1]!()).toMatch(/--http-port Q +DOYEN_HTTP_PORT/);
    expect(stdout[1]!()).toMatch(/--app app\.js +DOYEN_APP/);
    expect(stdout[2]!()).toMatch(/usage: doyen inspector/);
    expect(JSON.parse(stdout[5]!())).toEqual(configFileJsonSchema());
    for (const i of [3, 4, 6, 7, 8, 9]) expect(stdout[i]!().trim()).toBe(`doyen ${VERSION}`);
  });

  it('an unknown option or command exits 2 with one line naming it and where help is, not the usage', async () => {
    const cases: [string[], RegExp][] = [
      [['node', '--bogus'], /^doyen: unknown option --bogus \(doyen node --help lists the options\)\n$/],
      // the value of a mistyped option is not shown
      [
        ['node', '--secrte=hunter2'],
        /^doyen: unknown option --secrte \(doyen node --help lists the options\)\n$/,
      ],
      [['node', '-x'], /^doyen: unknown option -x \(/],
      [['node', 'extra'], /^doyen: doyen node takes no arguments besides its options/],
      [['node', '--port'], /^doyen: Option '--port <value>' argument missing \(doyen node --help/],
      [['--bogus'], /^doyen: unknown option --bogus \(doyen --help lists them\)\n$/],
      [['bogus'], /^doyen: unknown command bogus \(doyen --help lists them\)\n$/],
    ];
    const runs = cases.map(([args]) => {
      const n = cli(args);
      let err = '';
      n.process.stderr!.on('data', (c: Buffer) => (err += c.toString()));
      return { n, err: () => err };
    });
    for (const [i, { n, err }] of runs.entries()) {
      expect((await n.exited).code).toBe(2);
      expect(err()).toMatch(cases[i]![1]);
      expect(err()).not.toMatch(/usage:/);
    }
    // positive control: the usage is what `doyen` alone prints (exit 2), 60-odd lines
    const bare = cli([]);
    let err = '';
    bare.process.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    expect((await bare.exited).code).toBe(2);
    expect(err).toMatch(/usage: doyen node/);
    expect(err.split('\n').length).toBeGreaterThan(40);
  });

  it('config problems: every one reported, in one run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'doyen-cli-problems-'));
    const file = join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ httpport: 1, logLevel: 'loud' }));
    const n = cli(
      ['node', '--host', '127.0.0.1', '--port', 'x', '--seeds', '127.0.0.1:1', '--config', file],
      {
        DOYEN_ON_DOWNED: 'reboot',
      },
    );
    expect((await n.exited).code).toBe(2);
    const out = n.logs.join('\n');
    for (const problem of [
      /6 problems:/,
      /--port must be an integer, got x/,
      /DOYEN_ON_DOWNED must be restart or exit, got reboot/,
      /c\.json: httpport: unknown setting/,
      /c\.json: logLevel: expected one of/,
      /cluster is required/,
      /no cluster secret and no TLS/,
    ])
      expect(out).toMatch(problem);
  });

  it('a node configured only through DOYEN_* variables: HTTP on DOYEN_HTTP_PORT, debug lines, no /partitions', async () => {
    const [p, h] = await freePorts(2);
    const n = cli(
      ['node'],
      {
        ...secretEnv(),
        DOYEN_CLUSTER: 'env-only',
        DOYEN_HOST: '127.0.0.1',
        DOYEN_PORT: String(p),
        DOYEN_SEEDS: `127.0.0.1:${p}`,
        DOYEN_HTTP_PORT: String(h),
        DOYEN_LOG_LEVEL: 'debug',
        DOYEN_PARTITIONS: '0',
        DOYEN_NAME: 'from-env',
      },
      h,
    );
    await eventually(
      async () => {
        try {
          return (await getJson(h!, '/cluster')).body.status === 'up';
        } catch {
          return false;
        }
      },
      { timeoutMs: 20_000, what: 'the node up on DOYEN_HTTP_PORT' },
    );
    const view = (await getJson(h!, '/cluster')).body;
    expect(view.members[0].name).toBe('from-env');
    // pino level 20 = debug
    expect(n.logs.some((l) => l.includes('"level":20'))).toBe(true);
    expect((await fetch(`http://127.0.0.1:${h}/partitions`)).status).toBe(404);
  });

  it('the same node with DOYEN_PARTITIONS unset serves /partitions (positive control)', async () => {
    const [p, h] = await freePorts(2);
    const n = cli(nodeArgs('env-ctl', p!), { ...secretEnv(), DOYEN_HTTP_PORT: String(h) }, h);
    await eventually(
      async () => {
        try {
          return (await getJson(h!, '/partitions')).status === 200;
        } catch {
          return false;
        }
      },
      { timeoutMs: 20_000, what: '/partitions served' },
    );
    // and at runCli's DOYEN_LOG_LEVEL=info, no debug lines
    expect(n.logs.some((l) => l.includes('"level":20'))).toBe(false);
  });

  it('a bad DOYEN_PORT or DOYEN_INSECURE exits 2 naming the variable', async () => {
    const args = ['node', '--cluster', 'x', '--host', '127.0.0.1', '--seeds', '127.0.0.1:1', '--insecure'];
    const bad = cli(args, { DOYEN_PORT: 'notaport' });
    expect((await bad.exited).code).toBe(2);
    expect(bad.logs.join('\n')).toMatch(/DOYEN_PORT must be an integer, got notaport/);
    const badBool = cli(args.slice(0, -1), { DOYEN_INSECURE: 'maybe' });
    expect((await badBool.exited).code).toBe(2);
    expect(badBool.logs.join('\n')).toMatch(/DOYEN_INSECURE must be true, false, 1 or 0/);
  });

  it('a config file with unknown keys exits 2 naming them instead of starting without HTTP', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'doyen-cli-config-'));
    const file = join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ clusterOptons: { downing: 'auto' }, httpport: 9999 }));
    const n = cli([...nodeArgs('x', '0', '127.0.0.1:1'), '--config', file], secretEnv());
    expect((await n.exited).code).toBe(2);
    expect(n.logs.join('\n')).toMatch(/c\.json: clusterOptons: unknown setting/);
  });
});
