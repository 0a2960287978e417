// A watch's read ends even when nats-server 2.9.10 counts one message too many as pending: a key
// written again while the watch reads it (src/shared/bus/watch/recount.ts; issue 34, a restarted seat
// that never made its first pass).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { RECOUNT_QUIET_MS } from '../src/shared/bus/watch/recount.ts';
import type { Watch } from '../src/shared/bus/watch/types.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { startNats } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';

const KEYS = 100;
const WATCHES = 20;
const ROUNDS = 5;

test('watches started while the keys they read are written again all catch up, holding every key at its last value, within the recount', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'watches' });
  const writer = await connectBus({ servers: [server.url], name: 'writer' });
  const log = memoryLogger();
  const watches: Watch[] = [];
  try {
    const kv = await ensureKv(writer, 'rewritten', 1);
    for (let i = 0; i < KEYS; i++) await kv.put(`k${i}`, 'v0');
    const last = new Map<string, string>();
    // Rounds until one hit the miscount (it did in every round but a few, on 2.9.10): the recount is then what ended that read.
    for (let round = 0; round < ROUNDS && !recounted(log.lines); round++) {
      let writing = true;
      let n = 0;
      // Each put replaces a revision the watches started meanwhile have not delivered yet.
      const writes = (async () => {
        for (; writing; n++) {
          const key = `k${n % KEYS}`;
          await kv.put(key, `r${round}.${n}`);
          last.set(key, `r${round}.${n}`);
        }
      })();
      const views: Map<string, string>[] = [];
      const caught: boolean[] = [];
      for (let w = 0; w < WATCHES; w++) {
        const view = new Map<string, string>();
        views.push(view);
        const watch = await watchKv(nc, 'rewritten', '>', (e) => void (e.value ? view.set(e.key, new TextDecoder().decode(e.value)) : view.delete(e.key)), log);
        watches.push(watch);
        void watch.caughtUp.then(() => (caught[w] = true));
      }
      writing = false;
      await writes;
      await waitFor(`round ${round}: every watch caught up`, () => caught.filter(Boolean).length === WATCHES, RECOUNT_QUIET_MS + 5000);
      // A watch caught up before the last puts gets them live, a moment after their acks: given that
      // moment, a value a remade consumer lost stays missing.
      const behind = () =>
        views.flatMap((view, w) => [...last].filter(([key, value]) => view.get(key) !== value).map(([key, value]) => `watch ${w}: ${key} not ${value}`));
      await waitFor(`round ${round}: every key at its last value in every watch`, () => behind().length === 0, 2000).catch(() => undefined);
      assert.equal(behind(), [], `round ${round}: keys not at their last value`);
      for (const w of watches.splice(0)) w.stop();
    }
    assert.ok(recounted(log.lines), `no read hit the miscount in ${ROUNDS} rounds; the test proved nothing:\n${log.lines.join('\n')}`);
  } finally {
    for (const w of watches) w.stop();
    await writer.close();
    await nc.close();
    await server.cleanup();
  }
});

/** Whether a watch logged the recount of its read. */
function recounted(lines: string[]): boolean {
  return lines.some((l) => l.includes('messages still counted pending'));
}

test.run();
