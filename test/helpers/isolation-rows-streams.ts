// Rows of the isolation matrix for issue 18 (DESIGN §3, §11): no login but admin creates, updates,
// deletes or purges a stream, a node cannot fill a stream with consumers, the vault learns the asking
// node from the subject its account's import maps the ask to, names that were once other logins'
// inbox prefixes give a node nothing of theirs, and a node's leaf password logs in on a leaf
// connection only (issue 31).
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type StreamConfig } from '@nats-io/jetstream';
import { jsonBytes } from '../../src/shared/base/bytes.ts';
import { APPLIED, CONFIG, PLANS, REGISTRY_BUCKET } from '../../src/shared/contract/buckets.ts';
import { PROVISIONING_VERB, VAULT_CREDENTIAL, vaultCredentialOf } from '../../src/shared/contract/subjects.ts';
import { boundBucket, INBOX_PREFIXES } from '../../src/server/commands/bus-config/config.ts';
import { USERS } from '../../src/server/commands/bus-config/users.ts';
import { A, B, client, CREDENTIAL, key, kvSubject, PROVIDER, pushConsumer, type MatrixContext, type Row } from './isolation-actions.ts';
import { apiError, attempt, judgeRead, PROBE_TIMEOUT_MS, refusal, SETTLE_MS, type Observed } from './isolation-probe.ts';
import { sleep } from './wait.ts';

/** Nodes named as other logins once were (their old inbox prefixes): the mesh of the matrix has them too. */
export const NAMESAKES = { seat: 'provisioner', vault: 'vault', provider: `provider-${PROVIDER}` } as const;

/** A stream as admin sees it: its configuration (null when there is none) and message count. */
async function streamState(admin: NatsConnection, stream: string): Promise<{ config: StreamConfig | null; text: string }> {
  const info = await (await jetstreamManager(admin)).streams.info(stream).catch(() => null);
  return info
    ? { config: info.config, text: `subjects ${JSON.stringify(info.config.subjects)}, ${info.state.messages} messages` }
    : { config: null, text: 'no stream' };
}

/** Puts a stream back as it was (a grant widened on purpose let the call through): re-made, reverted or removed. */
async function restore(admin: NatsConnection, stream: string, was: StreamConfig | null): Promise<void> {
  const jsm = await jetstreamManager(admin);
  const now = await jsm.streams.info(stream).catch(() => null);
  if (!was) await jsm.streams.delete(stream).catch(() => {});
  else if (!now) await jsm.streams.add(was);
  else await jsm.streams.update(stream, was);
}

/** A JetStream API call on `stream` by `actor`, judged by the stream as admin sees it before and after. */
function streamCall(actor: string, action: string, api: string, stream: string, body: (admin: NatsConnection) => Promise<unknown> | unknown): Row {
  return {
    actor,
    action,
    expected: 'refused',
    async run(c) {
      const before = await streamState(c.admin, stream);
      const payload = await body(c.admin);
      const said = await attempt(async () =>
        apiError((await c.as(actor).request(`$JS.API.${api}.${stream}`, jsonBytes(payload), { timeout: PROBE_TIMEOUT_MS })).data),
      );
      await sleep(SETTLE_MS);
      const after = await streamState(c.admin, stream);
      if (after.text === before.text) return { verdict: 'refused', how: `${said.ok ? (said.value ?? 'answered') : said.why}; the stream unchanged` };
      await restore(c.admin, stream, before.config);
      return { verdict: 'allowed', how: `the stream changed: ${!before.config ? 'created' : !after.config ? 'deleted' : 'its configuration or messages'}` };
    },
  };
}

/** The configuration of a bucket's stream with `extra` added to its subjects, as an attacker would send it. */
const widened =
  (stream: string, extra: string) =>
  async (admin: NatsConnection): Promise<unknown> => {
    const config = (await (await jetstreamManager(admin)).streams.info(stream)).config;
    return { ...config, subjects: [...config.subjects, extra] };
  };

/** How many durable consumers a node could make on its own keys of CONFIG, up to `of`; admin removes them after. */
async function consumersMade(c: MatrixContext, of: number): Promise<Observed> {
  let made = 0;
  let stop = '';
  for (; made < of; made++) {
    const name = `flood${made}`;
    const filter = kvSubject(CONFIG, `${A}.>`);
    const body = { stream_name: `KV_${CONFIG}`, config: { name, durable_name: name, filter_subject: filter, deliver_policy: 'all', ack_policy: 'explicit' } };
    const said = await attempt(async () =>
      apiError((await c.as(client).request(`$JS.API.CONSUMER.CREATE.KV_${CONFIG}.${name}.${filter}`, jsonBytes(body), { timeout: PROBE_TIMEOUT_MS })).data),
    );
    if (!said.ok || said.value) {
      stop = said.ok ? said.value! : said.why;
      break;
    }
  }
  const jsm = await jetstreamManager(c.admin);
  for (let i = 0; i < made; i++) await jsm.consumers.delete(`KV_${CONFIG}`, `flood${i}`).catch(() => {});
  return made >= of ? { verdict: 'allowed', how: `made all ${of}` } : { verdict: 'refused', how: `stopped before ${of}: ${stop}` };
}

/** The reply of the vault to `who` asking CREDENTIAL, judged by whether it handed the credential. */
function vaultAsk(actor: string, action: string, expected: Row['expected'], subject = VAULT_CREDENTIAL): Row {
  return {
    actor,
    action,
    expected,
    run: (c) =>
      judgeRead(
        CREDENTIAL.value,
        async () => {
          const reply = (await c.as(actor).request(subject, jsonBytes({ name: CREDENTIAL.name }), { timeout: PROBE_TIMEOUT_MS })).json<{
            value?: string;
            error?: string;
          }>();
          if (reply.error) throw new Error(`the vault refused: ${reply.error}`);
          return reply.value ?? null;
        },
        'the vault handed it',
      ),
  };
}

/** A request reaching the vault (published in MESH, so no import maps its reply) whose reply is not an inbox. */
function vaultReply(reply: string, expected: Row['expected'], what: string): Row {
  return {
    actor: 'admin',
    action: `request on \`${vaultCredentialOf(A)}\` with reply=\`${reply}\` (${what})`,
    expected,
    async run(c) {
      const ignored = c.vaultIgnored().length;
      const asked = c.vaultAsked().length;
      c.admin.publish(vaultCredentialOf(A), jsonBytes({ name: CREDENTIAL.name }), { reply });
      await c.admin.flush();
      await sleep(SETTLE_MS);
      if (c.vaultAsked().length > asked) return { verdict: 'allowed', how: 'the vault answered it' };
      return c.vaultIgnored().length > ignored
        ? { verdict: 'ignored', how: 'the vault dropped it (its reply is not an inbox)' }
        : { verdict: 'refused', how: 'the vault never got it' };
    },
  };
}

/** A node whose name was another login's inbox prefix, listening there while that login is asked. */
function namesake(node: string, prefix: string, owner: string, ask: (c: MatrixContext) => Promise<unknown>): Row {
  const actor = USERS.client(node);
  return {
    actor,
    action: `node \`${node}\` subscribes to \`${prefix}.>\` (${owner}'s inbox) while ${owner} is asked`,
    expected: 'refused',
    async run(c) {
      const sub = c.as(actor).subscribe(`${prefix}.>`);
      const closed = sub.closed.then((e) => (e instanceof Error ? refusal(e) : 'closed'));
      await c.as(actor).flush();
      await ask(c).catch(() => {});
      await sleep(SETTLE_MS);
      const count = sub.getReceived();
      sub.unsubscribe();
      const why = await Promise.race([closed, sleep(SETTLE_MS).then(() => 'subscribed')]);
      return count > 0 ? { verdict: 'allowed', how: `received ${count} message(s)` } : { verdict: 'refused', how: `${why}; nothing received` };
    },
  };
}

const bound = `KV_${boundBucket(PROVIDER)}`;
const capture = { name: 'KV_capture', subjects: ['_R_.>'] };

/** A node's leaf login (bus-config --leaf-listen) tried on the hub's client port: it logs in on a leaf connection only. */
function leafPasswordOnClientPort(node: string): Row {
  return {
    actor: `leaf.${node}`,
    action: `log in on the hub's client port with ${node}'s leaf password (a site's leaf server logs in with it)`,
    expected: 'refused',
    async run(c) {
      const login = c.leafLogin(node);
      try {
        const nc = await connect({ servers: [login.url], user: login.user, pass: login.password, reconnect: false, name: `probe ${login.user}` });
        await nc.close();
        return { verdict: 'allowed', how: `logged in, to provisioner.${node}'s account` };
      } catch (err) {
        return {
          verdict: 'refused',
          how: err instanceof Error && /Authorization Violation/.test(err.message) ? 'the server refused the login (Authorization Violation)' : refusal(err),
        };
      }
    },
  };
}

/** The rows a grant (or, for purges, a grant and then the hardening) refuses: each flips when its grant is widened. */
export const GRANT_ROWS: readonly Row[] = [
  streamCall(
    USERS.provider(PROVIDER),
    `update its bucket's stream \`${bound}\` to also hold \`_R_.>\` (every mapped reply)`,
    'STREAM.UPDATE',
    bound,
    widened(bound, '_R_.>'),
  ),
  streamCall(USERS.provider(PROVIDER), 'create a stream `KV_capture` holding `_R_.>`', 'STREAM.CREATE', 'KV_capture', () => capture),
  streamCall(USERS.provider(PROVIDER), `purge its bucket's stream \`${bound}\``, 'STREAM.PURGE', bound, () => ({})),
  streamCall(USERS.provider(PROVIDER), `delete its bucket's stream \`${bound}\``, 'STREAM.DELETE', bound, () => ({})),
  streamCall(
    USERS.seat,
    `update \`KV_${REGISTRY_BUCKET}\` to also hold \`_R_.>\``,
    'STREAM.UPDATE',
    `KV_${REGISTRY_BUCKET}`,
    widened(`KV_${REGISTRY_BUCKET}`, '_R_.>'),
  ),
  streamCall(USERS.seat, `purge \`KV_${PLANS}\``, 'STREAM.PURGE', `KV_${PLANS}`, () => ({})),
  streamCall(USERS.seat, `delete \`KV_${REGISTRY_BUCKET}\``, 'STREAM.DELETE', `KV_${REGISTRY_BUCKET}`, () => ({})),
  streamCall(USERS.vault, 'create a stream `KV_capture` holding `_R_.>`', 'STREAM.CREATE', 'KV_capture', () => capture),
  streamCall(
    client,
    `update \`KV_${PLANS}\` to also hold nb's inbox \`${INBOX_PREFIXES.node(B)}.>\``,
    'STREAM.UPDATE',
    `KV_${PLANS}`,
    widened(`KV_${PLANS}`, `${INBOX_PREFIXES.node(B)}.>`),
  ),
  { actor: client, action: `create 1,000 durable consumers on its own keys of ${CONFIG}`, expected: 'refused', run: (c) => consumersMade(c, 1000) },
  vaultAsk(client, `ask the vault as nb (\`${vaultCredentialOf(B)}\`)`, 'refused', vaultCredentialOf(B)),
  namesake(NAMESAKES.seat, INBOX_PREFIXES.seat, 'the seat', (c) =>
    c.as(USERS.seat).request(PROVISIONING_VERB, jsonBytes({ what: 'applied' }), { timeout: PROBE_TIMEOUT_MS }),
  ),
  namesake(NAMESAKES.vault, INBOX_PREFIXES.vault, 'the vault', (c) =>
    c.as(client).request(VAULT_CREDENTIAL, jsonBytes({ name: CREDENTIAL.name }), { timeout: PROBE_TIMEOUT_MS }),
  ),
  namesake(NAMESAKES.provider, INBOX_PREFIXES.provider(PROVIDER), `provider ${PROVIDER}`, (c) =>
    c.as(USERS.provider(PROVIDER)).request(`$JS.API.DIRECT.GET.${bound}.${kvSubject(boundBucket(PROVIDER), key.bound(B))}`, '', { timeout: PROBE_TIMEOUT_MS }),
  ),
];

/** Every row of issue 18, in the order the matrix prints them. */
export const STREAM_ROWS: readonly Row[] = [
  ...GRANT_ROWS.slice(0, 11),
  vaultAsk(
    client,
    `ask the vault (\`${VAULT_CREDENTIAL}\`) for nb.web's credential, which na serves (the plan binds ${PROVIDER} on na, where it is planned)`,
    'allowed',
  ),
  vaultAsk(USERS.client(B), `ask the vault (\`${VAULT_CREDENTIAL}\`) for its own module's credential, which na serves (its engine fills it)`, 'allowed'),
  vaultAsk(
    USERS.client(NAMESAKES.vault),
    `ask the vault (\`${VAULT_CREDENTIAL}\`) for nb.web's credential, neither its consumer nor where ${PROVIDER} serves it`,
    'refused',
  ),
  {
    actor: client,
    action: `push consumer on its own plan delivering to \`${vaultCredentialOf(A)}\``,
    expected: 'refused',
    async run(c) {
      const ignored = c.vaultIgnored().length;
      const asked = c.vaultAsked().length;
      const said = await pushConsumer(c.as(client), PLANS, key.report(A), 'probe-vault', vaultCredentialOf(A)).catch(refusal);
      await sleep(SETTLE_MS);
      await (await jetstreamManager(c.admin)).consumers.delete(`KV_${PLANS}`, 'probe-vault').catch(() => {});
      if (said) return { verdict: 'refused', how: said };
      if (c.vaultAsked().length > asked) return { verdict: 'allowed', how: 'the vault answered the delivery' };
      return c.vaultIgnored().length > ignored
        ? { verdict: 'ignored', how: 'the vault dropped it (its reply is `$JS.ACK.…`, no inbox)' }
        : { verdict: 'refused', how: 'nats-server delivers a push consumer only to a literal subscription: the vault never got it' };
    },
  },
  vaultReply(`$KV.${APPLIED}.${key.report(B)}`, 'ignored', 'a subject the asker chose'),
  vaultReply(`$JS.ACK.KV_${PLANS}.probe.1.1.1.1.0`, 'refused', "a push consumer's delivery: nats-server refuses it from a client"),
  leafPasswordOnClientPort(A),

  ...GRANT_ROWS.slice(11),
];
