// The one table bench/fleet.ts prints after every size (issue 34): each size's ratios against the
// floor of its own run, nats-server's CPU for the cold start, and the exponent b of y = a·N^b between
// consecutive sizes and over all of them, for nats-server's CPU and the cold time.
import { exponent, type FleetFigures } from './fleet-rows.ts';

const x = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** The summary over the sizes run, as markdown lines. */
export function summaryOf(all: FleetFigures[]): string[] {
  const rows: [string, (f: FleetFigures) => string][] = [
    [
      'load average (floor, cold, build, burst)',
      (f) => `${f.load.floor.toFixed(1)}, ${f.load.cold.toFixed(1)}, ${f.load.build.toFixed(1)}, ${f.load.burst.toFixed(1)}`,
    ],
    [
      'cold: all applied vs the floor (goal ≤ 2×)',
      (f) => `${s(f.coldMs)} vs ${s(f.coldFloorMs)}: ${x(f.coldMs, f.coldFloorMs)}${f.coldMissing ? `, ${f.coldMissing} never` : ''}`,
    ],
    [
      "cold: all applied vs the floor that does a client's cold bus work",
      (f) => `${s(f.coldMs)} vs ${s(f.coldFloorWork.ms)}: ${x(f.coldMs, f.coldFloorWork.ms)}`,
    ],
    [
      'new build: max vs the floor max (goal ≤ 2×)',
      (f) => `${f.build.max.toFixed(0)} vs ${f.buildFloor.max.toFixed(0)} ms: ${x(f.build.max, f.buildFloor.max)}`,
    ],
    [
      'new build: max vs the floor with its archive fetched',
      (f) => `${f.build.max.toFixed(0)} vs ${f.buildFloorArchive.max.toFixed(0)} ms: ${x(f.build.max, f.buildFloorArchive.max)}`,
    ],
    [
      "new build: max vs the floor doing a client's bus work for a build (stored, fetched, reported)",
      (f) => (f.buildFloorReport ? `${f.build.max.toFixed(0)} vs ${f.buildFloorReport.max.toFixed(0)} ms: ${x(f.build.max, f.buildFloorReport.max)}` : '—'),
    ],
    ['burst: max vs the floor max (goal ≤ 2×)', (f) => `${f.burst.max.toFixed(0)} vs ${f.burstFloor.max.toFixed(0)} ms: ${x(f.burst.max, f.burstFloor.max)}`],
    [
      'burst: max vs the floor whose watchers report each change',
      (f) => `${f.burst.max.toFixed(0)} vs ${f.burstFloorReport.max.toFixed(0)} ms: ${x(f.burst.max, f.burstFloorReport.max)}`,
    ],
    ['nats-server CPU, the whole cold start: clients / floor', (f) => `${f.coldCpu.natsS.toFixed(2)} s / ${f.coldFloorCpu.natsS.toFixed(2)} s`],
    ['nats-server CPU per client start: clients / floor', (f) => `${perStart(f.coldCpu.natsS, f)} / ${perStart(f.coldFloorCpu.natsS, f)}`],
    ['floor watchers asked again (consumer not made within 5 s) / never up', (f) => `${f.floorRetried} / ${f.floorFailed}`],
  ];
  const sizes = all.map((f) => f.nodes);
  const out = [
    `| every client started at once | ${sizes.map((n) => `N = ${n}`).join(' | ')} |`,
    `|---|${sizes.map(() => '---|').join('')}`,
    ...rows.map(([what, get]) => `| ${what} | ${all.map(get).join(' | ')} |`),
  ];
  if (all.length < 2) return out;
  const laws: [string, (f: FleetFigures) => number][] = [
    ['nats-server CPU, the cold start (goal ≤ 1.1)', (f) => f.coldCpu.natsS],
    ["nats-server CPU, the floor's cold start", (f) => f.coldFloorCpu.natsS],
    ['cold: all applied', (f) => f.coldMs],
    ['cold: the floor', (f) => f.coldFloorMs],
  ];
  const pairs = all.slice(1).map((f, i) => [all[i]!, f] as const);
  return [
    ...out,
    '',
    `| exponent b of y = a·N^b | ${pairs.map(([a, b]) => `${a.nodes} → ${b.nodes}`).join(' | ')} | over all |`,
    `|---|${pairs.map(() => '---|').join('')}---|`,
    ...laws.map(([what, get]) => {
      const between = pairs.map(([a, b]) =>
        exponent([
          [a.nodes, get(a)],
          [b.nodes, get(b)],
        ]).toFixed(2),
      );
      return `| ${what} | ${between.join(' | ')} | ${exponent(all.map((f) => [f.nodes, get(f)])).toFixed(2)} |`;
    }),
  ];
}

const perStart = (natsS: number, f: FleetFigures) => `${((natsS * 1000) / f.nodes).toFixed(1)} ms`;
