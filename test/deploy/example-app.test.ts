import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { envNameOf, NODE_OPTIONS } from '../../packages/doyen/src/cli-options.js';
import { freePorts } from '../../packages/testkit/src/index.js';
import { type CliNode, runCli } from '../support/cli-process.js';
import { expectExampleAppWorks } from '../support/example-app.js';
import { newcomerBlocks, shellCommands, shellWords } from '../support/newcomer-readme.js';
import { eventually } from '../support/wait.js';
import {
  type EnvVar,
  type K8sObject,
  loadYaml,
  podEnv,
  renderKustomization,
  validateObject,
} from './kubernetes-kit.js';

/**
 * The example app's deploy kit: deploy/example-app/Dockerfile (doyen's image plus the app's
 * module) and the deploy/example-app kustomization (doyen's pods on that image, DOYEN_APP naming
 * the module). Docker and kubectl are not needed: the overlay is rendered here, every object
 * validated against the Kubernetes schemas, the image's files mapped back to the repository by
 * the Dockerfile's own COPY steps, and three real `doyen node` processes started from the pod
 * template's environment alone run the app. The README's newcomer path names exactly these.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KIT = join(ROOT, 'deploy/example-app');
const DOCKERFILE = join(KIT, 'Dockerfile');

const base = renderKustomization(join(ROOT, 'deploy/kubernetes'));
const overlay = renderKustomization(KIT);
const deploymentOf = (objects: K8sObject[]) => objects.find((o) => o.kind === 'Deployment')!;
const container = deploymentOf(overlay).spec.template.spec.containers[0];
const env: EnvVar[] = container.env;
const APP_ENV = envNameOf('app');

/** The Dockerfile's instructions, continuations joined, comments dropped. */
function instructions(file: string): { op: string; args: string[] }[] {
  return readFileSync(file, 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const [op, ...args] = l.split(/\s+/);
      return { op: op!.toUpperCase(), args };
    });
}

/** Where each file a COPY step puts in the image comes from in the repository. */
function imageFiles(file: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const { op, args } of instructions(file)) {
    if (op !== 'COPY') continue;
    if (args.some((a) => a.startsWith('--from'))) throw new Error('COPY --from: not a repository file');
    const dest = args.at(-1)!;
    for (const src of args.slice(0, -1).filter((a) => !a.startsWith('--'))) {
      files.set(dest.endsWith('/') ? dest + basename(src) : dest, join(ROOT, src));
    }
  }
  return files;
}

/** The image the recipe starts from: its FROM, through an ARG's default. */
function baseImage(file: string): string {
  const all = instructions(file);
  const from = all.find((i) => i.op === 'FROM')!.args[0]!;
  const arg = /^\$\{(\w+)\}$/.exec(from)?.[1];
  if (!arg) return from;
  const declared = all.find((i) => i.op === 'ARG' && i.args[0]!.startsWith(`${arg}=`));
  return declared!.args[0]!.slice(arg.length + 1);
}

describe('the example app deploy kit', () => {
  it('renders to valid objects: doyen’s, on the app’s image, with DOYEN_APP added and nothing else changed', () => {
    for (const o of overlay) expect(() => validateObject(o), `${o.kind} ${o.metadata.name}`).not.toThrow();
    expect(overlay.map((o) => o.kind).sort()).toEqual(base.map((o) => o.kind).sort());
    const expected = structuredClone(base);
    const c = deploymentOf(expected).spec.template.spec.containers[0];
    c.image = 'doyen-example-app:latest';
    c.env.push({ name: APP_ENV, value: '/app/example-app/app.js' });
    expect(overlay).toEqual(expected);
    // DOYEN_APP is the CLI's --app (its one environment variable)
    expect(Object.keys(NODE_OPTIONS).map(envNameOf)).toContain(APP_ENV);
  });

  it('positive control: a broken object fails validation; a kustomize feature the renderer lacks fails rendering', () => {
    const broken = structuredClone(deploymentOf(overlay));
    broken.spec.template.spec.containers[0].env[0].name = 42;
    expect(() => validateObject(broken)).toThrow(/name/);
    const dir = mkdtempSync(join(tmpdir(), 'doyen-kustomize-'));
    try {
      writeFileSync(join(dir, 'kustomization.yaml'), 'resources: []\nnamePrefix: shop-\n');
      expect(() => renderKustomization(dir)).toThrow(/namePrefix not supported/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the image is doyen’s plus the module DOYEN_APP names, an ES module beside its package.json', () => {
    const baseTag = deploymentOf(base).spec.template.spec.containers[0].image;
    expect(baseImage(DOCKERFILE)).toBe(baseTag);
    const files = imageFiles(DOCKERFILE);
    for (const [inImage, source] of files) expect(existsSync(source), `${inImage} from ${source}`).toBe(true);
    const app = env.find((e) => e.name === APP_ENV)!.value!;
    expect(files.get(app)).toBe(join(ROOT, 'apps/example-app/app.js'));
    const pkg = files.get(join(app, '../package.json'));
    expect(JSON.parse(readFileSync(pkg!, 'utf8')).type).toBe('module');
    // the root image installs doyen and xstate where the module's imports find them
    const root = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(root).toMatch(/^WORKDIR \/app$/m);
    expect(app.startsWith('/app/')).toBe(true);
    expect(root).toMatch(/npm install [^\n]*\/tmp\/packs\/\*\.tgz xstate@/);
  });

  it('the README’s newcomer path: its app is apps/example-app/app.js, its image and manifests this kit', () => {
    const blocks = newcomerBlocks();
    expect(blocks.app).toBe(readFileSync(join(ROOT, 'apps/example-app/app.js'), 'utf8'));
    const commands = shellCommands(blocks.deploy).map((l) => shellWords(l));
    const builds = commands.filter((w) => w[0] === 'docker' && w[1] === 'build');
    const tagOf = (w: string[]) => w[w.indexOf('-t') + 1];
    const fileOf = (w: string[]) => join(ROOT, w.includes('-f') ? w[w.indexOf('-f') + 1]! : 'Dockerfile');
    expect(builds.map(fileOf)).toEqual([join(ROOT, 'Dockerfile'), DOCKERFILE]);
    expect(builds.every((w) => w.at(-1) === '.')).toBe(true);
    expect(tagOf(builds[0]!)).toBe(baseImage(DOCKERFILE));
    expect(tagOf(builds[1]!)).toBe(container.image);
    const secretCmd = commands.find((w) => w[0] === 'kubectl' && w[1] === 'create')!;
    const secret = loadYaml(join(ROOT, 'deploy/kubernetes/secret.example.yaml'))[0] as K8sObject;
    expect(secretCmd.slice(2, 4)).toEqual(['secret', 'generic']);
    expect(secretCmd[4]).toBe(secret.metadata.name);
    const keys = secretCmd.filter((w) => w.startsWith('--from-literal=')).map((w) => w.split('=')[1]);
    expect(keys.sort()).toEqual(Object.keys(secret.stringData).sort());
    for (const e of env.filter((x) => x.valueFrom?.secretKeyRef)) {
      expect(e.valueFrom.secretKeyRef.name).toBe(secret.metadata.name);
      expect(keys).toContain(e.valueFrom.secretKeyRef.key);
    }
    const apply = commands.find((w) => w[0] === 'kubectl' && w[1] === 'apply')!;
    expect(apply.slice(2)).toEqual(['-k', 'deploy/example-app']);
    expect(join(ROOT, apply[3]!)).toBe(KIT);
  });

  it('positive control: a README app or deploy block that differs from the kit fails', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const changed = newcomerBlocks(readme.replace("name: 'greeter'", "name: 'greeter2'"));
    expect(changed.app).not.toBe(readFileSync(join(ROOT, 'apps/example-app/app.js'), 'utf8'));
    expect(() =>
      newcomerBlocks(readme.replace('```ts\nimport { loadNodeConfig', '```js\nimport { loadNodeConfig')),
    ).toThrow(/expected blocks/);
    expect(() => shellWords('echo $HOME')).toThrow(/not supported/);
  });
});

describe('the example app on real processes, from the pod template’s environment alone', () => {
  const nodes: CliNode[] = [];
  afterEach(() => {
    for (const n of nodes.splice(0)) n.process.kill('SIGKILL');
  });

  it('three nodes: the singleton counter answers through every proxy, every greeter is told by the others', async () => {
    const ports = await freePorts(6);
    const files = imageFiles(DOCKERFILE);
    const started = [0, 1, 2].map((i) => {
      const [port, httpPort] = [ports[2 * i]!, ports[2 * i + 1]!];
      const e = podEnv(env, {
        DOYEN_PORT: String(port),
        DOYEN_HTTP_PORT: String(httpPort),
        // no cluster DNS here: the first node is the seed (the manifests' bootstrap is
        // test/deploy/manifests.test.ts's and the DNS discovery tests')
        DOYEN_DISCOVERY: undefined,
        DOYEN_SERVICE: undefined,
        DOYEN_SEEDS: `127.0.0.1:${ports[0]}`,
      });
      // the module where the image has it, found in the repository through the Dockerfile
      const inImage = e[APP_ENV]!;
      expect(files.has(inImage), inImage).toBe(true);
      e[APP_ENV] = files.get(inImage)!;
      return { process: runCli([...container.args], httpPort, e), address: `127.0.0.1:${port}` };
    });
    nodes.push(...started.map((s) => s.process));
    await eventually(
      async () =>
        (
          await Promise.all(
            started.map(async (s) => (await s.process.getJson<{ status: string }>('/cluster'))?.status),
          )
        ).every((x) => x === 'up'),
      { timeoutMs: 30_000, intervalMs: 200, what: 'three nodes up' },
    );
    await expectExampleAppWorks(started);
  }, 60_000);
});
