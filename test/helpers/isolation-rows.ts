// The rows of the isolation matrix (DESIGN §11, issue 12), in the order it prints them: each an
// action by a real connection logged in as one user of the generated configuration, what should
// come of it, and how to see what did.
import { Empty } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { openKv } from '../../src/shared/bus/bus.ts';
import { jsonBytes } from '../../src/shared/base/bytes.ts';
import { watchKv } from '../../src/shared/bus/watch/watch.ts';
import { APPLIED, COLLECT, CONFIG, DEFAULT_ARCHIVES, NEEDS, PLANS, REGISTRY_BUCKET } from '../../src/shared/contract/buckets.ts';
import { aliveSubject, askSubject, PROVISIONING_VERB, VAULT_CREDENTIAL } from '../../src/shared/contract/subjects.ts';
import { boundBucket, INBOX_PREFIXES } from '../../src/server/commands/bus-config/config.ts';
import { USERS } from '../../src/server/commands/bus-config/users.ts';
import { directObjectReader } from '../../src/client/archive/direct.ts';
import {
  A,
  B,
  client,
  consumerRead,
  CREDENTIAL,
  foreignWrite,
  forgedReply,
  key,
  kvGet,
  kvSubject,
  LEVEL,
  MODULE,
  ownWrite,
  PROVIDER,
  pushConsumer,
  put,
  read,
  received,
  runner,
  watched,
  watchedFrom,
  type Row,
} from './isolation-actions.ts';
import { apiError, attempt, judgeAnswer, judgeRead, judgeWrite, PROBE_TIMEOUT_MS, refusal, SETTLE_MS } from './isolation-probe.ts';
import { sleep } from './wait.ts';

/** Every row, in the order the matrix prints them. */
export const ROWS: readonly Row[] = [
  ...[APPLIED, NEEDS, COLLECT].map(ownWrite),
  foreignWrite(client, APPLIED, key.report(B), `put nb's report \`${key.report(B)}\` in ${APPLIED}`),
  foreignWrite(client, NEEDS, key.need(B), `put nb's need \`${key.need(B)}\` in ${NEEDS}`),
  foreignWrite(client, COLLECT, key.item(B), `put nb's item \`${key.item(B)}\` in ${COLLECT}`),
  {
    actor: client,
    action: `delete nb's report \`${key.report(B)}\` (a KV delete marker)`,
    expected: 'refused',
    run: (c) =>
      judgeWrite(c.admin, c.as(client), [APPLIED, key.report(B)], async () => void (await (await openKv(c.as(client), APPLIED)).delete(key.report(B)))),
  },
  {
    actor: client,
    action: `purge nb's keys of ${APPLIED} (\`$JS.API.STREAM.PURGE.KV_${APPLIED}\`, filter nb.>)`,
    expected: 'refused',
    run: (c) =>
      judgeWrite(c.admin, c.as(client), [APPLIED, key.report(B)], async () =>
        apiError(
          (await c.as(client).request(`$JS.API.STREAM.PURGE.KV_${APPLIED}`, jsonBytes({ filter: kvSubject(APPLIED, `${B}.>`) }), { timeout: PROBE_TIMEOUT_MS }))
            .data,
        ),
      ),
  },
  foreignWrite(client, PLANS, key.report(A), `put its own plan \`${key.report(A)}\` in ${PLANS} (the seat's)`),
  foreignWrite(client, CONFIG, key.config(A), `put its own value \`${key.config(A)}\` in ${CONFIG} (mesh-config's)`),

  read(
    client,
    `KV get (direct get) of its own value \`${key.config(A)}\``,
    'allowed',
    CONFIG,
    key.config(A),
    (nc) => kvGet(nc, CONFIG, key.config(A)),
    `read "${LEVEL(A)}"`,
  ),
  read(
    client,
    `watch its own values (filtered consumer on ${A}.>)`,
    'allowed',
    CONFIG,
    key.config(A),
    (nc) => watched(nc, CONFIG, `${A}.>`, key.config(A)),
    `read "${LEVEL(A)}"`,
  ),
  read(client, `KV get (direct get) of nb's value \`${key.config(B)}\``, 'refused', CONFIG, key.config(B), (nc) => kvGet(nc, CONFIG, key.config(B))),
  read(client, `watch nb's values (filtered consumer on ${B}.>)`, 'refused', CONFIG, key.config(B), (nc) => watched(nc, CONFIG, `${B}.>`, key.config(B))),
  read(client, `direct get by payload (\`$JS.API.DIRECT.GET.KV_${CONFIG}\`, last_by_subj nb's key)`, 'refused', CONFIG, key.config(B), async (nc) =>
    (
      await nc.request(`$JS.API.DIRECT.GET.KV_${CONFIG}`, jsonBytes({ last_by_subj: kvSubject(CONFIG, key.config(B)) }), { timeout: PROBE_TIMEOUT_MS })
    ).string(),
  ),
  read(client, `legacy consumer create \`$JS.API.CONSUMER.CREATE.KV_${CONFIG}\`, filter nb.> in the body`, 'refused', CONFIG, key.config(B), (nc) =>
    consumerRead(nc, `$JS.API.CONSUMER.CREATE.KV_${CONFIG}`, `${B}.>`),
  ),
  read(
    client,
    `consumer create named for its own keys (\`…CREATE.KV_${CONFIG}.<name>.$KV.${CONFIG}.${A}.>\`), filter nb.> in the body`,
    'refused',
    CONFIG,
    key.config(B),
    (nc) => consumerRead(nc, `$JS.API.CONSUMER.CREATE.KV_${CONFIG}.probe.${kvSubject(CONFIG, `${A}.>`)}`, `${B}.>`, 'probe'),
  ),
  read(client, `\`$JS.API.STREAM.MSG.GET.KV_${CONFIG}\` (last_by_subj nb's key)`, 'refused', CONFIG, key.config(B), async (nc) => {
    const reply = await nc.request(`$JS.API.STREAM.MSG.GET.KV_${CONFIG}`, jsonBytes({ last_by_subj: kvSubject(CONFIG, key.config(B)) }), {
      timeout: PROBE_TIMEOUT_MS,
    });
    const error = apiError(reply.data);
    if (error) throw new Error(error);
    return Buffer.from((reply.json() as { message: { data: string } }).message.data, 'base64').toString();
  }),
  {
    actor: client,
    action: `\`$JS.API.STREAM.INFO.KV_${CONFIG}\` with subjects_filter nb.> (nb's key names)`,
    expected: 'refused',
    async run(c) {
      const got = await attempt(async () => {
        const reply = await c
          .as(client)
          .request(`$JS.API.STREAM.INFO.KV_${CONFIG}`, jsonBytes({ subjects_filter: kvSubject(CONFIG, `${B}.>`) }), { timeout: PROBE_TIMEOUT_MS });
        const error = apiError(reply.data);
        if (error) throw new Error(error);
        return Object.keys((reply.json() as { state?: { subjects?: Record<string, number> } }).state?.subjects ?? {});
      });
      if (!got.ok) return { verdict: 'refused', how: got.why };
      return got.value.includes(kvSubject(CONFIG, key.config(B)))
        ? { verdict: 'allowed', how: `listed \`${key.config(B)}\`` }
        : { verdict: 'refused', how: 'listed nothing of nb' };
    },
  },
  streamLook(`KV_${PLANS}`, 'the look before a late consumer create is given up: no key named, plans hold no secret', 'allowed'),
  streamLook(`KV_${CONFIG}`, "its own values' stream, no key named: not granted; the look judges it by the last stream it read", 'refused'),
  read(client, `KV get of its own need \`${key.need(A)}\``, 'allowed', NEEDS, key.need(A), (nc) => kvGet(nc, NEEDS, key.need(A))),
  read(client, `KV get of nb's need \`${key.need(B)}\``, 'refused', NEEDS, key.need(B), (nc) => kvGet(nc, NEEDS, key.need(B))),
  read(client, `KV get of its own item \`${key.item(A)}\``, 'allowed', COLLECT, key.item(A), (nc) => kvGet(nc, COLLECT, key.item(A))),
  read(client, `watch nb's items (filtered consumer on ${B}.>)`, 'refused', COLLECT, key.item(B), (nc) => watched(nc, COLLECT, `${B}.>`, key.item(B))),
  read(
    client,
    `KV get (literal direct get) of its own report \`${key.report(A)}\` (a start without its record of written keys: is the node new?)`,
    'allowed',
    APPLIED,
    key.report(A),
    (nc) => kvGet(nc, APPLIED, key.report(A)),
  ),
  read(client, `KV get of nb's report \`${key.report(B)}\``, 'refused', APPLIED, key.report(B), (nc) => kvGet(nc, APPLIED, key.report(B))),
  read(client, `watch the registry's \`config\` entry (filtered consumer)`, 'allowed', REGISTRY_BUCKET, 'config', (nc) =>
    watched(nc, REGISTRY_BUCKET, 'config', 'config'),
  ),
  read(client, `KV get of nb's plan \`${key.report(B)}\` (plans hold no secret: every node reads them)`, 'allowed', PLANS, key.report(B), (nc) =>
    kvGet(nc, PLANS, key.report(B)),
  ),
  read(
    client,
    `watch its plans from its record of them (filtered consumer on ${A}.* begun by_start_sequence after the record's sequence: a start over its cache)`,
    'allowed',
    PLANS,
    key.report(A),
    (nc) => watchedFrom(nc, PLANS, `${A}.*`, key.report(A)),
  ),
  read(client, `KV get of its own entry \`${key.bound(A)}\` in ${boundBucket(PROVIDER)}`, 'allowed', boundBucket(PROVIDER), key.bound(A), (nc) =>
    kvGet(nc, boundBucket(PROVIDER), key.bound(A)),
  ),
  read(client, `KV get of nb's entry \`${key.bound(B)}\` in ${boundBucket(PROVIDER)}`, 'refused', boundBucket(PROVIDER), key.bound(B), (nc) =>
    kvGet(nc, boundBucket(PROVIDER), key.bound(B)),
  ),
  {
    actor: client,
    action: `fetch the archive \`${MODULE}-1.tar\` by direct get (archives are not per node)`,
    expected: 'allowed',
    run: (c) =>
      judgeRead(
        Buffer.from(c.archive).toString('base64'),
        async () => {
          const bytes = await directObjectReader(c.as(client))(DEFAULT_ARCHIVES, `${MODULE}-1.tar`, 1 << 20);
          return bytes ? Buffer.from(bytes).toString('base64') : null;
        },
        "read the archive's bytes",
      ),
  },

  forgedReply(client, `direct get of its own value with reply=\`$KV.${PLANS}.${key.report(B)}\``, [PLANS, key.report(B)], (nc, reply) =>
    nc.publish(`$JS.API.DIRECT.GET.KV_${CONFIG}.${kvSubject(CONFIG, key.config(A))}`, Empty, { reply }),
  ),
  forgedReply(client, `direct get of its own value with reply=\`$KV.${APPLIED}.${key.report(B)}\``, [APPLIED, key.report(B)], (nc, reply) =>
    nc.publish(`$JS.API.DIRECT.GET.KV_${CONFIG}.${kvSubject(CONFIG, key.config(A))}`, Empty, { reply }),
  ),
  forgedReply(client, `put of its own key \`${key.probe[APPLIED]}\` with reply=\`$KV.${APPLIED}.${key.report(B)}\``, [APPLIED, key.report(B)], (nc, reply) =>
    nc.publish(kvSubject(APPLIED, key.probe[APPLIED]!), '{"probe":"ack"}', { reply }),
  ),
  ...(['all', 'sub'] as const).map((rollup): Row => ({
    actor: client,
    action: `put of its own key \`${key.probe[APPLIED]}\` with header \`Nats-Rollup: ${rollup}\``,
    expected: 'refused',
    run: (c) =>
      judgeWrite(
        c.admin,
        c.as(client),
        [APPLIED, key.report(B)],
        () => put(c.as(client), APPLIED, key.probe[APPLIED]!, '{"probe":"rollup"}', { hdr: ['Nats-Rollup', rollup] }),
        [[APPLIED, key.report(A)]],
      ),
  })),
  ...[APPLIED, PLANS].map((bucket): Row => ({
    actor: client,
    action: `push consumer on its own values delivering to \`$KV.${bucket}.${key.report(B)}\``,
    expected: 'refused',
    async run(c) {
      const r = await judgeWrite(
        c.admin,
        c.as(client),
        [bucket, key.report(B)],
        async () =>
          (await pushConsumer(c.as(client), CONFIG, `${A}.>`, `probe-${bucket}`, kvSubject(bucket, key.report(B)))) ?? 'consumer created, nothing stored',
      );
      await (await jetstreamManager(c.admin)).consumers.delete(`KV_${CONFIG}`, `probe-${bucket}`).catch(() => {});
      return r;
    },
  })),

  {
    actor: client,
    action: `ask nb (\`${askSubject(B)}\`)`,
    expected: 'refused',
    run: (c) =>
      judgeAnswer(
        async () =>
          void (await c.as(client).request(askSubject(B), jsonBytes({ module: MODULE, kind: 'config', key: 'level' }), { timeout: PROBE_TIMEOUT_MS })),
      ),
  },
  {
    actor: client,
    action: `ask the seat's verb \`${PROVISIONING_VERB}\``,
    expected: 'refused',
    run: (c) => judgeAnswer(async () => void (await c.as(client).request(PROVISIONING_VERB, jsonBytes({ what: 'applied' }), { timeout: PROBE_TIMEOUT_MS }))),
  },
  {
    actor: client,
    action: `push consumer on its own plan delivering to \`${PROVISIONING_VERB}\``,
    expected: 'ignored',
    async run(c) {
      const mark = c.seatSaid().length;
      let said: string | undefined;
      const answers = await received(
        c.admin,
        `$JS.ACK.KV_${PLANS}.probe-verb.>`,
        async () => (said = await pushConsumer(c.as(client), PLANS, key.report(A), 'probe-verb', PROVISIONING_VERB).catch(refusal)),
      );
      await (await jetstreamManager(c.admin)).consumers.delete(`KV_${PLANS}`, 'probe-verb').catch(() => {});
      if (said) return { verdict: 'refused', how: said };
      if (answers > 0) return { verdict: 'allowed', how: 'the seat answered the delivery' };
      const dropped = /ignored a request with reply subject "\$JS\.ACK\./.test(c.seatSaid().slice(mark));
      return dropped
        ? { verdict: 'ignored', how: 'the seat dropped it (its reply is `$JS.ACK.…`, no inbox)' }
        : { verdict: 'refused', how: 'the seat never got it' };
    },
  },
  {
    actor: client,
    action: `push consumer on its own plan delivering to \`${askSubject(B)}\``,
    expected: 'refused',
    async run(c) {
      const mark = c.nodeSaid(B).length;
      let said: string | undefined;
      const inMesh = await received(
        c.admin,
        askSubject(B),
        async () => (said = await pushConsumer(c.as(client), PLANS, key.report(A), 'probe-ask', askSubject(B)).catch(refusal)),
      );
      await (await jetstreamManager(c.admin)).consumers.delete(`KV_${PLANS}`, 'probe-ask').catch(() => {});
      if (said) return { verdict: 'refused', how: said };
      if (/asks: .*ignored/.test(c.nodeSaid(B).slice(mark))) return { verdict: 'ignored', how: "nb's client got it and dropped it" };
      return { verdict: 'refused', how: `${inMesh > 0 ? 'delivered inside MESH only' : 'not delivered'}; nb's client never got it` };
    },
  },
  read(
    runner,
    `ask na for ${MODULE}'s config \`level\` (\`${askSubject(A)}\`)`,
    'allowed',
    CONFIG,
    key.config(A),
    async (nc) =>
      (await nc.request(askSubject(A), jsonBytes({ module: MODULE, kind: 'config', key: 'level' }), { timeout: PROBE_TIMEOUT_MS })).json<{ value?: string }>()
        .value ?? null,
    `read "${LEVEL(A)}"`,
  ),
  read(
    runner,
    `ask nb (\`${askSubject(B)}\`)`,
    'refused',
    CONFIG,
    key.config(B),
    async (nc) =>
      (await nc.request(askSubject(B), jsonBytes({ module: MODULE, kind: 'config', key: 'level' }), { timeout: PROBE_TIMEOUT_MS })).json<{ value?: string }>()
        .value ?? null,
  ),
  {
    actor: runner,
    action: `ask na with reply=\`$KV.${APPLIED}.${key.report(A)}\` (na's client may write that key)`,
    expected: 'ignored',
    async run(c) {
      const mark = c.nodeSaid(A).length;
      const r = await judgeWrite(
        c.admin,
        c.as(runner),
        [APPLIED, key.report(A)],
        async () =>
          void c.as(runner).publish(askSubject(A), jsonBytes({ module: MODULE, kind: 'config', key: 'level' }), { reply: kvSubject(APPLIED, key.report(A)) }),
      );
      if (r.verdict !== 'refused') return r;
      return /asks: .*ignored/.test(c.nodeSaid(A).slice(mark))
        ? { verdict: 'ignored', how: `na's client dropped it (no inbox reply); ${key.report(A)} unchanged` }
        : r;
    },
  },
  read(runner, `KV get (direct get) of na's value \`${key.config(A)}\``, 'refused', CONFIG, key.config(A), (nc) => kvGet(nc, CONFIG, key.config(A))),
  ...(
    [
      ['admin', "an operator's tool"],
      [USERS.seat, "`query` with the seat's login"],
    ] as const
  ).map(([actor, who]): Row => ({
    actor,
    action: `ask the seat's verb for nb's reports (${who})`,
    expected: 'allowed',
    async run(c) {
      const got = await attempt(async () =>
        (await c.as(actor).request(PROVISIONING_VERB, jsonBytes({ what: 'applied', node: B }), { timeout: PROBE_TIMEOUT_MS * 3 })).json<{
          entries?: { key: string }[];
        }>(),
      );
      if (!got.ok) return { verdict: 'refused', how: got.why };
      const keys = (got.value.entries ?? []).map((e) => e.key);
      return keys.includes(key.report(B))
        ? { verdict: 'allowed', how: `listed \`${key.report(B)}\`` }
        : { verdict: 'refused', how: `listed ${JSON.stringify(keys)}` };
    },
  })),
  {
    actor: 'admin',
    action: `ask the seat's verb with reply=\`$KV.${PLANS}.${key.report(B)}\` (the seat may write plans)`,
    expected: 'ignored',
    async run(c) {
      const mark = c.seatSaid().length;
      const r = await judgeWrite(
        c.admin,
        c.admin,
        [PLANS, key.report(B)],
        async () => void c.admin.publish(PROVISIONING_VERB, jsonBytes({ what: 'registry' }), { reply: kvSubject(PLANS, key.report(B)) }),
      );
      if (r.verdict !== 'refused') return r;
      const dropped = /ignored a request with reply subject "\$KV\./.test(c.seatSaid().slice(mark));
      return dropped ? { verdict: 'ignored', how: `the seat dropped it (no inbox reply); ${key.report(B)} unchanged` } : r;
    },
  },

  {
    actor: client,
    action: `subscribe to nb's inbox \`${INBOX_PREFIXES.node(B)}.>\` while nb watches its values`,
    expected: 'refused',
    async run(c) {
      const sub = c.as(client).subscribe(`${INBOX_PREFIXES.node(B)}.>`);
      const closed = sub.closed.then((e) => (e instanceof Error ? refusal(e) : 'closed'));
      const w = await watchKv(c.as(USERS.client(B)), CONFIG, `${B}.>`, () => {});
      await w.caughtUp;
      w.stop();
      await c.as(client).flush();
      await sleep(SETTLE_MS);
      const count = sub.getReceived();
      sub.unsubscribe();
      const why = await Promise.race([closed, sleep(SETTLE_MS).then(() => 'subscribed')]);
      return count > 0 ? { verdict: 'allowed', how: `received ${count} message(s)` } : { verdict: 'refused', how: `${why}; nothing received` };
    },
  },
  ...(
    [
      ['applied', 'admin'],
      ['changed', USERS.runner(B)],
    ] as const
  ).map(([kind, listener]): Row => ({
    actor: client,
    action: `publish \`prov.${kind}.${B}.${MODULE}\` (nb's notice)`,
    expected: 'refused',
    async run(c) {
      const count = await received(c.as(listener), `prov.${kind}.${B}.>`, async () => {
        c.as(client).publish(`prov.${kind}.${B}.${MODULE}`, '{"forged":true}');
        await c.as(client).flush();
      });
      return count > 0 ? { verdict: 'allowed', how: `${listener} received it` } : { verdict: 'refused', how: `${listener} received nothing` };
    },
  })),
  {
    actor: client,
    action: `publish \`prov.applied.${A}.probe\` (its own notice)`,
    expected: 'allowed',
    async run(c) {
      const count = await received(c.admin, `prov.applied.${A}.probe`, async () => {
        c.as(client).publish(`prov.applied.${A}.probe`, '{}');
        await c.as(client).flush();
      });
      return count > 0 ? { verdict: 'allowed', how: 'admin (MESH) received it' } : { verdict: 'refused', how: 'admin received nothing' };
    },
  },
  // The alive message (DESIGN §14): each node's account exports its own alone, so another's is heard nowhere.
  {
    actor: client,
    action: `publish \`${aliveSubject(B)}\` (nb's alive message)`,
    expected: 'refused',
    async run(c) {
      const count = await received(c.admin, aliveSubject(B), async () => {
        c.as(client).publish(aliveSubject(B), '{"forged":true}');
        await c.as(client).flush();
      });
      return count > 0 ? { verdict: 'allowed', how: 'admin (MESH) received it' } : { verdict: 'refused', how: 'admin received nothing' };
    },
  },
  {
    actor: client,
    action: `publish \`${aliveSubject(A)}\` (its own alive message)`,
    expected: 'allowed',
    async run(c) {
      const count = await received(c.admin, aliveSubject(A), async () => {
        c.as(client).publish(aliveSubject(A), '{}');
        await c.as(client).flush();
      });
      return count > 0 ? { verdict: 'allowed', how: 'admin (MESH) received it' } : { verdict: 'refused', how: 'admin received nothing' };
    },
  },
  {
    actor: client,
    action: "delete the consumer of nb's value watch, by its name",
    expected: 'refused',
    async run(c) {
      const jsm = await jetstreamManager(c.admin);
      let name: string | undefined;
      for await (const ci of jsm.consumers.list(`KV_${CONFIG}`))
        if (ci.push_bound && ci.config.deliver_subject?.startsWith(`${INBOX_PREFIXES.node(B)}.`)) name = ci.name;
      if (!name) throw new Error("nb's client has no bound consumer of its values");
      const said = await attempt(async () =>
        apiError((await c.as(client).request(`$JS.API.CONSUMER.DELETE.KV_${CONFIG}.${name}`, Empty, { timeout: PROBE_TIMEOUT_MS })).data),
      );
      await sleep(SETTLE_MS);
      const kept = await jsm.consumers.info(`KV_${CONFIG}`, name).then(
        () => true,
        () => false,
      );
      return kept
        ? { verdict: 'refused', how: `${said.ok ? (said.value ?? 'answered') : said.why}; the consumer is still there` }
        : { verdict: 'allowed', how: 'the consumer is gone' };
    },
  },
  {
    actor: client,
    action: `ask the vault with reply=\`$KV.${APPLIED}.${key.report(B)}\``,
    expected: 'refused',
    async run(c) {
      const asked = c.vaultAsked().length;
      const r = await judgeWrite(
        c.admin,
        c.as(client),
        [APPLIED, key.report(B)],
        async () => void c.as(client).publish(VAULT_CREDENTIAL, jsonBytes({ name: CREDENTIAL.name }), { reply: kvSubject(APPLIED, key.report(B)) }),
      );
      return c.vaultAsked().length > asked && r.verdict === 'refused' ? { ...r, how: `the vault answered its mapped reply; ${r.how}` } : r;
    },
  },
  foreignWrite(USERS.seat, APPLIED, key.report(B), `put nb's report \`${key.report(B)}\` in ${APPLIED}`),
  foreignWrite(USERS.seat, CONFIG, key.config(B), `put nb's value \`${key.config(B)}\` in ${CONFIG}`),
  {
    actor: USERS.seat,
    action: 'create a stream `KV_probe`',
    expected: 'refused',
    run: (c) =>
      judgeAnswer(
        async () =>
          apiError(
            (
              await c
                .as(USERS.seat)
                .request('$JS.API.STREAM.CREATE.KV_probe', jsonBytes({ name: 'KV_probe', subjects: ['$KV.probe.>'] }), { timeout: PROBE_TIMEOUT_MS })
            ).data,
          ),
        'created',
      ),
  },
];

/**
 * A node's client reading a stream's info with no filter, as its watch's look does before it gives a
 * late consumer create up (docs/decisions.md): allowed where the answer names no key of another node.
 */
function streamLook(stream: string, why: string, expected: 'allowed' | 'refused'): Row {
  return {
    actor: client,
    action: `\`$JS.API.STREAM.INFO.${stream}\` (${why})`,
    expected,
    async run(c) {
      const got = await attempt(async () => {
        const reply = await c.as(client).request(`$JS.API.STREAM.INFO.${stream}`, Empty, { timeout: PROBE_TIMEOUT_MS });
        const error = apiError(reply.data);
        if (error) throw new Error(error);
        const info = reply.json() as { state?: { messages?: number; subjects?: unknown }; config?: { name?: string } };
        if (info.state?.subjects !== undefined) throw new Error('the answer listed subjects it was not asked for');
        return `${info.config?.name ?? '?'}: ${info.state?.messages ?? 0} message(s), no key names`;
      });
      return got.ok ? { verdict: 'allowed', how: `read ${got.value}` } : { verdict: 'refused', how: got.why };
    },
  };
}
