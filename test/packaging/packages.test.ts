import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeProcess } from '../../packages/testkit/src/node-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { type ExampleAppNode, expectExampleAppWorks } from '../support/example-app.js';
import { newcomerBlocks, shellCommands, shellWords, splitAssignments } from '../support/newcomer-readme.js';
import { REPO_ROOT as ROOT } from '../support/repo-root.js';
import { declarationImports, declarationProblems, shipsOwnTypes } from './declaration-dependencies.js';

const run = promisify(execFile);
const PACKAGES = readdirSync(join(ROOT, 'packages')).sort();
const ROOT_MANIFEST = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
/** The OpenTelemetry API and SDK the repository's tracing tests use. */
const OTEL_PACKAGES = [
  '@opentelemetry/api',
  '@opentelemetry/context-async-hooks',
  '@opentelemetry/sdk-trace-base',
] as const;
/** The app's TypeScript settings: strict, Node's ES modules, every declaration checked (skipLibCheck false). */
const CONSUMER_TSCONFIG = {
  compilerOptions: {
    strict: true,
    target: 'es2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    skipLibCheck: false,
    allowJs: true,
    checkJs: true,
    types: ['node'],
    outDir: 'dist',
  },
  files: ['main.ts', 'app.js'],
};

interface PackedPackage {
  readonly dir: string;
  readonly tarball: string;
  readonly files: readonly string[];
  readonly manifest: Record<string, any>;
}

let work: string;
const packed = new Map<string, PackedPackage>();

/** The README's newcomer path; its packing and installing commands are the ones run here. */
const README = newcomerBlocks();
/** Where the README packs to; the test packs to a directory of its own instead. */
const README_PACKS = '~/doyen-packs';

/** Runs a README command with `sh`, its packs directory replaced by this run's. */
async function runReadmeCommand(line: string, cwd: string, packs: string): Promise<void> {
  expect(line, 'a README command that packs or installs names the packs directory').toContain(README_PACKS);
  await run('sh', ['-c', line.replaceAll(README_PACKS, JSON.stringify(packs))], {
    cwd,
    env: { ...process.env, ...NPM_ENV },
    maxBuffer: 16 << 20,
  });
}

/** Plain npm, as a user runs it: no workspace, no audit or funding noise, the local cache first. */
const NPM_ENV = {
  npm_config_workspaces: 'false',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_prefer_offline: 'true',
};

/** Every package packed by the README's command (as `pnpm release` publishes them), read back from the tarballs. */
beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'doyen-pack-'));
  const packs = join(work, 'packs');
  mkdirSync(packs);
  // the README's first command installs and builds: `pnpm test` has done that
  const [build, ...pack] = shellCommands(README.pack);
  expect(build).toBe('npx -y pnpm@10.34.9 install --frozen-lockfile && npx -y pnpm@10.34.9 build');
  for (const line of pack) await runReadmeCommand(line, ROOT, packs);
  const dirOf = new Map(
    PACKAGES.map((dir) => [
      JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8')).name,
      dir,
    ]),
  );
  for (const file of readdirSync(packs).filter((f) => f.endsWith('.tgz'))) {
    const tarball = join(packs, file);
    const list = (await run('tar', ['-tzf', tarball])).stdout;
    const manifest = JSON.parse((await run('tar', ['-xzOf', tarball, 'package/package.json'])).stdout);
    const files = list
      .split('\n')
      .filter(Boolean)
      .map((f) => f.replace(/^package\//, ''));
    const dir = dirOf.get(manifest.name)!;
    packed.set(dir, { dir, tarball, files, manifest });
  }
  expect([...packed.keys()].sort()).toEqual(PACKAGES);
}, 240_000);

/** The bare specifiers the declarations in a package's tarball import. */
async function packedDeclarationImports(dir: string): Promise<Set<string>> {
  const out = join(work, 'extracted', dir);
  mkdirSync(out, { recursive: true });
  await run('tar', ['-xzf', packed.get(dir)!.tarball, '-C', out]);
  return declarationImports(join(out, 'package'));
}

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('npm pack contents', () => {
  it.each(PACKAGES)(
    '%s: compiled JavaScript, declarations, source maps, LICENSE; no tests, no build state',
    (dir) => {
      const { files, manifest } = packed.get(dir)!;
      const source = JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8'));
      expect(manifest.name).toBe(source.name);
      for (const f of ['package.json', 'LICENSE', 'dist/index.js', 'dist/index.d.ts', 'dist/index.js.map'])
        expect(files, f).toContain(f);
      // the cluster console's page ships with the CLI (GET /console serves it from the package)
      if (manifest.name === 'doyen')
        for (const f of ['console/index.html', 'console/console.js', 'console/console.css'])
          expect(files, f).toContain(f);
      // every export target is in the tarball
      for (const target of Object.values(manifest.exports as Record<string, unknown>)) {
        const paths = typeof target === 'string' ? [target] : Object.values(target as Record<string, string>);
        for (const p of paths)
          expect(files, `${manifest.name} export ${p}`).toContain(p.replace(/^\.\//, ''));
      }
      for (const f of files) {
        expect(f, `${manifest.name}: unexpected file`).toMatch(
          /^(dist\/|src\/|console\/|LICENSE$|package\.json$|config\.schema\.json$)/,
        );
        expect(f).not.toMatch(/tsbuildinfo|\.test\.|__tests__/);
      }
      expect(manifest.license).toBe('Apache-2.0');
      expect(manifest.repository?.url).toBeTruthy();
      expect(manifest.publishConfig).toEqual({ access: 'public' });
      expect(manifest.engines).toEqual({ node: '>=20' });
    },
  );

  it.each(PACKAGES)('%s: workspace ranges replaced by versions, xstate a peer dependency', (dir) => {
    const { manifest } = packed.get(dir)!;
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) {
      for (const [name, range] of Object.entries((manifest[field] ?? {}) as Record<string, string>)) {
        expect(range, `${manifest.name} ${field}.${name}`).not.toMatch(/^workspace:/);
        if (name.startsWith('@doyen/')) expect(range).toBe(manifest.version);
      }
    }
    expect(manifest.dependencies?.xstate, `${manifest.name} pins xstate`).toBeUndefined();
    const usesXstate = readdirSync(join(ROOT, 'packages', dir, 'src'), { recursive: true })
      .filter((f) => String(f).endsWith('.ts'))
      .some((f) => /from 'xstate/.test(readFileSync(join(ROOT, 'packages', dir, 'src', String(f)), 'utf8')));
    if (usesXstate) expect(manifest.peerDependencies?.xstate, manifest.name).toMatch(/^\^5\./);
  });

  it.each(PACKAGES)(
    '%s: every package its declarations import is installed with it, with types (skipLibCheck false)',
    async (dir) => {
      const imports = await packedDeclarationImports(dir);
      const shipsTypes = (name: string) => shipsOwnTypes(join(ROOT, 'packages', dir, 'node_modules', name));
      expect(declarationProblems(packed.get(dir)!.manifest, imports, shipsTypes)).toEqual([]);
    },
  );

  it('positive control: wire without @types/ws, or doyen without @doyen/core, is reported', async () => {
    const wire = packed.get('wire')!.manifest;
    const imports = await packedDeclarationImports('wire');
    expect(imports).toContain('ws');
    const { '@types/ws': _, ...withoutTypes } = wire.dependencies;
    const shipsTypes = (name: string) => shipsOwnTypes(join(ROOT, 'packages/wire/node_modules', name));
    expect(declarationProblems({ ...wire, dependencies: withoutTypes }, imports, shipsTypes)).toEqual([
      expect.stringContaining('@types/ws must be a dependency'),
    ]);
    const doyen = packed.get('doyen')!.manifest;
    const { '@doyen/core': __, ...withoutCore } = doyen.dependencies;
    expect(
      declarationProblems(
        { ...doyen, dependencies: withoutCore },
        await packedDeclarationImports('doyen'),
        () => true,
      ),
    ).toEqual([expect.stringContaining('import @doyen/core, not a (required) dependency')]);
  });

  it('doyen: the bin runs the bundled CLI; what the bundle leaves out are dependencies', async () => {
    const { manifest, files, tarball } = packed.get('doyen')!;
    expect(manifest.bin).toEqual({ doyen: './dist/bin.js' });
    for (const f of ['dist/bin.js', 'dist/compile-cache.js', 'dist/cli-bundle.cjs'])
      expect(files).toContain(f);
    const read = async (f: string) =>
      (await run('tar', ['-xzOf', tarball, `package/${f}`], { maxBuffer: 64 << 20 })).stdout;
    expect((await read('dist/bin.js')).startsWith('#!/usr/bin/env node\n')).toBe(true);
    // left out of the bundle (etcd3 reads its .proto files at run time): installed beside it
    expect(await read('dist/cli-bundle.cjs')).toMatch(/require\("etcd3"\)/);
    expect(manifest.dependencies.etcd3).toBeDefined();
    expect(manifest.dependencies['@statelyai/inspect']).toBeDefined();
    expect(files).toContain('config.schema.json');
  });
});

describe('a consumer project installs the tarballs with plain npm', () => {
  let project: string;

  beforeAll(async () => {
    project = join(work, 'consumer');
    mkdirSync(project);
    // no workspace, no pnpm: the README's install commands, from the tarballs
    for (const line of shellCommands(README.install)) {
      if (line.includes(README_PACKS)) await runReadmeCommand(line, project, join(work, 'packs'));
      else await run('sh', ['-c', line], { cwd: project, env: { ...process.env, ...NPM_ENV } });
    }
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
    expect(manifest.type).toBe('module');
    // the OpenTelemetry API and SDK the repository tests with resolve together under plain npm
    // (no ERESOLVE), beside doyen's optional peer dependency on the API
    const otel = OTEL_PACKAGES.map((name) => `${name}@${ROOT_MANIFEST.devDependencies[name]}`);
    await run('npm', ['install', ...otel], { cwd: project, env: { ...process.env, ...NPM_ENV } });
    copyFileSync(join(ROOT, 'test/packaging/fixtures/consumer-app.mjs'), join(project, 'app.mjs'));
    copyFileSync(join(ROOT, 'apps/example-app/app.js'), join(project, 'app.js'));
    writeFileSync(join(project, 'main.ts'), README.main);
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(CONSUMER_TSCONFIG, null, 2));
  }, 300_000);

  it('type-checks the app against the published declarations with skipLibCheck false, and builds it', async () => {
    const tsc = await run('npx', ['--no-install', 'tsc', '-p', '.'], { cwd: project }).catch(
      (e: { stdout: string }) => e,
    );
    expect(tsc.stdout).toBe('');
    expect(readdirSync(join(project, 'dist')).sort()).toEqual(['app.js', 'main.js']);
  }, 120_000);

  it('positive control: without @types/ws the same check fails on the wire declarations (TS7016)', async () => {
    const types = join(project, 'node_modules/@types/ws');
    const aside = join(work, 'types-ws-aside');
    renameSync(types, aside);
    try {
      const failed = await run('npx', ['--no-install', 'tsc', '-p', '.', '--noEmit'], { cwd: project }).then(
        () => undefined,
        (e: { stdout: string }) => e.stdout,
      );
      expect(failed).toMatch(/node_modules\/@doyen\/wire\/dist\/.*error TS7016: .*'ws'/);
    } finally {
      renameSync(aside, types);
    }
  }, 120_000);

  it('the OpenTelemetry API and SDK the repository pins are installed together, every peer range met', async () => {
    for (const name of OTEL_PACKAGES) {
      const installed = JSON.parse(readFileSync(join(project, 'node_modules', name, 'package.json'), 'utf8'));
      expect(installed.version, name).toBe(ROOT_MANIFEST.devDependencies[name]);
    }
    // npm ls exits non-zero on an invalid or missing peer dependency anywhere in the tree
    const ls = await run('npm', ['ls', '--all', '@opentelemetry/api'], {
      cwd: project,
      env: { ...process.env, ...NPM_ENV },
    });
    expect(ls.stdout).toContain(`@opentelemetry/api@${ROOT_MANIFEST.devDependencies['@opentelemetry/api']}`);
    // positive control: the versions the repository had before, in a fresh project, do not resolve
    const fresh = join(work, 'otel-before');
    mkdirSync(fresh);
    writeFileSync(join(fresh, 'package.json'), JSON.stringify({ name: 'otel-before', private: true }));
    const before = ['@opentelemetry/api@1.10.0', '@opentelemetry/context-async-hooks@2.12.0'];
    const conflict = await run(
      'npm',
      ['install', '--dry-run', ...before, '@opentelemetry/sdk-trace-base@2.12.1'],
      {
        cwd: fresh,
        env: { ...process.env, ...NPM_ENV },
      },
    ).then(
      () => 'resolved',
      (e: { stderr: string }) => e.stderr,
    );
    expect(conflict).toMatch(/ERESOLVE/);
  }, 120_000);

  it('runs the app from environment variables only: loadNodeConfig() then startNode, two nodes', async () => {
    const ports = await freePorts(4);
    const secret = randomBytes(16).toString('hex');
    const nodes = [0, 1].map((i) => {
      const [port, httpPort] = [ports[2 * i]!, ports[2 * i + 1]!];
      const process = NodeProcess.spawn({
        args: [join(project, 'dist/main.js')],
        cwd: project,
        env: {
          DOYEN_CLUSTER: 'env-only',
          DOYEN_HOST: '127.0.0.1',
          DOYEN_PORT: String(port),
          DOYEN_SEEDS: `127.0.0.1:${ports[0]}`,
          DOYEN_HTTP_PORT: String(httpPort),
          DOYEN_SECRET: secret,
          DOYEN_LOG_LEVEL: 'info',
        },
        http: { host: '127.0.0.1', port: httpPort },
      });
      return { process, address: `127.0.0.1:${port}` };
    });
    try {
      await expectExampleAppWorks(nodes);
      // handleSignals: SIGTERM leaves gracefully and exits 0
      for (const n of [...nodes].reverse()) expect((await n.process.stop()).code).toBe(0);
    } finally {
      for (const n of nodes) n.process.kill9();
    }
  }, 90_000);

  it('runs the example app through doyen node --app: the README’s three nodes', async () => {
    const nodes = await readmeNodes(README.run);
    try {
      await expectExampleAppWorks(nodes);
    } finally {
      for (const n of nodes) n.process.kill9();
    }
  }, 90_000);

  it('positive control: a README run line that names another module fails', async () => {
    const [node] = await readmeNodes(README.run.replace('--app ./app.js', '--app ./no-such-app.js'), 1);
    try {
      const { code } = await node!.process.exited;
      expect(code).not.toBe(0);
      expect(node!.process.events().some((e) => e.event === 'example.counter')).toBe(false);
    } finally {
      node!.process.kill9();
    }
  }, 60_000);

  /**
   * The README's run block as processes: its exported variables, then each `… npx doyen node …
   * &` line with its own variables, spawned from the installed bin; the README's ports replaced
   * by free ones. Any other kind of line fails: the block is run, not approximated.
   */
  async function readmeNodes(block: string, count?: number): Promise<ExampleAppNode[]> {
    const commands = shellCommands(block).map(shellWords);
    let shared: Record<string, string> = {};
    const lines: { env: Record<string, string>; args: string[] }[] = [];
    for (const words of commands) {
      if (words[0] === 'export') {
        shared = { ...shared, ...splitAssignments(words.slice(1)).env };
        continue;
      }
      const { env, rest } = splitAssignments(words);
      if (rest[0] !== 'npx' || rest[1] !== 'doyen' || rest.at(-1) !== '&')
        throw new Error(`README run block: not a backgrounded npx doyen line: ${words.join(' ')}`);
      lines.push({ env, args: rest.slice(2, -1) });
    }
    const started = lines.slice(0, count);
    const ours = await freePorts(started.length * 2);
    const portOf = new Map<string, string>();
    started.forEach((l, i) => {
      portOf.set(l.env.DOYEN_PORT!, String(ours[2 * i]));
      portOf.set(l.env.DOYEN_HTTP_PORT!, String(ours[2 * i + 1]));
    });
    const mapped = (v: string) => v.replace(/\b\d{4,5}\b/g, (p) => portOf.get(p) ?? p);
    return started.map((l) => {
      const env = Object.fromEntries(
        Object.entries({ ...shared, ...l.env, DOYEN_LOG_LEVEL: 'info' }).map(([k, v]) => [k, mapped(v)]),
      );
      return {
        process: NodeProcess.spawn({
          command: join(project, 'node_modules/.bin/doyen'),
          args: l.args.map(mapped),
          cwd: project,
          env: { ...env, DOYEN_COMPILE_CACHE: join(work, 'compile-cache') },
          http: { host: env.DOYEN_HOST!, port: Number(env.DOYEN_HTTP_PORT) },
        }),
        address: `${env.DOYEN_HOST}:${env.DOYEN_PORT}`,
      };
    });
  }

  it('runs a two-node cluster whose app imports doyen and asks a singleton through its proxy', async () => {
    const [a, b] = await freePorts(2);
    const { stdout } = await run(process.execPath, ['app.mjs', String(a), String(b)], {
      cwd: project,
      timeout: 60_000,
      env: { ...process.env, DOYEN_SECRET: 'consumer-test-secret-0123456789' },
    });
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toBe('up: 2 members');
    expect(JSON.parse(lines.at(-1)!)).toEqual({ total: 3, runsOn: `127.0.0.1:${a}` });
    // the installed doyen is the tarball's, not the workspace's
    expect(readFileSync(join(project, 'node_modules/doyen/package.json'), 'utf8')).not.toContain(
      'workspace:',
    );
  });

  it('the installed bin runs: npx doyen --version, doyen config-schema', async () => {
    const version = (
      await run('npx', ['--no-install', 'doyen', '--version'], { cwd: project })
    ).stdout.trim();
    expect(version).toBe(`doyen ${packed.get('doyen')!.manifest.version}`);
    const schema = JSON.parse(
      (await run('npx', ['--no-install', 'doyen', 'config-schema'], { cwd: project })).stdout,
    );
    expect(schema.properties.clusterOptions).toBeDefined();
  });

  it('the installed bin starts a node that comes up, and loads the etcd client it left out', async () => {
    const [port, httpPort] = await freePorts(2);
    const node = NodeProcess.spawn({
      command: join(project, 'node_modules/.bin/doyen'),
      args: [
        'node',
        ...['--cluster', 'consumer', '--host', '127.0.0.1', '--port', String(port)],
        ...['--seeds', `127.0.0.1:${port}`, '--http-port', String(httpPort), '--partitions', '0'],
      ],
      cwd: project,
      env: {
        DOYEN_SECRET: 'consumer-test-secret-0123456789',
        DOYEN_LOG_LEVEL: 'info',
        DOYEN_COMPILE_CACHE: join(work, 'compile-cache'),
      },
      http: { host: '127.0.0.1', port: httpPort! },
    });
    try {
      expect(await node.waitForEvent('node.started', 30_000)).toBeDefined();
      // the bin found the bundle and a cache directory of its own (a first start: nothing in it)
      expect(node.events().filter((e) => e.event === 'node.compile-cache')).toEqual([
        expect.objectContaining({ status: 'miss', directory: join(work, 'compile-cache') }),
      ]);
      expect((await node.getJson<{ status: string }>('/cluster'))?.status).toBe('up');
    } finally {
      await node.stop();
    }
    // what the lease package requires on first use, resolved from the bundle's own directory
    const { stdout } = await run(process.execPath, ['-e', "console.log(typeof require('etcd3').Etcd3)"], {
      cwd: join(project, 'node_modules/doyen/dist'),
    });
    expect(stdout.trim()).toBe('function');
  }, 60_000);
});
