import { fileURLToPath } from 'node:url';

/** The repository's root directory (this file is two levels below it). */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
