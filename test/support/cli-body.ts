import { type CliNode, getJson } from './cli-process.js';

/** The JSON body `path` answers on a CLI node's HTTP port, or undefined while it cannot answer (not up yet, or gone). */
export async function bodyOrUndefined(n: CliNode, path: string): Promise<any> {
  try {
    return (await getJson(n.httpPort!, path)).body;
  } catch {
    return undefined;
  }
}
