import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultClusterConfig } from '../../packages/cluster/src/index.js';
import { envNameOf, NODE_OPTIONS } from '../../packages/doyen/src/cli-options.js';
import { leavePhaseTimeoutMs, worstCaseShutdownMs } from '../../packages/doyen/src/coordinated-shutdown.js';
import { HTTP_TOKEN_ENV, SECRET_ENV } from '../../packages/doyen/src/secret-sources.js';
import { freePorts } from '../../packages/testkit/src/index.js';
import { type CliNode, runCli } from '../support/cli-process.js';
import { eventually } from '../support/wait.js';
import { type EnvVar, type K8sObject, loadYaml, podEnv, validateObject } from './kubernetes-kit.js';

/**
 * The Kubernetes deploy kit (deploy/kubernetes, the Dockerfile): every object valid against the
 * Kubernetes schemas (kubernetes-models), and everything the manifests name real: each DOYEN_*
 * variable a flag of `doyen node`, each probe path served by a real node started with the
 * manifest's environment, the preStop hook making that node leave, the ports and secrets
 * consistent, the image's entry point the CLI the packages build.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIR = join(ROOT, 'deploy/kubernetes');

const load = (file: string): K8sObject[] => loadYaml(join(DIR, file)) as K8sObject[];

const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml'));
const objects = files
  .filter((f) => f !== 'kustomization.yaml')
  .flatMap((f) => load(f).map((o) => ({ file: f, o })));
const only = (kind: string) => objects.filter((x) => x.o.kind === kind).map((x) => x.o);
const deployment = only('Deployment')[0]!;
const statefulSet = only('StatefulSet')[0]!;
const container = deployment.spec.template.spec.containers[0];
const env: EnvVar[] = container.env;
const envValue = (name: string) => env.find((e) => e.name === name)?.value;

/** Where the node keeps its vote without --vote-file: under the OS temp dir (start-node.ts). */
const VOTE_FILE_DEFAULT = '/tmp/doyen-vote.json';

/** The volume mount holding `dir` in the pod (the longest mount path that contains it). */
function mountOf(o: K8sObject, dir: string): { name: string; mountPath: string } | undefined {
  const mounts: { name: string; mountPath: string }[] = o.spec.template.spec.containers[0].volumeMounts ?? [];
  return mounts
    .filter((m) => dir === m.mountPath || dir.startsWith(`${m.mountPath}/`))
    .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
}

/** What keeps a directory of the pod: a per-pod claim, an emptyDir, another volume, or nothing. */
function voteFileStorage(o: K8sObject, dir: string): 'claim' | 'emptyDir' | 'other' | 'none' {
  const mount = mountOf(o, dir);
  if (!mount) return 'none';
  if ((o.spec.volumeClaimTemplates ?? []).some((t: K8sObject) => t.metadata.name === mount.name))
    return 'claim';
  const volume = (o.spec.template.spec.volumes ?? []).find((v: { name: string }) => v.name === mount.name);
  return volume?.emptyDir ? 'emptyDir' : 'other';
}

/** A StatefulSet's pod template without its vote file and the claim mount that keeps it. */
function withoutVoteVolume(template: any): any {
  const copy = structuredClone(template);
  const c = copy.spec.containers[0];
  const claims = new Set<string>(
    (statefulSet.spec.volumeClaimTemplates ?? []).map((t: K8sObject) => t.metadata.name),
  );
  c.env = c.env.filter((e: { name: string }) => e.name !== 'DOYEN_VOTE_FILE');
  c.volumeMounts = c.volumeMounts.filter((m: { name: string }) => !claims.has(m.name));
  return copy;
}

const validate = validateObject;

describe('the Kubernetes manifests', () => {
  it('are all valid against the Kubernetes schemas', () => {
    expect(objects.map((x) => `${x.file}: ${x.o.kind}`).sort()).toEqual([
      'deployment.yaml: Deployment',
      'pdb.yaml: PodDisruptionBudget',
      'secret.example.yaml: Secret',
      'service.yaml: Service',
      'statefulset.yaml: StatefulSet',
    ]);
    for (const { file, o } of objects) expect(() => validate(o), file).not.toThrow();
  });

  it('positive control: a broken copy fails validation, an unknown kind fails the test', () => {
    const broken = structuredClone(deployment);
    broken.spec.replicas = 'three';
    expect(() => validate(broken)).toThrow(/replicas/);
    const badPort = structuredClone(deployment);
    badPort.spec.template.spec.containers[0].ports[0].containerPort = 'abc';
    expect(() => validate(badPort)).toThrow(/containerPort/);
    expect(() => validate({ apiVersion: 'v1', kind: 'Nonsense', metadata: { name: 'x' } })).toThrow(
      /no schema/,
    );
  });

  it('kustomization lists files that exist; the StatefulSet runs the very pod template of the Deployment', () => {
    const kustomization = load('kustomization.yaml')[0]!;
    for (const r of kustomization.resources as string[]) expect(files).toContain(r);
    // word for word, but for the vote file on the pod's own volume claim
    expect(withoutVoteVolume(statefulSet.spec.template)).toEqual(deployment.spec.template);
    expect(statefulSet.spec.template).not.toEqual(deployment.spec.template);
    expect(statefulSet.spec.serviceName).toBe(only('Service')[0]!.metadata.name);
  });

  it("the StatefulSet keeps the quorum coordinator's vote on a per-pod volume claim, not an emptyDir", () => {
    const voteDir = (o: K8sObject) => {
      const c = o.spec.template.spec.containers[0];
      const file =
        c.env.find((e: { name: string }) => e.name === 'DOYEN_VOTE_FILE')?.value ?? VOTE_FILE_DEFAULT;
      return file.slice(0, file.lastIndexOf('/'));
    };
    expect(voteFileStorage(statefulSet, voteDir(statefulSet))).toBe('claim');
    const claim = statefulSet.spec.volumeClaimTemplates.find(
      (t: K8sObject) => t.metadata.name === mountOf(statefulSet, voteDir(statefulSet))?.name,
    );
    expect(claim.spec.accessModes).toEqual(['ReadWriteOnce']);
    // positive control: the Deployment's vote would sit in /tmp, an emptyDir a recreated pod loses
    expect(voteFileStorage(deployment, voteDir(deployment))).toBe('emptyDir');
  });

  it('the grace period outlasts the worst-case coordinated shutdown, computed from its phase timeouts', () => {
    // the manifests set no leave or phase timeout of their own: the defaults apply
    for (const e of env) expect(e.name, e.name).not.toMatch(/LEAVE|PHASE|SHUTDOWN/);
    const worstMs = worstCaseShutdownMs({ leave: leavePhaseTimeoutMs(defaultClusterConfig.leaveTimeoutMs) });
    expect(worstMs).toBe(36_000);
    const preStopWaitMs = Number(
      /setTimeout\(r, (\d+)\)/.exec(container.lifecycle.preStop.exec.command[2])![1],
    );
    for (const o of [deployment, statefulSet]) {
      const graceMs = o.spec.template.spec.terminationGracePeriodSeconds * 1000;
      expect(graceMs, o.kind).toBeGreaterThan(worstMs);
      // the hook starts the same shutdown; its wait must end inside the grace period too
      expect(graceMs, o.kind).toBeGreaterThan(preStopWaitMs);
    }
    // positive control: the old 30 s would not have covered it
    expect(30_000).toBeLessThan(worstMs);
  });

  it('every DOYEN_* variable is a flag of doyen node (or its secret twin)', () => {
    const known = new Set([...Object.keys(NODE_OPTIONS).map(envNameOf), SECRET_ENV, HTTP_TOKEN_ENV]);
    const used = env.map((e) => e.name).filter((n) => n.startsWith('DOYEN_'));
    expect(used.length).toBeGreaterThan(8);
    for (const name of used) expect(known, name).toContain(name);
    // positive control: a misspelt one would be caught
    expect(known).not.toContain('DOYEN_HTTPPORT');
  });

  it('ports, probes, the service and the secrets agree', () => {
    const ports = new Map<string, number>(container.ports.map((p: any) => [p.name, p.containerPort]));
    expect(ports.get('remoting')).toBe(Number(envValue('DOYEN_PORT')));
    expect(ports.get('management')).toBe(Number(envValue('DOYEN_HTTP_PORT')));
    for (const probe of [container.readinessProbe, container.livenessProbe])
      expect(ports.has(probe.httpGet.port)).toBe(true);
    const service = only('Service')[0]!;
    expect(service.spec.clusterIP).toBe('None');
    for (const p of service.spec.ports) expect(ports.get(p.targetPort)).toBe(p.port);
    expect(service.spec.selector).toEqual(deployment.spec.template.metadata.labels);
    expect(only('PodDisruptionBudget')[0]!.spec.selector.matchLabels).toEqual(
      deployment.spec.template.metadata.labels,
    );
    const secret = only('Secret')[0]!;
    for (const e of env.filter((x) => x.valueFrom?.secretKeyRef)) {
      expect(e.valueFrom.secretKeyRef.name).toBe(secret.metadata.name);
      expect(Object.keys(secret.stringData)).toContain(e.valueFrom.secretKeyRef.key);
    }
    // the service name the pods look up is the Service's, in the pod's namespace
    expect(envValue('DOYEN_SERVICE')).toBe(`${service.metadata.name}.$(POD_NAMESPACE).svc.cluster.local`);
  });

  it('the image builds every package doyen needs and runs its compiled CLI', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^EXPOSE 25520 8558$/m);
    const entry = /^ENTRYPOINT \["node", "\/app\/node_modules\/doyen\/(.+)"\]$/m.exec(dockerfile)?.[1];
    const pkg = JSON.parse(readFileSync(join(ROOT, 'packages/doyen/package.json'), 'utf8'));
    expect(pkg.name).toBe('doyen');
    expect(`./${entry}`).toBe(pkg.bin.doyen);
    const packed = new Set(/for p in ([a-z ]+); do/.exec(dockerfile)![1]!.split(' '));
    // every @doyen/* package doyen depends on, directly or not, is packed
    const need = new Set<string>(['doyen']);
    const visit = (dir: string) => {
      const p = JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8'));
      for (const dep of Object.keys({ ...p.dependencies, ...p.peerDependencies })) {
        if (!dep.startsWith('@doyen/')) continue;
        const name = dep.slice('@doyen/'.length);
        if (!need.has(name)) {
          need.add(name);
          visit(name);
        }
      }
    };
    visit('doyen');
    for (const name of need) expect(packed, name).toContain(name);
  });
});

describe('a real node run with the manifest environment', () => {
  const nodes: CliNode[] = [];
  afterEach(() => {
    for (const n of nodes.splice(0)) n.process.kill('SIGKILL');
  });

  const get = async (port: number, path: string) => {
    const r = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2000) }).catch(
      () => undefined,
    );
    return r?.status;
  };

  /** Runs the container's command with the environment `e`; resolves once its `probe` path answers 200. */
  async function runUntilProbeOk(
    e: Record<string, string>,
    httpPort: number,
    probe: 'livenessProbe' | 'readinessProbe',
  ): Promise<CliNode> {
    const node = runCli([...container.args], httpPort, e);
    nodes.push(node);
    const what = probe === 'livenessProbe' ? 'liveness' : 'readiness';
    await eventually(async () => (await get(httpPort, container[probe].httpGet.path)) === 200, {
      timeoutMs: 15_000,
      what: `the ${what} probe path answering 200`,
    });
    return node;
  }

  it('bootstrapping (DNS finds nobody): alive, not ready, the bootstrap route answers', async () => {
    const [port, httpPort, silentDns] = await freePorts(3);
    const e = podEnv(env, {
      DOYEN_PORT: String(port),
      DOYEN_HTTP_PORT: String(httpPort),
      DOYEN_DNS_SERVER: `127.0.0.1:${silentDns}`,
    });
    expect(e.DOYEN_SERVICE).toBe('doyen.default.svc.cluster.local');
    await runUntilProbeOk(e, httpPort!, 'livenessProbe');
    expect(await get(httpPort!, container.readinessProbe.httpGet.path)).toBe(503);
    expect(await get(httpPort!, '/bootstrap/seed-nodes')).toBe(200);
    expect(await get(httpPort!, '/health/no-such-path')).toBe(503); // positive control: not everything is 200
  });

  it('up (its own seed): ready; the preStop hook makes it leave and exit 0', async () => {
    const [port, httpPort] = await freePorts(2);
    const e = podEnv(env, {
      DOYEN_PORT: String(port),
      DOYEN_HTTP_PORT: String(httpPort),
      DOYEN_SEEDS: `127.0.0.1:${port}`,
    });
    delete e.DOYEN_DISCOVERY;
    delete e.DOYEN_SERVICE;
    const node = await runUntilProbeOk(e, httpPort!, 'readinessProbe');
    expect(await get(httpPort!, container.livenessProbe.httpGet.path)).toBe(200);
    // the hook's own command, against this node's port (the manifest's is DOYEN_HTTP_PORT's)
    const [cmd, flag, script] = container.lifecycle.preStop.exec.command as string[];
    expect(script).toContain(`http://127.0.0.1:${envValue('DOYEN_HTTP_PORT')}/cluster/leave`);
    const hook = execFile(
      cmd === 'node' ? process.execPath : cmd!,
      [flag!, script!.replace(`:${envValue('DOYEN_HTTP_PORT')}/`, `:${httpPort}/`)],
      {
        env: { ...process.env, DOYEN_HTTP_TOKEN: e.DOYEN_HTTP_TOKEN },
      },
    );
    const { code } = await node.exited;
    hook.kill();
    expect(code).toBe(0);
    expect(node.events().some((x) => x.event === 'node.shutdown')).toBe(true);
  }, 30_000);
});
