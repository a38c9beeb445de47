/** The import figures of one folder (see import-graph.mjs). */
export interface ImportFigures {
  /** The folder, relative to the working directory. */
  readonly folder: string;
  readonly files: number;
  /** Imports between two files of the folder, type-only ones included. */
  readonly arrows: number;
  /** Arrows from a file to a file in a folder above its own. */
  readonly backUp: number;
  /** Groups of files that import each other round and round. */
  readonly circles: number;
  /** The files of each circle, relative to the folder, sorted. */
  readonly circleFiles: readonly (readonly string[])[];
}

export function importGraph(dir: string): ImportFigures;
