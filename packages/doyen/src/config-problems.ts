import { InvalidConfigError } from '@doyen/core';

/**
 * One thing wrong with a configuration: its message, and the top-level NodeConfig setting it is
 * about when there is one (`port`, `clusterOptions`), so that a setting refused at one layer
 * (a flag, the file) is not reported again, differently worded, by the check of the whole.
 */
export interface ConfigProblem {
  readonly setting?: string;
  readonly message: string;
}

/** Every problem of a configuration at once, so that fixing one does not just reveal the next. */
export class ConfigProblemsError extends InvalidConfigError {
  readonly problems: readonly string[];

  constructor(problems: readonly (string | ConfigProblem)[]) {
    const messages = [...new Set(problems.map((p) => (typeof p === 'string' ? p : p.message)))];
    // one problem reads exactly as it did before there could be several
    super(
      messages.length === 1
        ? messages[0]!
        : `${messages.length} problems:\n${messages.map((m) => `  - ${m}`).join('\n')}`,
    );
    this.problems = messages;
  }
}

/** The problems an error carries: all of a ConfigProblemsError's, or its one message. */
export function problemsOf(error: Error, setting?: string): ConfigProblem[] {
  const messages = error instanceof ConfigProblemsError ? error.problems : [error.message];
  return messages.map((message) => (setting === undefined ? { message } : { setting, message }));
}
