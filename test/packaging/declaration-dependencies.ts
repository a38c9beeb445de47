import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What a published package's declarations import must be installed with it: an app's `tsc`
 * with `skipLibCheck: false` reads every `.d.ts` doyen ships, and an import it cannot resolve
 * is an error (TS2307), or TS7016 for a package that ships no types of its own (such as `ws`,
 * typed by `@types/ws`). `node:` modules are the app's `@types/node`.
 */

/** The bare module specifiers the `.d.ts` files under `dir` import or reference. */
export function declarationImports(dir: string): Set<string> {
  const found = new Set<string>();
  for (const f of readdirSync(dir, { recursive: true }).map(String)) {
    if (!f.endsWith('.d.ts')) continue;
    // comments (doc examples) import nothing; triple-slash references are kept
    const text = readFileSync(join(dir, f), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/(?!\/\s*<reference).*$/gm, '');
    for (const m of text.matchAll(
      /\bfrom\s+['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|\bimport\s+['"]([^'"]+)['"]|<reference\s+types=['"]([^'"]+)['"]/g,
    )) {
      const spec = m[1] ?? m[2] ?? m[3] ?? m[4]!;
      if (!spec.startsWith('.') && !spec.startsWith('/')) found.add(spec);
    }
  }
  return found;
}

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`. */
export function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** `@types/ws` for `ws`, `@types/a__b` for `@a/b` (DefinitelyTyped's names). */
export function typesPackageOf(name: string): string {
  return `@types/${name.startsWith('@') ? name.slice(1).replace('/', '__') : name}`;
}

interface Manifest {
  readonly name: string;
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/**
 * The problems of one package: each imported package must be a dependency or a required peer
 * dependency, and one that ships no types (`shipsTypes` false) needs its `@types` package as a
 * dependency too. Empty when an app's `tsc` finds everything.
 */
export function declarationProblems(
  packageJson: Readonly<Record<string, any>>,
  imports: Iterable<string>,
  shipsTypes: (name: string) => boolean,
): string[] {
  const manifest = packageJson as Manifest;
  const problems: string[] = [];
  const deps = manifest.dependencies ?? {};
  const peers = manifest.peerDependencies ?? {};
  for (const name of new Set([...imports].map(packageOf))) {
    if (name === manifest.name || name.startsWith('node:')) continue;
    const required = name in deps || (name in peers && !manifest.peerDependenciesMeta?.[name]?.optional);
    if (!required)
      problems.push(`${manifest.name}: its declarations import ${name}, not a (required) dependency`);
    else if (!shipsTypes(name) && !(typesPackageOf(name) in deps))
      problems.push(
        `${manifest.name}: its declarations import ${name}, which ships no types: ${typesPackageOf(name)} must be a dependency`,
      );
  }
  return problems;
}

/** Whether the package installed at `dir` ships declarations (`types`, `typings`, a types export, index.d.ts). */
export function shipsOwnTypes(dir: string): boolean {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  if (pkg.types || pkg.typings) return true;
  if (pkg.exports && JSON.stringify(pkg.exports).includes('"types"')) return true;
  return readdirSync(dir).includes('index.d.ts');
}
