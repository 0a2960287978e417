// What bench/soak.ts prints once the run is over: the trend per window, the results table in the
// style of bench/latency.ts, and one verdict per property.
import { slopePerHour, summary, windowsOf, type BusCounts, type SoakModule, type Writer } from './soak-lib.ts';
import type { Arrival } from './soak-watch.ts';

/** How often the processes are sampled. */
export const SAMPLE_MS = 10_000;
/** The start of the run left out of the RSS slope and the overall lag. */
export const WARMUP_MS = 60_000;
/** Past this RSS slope after warm-up, a leak is suspected. */
const RSS_SLOPE_LIMIT_MIB_H = 10;
/** With fewer minutes than this after warm-up, a GC cycle outweighs any slope: no RSS verdict. */
const RSS_SLOPE_MIN_SPAN_MIN = 5;
/** The last window's p99 past this many times the first (after warm-up) and 50 ms more: the lag grows. */
const LAG_GROWTH_FACTOR = 2;
const LAG_GROWTH_FLOOR_MS = 50;
/** Open fds may differ by this much between start and end (a reconnect or a file being written). */
const FD_SLACK = 2;
/** The share of the target rate the writer must get acked. */
const RATE_SHARE = 0.95;

/** The processes a soak watches, by name. */
export type Watched = { client: number; engine: number; seat: number; 'nats-server': number };

/** One sample of the processes and the writer's counts. */
export type Sample = {
  /** Ms since the start. */
  t: number;
  rss: Record<keyof Watched, number>;
  fds: { client: number; engine: number };
  /** Puts acked and new values seen on disk so far. */
  acked: number;
  seen: number;
  /** The bus's consumers and subscriptions, once counted (the count is asked for, not waited on). */
  bus?: BusCounts;
};

const row = (name: string, text: string) => console.log(`  ${name.padEnd(40)} ${text}`);
const ms = (x: number) => `${x.toFixed(1).padStart(7)} ms`;
/** MiB with one decimal. */
export const mib = (x: number) => `${x.toFixed(1)} MiB`;
/** `m:ss` of ms since the start. */
export const clock = (t: number) => `${Math.floor(t / 60_000)}:${String(Math.floor((t % 60_000) / 1000)).padStart(2, '0')}`;

/** The consumers someone listens to. */
const bound = (b: BusCounts) => b.consumers - b.unbound;

/** The lag summary of the values that arrived in window `[from, to)`. */
const lagIn = (arrivals: readonly Arrival[], [from, to]: [number, number]) => summary(arrivals.filter((x) => x.at >= from && x.at < to).map((x) => x.lagMs));

/** Prints one row per window: rates, lag, the floor, RSS and fds at its end. */
export function printTrend(o: Outcome): void {
  console.log(
    `trend per ${o.windowMs / 1000} s window (the first ${WARMUP_MS / 1000} s are warm-up: out of the slope and the overall lag; floor = put → a plain KV watcher)`,
  );
  const head = [
    'acked/s',
    'disk/s',
    'lag p50',
    'lag p99',
    'lag max',
    'floor p99',
    'client RSS',
    'fds',
    'engine RSS',
    'fds',
    'cons',
    'subs',
    ...(o.split ? ['→req p99', 'req→reply p99'] : []),
  ];
  const widths = [8, 8, 10, 10, 10, 10, 11, 4, 11, 4, 5, 5, 10, 14];
  console.log(`  ${'window'.padEnd(12)}${head.map((h, i) => h.padStart(widths[i]! + 1)).join('')}`);
  for (const w of windowsOf(o.samples.at(-1)!.t, o.windowMs)) {
    const a = o.samples.filter((s) => s.t <= w[0] + SAMPLE_MS / 2).at(-1)!;
    const b = o.samples.filter((s) => s.t <= w[1] + SAMPLE_MS / 2).at(-1)!;
    const secs = (b.t - a.t) / 1000 || 1;
    const lag = lagIn(o.arrivals, w),
      floor = lagIn(o.floor, w);
    const cells = [
      ((b.acked - a.acked) / secs).toFixed(0),
      ((b.seen - a.seen) / secs).toFixed(0),
      ms(lag.p50),
      ms(lag.p99),
      ms(lag.max),
      ms(floor.p99),
      mib(b.rss.client),
      String(b.fds.client),
      mib(b.rss.engine),
      String(b.fds.engine),
      String(b.bus?.consumers ?? '?'),
      String(b.bus?.subscriptions ?? '?'),
      ...(o.split ? [ms(lagIn(o.split.request, w).p99), ms(lagIn(o.split.reply, w).p99)] : []),
    ];
    console.log(`  ${`${clock(w[0])}–${clock(Math.min(w[1], b.t))}`.padEnd(12)}${cells.map((c, i) => c.padStart(widths[i]! + 1)).join('')}`);
  }
}

/** A module whose file on disk is not what it should be (absent: undefined). */
export type Mismatch = { module: SoakModule; text: string | undefined };

/** The verdicts' inputs, gathered at the end. */
export type Outcome = {
  /** What the run aimed at: changes/s and modules. */
  target: { rate: number; modules: number };
  samples: Sample[];
  arrivals: Arrival[];
  floor: Arrival[];
  windowMs: number;
  /** With --split: put → request at the engine socket, request → reply. */
  split?: { request: Arrival[]; reply: Arrival[] };
  bus: { start: BusCounts; end: BusCounts };
  fds: { start: number; end: number };
  writer: Writer;
  writerMs: number;
  seen: number;
  settleMs: number;
  wrong: Mismatch[];
  applied: number;
  cpu: Record<string, number>;
  loopP99: number;
  logs: { client: string[]; engine: string[] };
};

/** What the results and verdicts read, worked out once from the outcome. */
export type Figures = {
  /** The samples after warm-up. */
  late: Sample[];
  slope(name: keyof Watched): number;
  /** Minutes between the first and last sample after warm-up. */
  spanMin: number;
  first: Sample;
  last: Sample;
  /** The disk lag's first window after warm-up, and its last window. */
  firstWindow: ReturnType<typeof summary>;
  lastWindow: ReturnType<typeof summary>;
  /** Acked puts per second. */
  rate: number;
};

const afterWarmup = (xs: readonly Arrival[]) => summary(xs.filter((x) => x.at >= WARMUP_MS).map((x) => x.lagMs));
const lagRow = (name: string, x: ReturnType<typeof summary>, what = 'values') =>
  row(name, `p50 ${ms(x.p50)}   p99 ${ms(x.p99)}   max ${ms(x.max)}   (${x.n} ${what})`);

/** Works out what the results and verdicts read. */
export function figuresOf(o: Outcome): Figures {
  const late = o.samples.filter((s) => s.t >= WARMUP_MS);
  const last = o.samples.at(-1)!;
  const windows = windowsOf(last.t, o.windowMs);
  return {
    late,
    first: o.samples[0]!,
    last,
    slope: (name) => slopePerHour(late.map((s) => ({ t: s.t, v: s.rss[name] }))),
    spanMin: late.length > 1 ? (late.at(-1)!.t - late[0]!.t) / 60_000 : 0,
    firstWindow: lagIn(o.arrivals, windows.find((w) => w[0] >= WARMUP_MS) ?? windows.at(-1)!),
    lastWindow: lagIn(o.arrivals, windows.at(-1)!),
    rate: o.writer.acked() / (o.writerMs / 1000),
  };
}

/** Prints the results table: each figure named, padded, at the start and end of the run. */
export function printResults(o: Outcome, f: Figures): void {
  console.log('results');
  for (const name of ['client', 'engine', 'seat', 'nats-server'] as const) {
    const grew = f.late.length > 0 ? f.last.rss[name] - f.late[0]!.rss[name] : NaN;
    row(
      `${name} RSS start → end, slope`,
      `${mib(f.first.rss[name])} → ${mib(f.last.rss[name])}   ${f.slope(name).toFixed(1)} MiB/h, ${grew >= 0 ? '+' : ''}${grew.toFixed(1)} MiB after warm-up (${f.late.length} samples)`,
    );
  }
  lagRow('put → file on disk (after warm-up)', afterWarmup(o.arrivals));
  lagRow('  floor: put → plain KV watcher', afterWarmup(o.floor));
  if (o.split) lagRow('  split: put → request at the socket', afterWarmup(o.split.request));
  if (o.split) lagRow('  split: request → engine reply', afterWarmup(o.split.reply), 'requests');
  row('  p99 first window after warm-up → last', `${ms(f.firstWindow.p99)} → ${ms(f.lastWindow.p99)}`);
  row('client event-loop lag', 'not measured: needs an instrumentation hook in the client (none added to src/)');
  row("  this bench's own event-loop delay p99", `${ms(o.loopP99)} (part of every lag figure above)`);
  row('client open fds start → end', `${o.fds.start} → ${o.fds.end}   (engine ${f.first.fds.engine} → ${f.last.fds.engine})`);
  row(
    'consumers on KV_ streams start → end',
    `${o.bus.start.consumers} → ${o.bus.end.consumers}   (listened to ${bound(o.bus.start)} → ${bound(o.bus.end)}, unbound ${o.bus.start.unbound} → ${o.bus.end.unbound})`,
  );
  row('  by stream at the end', JSON.stringify(o.bus.end.byStream));
  for (const [name, what] of o.bus.start.described) if (!o.bus.end.described.has(name)) console.log(`    gone: ${what}`);
  for (const [name, what] of o.bus.end.described) if (!o.bus.start.described.has(name)) console.log(`    new:  ${what}`);
  row('connections start → end', `${o.bus.start.connections} → ${o.bus.end.connections}   (${Object.keys(o.bus.end.subsByConnection).sort().join(', ')})`);
  const subs = Object.keys({ ...o.bus.start.subsByConnection, ...o.bus.end.subsByConnection })
    .sort()
    .map((c) => `${c} ${o.bus.start.subsByConnection[c] ?? 0}→${o.bus.end.subsByConnection[c] ?? 0}`);
  row('subscriptions start → end', `${o.bus.start.subscriptions} → ${o.bus.end.subscriptions}   (${subs.join(', ')})`);
  row('writer puts issued / acked / failed', `${o.writer.issued()} / ${o.writer.acked()} / ${o.writer.failed()} in ${(o.writerMs / 1000).toFixed(0)} s`);
  row('achieved rate (acked)', `${f.rate.toFixed(1)} changes/s of ${o.target.rate} (on disk: ${(o.seen / (o.writerMs / 1000)).toFixed(1)} new values/s)`);
  row('settled after the writer stopped', `${(o.settleMs / 1000).toFixed(1)} s`);
  row('final files exact', `${o.target.modules - o.wrong.length}/${o.target.modules}   mismatches ${o.wrong.length}`);
  row('reports applied at the end', `${o.applied}/${o.target.modules}`);
  row('warn/error log lines', `client ${o.logs.client.length}, engine ${o.logs.engine.length}`);
  row(
    'CPU seconds used (share of one core)',
    Object.entries(o.cpu)
      .map(([n, s]) => `${n} ${s.toFixed(0)} s (${((100 * s) / (o.writerMs / 1000)).toFixed(0)}%)`)
      .join(', '),
  );
  for (const w of o.wrong.slice(0, 5)) console.log(`  mismatch ${w.module.name}: ${JSON.stringify(w.text)}`);
  for (const l of [...o.logs.client.slice(0, 5), ...o.logs.engine.slice(0, 5)]) console.log(`  log: ${l.slice(0, 300)}`);
}

/** Prints one verdict per property; false where one fails (undefined: the run cannot judge it). */
export function printVerdicts(o: Outcome, f: Figures): boolean[] {
  const slope = f.slope('client');
  const rssWhy = `slope ${slope.toFixed(1)} MiB/h (limit ${RSS_SLOPE_LIMIT_MIB_H})`;
  const short = f.spanMin < RSS_SLOPE_MIN_SPAN_MIN;
  const grows = f.lastWindow.p99 > LAG_GROWTH_FACTOR * f.firstWindow.p99 && f.lastWindow.p99 > f.firstWindow.p99 + LAG_GROWTH_FLOOR_MS;
  const verdicts: [string, boolean | undefined, string][] = [
    [
      'client RSS',
      short ? undefined : slope <= RSS_SLOPE_LIMIT_MIB_H,
      short ? `${rssWhy}, but only ${f.spanMin.toFixed(1)} min after warm-up: too short to judge (needs ${RSS_SLOPE_MIN_SPAN_MIN})` : rssWhy,
    ],
    ['lag', !grows, `p99 first window after warm-up ${f.firstWindow.p99.toFixed(1)} ms, last ${f.lastWindow.p99.toFixed(1)} ms`],
    ['client fds', o.fds.end <= o.fds.start + FD_SLACK, `${o.fds.start} → ${o.fds.end}`],
    [
      'consumers',
      bound(o.bus.end) === bound(o.bus.start) && o.bus.end.unbound <= o.bus.start.unbound,
      `listened to ${bound(o.bus.start)} → ${bound(o.bus.end)}, unbound ${o.bus.start.unbound} → ${o.bus.end.unbound} (all: ${o.bus.start.consumers} → ${o.bus.end.consumers})`,
    ],
    ['connections', o.bus.end.connections === o.bus.start.connections, `${o.bus.start.connections} → ${o.bus.end.connections}`],
    ['final files', o.wrong.length === 0, `${o.wrong.length} mismatches`],
    ['rate', f.rate >= RATE_SHARE * o.target.rate, `${f.rate.toFixed(1)} of ${o.target.rate} changes/s acked`],
  ];
  console.log('verdicts');
  for (const [name, ok, why] of verdicts) console.log(`  ${name.padEnd(12)} ${ok === undefined ? 'n/a ' : ok ? 'OK  ' : 'FAIL'} ${why}`);
  return verdicts.map(([, ok]) => ok !== false);
}
