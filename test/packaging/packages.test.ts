import { execFile } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeProcess } from '../../packages/testkit/src/node-process.js';
import { freePorts } from '../support/cluster-nodes.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PNPM = ['-y', 'pnpm@10.34.9'];
const PACKAGES = readdirSync(join(ROOT, 'packages')).sort();

interface PackedPackage {
  readonly dir: string;
  readonly tarball: string;
  readonly files: readonly string[];
  readonly manifest: Record<string, any>;
}

let work: string;
const packed = new Map<string, PackedPackage>();

/** `pnpm pack` of every package (as `pnpm release` publishes them), read back from the tarballs. */
beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'doyen-pack-'));
  await Promise.all(
    PACKAGES.map(async (dir) => {
      const out = join(work, dir);
      await run('npx', [...PNPM, 'pack', '--pack-destination', out], { cwd: join(ROOT, 'packages', dir) });
      const tarball = join(out, readdirSync(out).find((f) => f.endsWith('.tgz'))!);
      const list = (await run('tar', ['-tzf', tarball])).stdout;
      const manifest = JSON.parse((await run('tar', ['-xzOf', tarball, 'package/package.json'])).stdout);
      const files = list
        .split('\n')
        .filter(Boolean)
        .map((f) => f.replace(/^package\//, ''));
      packed.set(dir, { dir, tarball, files, manifest });
    }),
  );
}, 120_000);

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
      // every export target is in the tarball
      for (const target of Object.values(manifest.exports as Record<string, unknown>)) {
        const paths = typeof target === 'string' ? [target] : Object.values(target as Record<string, string>);
        for (const p of paths)
          expect(files, `${manifest.name} export ${p}`).toContain(p.replace(/^\.\//, ''));
      }
      for (const f of files) {
        expect(f, `${manifest.name}: unexpected file`).toMatch(
          /^(dist\/|src\/|LICENSE$|package\.json$|config\.schema\.json$)/,
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
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2),
    );
    const tarballs = [...packed.values()].map((p) => p.tarball);
    // no workspace, no pnpm: what a user's `npm install doyen xstate` does, from the tarballs
    await run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs, 'xstate@5.33.3'],
      {
        cwd: project,
        env: { ...process.env, npm_config_workspaces: 'false' },
      },
    );
    copyFileSync(join(ROOT, 'test/packaging/fixtures/consumer-app.mjs'), join(project, 'app.mjs'));
  }, 180_000);

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
