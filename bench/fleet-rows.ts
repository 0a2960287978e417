// What bench/fleet.ts prints: one table per fleet size (each figure beside its goal and the bus's
// floor from the same run), and the growth law fitted over the sizes run.
import { percentile } from './lib.ts';
import type { Quiet, Traffic, Usage } from './fleet-bus.ts';

/** Each node's delay, in ms, from the moment a change was made, and how many nodes never got it within the phase. */
export type Spread = { p50: number; p99: number; max: number; missing: number };

/** The spread of each node's time in `times` after `t0`, of `total` nodes. */
export function spreadOf(times: Map<string, number>, t0: number, total: number): Spread {
  const xs = [...times.values()].map((t) => t - t0).sort((a, b) => a - b);
  return { p50: percentile(xs, 50) ?? NaN, p99: percentile(xs, 99) ?? NaN, max: xs.at(-1) ?? NaN, missing: total - xs.length };
}

/** Everything one size measured. */
export type FleetFigures = {
  nodes: number;
  date: string;
  coldMs: number;
  /** Modules (of nodes × 5) never handed to their engine within the phase. */
  coldMissing: number;
  /** Clients started at once across the fleet (0: all of them). */
  atOnce: number;
  /** JetStream API calls the server answered from the clients' start to the end of the cold phase, and the errors among them. */
  coldApi: { total: number; errors: number };
  /** CPU seconds during the cold phase: the workers' (clients, or the floor's watchers) and nats-server's. */
  coldCpu: ColdCpu;
  coldFloorCpu: ColdCpu;
  /** What the bus carried per node for the new build and for the burst (from the change to every engine having it). */
  perChange: { build: Traffic; burst: Traffic };
  coldFloorMs: number;
  /** The floor again from the start, each watcher doing a client's cold bus work for every plan (archive, report, needs): when the last caught up, and the CPU. */
  coldFloorWork: { ms: number; cpu: ColdCpu; retried: number; failed: number };
  /** The worst worker's event-loop delay over the run, in ms (many clients share a process in the bench, not in a fleet). */
  loopDelay: { p99: number; max: number };
  build: Spread;
  buildFloor: Spread;
  /** The floor's watchers, each fetching the new build's archive by direct gets: the bus's work a client's build asks too. */
  buildFloorArchive: Spread;
  /**
   * The floor's whole bus work of a build, timed as the clients' row is: the archive stored as
   * `publish` stores it, the plans put, each watcher fetching the archive, putting its report (acked)
   * and saying its two notices. Absent from runs made before it existed.
   */
  buildFloorReport?: Spread;
  buildFloorReportCpu?: ColdCpu;
  /** The floor's N plan writes, by one writer (the bench, 256 in flight): from the first put to the last ack. */
  floorWritesMs: number;
  /** The floor's watchers whose watch was asked for again (its consumer not made within nats.js's 5 s). */
  floorRetried: number;
  /** The floor's watchers that never came up (their watch still refused after the floor's retries). */
  floorFailed: number;
  /** CPU seconds from the new build's publish to the last engine (the clients'), to the last archive fetched (the floor's). */
  buildCpu: ColdCpu;
  buildFloorCpu: ColdCpu;
  /** CPU seconds from the burst's first put to the last engine (the clients'), to the last reporting watcher (the floor's). */
  burstCpu: ColdCpu;
  burstFloorCpu: ColdCpu;
  /** The new build's steps (bench/fleet-trace.ts), as markdown rows. */
  buildSteps: string[];
  /** The 1-minute load average at the end of each phase. */
  load: { floor: number; cold: number; build: number; burst: number };
  burst: Spread;
  burstFloor: Spread;
  /** The floor's burst when each watcher also answers the change as a client does: a report put, two notices. */
  burstFloorReport: Spread;
  /** The bus with the seat alone (after every plan was written), before any node connected. */
  base: Quiet;
  idle: Quiet;
  /** The seat during each phase. */
  seat: { cold: Usage; build: Usage; burst: Usage };
  /** What the idle bus carries, by kind, messages a second (the whole fleet). */
  kinds: [string, number][];
  /**
   * Every client stopped and started again at once over its cache: with its record of plans (a start
   * that watches only what was stored after it), and with that record removed first (the plans read
   * from sequence 1). Absent from runs made before it existed.
   */
  restart?: Restart;
  restartBare?: Restart;
};

/** A restart of every client at once: when the last module was applied again, how many never were, the CPU, the API calls. */
export type Restart = { ms: number; missing: number; cpu: ColdCpu; api: number };

/** CPU seconds during a cold phase: the bench's worker processes (all of them) and nats-server. */
export type ColdCpu = { workersS: number; natsS: number };

const perNodeMs = (s: number, n: number) => `${((s * 1000) / n).toFixed(2)} ms`;
const ms = (x: number) => `${x.toFixed(0)} ms`;
const cpu = (c: ColdCpu) => `workers ${c.workersS.toFixed(1)} s, nats-server ${c.natsS.toFixed(1)} s`;
const missing = (k: number) => (k > 0 ? `, ${k} NEVER within the phase` : '');
const spread = (s: Spread) => `p50 ${ms(s.p50)} · p99 ${ms(s.p99)} · max ${ms(s.max)}${missing(s.missing)}`;
const seatText = (u: Usage) => `CPU ${u.cpuS.toFixed(1)} s, RSS ${u.rssMiB.toFixed(0)} MiB (peak ${u.peakMiB.toFixed(0)})`;

/** The idle figures per node: the fleet's bus less the bus with the seat alone, over the nodes. */
export function perNode(f: FleetFigures) {
  const n = f.nodes;
  return {
    msgsPerS: (f.idle.msgsPerS - f.base.msgsPerS) / n,
    inMsgsPerS: (f.idle.inMsgsPerS - f.base.inMsgsPerS) / n,
    byStream: Object.entries(f.idle.byStream)
      .map(([s, c]) => [s.replace(/^KV_/, ''), (c - (f.base.byStream[s] ?? 0)) / n] as const)
      .filter(([, c]) => c > 0)
      .map(([s, c]) => `${s} ${c.toFixed(1)}`)
      .join(', '),
    bytesPerS: (f.idle.bytesPerS - f.base.bytesPerS) / n,
    consumers: (f.idle.consumers - f.base.consumers) / n,
    natsCpuPct: ((f.idle.natsCpu - f.base.natsCpu) * 100) / n,
    natsRssKiB: ((f.idle.natsRssMiB - f.base.natsRssMiB) * 1024) / n,
  };
}

/** The table of one size, as markdown rows (what, goal, measured, floor of the same run, met). */
export function tableOf(f: FleetFigures): string[] {
  const p = perNode(f);
  const n = f.nodes;
  const rows: [string, string, string, string, string][] = [
    [
      `cold: all ${n}×5 modules applied (${f.atOnce ? `clients started ${f.atOnce} at a time` : 'every client started at once'})`,
      '≤ 2× floor',
      `${ms(f.coldMs)} (${(f.coldMs / f.coldFloorMs).toFixed(2)}×)${missing(f.coldMissing)}`,
      ms(f.coldFloorMs),
      met(f.coldMissing === 0 && f.coldMs <= 2 * f.coldFloorMs),
    ],
    [
      "… against the floor whose watchers also do a client's cold bus work (each plan's archive, its report and needs)",
      '≤ 2× floor',
      `${(f.coldMs / f.coldFloorWork.ms).toFixed(2)}×`,
      `${ms(f.coldFloorWork.ms)}; CPU ${cpu(f.coldFloorWork.cpu)} (${f.coldFloorWork.retried} watchers asked again, ${f.coldFloorWork.failed} failed)`,
      met(f.coldMissing === 0 && f.coldMs <= 2 * f.coldFloorWork.ms),
    ],
    ['cold: JetStream API calls per node (errors)', 'printed', `${(f.coldApi.total / n).toFixed(1)} (${(f.coldApi.errors / n).toFixed(1)})`, '', ''],
    ['cold: CPU used meanwhile (2 cores shared by all)', 'printed', cpu(f.coldCpu), cpu(f.coldFloorCpu), ''],
    [
      'cold: nats-server CPU per client start',
      'flat in N',
      `${((f.coldCpu.natsS * 1000) / n).toFixed(1)} ms`,
      `${((f.coldFloorCpu.natsS * 1000) / n).toFixed(1)} ms (${f.floorRetried} watchers asked again, ${f.floorFailed} never up)`,
      '',
    ],
    ...(f.restart && f.restartBare
      ? ([
          [
            'restart: every client stopped, then started again at once over its cache → all applied',
            'printed',
            `${ms(f.restart.ms)}${missing(f.restart.missing)}; ${(f.restart.api / n).toFixed(1)} API calls a node`,
            `without the record of plans: ${ms(f.restartBare.ms)}${missing(f.restartBare.missing)}`,
            '',
          ],
          [
            'restart: nats-server CPU per client start',
            'flat in N',
            `${perNodeMs(f.restart.cpu.natsS, n)} (workers ${perNodeMs(f.restart.cpu.workersS, n)})`,
            `without the record of plans: ${perNodeMs(f.restartBare.cpu.natsS, n)} (workers ${perNodeMs(f.restartBare.cpu.workersS, n)})`,
            '',
          ],
        ] as [string, string, string, string, string][])
      : []),
    [
      'a new build of one module on all nodes → every engine',
      'max ≤ 2× floor max',
      spread(f.build),
      spread(f.buildFloor),
      met(f.build.missing === 0 && f.build.max <= 2 * f.buildFloor.max),
    ],
    [
      '… against the floor with the archive fetched by each watcher',
      'max ≤ 2× floor max',
      `${(f.build.max / f.buildFloorArchive.max).toFixed(2)}×`,
      `${spread(f.buildFloorArchive)}; the floor's ${n} plan writes, one writer: ${ms(f.floorWritesMs)}`,
      met(f.build.missing === 0 && f.build.max <= 2 * f.buildFloorArchive.max),
    ],
    ...(f.buildFloorReport
      ? [
          <[string, string, string, string, string]>[
            "… against the floor doing a client's bus work for a build (the archive stored first, then fetched; the report put; its notices)",
            'max ≤ 2× floor max',
            `${(f.build.max / f.buildFloorReport.max).toFixed(2)}×`,
            spread(f.buildFloorReport),
            met(f.build.missing === 0 && f.build.max <= 2 * f.buildFloorReport.max),
          ],
        ]
      : []),
    [
      'CPU per node for the new build: workers / nats-server',
      'printed',
      `${perNodeMs(f.buildCpu.workersS, n)} / ${perNodeMs(f.buildCpu.natsS, n)}`,
      `${perNodeMs(f.buildFloorCpu.workersS, n)} / ${perNodeMs(f.buildFloorCpu.natsS, n)} (archive fetched)` +
        (f.buildFloorReportCpu
          ? `; ${perNodeMs(f.buildFloorReportCpu.workersS, n)} / ${perNodeMs(f.buildFloorReportCpu.natsS, n)} (stored, fetched, reported)`
          : ''),
      '',
    ],
    [
      'one config put per node, all at once → every engine',
      'max ≤ 2× floor max',
      spread(f.burst),
      spread(f.burstFloor),
      met(f.burst.missing === 0 && f.burst.max <= 2 * f.burstFloor.max),
    ],
    [
      '… against the floor whose watchers each put a report and its two notices',
      'max ≤ 2× floor max',
      `${(f.burst.max / f.burstFloorReport.max).toFixed(2)}×`,
      spread(f.burstFloorReport),
      met(f.burst.missing === 0 && f.burst.max <= 2 * f.burstFloorReport.max),
    ],
    [
      'CPU per node for the burst: workers / nats-server',
      'printed',
      `${perNodeMs(f.burstCpu.workersS, n)} / ${perNodeMs(f.burstCpu.natsS, n)}`,
      `${perNodeMs(f.burstFloorCpu.workersS, n)} / ${perNodeMs(f.burstFloorCpu.natsS, n)} (each watcher reporting)`,
      '',
    ],
    ['bus per node for the new build / the burst (delivered; taken in)', 'printed', `${traffic(f.perChange.build)} / ${traffic(f.perChange.burst)}`, '', ''],
    ['idle: bus messages/s per node (delivered)', '≤ 0.2', p.msgsPerS.toFixed(2), `seat alone: ${f.base.msgsPerS.toFixed(1)}/s in all`, met(p.msgsPerS <= 0.2)],
    ['idle: messages/s per node taken in', 'printed', p.inMsgsPerS.toFixed(2), `seat alone: ${f.base.inMsgsPerS.toFixed(1)}/s in all`, ''],
    ['idle: bus bytes/s per node', 'printed', p.bytesPerS.toFixed(0), '', ''],
    ['idle: consumers per node', 'printed', `${p.consumers.toFixed(1)} (${p.byStream})`, `seat alone: ${f.base.consumers}`, ''],
    ['idle: nats-server CPU per node', 'printed', `${p.natsCpuPct.toFixed(3)} % of a core`, `in all ${(f.idle.natsCpu * 100).toFixed(1)} %`, ''],
    ['idle: nats-server RSS per node', 'printed', `${p.natsRssKiB.toFixed(0)} KiB`, `in all ${f.idle.natsRssMiB.toFixed(0)} MiB`, ''],
    ['seat during cold / build / burst', 'printed', `${seatText(f.seat.cold)} / ${seatText(f.seat.build)} / ${seatText(f.seat.burst)}`, '', ''],
    ['seat idle', 'printed', `${seatText(f.idle.seat)} over the window`, '', ''],
    ["(the bench) a worker's event-loop delay", 'printed', `p99 ${ms(f.loopDelay.p99)} · max ${ms(f.loopDelay.max)}`, '', ''],
  ];
  return [
    `N = ${n} nodes (5 modules × 3 config keys each), ${f.date}, 2 shared cores; load average at the end of the floor ${f.load.floor.toFixed(1)}, ` +
      `the cold start ${f.load.cold.toFixed(1)}, the build ${f.load.build.toFixed(1)}, the burst ${f.load.burst.toFixed(1)}`,
    '',
    '| what | goal | measured | bus floor (same run) | met |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    `idle traffic by kind (whole fleet, messages/s): ${f.kinds.map(([k, v]) => `${k} ${v.toFixed(1)}`).join('; ')}`,
  ];
}

function traffic(t: Traffic): string {
  return `${t.outMsgs.toFixed(1)} msgs ${(t.outBytes / 1024).toFixed(1)} KiB; ${t.inMsgs.toFixed(1)} msgs ${(t.inBytes / 1024).toFixed(1)} KiB`;
}

function met(ok: boolean): string {
  return ok ? 'yes' : 'NO';
}

/** The exponent b of y = a·N^b fitted (least squares on logs) over the sizes; NaN with fewer than two. */
export function exponent(points: [number, number][]): number {
  const ps = points.filter(([, y]) => y > 0).map(([x, y]) => [Math.log(x), Math.log(y)] as const);
  if (ps.length < 2) return NaN;
  const mx = ps.reduce((s, [x]) => s + x, 0) / ps.length;
  const my = ps.reduce((s, [, y]) => s + y, 0) / ps.length;
  const sxy = ps.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = ps.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxy / sxx;
}

/** The growth law over the sizes run: each figure's exponent in N (1: grows with N, 2: with N²). */
export function growthOf(all: FleetFigures[]): string[] {
  const series: [string, (f: FleetFigures) => number][] = [
    ['cold: all applied (ms)', (f) => f.coldMs],
    ['cold floor (ms)', (f) => f.coldFloorMs],
    ['new build: max (ms)', (f) => f.build.max],
    ['new build floor: max (ms)', (f) => f.buildFloor.max],
    ['burst: max (ms)', (f) => f.burst.max],
    ['burst floor: max (ms)', (f) => f.burstFloor.max],
    ['idle: bus messages/s (whole fleet)', (f) => f.idle.msgsPerS - f.base.msgsPerS],
    ['idle: consumers (whole fleet)', (f) => f.idle.consumers - f.base.consumers],
    ['idle: nats-server CPU (whole fleet)', (f) => f.idle.natsCpu - f.base.natsCpu],
    ['idle: nats-server RSS (whole fleet)', (f) => f.idle.natsRssMiB - f.base.natsRssMiB],
    ['cold: nats-server CPU per client start (ms)', (f) => (f.coldCpu.natsS * 1000) / f.nodes],
    ['restart over the caches: nats-server CPU per client start (ms)', (f) => ((f.restart?.cpu.natsS ?? NaN) * 1000) / f.nodes],
    ['restart without the record of plans: nats-server CPU per client start (ms)', (f) => ((f.restartBare?.cpu.natsS ?? NaN) * 1000) / f.nodes],
    ['seat CPU during the new build', (f) => f.seat.build.cpuS],
    ['seat CPU during the burst', (f) => f.seat.burst.cpuS],
  ];
  const sizes = all.map((f) => f.nodes);
  return [
    `| figure | ${sizes.map((n) => `N=${n}`).join(' | ')} | exponent in N |`,
    `|---|${sizes.map(() => '---|').join('')}---|`,
    ...series.map(
      ([name, get]) =>
        `| ${name} | ${all.map((f) => get(f).toFixed(get(f) < 10 ? 2 : 0)).join(' | ')} | ${exponent(all.map((f) => [f.nodes, get(f)])).toFixed(2)} |`,
    ),
  ];
}
