// `pnpm bench NAME [args]`: runs bench/NAME.ts under tsx, resolving workspace packages to their TypeScript
// sources (the @doyen/source export condition), so benches need no build step.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';

const benchDir = fileURLToPath(new URL('.', import.meta.url));
const available = readdirSync(benchDir)
  .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
  .map((file) => file.slice(0, -'.ts'.length))
  .sort();

const [name, ...args] = process.argv.slice(2);
if (name === undefined || !available.includes(name)) {
  if (name !== undefined) console.error(`unknown bench: ${name}`);
  console.error(`usage: pnpm bench NAME [args]\navailable benches: ${available.join(', ')}`);
  process.exit(2);
}

// Absolute loader URL, so running from outside the workspace root still finds tsx.
const tsx = import.meta.resolve('tsx');
const child = spawn(
  process.execPath,
  [
    '--conditions=@doyen/source',
    // the simulation of 250 nodes (bench scale) holds every node's state in this one process: ~3.3 GB
    '--max-old-space-size=8192',
    '--import',
    tsx,
    fileURLToPath(new URL(`${name}.ts`, import.meta.url)),
    ...args,
  ],
  { stdio: 'inherit' },
);
// Ctrl-C reaches the child through the terminal's process group; wait for it to exit rather than dying first.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('error', (error) => {
  console.error(error);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0));
});
