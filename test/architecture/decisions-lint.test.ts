// The rule of the one machine idiom, checked by the linter: a protocol's decisions file
// (`*-decisions.ts`, `decisions.ts` under packages/*/src) imports no logger, clock, actor system
// or ref value, uses no timer, clock or console global, sends nothing and draws no randomness.
// biome.json's override applies `noRestrictedImports`, `noRestrictedGlobals` and the plugin
// lint/decisions-purity.grit to those files. The real decisions files pass; each positive control
// is a decisions file breaking one part of the rule, linted with the same configuration in a
// temporary project, and refused — while the same lines in a machine file, and refs imported as
// types, are accepted, so the rule is scoped as CONTRIBUTING.md says.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const biome = join(root, 'node_modules', '.bin', 'biome');

function decisionsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...decisionsFiles(path));
    else if (entry.endsWith('-decisions.ts') || entry === 'decisions.ts') out.push(path);
  }
  return out;
}

/** `biome lint` over `files` from `cwd`: its exit status and everything it printed. */
function lint(cwd: string, files: readonly string[]): { status: number | null; output: string } {
  const run = spawnSync(biome, ['lint', '--max-diagnostics=none', ...files], { cwd, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('the decisions purity lint', () => {
  it('accepts every decisions file of the packages', () => {
    const files = readdirSync(join(root, 'packages')).flatMap((pkg) => {
      const src = join(root, 'packages', pkg, 'src');
      return statSync(src, { throwIfNoEntry: false })?.isDirectory() ? decisionsFiles(src) : [];
    });
    // the singleton manager and proxy, five elections and their preamble, quorum, the allocator,
    // downing, the receptionist: the rule has something to check
    expect(files.length).toBeGreaterThanOrEqual(12);
    const { status, output } = lint(
      root,
      files.map((f) => relative(root, f)),
    );
    expect(output).not.toMatch(/noRestrictedImports|noRestrictedGlobals|plugin/);
    expect(status).toBe(0);
  });

  describe('positive controls: a decisions file breaking the rule is refused', () => {
    let project: string;
    beforeAll(() => {
      project = mkdtempSync(join(tmpdir(), 'decisions-lint-'));
      copyFileSync(join(root, 'biome.json'), join(project, 'biome.json'));
      mkdirSync(join(project, 'lint'));
      copyFileSync(
        join(root, 'lint', 'decisions-purity.grit'),
        join(project, 'lint', 'decisions-purity.grit'),
      );
      mkdirSync(join(project, 'packages', 'demo', 'src', 'proto'), { recursive: true });
    });
    afterAll(() => rmSync(project, { recursive: true, force: true }));

    const write = (path: string, text: string): string => {
      writeFileSync(join(project, path), text);
      return path;
    };

    // [what the file does, its text, the rule and message that refuse it]
    const refused: ReadonlyArray<readonly [string, string, RegExp]> = [
      [
        "imports the logger type from '@doyen/core'",
        "import type { Logger } from '@doyen/core';\nexport type L = Logger;\n",
        /noRestrictedImports[\s\S]*logs nothing/,
      ],
      [
        'imports pino',
        "import pino from 'pino';\nexport const p = pino;\n",
        /noRestrictedImports[\s\S]*logs nothing/,
      ],
      [
        "imports core's logger module by a relative path",
        "import { createLogger } from '../logger.js';\nexport const l = createLogger;\n",
        /noRestrictedImports[\s\S]*logs nothing/,
      ],
      [
        'imports the clock',
        "import { realClock } from '@doyen/core';\nexport const now = () => realClock.now();\n",
        /noRestrictedImports[\s\S]*reads no clock/,
      ],
      [
        'imports the actor system',
        "import type { ActorSystem } from '@doyen/core';\nexport type S = ActorSystem;\n",
        /noRestrictedImports[\s\S]*reaches no actor system/,
      ],
      [
        'imports a ref as a value',
        "import { ActorRef } from '@doyen/core';\nexport const isRef = (x: unknown) => x instanceof ActorRef;\n",
        /plugin[\s\S]*refs only as data/,
      ],
      [
        'imports a namespace',
        "import * as core from '@doyen/core';\nexport const c = core;\n",
        /plugin[\s\S]*names, not namespaces/,
      ],
      [
        'sends',
        'export const decide = (to: { send(m: unknown): void }) => to.send({});\n',
        /plugin[\s\S]*sends nothing/,
      ],
      ['calls Math.random', 'export const pick = () => Math.random();\n', /plugin[\s\S]*draws no randomness/],
      ['reads Date.now', 'export const now = () => Date.now();\n', /noRestrictedGlobals[\s\S]*Date/],
      [
        'sets a timer',
        'export const later = (f: () => void) => setTimeout(f, 1);\n',
        /noRestrictedGlobals[\s\S]*setTimeout/,
      ],
      [
        'writes to the console',
        "export const say = () => console.log('decided');\n",
        /noRestrictedGlobals[\s\S]*console/,
      ],
    ];

    for (const [what, text, rule] of refused) {
      it(`refuses a *-decisions.ts file that ${what}, accepts the same machine file`, () => {
        const decisions = write(`packages/demo/src/proto/demo-decisions.ts`, text);
        const refusal = lint(project, [decisions]);
        expect(refusal.output).toMatch(rule);
        expect(refusal.status).not.toBe(0);
        const machine = write(`packages/demo/src/proto/demo-machine.ts`, text);
        const elsewhere = lint(project, [machine]);
        expect(elsewhere.output).not.toMatch(/noRestrictedImports|noRestrictedGlobals|plugin/);
      });
    }

    it('refuses the logger in a file named decisions.ts too', () => {
      const decisions = write(
        'packages/demo/src/decisions.ts',
        "import pino from 'pino';\nexport const p = pino;\n",
      );
      const refusal = lint(project, [decisions]);
      expect(refusal.output).toMatch(/noRestrictedImports[\s\S]*logs nothing/);
      expect(refusal.status).not.toBe(0);
    });

    it('accepts refs imported as types, the data a decision may carry', () => {
      const decisions = write(
        'packages/demo/src/proto/typed-decisions.ts',
        "import type { ActorRef, Message } from '@doyen/core';\n" +
          "import { type ActorRef as Ref, memberKey } from '@doyen/core';\n" +
          "export type Send = { readonly kind: 'send'; readonly to: ActorRef | Ref; readonly message: Message };\n" +
          'export const key = memberKey;\n',
      );
      const { status, output } = lint(project, [decisions]);
      expect(output).not.toMatch(/noRestrictedImports|noRestrictedGlobals|plugin/);
      expect(status).toBe(0);
    });
  });
});
