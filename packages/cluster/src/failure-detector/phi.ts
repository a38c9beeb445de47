// Coefficients of the logistic approximation of the normal CDF (Bowling et al. 2009), as in Akka.
const A = 0.070566;
const B = 1.5976;

/**
 * The suspicion level of Hayashibara et al., "The φ Accrual Failure Detector" (SRDS 2004):
 * phi = -log10(P(a heartbeat arrives later than timeDiff)), where inter-arrival times are taken to be
 * normal with the given mean and standard deviation. phi = 1 means a 10% chance that the peer is
 * merely late, phi = 8 means 1e-8.
 *
 * Like Akka's PhiAccrualFailureDetector, the normal tail is the logistic approximation
 * (Bowling et al. 2009, max error < 1.4e-4):
 *   y = (timeDiff - mean) / stdDev,  e = exp(-y (1.5976 + 0.070566 y²)),  phi = -log10(e / (1 + e)).
 * Writing z = y (1.5976 + 0.070566 y²), that is phi = ln(1 + e^z) / ln 10 (softplus), computed here in
 * a form that neither overflows nor underflows: Akka's form reaches Infinity once e underflows, this
 * one keeps growing, so phi stays finite and strictly increasing in timeDiff.
 */
export function phi(timeDiffMs: number, meanMs: number, stdDeviationMs: number): number {
  const z = logisticExponent((timeDiffMs - meanMs) / stdDeviationMs);
  const softplus = z > 0 ? z + Math.log1p(Math.exp(-z)) : Math.log1p(Math.exp(z));
  return softplus / Math.LN10;
}

/**
 * The timeDiff at which `phi(timeDiff, mean, stdDev)` reaches `threshold`, i.e. how long after the
 * last heartbeat a silent peer is suspected. Inverts phi: z = ln(10^threshold - 1), then solves the
 * depressed cubic 0.070566 y³ + 1.5976 y - z = 0 (one real root, Cardano).
 */
export function phiCrossingMs(threshold: number, meanMs: number, stdDeviationMs: number): number {
  const z = Math.log(Math.expm1(threshold * Math.LN10));
  const p = B / A;
  const q = -z / A;
  const root = Math.sqrt((q * q) / 4 + (p * p * p) / 27);
  const y = Math.cbrt(-q / 2 + root) + Math.cbrt(-q / 2 - root);
  return meanMs + y * stdDeviationMs;
}

function logisticExponent(y: number): number {
  return y * (B + A * y * y);
}
