export interface Spread {
  min: number;
  median: number;
  max: number;
  n: number;
}

export function spread(values: readonly number[]): Spread {
  const xs = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (xs.length === 0) return { min: Number.NaN, median: Number.NaN, max: Number.NaN, n: 0 };
  const mid = Math.floor(xs.length / 2);
  const median = xs.length % 2 ? xs[mid]! : (xs[mid - 1]! + xs[mid]!) / 2;
  return { min: xs[0]!, median, max: xs.at(-1)!, n: xs.length };
}

export function percentile(values: readonly number[], p: number): number {
  const xs = [...values].sort((a, b) => a - b);
  if (xs.length === 0) return Number.NaN;
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))]!;
}
