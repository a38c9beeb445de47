// `doyen node --app PATH`: the app module whose `setup` the CLI runs for every incarnation of the
// node, so that an image is doyen plus one module. The module exports a named `setup(node,
// incarnation)` (NodeConfig.setup) and may export `config`, defaults below flags, DOYEN_*
// variables and the --config file.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DoyenError } from '@doyen/core';
import type { NodeConfig } from './node-config.js';

/** An app module that cannot be imported, or exports no usable `setup`: the CLI exits 2. */
export class AppModuleError extends DoyenError {
  constructor(message: string) {
    super(message, 'app-module');
  }
}

export interface AppModule {
  readonly setup: NonNullable<NodeConfig['setup']>;
  readonly config?: Partial<NodeConfig>;
}

/**
 * Where bin.ts leaves a real import(): the bundle runs as a vm.Script, where import() has no
 * loader (scripts/bundle-cli.mjs turns each into require(), which cannot load an ES module with
 * top-level await, nor one on Node < 20.19).
 */
export const MODULE_IMPORTER = Symbol.for('doyen.import-module');

type Importer = (url: string) => Promise<Record<string, unknown>>;

function importer(): Importer {
  return (
    (globalThis as Record<symbol, Importer | undefined>)[MODULE_IMPORTER] ??
    ((url: string) => import(url) as Promise<Record<string, unknown>>)
  );
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

/**
 * Imports the app module at `path` (relative to `cwd`) and checks its exports; `source` names
 * where the path came from in messages (`--app` or `DOYEN_APP`).
 */
export async function importAppModule(
  path: string,
  source = '--app',
  cwd: string = process.cwd(),
): Promise<AppModule> {
  const file = resolve(cwd, path);
  const what = `${source} ${path}`;
  let module: Record<string, unknown>;
  try {
    module = await importer()(pathToFileURL(file).href);
  } catch (error) {
    throw new AppModuleError(`${what}: cannot import ${file}: ${(error as Error).message}`);
  }
  const { setup, config } = module;
  if (setup === undefined)
    throw new AppModuleError(
      `${what}: the module exports no setup function (export function setup(node, incarnation) { … })`,
    );
  if (typeof setup !== 'function')
    throw new AppModuleError(
      `${what}: its setup export is ${kindOf(setup)}, not a function (node, incarnation) => void`,
    );
  if (config !== undefined && (typeof config !== 'object' || config === null || Array.isArray(config)))
    throw new AppModuleError(
      `${what}: its config export is ${kindOf(config)}, not an object of NodeConfig defaults`,
    );
  return {
    setup: setup as AppModule['setup'],
    ...(config !== undefined ? { config: config as Partial<NodeConfig> } : {}),
  };
}
