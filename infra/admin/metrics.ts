// `npm run admin -- metrics [--file <log>]`: sums the metric lines (CloudWatch Embedded Metric Format) of a local
// engine's log for a person, as CloudWatch would graph them: per metric and dimension set, the count of values,
// their sum, and for latencies the median, p99 and maximum. Lines that are not EMF documents are skipped.
import { NAMESPACE } from "#shared/metrics.ts";

interface Series {
  readonly metric: string;
  readonly unit: string;
  readonly dimensions: string;
  readonly values: number[];
}

export interface MetricSummary {
  readonly metric: string;
  readonly unit: string;
  /** `Operation=service, Outcome=ok`; empty for the deployment's total. */
  readonly dimensions: string;
  readonly samples: number;
  readonly sum: number;
  readonly p50?: number;
  readonly p99?: number;
  readonly max?: number;
}

interface Directive {
  Namespace?: unknown;
  Dimensions?: unknown;
  Metrics?: unknown;
}

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0;

/** Every series the lines hold (the deployment dimension `Stack` left out of the names: one log, one engine). */
export function sumMetrics(lines: Iterable<string>): MetricSummary[] {
  const series = new Map<string, Series>();
  for (const line of lines) {
    const start = line.indexOf('{"_aws"');
    if (start < 0) continue;
    let doc: Record<string, unknown>;
    try {
      doc = JSON.parse(line.slice(start)) as Record<string, unknown>;
    } catch {
      continue;
    }
    const directives = (doc._aws as { CloudWatchMetrics?: Directive[] } | undefined)?.CloudWatchMetrics ?? [];
    for (const d of directives) {
      if (d.Namespace !== NAMESPACE || !Array.isArray(d.Dimensions) || !Array.isArray(d.Metrics)) continue;
      for (const set of d.Dimensions as string[][]) {
        const dimensions = set
          .filter((k) => k !== "Stack")
          .map((k) => `${k}=${String(doc[k])}`)
          .join(", ");
        for (const m of d.Metrics as { Name: string; Unit?: string }[]) {
          const raw = doc[m.Name];
          const values = (Array.isArray(raw) ? raw : [raw]).filter((v): v is number => typeof v === "number");
          const key = `${m.Name}\0${dimensions}`;
          const s = series.get(key) ?? { metric: m.Name, unit: m.Unit ?? "None", dimensions, values: [] };
          s.values.push(...values);
          series.set(key, s);
        }
      }
    }
  }
  return [...series.values()]
    .map((s) => {
      const sorted = [...s.values].sort((a, b) => a - b);
      const sum = sorted.reduce((a, b) => a + b, 0);
      const timing = s.unit === "Milliseconds" || s.unit === "Seconds";
      return {
        metric: s.metric,
        unit: s.unit,
        dimensions: s.dimensions,
        samples: sorted.length,
        sum: Math.round(sum * 10) / 10,
        ...(timing ? { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0 } : {}),
      };
    })
    .sort((a, b) => a.metric.localeCompare(b.metric) || a.dimensions.localeCompare(b.dimensions));
}

/** A table for a person: one row per series. */
export function formatMetrics(summary: readonly MetricSummary[]): string {
  if (summary.length === 0) return "no metric lines found";
  const rows = summary.map((s) => [
    s.metric,
    s.dimensions || "(all)",
    String(s.samples),
    s.unit === "Count"
      ? String(s.sum)
      : s.p50 !== undefined
        ? `p50 ${s.p50}  p99 ${s.p99}  max ${s.max}`
        : String(s.sum),
    s.unit,
  ]);
  const head = ["metric", "dimensions", "samples", "sum / distribution", "unit"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [line(head), ...rows.map(line)].join("\n");
}
