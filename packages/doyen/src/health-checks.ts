/**
 * The app's own readiness conditions (Akka Management's readiness checks): `GET /health/ready`
 * (and `/ready`) answers 200 only when the node is up in its cluster and every check passes.
 * A check that throws, rejects or takes longer than its time limit counts as not ready, so a
 * hung dependency takes the pod out of the Service instead of hanging the kubelet's probe.
 */
export type ReadinessCheck = () => boolean | Promise<boolean>;

/** Akka's `check-timeout`: a probe must answer well within the kubelet's own timeout. */
export const DEFAULT_CHECK_TIMEOUT_MS = 1000;

export class HealthChecks {
  private readonly readiness = new Map<string, ReadinessCheck>();

  constructor(private readonly timeoutMs = DEFAULT_CHECK_TIMEOUT_MS) {}

  /**
   * Adds (or, under the same name, replaces) a readiness condition; returns its removal.
   * Replacing by name lets a `setup` that runs in every incarnation add it again safely.
   */
  addReadinessCheck(name: string, check: ReadinessCheck): () => void {
    this.readiness.set(name, check);
    return () => {
      if (this.readiness.get(name) === check) this.readiness.delete(name);
    };
  }

  /** The names of the checks that do not pass now (all run at once, each bounded by the timeout). */
  async notReady(): Promise<string[]> {
    const results = await Promise.all(
      [...this.readiness].map(async ([name, check]) => ((await this.passes(check)) ? undefined : name)),
    );
    return results.filter((name): name is string => name !== undefined);
  }

  private async passes(check: ReadinessCheck): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.timeoutMs);
    });
    try {
      return (await Promise.race([Promise.resolve().then(check), timedOut])) === true;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}
