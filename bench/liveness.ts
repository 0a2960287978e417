// How fast a dead or hung client is silent (DESIGN §14, issue 33): on the bus bus-config generates, the
// seat's, client's and engine's bundles each on their own seed. A client killed (SIGKILL, --kills
// times): from its death to the bus's disconnect event (the floor: what the bus itself takes), to the
// seat's `provisioner_health` line, and to `status` saying `silent`; and the time one `status` run
// takes on this machine (the floor of the last). A hung client (SIGSTOP, `--alive 1`): from its last
// word to the seat's line (the rule: 2×1 + 15 = 17 s) and from the stop to `status` saying silent.
//   npm run bench -- liveness [--kills 5] [--hangs 1]
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, startBundle, ROOT, type Running } from '../test/helpers/bundle.ts';
import { startIsolatedMesh, type IsolatedMesh } from '../test/helpers/isolated-mesh.ts';
import { nodePaths } from '../test/helpers/mesh-node.ts';
import { HEALTH_SUBJECT, aliveSubject } from '../src/shared/contract/subjects.ts';
import { eventSubject } from '../src/server/seat/liveness/events.ts';
import { numberArg, waitUntil } from './lib.ts';

const kills = numberArg('kills', 5);
const hangs = numberArg('hangs', 1);
for (const b of ['server', 'client', 'engine']) ensureBuilt(b);

const m: IsolatedMesh = await startIsolatedMesh({ nodes: ['n1'], seat: 'process' });
const paths = nodePaths(join(m.dir, 'n1'));
mkdirSync(paths.root, { recursive: true });
mkdirSync(paths.secrets, { recursive: true });
const dist = join(ROOT, 'dist');
const engine = startBundle('node', dist, 'engine', [
  '--socket',
  paths.socketPath,
  '--root',
  paths.root,
  '--secrets',
  paths.secrets,
  '--journal',
  paths.journalFile,
]);
const client = (args: string[] = []): Running =>
  startBundle('node', dist, 'client', [
    ...['--node', 'n1', '--nats', m.nats.url, '--nkey', m.nkey('provisioner.n1'), '--socket', paths.socketPath],
    ...['--cache', paths.cacheDir, '--archive-dir', m.archiveDir, ...args],
  ]);

// What the operator's side sees, as admin (MESH imports the events and the alive messages).
const seen = { closed: 0, began: 0, ended: 0, word: 0 };
m.admin.subscribe(eventSubject('n1', 'DISCONNECT'), { callback: () => void (seen.closed = Date.now()) });
m.admin.subscribe(aliveSubject('n1'), { callback: () => void (seen.word = Date.now()) });
m.admin.subscribe(HEALTH_SUBJECT, {
  callback: (_e, msg) => {
    const line = msg.json<{ node?: string; reason: string }>();
    if (line.node === 'n1') line.reason.startsWith('ended: ') ? (seen.ended = Date.now()) : (seen.began = Date.now());
  },
});

await m.publish('web', {
  build: '1',
  templates: { 'web.conf': 'level ${config:level}\n' },
  provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }] },
});
await m.kv.config.put('n1.web.level', 'info');
await m.assign('n1', 'web');

const status = () => m.serverCommand('provisioner', ['status']);
const silentInStatus = async (since: number) => {
  for (;;) {
    const s = await status();
    if (s.stdout.includes('silent')) return (Date.now() - since) / 1000;
    if (Date.now() - since > 60_000) throw new Error(`not silent in status after 60 s: ${s.stdout}`);
  }
};
const upAndHeard = async (startedAfter: number) => {
  await waitUntil('the client heard and applied', async () => seen.word > startedAfter && (await status()).code === 0, 60_000);
};

const rows: string[] = [];
const row = (name: string, xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  rows.push(
    `${name.padEnd(48)} min ${sorted[0]!.toFixed(2).padStart(6)} s   median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2).padStart(6)} s   max ${sorted.at(-1)!.toFixed(2).padStart(6)} s   (${xs.length})`,
  );
};

// The floor of the status column: one `status` run on an idle mesh.
let running = client();
await upAndHeard(0);
const runs: number[] = [];
for (let i = 0; i < 5; i++) {
  const at = Date.now();
  await status();
  runs.push((Date.now() - at) / 1000);
}

const toEvent: number[] = [];
const toLine: number[] = [];
const toStatus: number[] = [];
for (let i = 0; i < kills; i++) {
  seen.began = 0;
  const died = Date.now();
  running.child.kill('SIGKILL');
  await running.exited;
  toStatus.push(await silentInStatus(died));
  await waitUntil('the seat said it', () => seen.began > 0, 10_000);
  toEvent.push((seen.closed - died) / 1000);
  toLine.push((seen.began - died) / 1000);
  const again = Date.now();
  running = client();
  await upAndHeard(again);
}

const wordToLine: number[] = [];
const stopToStatus: number[] = [];
running.child.kill('SIGKILL');
await running.exited;
for (let i = 0; i < hangs; i++) {
  const again = Date.now();
  running = client(['--alive', '1']);
  await upAndHeard(again);
  seen.began = 0;
  const stopped = Date.now();
  running.child.kill('SIGSTOP');
  const lastWord = seen.word;
  stopToStatus.push(await silentInStatus(stopped));
  await waitUntil('the seat said it', () => seen.began > 0, 10_000);
  wordToLine.push((seen.began - lastWord) / 1000);
  running.child.kill('SIGCONT');
  running.child.kill('SIGKILL');
  await running.exited;
}

row('floor: one `status` run, idle mesh', runs);
row("killed → the bus's disconnect event (floor)", toEvent);
row("killed → the seat's provisioner_health line", toLine);
row('killed → `status` says silent', toStatus);
if (hangs > 0) {
  row("hung (--alive 1): last word → the seat's line", wordToLine);
  row('hung (--alive 1): SIGSTOP → `status` says silent', stopToStatus);
}
console.log(`liveness (DESIGN §14), load average ${loadavg()[0]!.toFixed(1)}; rule: killed 5 s after the close, hung 2×1+15 = 17 s after the last word`);
for (const r of rows) console.log(r);

engine.child.kill('SIGKILL');
await m.close();
process.exit(0);
