import { assembleNodeConfig, takeSecretsFromEnvironment } from './config-assembly.js';
import { readConfigFileSettings } from './config-file.js';
import type { NodeConfig } from './node-config.js';

export { ConfigProblemsError } from './config-problems.js';

export interface LoadNodeConfigOptions {
  /** `doyen node`'s flags, e.g. `process.argv.slice(2)` (default: none; an app's own arguments are its own). */
  readonly argv?: readonly string[];
  /** Where DOYEN_* variables, DOYEN_SECRET and DOYEN_HTTP_TOKEN are read (default: process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** A config file (JSON, or YAML for .yaml/.yml) when neither --config nor DOYEN_CONFIG names one. */
  readonly file?: string;
  /** What the app brings, below everything else: flags > environment > file > defaults. */
  readonly defaults?: Partial<NodeConfig>;
}

/**
 * The NodeConfig `doyen node` would run with, for an app to pass to startNode: DOYEN_* variables,
 * a config file and `defaults`, with the CLI's schema, precedence (flags > environment > file >
 * defaults) and messages. `await startNode({ ...loadNodeConfig(), setup })`. Throws
 * InvalidConfigError (a ConfigProblemsError, `problems` listing each) naming every problem.
 * Reading process.env (the default) takes DOYEN_SECRET and DOYEN_HTTP_TOKEN out of it.
 */
export function loadNodeConfig(options: LoadNodeConfigOptions = {}): NodeConfig {
  const env = options.env ?? process.env;
  const { config, warnings } = assembleNodeConfig(
    {
      argv: options.argv ?? [],
      env: env === process.env ? takeSecretsFromEnvironment(process.env) : env,
      file: options.file,
      defaults: options.defaults,
    },
    readConfigFileSettings,
  );
  // there is no logger before startNode: Node's warning channel (stderr, `process.on('warning')`)
  for (const w of warnings) process.emitWarning(w.message, { code: w.event });
  return config;
}
