import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { parseAllDocuments } from 'yaml';

/**
 * What the deploy tests need to read the kit without kubectl: YAML documents, the Kubernetes
 * schemas (kubernetes-models), the part of kustomize the kit uses (resources, images, JSON 6902
 * patches; anything else is refused, never ignored) and a container's environment as the kubelet
 * would give it.
 */
export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string }; [k: string]: any };
export type EnvVar = { name: string; value?: string; valueFrom?: any };

/** The schema each kind is checked against; a kind missing here fails validation. */
const MODELS: Record<string, new (data: any) => { validate(): void }> = {
  'v1/Service': Service,
  'v1/Secret': Secret,
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

export function validateObject(o: K8sObject): void {
  const Model = MODELS[`${o.apiVersion}/${o.kind}`];
  if (!Model) throw new Error(`no schema known for ${o.apiVersion} ${o.kind}`);
  new Model(o).validate();
}

export function loadYaml(file: string): any[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]!.message}`);
    return d.toJS();
  });
}

const KUSTOMIZATION_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'images', 'patches']);

/** `kubectl kustomize DIR` for the fields the kit uses; throws on any other. */
export function renderKustomization(dir: string): K8sObject[] {
  const k = loadYaml(join(dir, 'kustomization.yaml'))[0] as Record<string, any>;
  for (const field of Object.keys(k))
    if (!KUSTOMIZATION_FIELDS.has(field))
      throw new Error(`${dir}: kustomization field ${field} not supported`);
  const objects: K8sObject[] = [];
  for (const r of (k.resources ?? []) as string[]) {
    const path = join(dir, r);
    if (!existsSync(path)) throw new Error(`${dir}: resource ${r} does not exist`);
    objects.push(...(statSync(path).isDirectory() ? renderKustomization(path) : loadYaml(path)));
  }
  for (const image of (k.images ?? []) as { name: string; newName?: string; newTag?: string }[]) {
    for (const o of objects)
      for (const c of o.spec?.template?.spec?.containers ?? []) {
        const [name, tag] = String(c.image).split(':');
        if (name === image.name) c.image = `${image.newName ?? name}:${image.newTag ?? tag ?? 'latest'}`;
      }
  }
  for (const patch of (k.patches ?? []) as { path: string; target: { kind: string; name: string } }[]) {
    const ops = loadYaml(join(dir, patch.path))[0];
    if (!Array.isArray(ops)) throw new Error(`${patch.path}: only JSON 6902 patches are supported`);
    const targets = objects.filter(
      (o) => o.kind === patch.target.kind && o.metadata.name === patch.target.name,
    );
    if (targets.length === 0) throw new Error(`${patch.path}: no ${patch.target.kind} ${patch.target.name}`);
    for (const o of targets) for (const op of ops) applyOperation(o, op);
  }
  return objects;
}

/** One JSON 6902 `add` or `replace` (the ops the kit's patches use). */
function applyOperation(target: any, op: { op: string; path: string; value: unknown }): void {
  if (op.op !== 'add' && op.op !== 'replace') throw new Error(`patch op ${op.op} not supported`);
  const keys = op.path
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const last = keys.pop()!;
  let parent = target;
  for (const key of keys) {
    parent = parent?.[Array.isArray(parent) ? Number(key) : key];
    if (parent === undefined) throw new Error(`patch path ${op.path} does not exist`);
  }
  const value = structuredClone(op.value);
  if (Array.isArray(parent)) {
    if (last === '-') parent.push(value);
    else parent.splice(Number(last), op.op === 'add' ? 0 : 1, value);
  } else if (op.op === 'replace' && !(last in parent))
    throw new Error(`patch path ${op.path} does not exist`);
  else parent[last] = value;
}

/** One random value per Secret key, the same for every pod (as one Secret gives them). */
const secretValues = new Map<string, string>();

/**
 * The container's environment as the kubelet would give it (fieldRefs of a pod at 127.0.0.1 in
 * namespace default, the Secret's values, `$(VAR)` expanded), then `overrides` (undefined removes).
 */
export function podEnv(
  env: readonly EnvVar[],
  overrides: Record<string, string | undefined> = {},
): Record<string, string> {
  const resolved: Record<string, string> = {};
  const fields: Record<string, string> = { 'metadata.namespace': 'default', 'status.podIP': '127.0.0.1' };
  for (const e of env) {
    if (e.value !== undefined)
      resolved[e.name] = e.value.replace(/\$\((\w+)\)/g, (_, v) => resolved[v] ?? '');
    else if (e.valueFrom?.fieldRef) resolved[e.name] = fields[e.valueFrom.fieldRef.fieldPath]!;
    else if (e.valueFrom?.secretKeyRef) {
      const { name, key } = e.valueFrom.secretKeyRef;
      if (!secretValues.has(`${name}/${key}`))
        secretValues.set(`${name}/${key}`, randomBytes(16).toString('hex'));
      resolved[e.name] = secretValues.get(`${name}/${key}`)!;
    } else throw new Error(`env ${e.name}: no value the test knows how to give`);
  }
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) delete resolved[name];
    else resolved[name] = value;
  }
  return resolved;
}
