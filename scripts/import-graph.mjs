#!/usr/bin/env node
// `node scripts/import-graph.mjs DIR [DIR…]`: the import graph of the TypeScript files under each
// folder, from the compiler's own reading of their import and export statements (type-only imports
// included: they are arrows of the design too). For each folder it prints, as one JSON object per
// line: files, arrows (imports between two files of the folder), arrows back up (from a file to a
// file in a folder above its own), circles (groups of files that import each other, round and
// round: the strongly connected components of more than one file) and the files of each circle.
// Imports of other packages and of node: are not arrows of the folder. Exit 0; `--check` exits 1
// when any folder has a circle. CI runs test/architecture/import-graph.test.ts, which imports
// `importGraph`: a circle in any package, or an arrow back up inside cluster/, fails the build.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** Every .ts file below `dir` (no declaration files, no tests). */
function sourcesOf(dir) {
  const out = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourcesOf(path));
    else if (entry.endsWith('.ts') && !entry.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The files of `files` that `file` imports (relative specifiers, `.js` written for `.ts`). */
function importsOf(file, files) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  const targets = new Set();
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const base = resolve(dirname(file), fileName);
    const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
    const hit = candidates.find((c) => files.has(c));
    if (hit) targets.add(hit);
  }
  return [...targets];
}

/** Strongly connected components of more than one node (Tarjan's algorithm). */
function circles(graph) {
  let index = 0;
  const stack = [];
  const state = new Map();
  const found = [];
  const visit = (v) => {
    state.set(v, { index, low: index, onStack: true });
    index++;
    stack.push(v);
    for (const w of graph.get(v)) {
      if (!state.has(w)) {
        visit(w);
        state.get(v).low = Math.min(state.get(v).low, state.get(w).low);
      } else if (state.get(w).onStack) {
        state.get(v).low = Math.min(state.get(v).low, state.get(w).index);
      }
    }
    if (state.get(v).low === state.get(v).index) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        state.get(w).onStack = false;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component);
    }
  };
  for (const v of graph.keys()) if (!state.has(v)) visit(v);
  return found;
}

/** The figures of one folder. */
export function importGraph(dir) {
  const root = resolve(dir);
  const files = new Set(sourcesOf(root));
  const graph = new Map([...files].map((f) => [f, importsOf(f, files)]));
  let arrows = 0;
  let backUp = 0;
  for (const [from, targets] of graph) {
    for (const to of targets) {
      arrows++;
      // a file in a folder above the importer's own: the importer's folder lies inside the target's
      const fromDir = dirname(from);
      const toDir = dirname(to);
      if (fromDir !== toDir && fromDir.startsWith(toDir + sep)) backUp++;
    }
  }
  const found = circles(graph).map((c) => c.map((f) => relative(root, f)).sort());
  return {
    folder: relative(process.cwd(), root) || '.',
    files: files.size,
    arrows,
    backUp,
    circles: found.length,
    circleFiles: found,
  };
}

/** The command line: figures per folder, exit 1 with `--check` when any folder has a circle. */
function main(args) {
  const check = args.includes('--check');
  const dirs = args.filter((a) => a !== '--check');
  if (dirs.length === 0) {
    console.error('usage: node scripts/import-graph.mjs [--check] DIR [DIR…]');
    process.exit(2);
  }
  let failed = false;
  for (const dir of dirs) {
    const figures = importGraph(dir);
    if (figures.circles > 0) failed = true;
    console.log(JSON.stringify(figures));
  }
  if (check && failed) process.exit(1);
}

// run as a command, not when a test imports `importGraph`
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  main(process.argv.slice(2));
