// The import picture the design promises, kept in CI: no circle of imports in any package, and no
// arrow back up inside cluster/ (a protocol's folder never imports from the folder above it), as
// read by scripts/import-graph.mjs from the TypeScript compiler's own reading of the imports
// (type-only ones included). `node scripts/import-graph.mjs packages/*/src` prints the figures.
// The positive controls are small folders written here that break each rule and are reported.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { importGraph } from '../../scripts/import-graph.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const sources = readdirSync(join(root, 'packages'))
  .map((pkg) => join(root, 'packages', pkg, 'src'))
  .filter((src) => statSync(src, { throwIfNoEntry: false })?.isDirectory());

describe('the import graph of the packages', () => {
  it('finds every package', () => {
    expect(sources.map((s) => s.split('/').at(-2))).toEqual(
      expect.arrayContaining(['core', 'wire', 'cluster', 'singleton', 'partitions', 'election', 'doyen']),
    );
  });

  for (const src of sources) {
    it(`has no circle in ${src.slice(root.length + 1)}`, () => {
      const figures = importGraph(src);
      expect(figures.files).toBeGreaterThan(0);
      expect(figures.circleFiles).toEqual([]);
      expect(figures.circles).toBe(0);
    });
  }

  it('has no arrow back up inside packages/cluster/src', () => {
    const figures = importGraph(join(root, 'packages', 'cluster', 'src'));
    expect(figures.arrows).toBeGreaterThan(0);
    expect(figures.backUp).toBe(0);
  });
});

describe('positive controls: a folder breaking the rules is reported', () => {
  let folder: string | undefined;
  afterEach(() => {
    if (folder) rmSync(folder, { recursive: true, force: true });
    folder = undefined;
  });
  const write = (files: Record<string, string>): string => {
    folder = mkdtempSync(join(tmpdir(), 'import-graph-'));
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(folder, path)), { recursive: true });
      writeFileSync(join(folder, path), text);
    }
    return folder;
  };

  it('reports two files importing each other as a circle', () => {
    const dir = write({
      'a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
      'c.ts': "import { a } from './a.js';\nexport const c = a;\n",
    });
    const figures = importGraph(dir);
    expect(figures).toMatchObject({ files: 3, arrows: 3, circles: 1, circleFiles: [['a.ts', 'b.ts']] });
  });

  it('counts a type-only import in a circle too', () => {
    const dir = write({
      'ref.ts':
        "import type { Message } from './message.js';\nexport interface Ref { send(m: Message): void }\n",
      'message.ts': "import type { Ref } from './ref.js';\nexport interface Message { readonly ref: Ref }\n",
    });
    expect(importGraph(dir).circleFiles).toEqual([['message.ts', 'ref.ts']]);
  });

  it('reports an import from a folder above as an arrow back up, and no circle', () => {
    const dir = write({
      'model.ts': 'export const oldest = 1;\n',
      'protocol/decisions.ts': "import { oldest } from '../model.js';\nexport const decide = () => oldest;\n",
      'protocol/machine.ts': "import { decide } from './decisions.js';\nexport const run = decide;\n",
    });
    expect(importGraph(dir)).toMatchObject({ files: 3, arrows: 2, backUp: 1, circles: 0 });
  });
});
