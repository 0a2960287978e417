// The verb mesh-provisioner.provisioning (DESIGN §6) and `query`, against a real nats-server.
import { PROVISIONING_VERB } from '../src/shared/contract/subjects.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import { ensureKv } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { APPLIED, COLLECT, NEEDS, REGISTRY_BUCKET } from '../src/shared/contract/buckets.ts';
import { collectKey, needKey } from '../src/shared/contract/keys.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { isInboxSubject } from '../src/shared/bus/inbox.ts';
import { MAX_SUBJECT_BYTES } from '../src/shared/contract/limits.ts';
import { BUSY, type VerbReply, type VerbRequest } from '../src/shared/contract/verb.ts';
import { answerProvisioning, compareKeys, MAX_CONCURRENT_REQUESTS, REPLY_HEADROOM, serveProvisioning } from '../src/server/verb/serve.ts';
import { parseVerbRequest, watchFilter } from '../src/server/verb/request.ts';
import { runQuery } from '../src/server/commands/query/command.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { nestedJson } from './helpers/seat.ts';
import { waitFor } from './helpers/wait.ts';

let server: NatsServer;
let nc: NatsConnection;
let serving: { stop(): Promise<void> };
const kv: Record<string, KV> = {};
const log = memoryLogger();

const need = (node: string, module: string, kind: string, name: string, met = true) => ({
  node,
  module,
  kind,
  name,
  files: [`/etc/${module}/${module}.conf`],
  met,
});
const report = (node: string, module: string, state = 'applied', extra: object = {}) => ({
  node,
  module,
  build: 'b1',
  state,
  files: [{ path: `/etc/${module}.conf`, action: 'written', digest: 'sha256:x' }],
  waiting: [],
  at: '2026-01-01T00:00:00Z',
  ...extra,
});
const item = (node: string, collection: string, contributor: string, content = `# ${contributor}\n`) => ({ node, collection, contributor, content });

const ZSH = 'shell:zsh:normal';
const POSIX = 'environment:posix';

async function put(bucket: string, key: string, value: unknown): Promise<void> {
  await kv[bucket]!.put(key, typeof value === 'string' ? value : jsonBytes(value));
}

async function ask(request: unknown): Promise<VerbReply & { error?: string }> {
  const body = typeof request === 'string' ? new TextEncoder().encode(request) : jsonBytes(request);
  const msg = await nc.request(PROVISIONING_VERB, body, { timeout: 5000 });
  return JSON.parse(new TextDecoder().decode(msg.data));
}

const keysOf = (reply: VerbReply) => reply.entries.map((e) => e.key);
const oddKeys = (reply: VerbReply) => reply.outOfShape.map((o) => o.key);

test.before(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
  for (const bucket of [REGISTRY_BUCKET, NEEDS, APPLIED, COLLECT]) kv[bucket] = await ensureKv(nc, bucket, 1);

  await put(REGISTRY_BUCKET, 'secret', { owner: 'mesh-vault', verb: 'mesh-vault.credential' });
  await put(REGISTRY_BUCKET, 'config', { owner: 'mesh-config', bucket: 'mesh-config_resolved', key: '<node>.<module>.<key>' });
  await put(REGISTRY_BUCKET, 'Bad_Kind', { owner: 'nobody' });
  await put(REGISTRY_BUCKET, 'dir', '"just a string"');

  await put(NEEDS, needKey('n2', 'web', 'config', 'x'), need('n2', 'web', 'config', 'x'));
  await put(NEEDS, needKey('n1', 'web', 'secret', 'api-key'), need('n1', 'web', 'secret', 'api-key', false));
  await put(NEEDS, needKey('n1', 'web', 'config', 'db.host'), need('n1', 'web', 'config', 'db.host'));
  await put(NEEDS, needKey('n1', 'api', 'config', 'port'), need('n1', 'api', 'config', 'port'));
  await put(NEEDS, 'n1.web.config', need('n1', 'web', 'config', ''));
  await put(NEEDS, needKey('n2', 'api', 'config', 'bad'), { ...need('n2', 'api', 'config', 'bad'), files: 'nope' });

  await put(APPLIED, 'n2.web', report('n2', 'web', 'waiting', { waiting: [{ kind: 'config', name: 'db.host', files: ['/etc/web.conf'] }] }));
  await put(APPLIED, 'n1.web', report('n1', 'web'));
  await put(APPLIED, 'n1.api', report('n1', 'api', 'failed', { reason: 'template web.conf line 3: unknown kind' }));
  await put(APPLIED, 'N1.web', report('n1', 'web'));
  await put(APPLIED, 'n2.api', report('n2', 'api', 'exploded'));

  await put(COLLECT, collectKey('n1', ZSH, 'web'), item('n1', ZSH, 'web'));
  await put(COLLECT, collectKey('n1', ZSH, 'api'), item('n1', ZSH, 'api', 'alias x=y\n'));
  await put(COLLECT, collectKey('n1', POSIX, 'web'), item('n1', POSIX, 'web'));
  await put(COLLECT, collectKey('n2', ZSH, 'web'), item('n2', ZSH, 'web'));
  await put(COLLECT, collectKey('n2', POSIX, 'db'), item('n2', POSIX, 'db'));
  await put(COLLECT, 'n1.bad=zz.web', item('n1', 'bad', 'web'));
  await put(COLLECT, collectKey('n1', POSIX, 'api'), item('n2', POSIX, 'api'));

  serving = serveProvisioning(nc, log);
  await nc.flush();
});

test.after(async () => {
  await serving?.stop();
  await nc?.close();
  await server?.cleanup();
});

test('a request without what (or an empty body) lists the registry in byte order of its kinds, out-of-shape kinds and values beside', async () => {
  const reply = await ask({});
  assert.is(reply.what, 'registry');
  assert.equal(keysOf(reply), ['config', 'secret']);
  assert.equal(reply.entries[0]!.value, { owner: 'mesh-config', bucket: 'mesh-config_resolved', key: '<node>.<module>.<key>' });
  assert.equal(oddKeys(reply), ['Bad_Kind', 'dir']);
  assert.match(reply.outOfShape[0]!.reason, /^key: kind "Bad_Kind"/);
  assert.match(reply.outOfShape[1]!.reason, /^value: .*not a JSON object/);
  assert.is(reply.next, undefined);
  assert.equal(await ask(''), reply);
});

test('needs are listed in key order with a three-token key and a failing value out of shape', async () => {
  const reply = await ask({ what: 'needs' });
  assert.equal(keysOf(reply), ['n1.api.config.port', 'n1.web.config.db=2Ehost', 'n1.web.secret.api-key', 'n2.web.config.x']);
  assert.equal(reply.entries[1]!.value, need('n1', 'web', 'config', 'db.host'));
  assert.equal(oddKeys(reply), ['n1.web.config', 'n2.api.config.bad']);
  assert.match(reply.outOfShape[0]!.reason, /has 3 tokens, wants 4/);
  assert.match(reply.outOfShape[1]!.reason, /field "files"/);
});

test('needs narrow by node, by module and by both', async () => {
  assert.equal(keysOf(await ask({ what: 'needs', node: 'n2' })), ['n2.web.config.x']);
  assert.equal(keysOf(await ask({ what: 'needs', module: 'web' })), ['n1.web.config.db=2Ehost', 'n1.web.secret.api-key', 'n2.web.config.x']);
  const both = await ask({ what: 'needs', node: 'n1', module: 'web' });
  assert.equal(keysOf(both), ['n1.web.config.db=2Ehost', 'n1.web.secret.api-key']);
  assert.equal(oddKeys(both), ['n1.web.config']);
});

test('applied lists reports in byte order with an upper-case node and an unknown state out of shape', async () => {
  const reply = await ask({ what: 'applied' });
  assert.equal(keysOf(reply), ['n1.api', 'n1.web', 'n2.web']);
  assert.equal(oddKeys(reply), ['N1.web', 'n2.api']);
  assert.match(reply.outOfShape[0]!.reason, /node "N1" is not a valid name/);
  assert.match(reply.outOfShape[1]!.reason, /field "state"/);
  assert.equal(keysOf(await ask({ what: 'applied', node: 'n1' })), ['n1.api', 'n1.web']);
  const web = await ask({ what: 'applied', module: 'web' });
  assert.equal(keysOf(web), ['n1.web', 'n2.web']);
  assert.equal(oddKeys(web), ['N1.web']);
  assert.equal(keysOf(await ask({ what: 'applied', node: 'n2', module: 'web' })), ['n2.web']);
});

test('collect narrows by node, by a collection with colons, and by contributor', async () => {
  const zsh = collectKey('n1', ZSH, 'web');
  assert.is(zsh, 'n1.shell=3Azsh=3Anormal.web');
  const all = await ask({ what: 'collect' });
  assert.equal(keysOf(all), ['n1.environment=3Aposix.web', 'n1.shell=3Azsh=3Anormal.api', zsh, 'n2.environment=3Aposix.db', 'n2.shell=3Azsh=3Anormal.web']);
  assert.equal(oddKeys(all), ['n1.bad=zz.web', 'n1.environment=3Aposix.api']);
  assert.match(all.outOfShape[0]!.reason, /collection token/);
  assert.match(all.outOfShape[1]!.reason, /field "node" is "n2" but the key says "n1"/);
  assert.equal(keysOf(await ask({ what: 'collect', collection: ZSH })), ['n1.shell=3Azsh=3Anormal.api', zsh, 'n2.shell=3Azsh=3Anormal.web']);
  assert.equal(keysOf(await ask({ what: 'collect', node: 'n1', collection: ZSH })), ['n1.shell=3Azsh=3Anormal.api', zsh]);
  const web = await ask({ what: 'collect', contributor: 'web' });
  assert.equal(keysOf(web), ['n1.environment=3Aposix.web', zsh, 'n2.shell=3Azsh=3Anormal.web']);
  assert.equal(oddKeys(web), ['n1.bad=zz.web']);
  assert.equal(keysOf(await ask({ what: 'collect', node: 'n2', contributor: 'db' })), ['n2.environment=3Aposix.db']);
});

test('limit caps entries per reply and after resumes past the last key', async () => {
  const first = await ask({ what: 'needs', limit: 2 });
  assert.equal(keysOf(first), ['n1.api.config.port', 'n1.web.config.db=2Ehost']);
  assert.equal(oddKeys(first), ['n1.web.config']);
  assert.is(first.next, 'n1.web.config.db=2Ehost');
  const second = await ask({ what: 'needs', limit: 2, after: first.next });
  assert.equal(keysOf(second), ['n1.web.secret.api-key', 'n2.web.config.x']);
  assert.equal(oddKeys(second), ['n2.api.config.bad']);
  assert.is(second.next, undefined);
});

test('bad requests are answered with an error naming the problem', async () => {
  const cases: [unknown, RegExp][] = [
    ['{not json', /^request: not JSON/],
    ['[1]', /^request: must be a JSON object/],
    [{ what: 'x' }, /^what: .*must be one of/],
    [{ limit: 0 }, /^limit: .*at least 1/],
    [{ limit: 'ten' }, /^limit: expected number/],
    [{ what: 'needs', contributor: 'web' }, /^contributor: only valid for what collect/],
    [{ what: 'applied', collection: ZSH }, /^collection: only valid for what collect/],
    [{ what: 'registry', node: 'n1' }, /^node: only valid for what needs, applied, collect/],
    [{ what: 'needs', node: 'N1' }, /^node: .*not a valid name/],
    [{ colour: 'red' }, /^colour: unknown field/],
  ];
  for (const [request, pattern] of cases) {
    const reply = await ask(request);
    assert.type(reply.error, 'string', `no error for ${JSON.stringify(request)}`);
    assert.match(reply.error!, pattern);
    assert.is(reply.entries, undefined);
  }
});

test("an inbox is _INBOX.…, a role's _INBOX_<role>.… (a named role's name valid), or a mapped reply _R_.…, and nothing else", () => {
  for (const inbox of [
    '_INBOX.abc',
    '_INBOX.abc.1',
    '_INBOX_node_n1.abc',
    '_INBOX_runner_web-1.x.y',
    '_INBOX_provider_pg.x',
    '_INBOX_seat.a',
    '_INBOX_admin.b',
    '_INBOX_vault.c',
    '_R_.aBc.dEf',
  ]) {
    assert.ok(isInboxSubject(inbox), inbox);
  }
  for (const other of [
    '$JS.API.STREAM.DELETE.KV_x',
    '$KV.mesh-provisioner_plans.n1.injected',
    '$O.archives.C.x',
    'prov.applied.n1.web',
    '_INBOX',
    '_INBOX.',
    '_INBOX..x',
    '_INBOX.*',
    '_INBOX.>',
    '_INBOX.a b',
    '_INBOX_node_N1.x',
    '_INBOX_.x',
    '_INBOX_node_n1',
    '_INBOX_n1.x',
    '_INBOX_node_.x',
    '_INBOX_other_n1.x',
    '_INBOX_seatx.y',
    '_INBOXX.y',
    '_R_',
    'x._INBOX.y',
    '_INBOX.' + 'x'.repeat(3000),
    '',
  ])
    assert.not.ok(isInboxSubject(other), other);
});

test('a request is answered only to an inbox; $JS., $KV., $O., plain and ill-formed inbox reply subjects are ignored', async () => {
  const received: string[] = [];
  const replies = [
    '$JS.verbtest.reply',
    '$KV.verbtest.reply',
    '$O.verbtest.reply',
    'verbtest.reply',
    '_INBOX_node_N1.verbtest',
    '_INBOX_n1.verbtest',
    '_INBOX.verb-test',
    '_INBOX_node_n1.verb-test',
  ];
  const subs = replies.map((reply) => nc.subscribe(reply, { callback: (_e, m) => void received.push(`${reply} ${m.json<VerbReply>().what}`) }));
  await nc.flush();
  for (const reply of replies) nc.publish(PROVISIONING_VERB, jsonBytes({ what: 'applied' }), { reply });
  // Ignoring is decided on receipt and said at debug: once each ignored subject is said and both inboxes are
  // answered, nothing more is coming.
  const answered = ['_INBOX.verb-test', '_INBOX_node_n1.verb-test'];
  const ignored = replies.filter((r) => !answered.includes(r));
  await waitFor('the seat saying it ignored every reply subject that is not an inbox', () =>
    ignored.every((r) => log.lines.some((l) => l.includes(`ignored a request with reply subject ${JSON.stringify(r)}`))),
  );
  await waitFor('both inboxes answered', () => received.length >= answered.length);
  for (const sub of subs) sub.unsubscribe();
  // A mapped reply (_R_.…) only exists across a service import; the predicate's own test covers it.
  assert.equal(received.sort(), ['_INBOX.verb-test applied', '_INBOX_node_n1.verb-test applied']);
  assert.ok(log.lines.some((l) => l.includes('ignored a request with reply subject "$KV.verbtest.reply"')));
});

test('every request field is bounded, and the error names the field, the limit and the size', async () => {
  const cases: [unknown, RegExp][] = [
    [{ what: 'collect', collection: 'c'.repeat(4100) }, /^collection: "c{79}…" is 4100 bytes, past the limit of 255 bytes$/],
    [{ what: 'collect', collection: ':'.repeat(100) }, /^collection: .* is 300 bytes as a key token, past the limit of 255 bytes$/],
    [{ what: 'needs', after: 'k'.repeat(2000) }, /^after: .* is 2000 bytes, past the limit of 1024 bytes$/],
    [{ what: 'needs', node: 'n'.repeat(5000) }, /^node: "n{79}…" is not a valid name$/],
    [{ what: 'needs', ['x'.repeat(5000)]: 1 }, /^x{80}…: unknown field$/],
    [JSON.stringify({ what: 'needs', pad: ' '.repeat(70_000) }), /^request: \d+ bytes, past the limit of 65536 bytes$/],
    [nestedJson(100), /^request: nested deeper than 64 levels$/],
    [`{"what":"needs","node":${nestedJson(5000)}}`, /^request: nested deeper than 64 levels$/],
  ];
  for (const [request, pattern] of cases) {
    const reply = await ask(request);
    assert.type(reply.error, 'string', `no error for ${JSON.stringify(request).slice(0, 100)}`);
    assert.match(reply.error!, pattern);
    assert.ok(reply.error!.length < 300, `an error of ${reply.error!.length} characters`);
  }
  assert.ok((await ask({ what: 'collect', collection: 'c'.repeat(255) })).entries, 'a collection of 255 bytes is read');
});

test('the parsed request always makes a filter within the subject limit', () => {
  const parsed = parseVerbRequest(jsonBytes({ what: 'collect', node: 'n'.repeat(63), collection: '\u{10FFFF}'.repeat(21), contributor: 'c'.repeat(63) }));
  assert.ok(parsed.ok, JSON.stringify(parsed));
  const filter = watchFilter((parsed as { value: VerbRequest & { what: 'collect' } }).value);
  assert.ok(filter.ok);
  assert.ok(Buffer.byteLength((filter as { value: string }).value) <= MAX_SUBJECT_BYTES);
});

test(`past ${MAX_CONCURRENT_REQUESTS} requests at once the verb answers busy at once, a malformed one still gets its error, and all are answered`, async () => {
  const asks = Array.from({ length: 300 }, () => nc.request(PROVISIONING_VERB, jsonBytes({ what: 'applied' }), { timeout: 10_000 }));
  const malformed = nc.request(PROVISIONING_VERB, new TextEncoder().encode('{not json'), { timeout: 10_000 });
  const replies = (await Promise.all(asks)).map((m) => m.json<VerbReply & { error?: string }>());
  const busy = replies.filter((r) => r.error === BUSY).length;
  const answered = replies.filter((r) => r.what === 'applied').length;
  assert.ok(busy > 0, 'some answered busy');
  assert.ok(answered >= MAX_CONCURRENT_REQUESTS, `${answered} answered`);
  assert.is(busy + answered, 300);
  assert.match((await malformed).json<{ error: string }>().error, /^request: not JSON/);
  assert.is((await ask({ what: 'applied' })).what, 'applied');
  assert.ok(log.lines.some((l) => l.includes(`answering ${BUSY}`)));
});

test('a value too large for any reply is listed out of shape so paging still moves on', async () => {
  const reply = await answerProvisioning(nc, jsonBytes({ what: 'applied', node: 'n1' }), REPLY_HEADROOM + 200);
  assert.ok(!('error' in reply), JSON.stringify(reply));
  const r = reply as VerbReply;
  assert.equal(r.entries, []);
  assert.equal(oddKeys(r), ['n1.api']);
  assert.match(r.outOfShape[0]!.reason, /does not fit in one reply/);
  assert.is(r.next, 'n1.api');
  assert.ok(jsonBytes(r).length <= 200, `${jsonBytes(r).length} bytes`);
});

test('query prints one table row per entry with its key parts, following next across pages', async () => {
  const lines: string[] = [];
  const code = await runQuery(nc, { what: 'needs', json: false, limit: 1 }, (line) => lines.push(line));
  assert.is(code, 0);
  const text = lines.join('\n');
  assert.match(lines[0]!, /^NODE\s+MODULE\s+KIND\s+NAME\s+MET\s+FILES$/);
  for (const row of ['n1 api config port', 'n1 web config db.host', 'n1 web secret api-key', 'n2 web config x']) {
    const parts = row.split(' ').map((part) => part.replace('.', '\\.'));
    assert.ok(
      lines.some((l) => new RegExp(`^${parts.join('\\s+')}\\s`).test(l)),
      `no row for ${row}:\n${text}`,
    );
  }
  assert.ok(
    lines.some((l) => /^n1\s+web\s+secret\s+api-key\s+no\s+\/etc\/web\/web\.conf$/.test(l)),
    text,
  );
  assert.match(text, /out of shape \(2\):/);
  assert.match(text, /n1\.web\.config\s+key: has 3 tokens/);
  assert.match(text, /n2\.api\.config\.bad\s+value:/);
});

test('query prints collect and applied tables with their own columns', async () => {
  const collect: string[] = [];
  assert.is(await runQuery(nc, { what: 'collect', contributor: 'api', json: false }, (l) => collect.push(l)), 0);
  assert.match(collect[0]!, /^NODE\s+COLLECTION\s+CONTRIBUTOR\s+BYTES$/);
  assert.ok(
    collect.some((l) => /^n1\s+shell:zsh:normal\s+api\s+10$/.test(l)),
    collect.join('\n'),
  );
  const applied: string[] = [];
  assert.is(await runQuery(nc, { what: 'applied', node: 'n2', json: false }, (l) => applied.push(l)), 0);
  assert.ok(
    applied.some((l) => /^n2\s+web\s+waiting\s+b1\s+1\s+config:db\.host$/.test(l)),
    applied.join('\n'),
  );
});

test('query --json prints everything gathered as one object', async () => {
  const lines: string[] = [];
  assert.is(await runQuery(nc, { what: 'applied', json: true, limit: 1 }, (l) => lines.push(l)), 0);
  assert.is(lines.length, 1);
  const all = JSON.parse(lines[0]!);
  assert.equal(
    all.entries.map((e: { key: string }) => e.key),
    ['n1.api', 'n1.web', 'n2.web'],
  );
  assert.equal(
    all.outOfShape.map((o: { key: string }) => o.key),
    ['N1.web', 'n2.api'],
  );
});

test('query prints an error reply and returns 2, and says when nothing answers and returns 1', async () => {
  const lines: string[] = [];
  assert.is(await runQuery(nc, { what: 'x', json: false }, (l) => lines.push(l)), 2);
  assert.match(lines[0]!, /what: .*must be one of/);
  await serving.stop();
  try {
    const none: string[] = [];
    assert.is(await runQuery(nc, { what: 'needs', json: false }, (l) => none.push(l)), 1);
    assert.is(none.length, 1);
    assert.match(none[0]!, /nothing answers mesh-provisioner\.provisioning/);
  } finally {
    serving = serveProvisioning(nc, log);
    await nc.flush();
  }
});

test('a deleted key is not listed, nor is a key written and deleted since the last page', async () => {
  assert.equal(keysOf(await ask({ what: 'applied', node: 'n3' })), []);
  await put(APPLIED, 'n3.gone', report('n3', 'gone'));
  await put(APPLIED, 'n3.kept', report('n3', 'kept'));
  assert.equal(keysOf(await ask({ what: 'applied', node: 'n3' })), ['n3.gone', 'n3.kept']);
  await kv[APPLIED]!.delete('n3.gone');
  await put(APPLIED, 'n3.brief', report('n3', 'brief'));
  await kv[APPLIED]!.delete('n3.brief');
  const reply = await ask({ what: 'applied', node: 'n3' });
  assert.equal(keysOf(reply), ['n3.kept']);
  assert.equal(oddKeys(reply), []);
  await kv[APPLIED]!.delete('n3.kept');
  assert.equal(keysOf(await ask({ what: 'applied', node: 'n3', limit: 1 })), []);
});

// Last: it adds 600 reports to the applied bucket the tests above read.
test('a bucket of more than 2 MiB is paged to the end by next, nothing missing or repeated, every reply under max payload', async () => {
  const filler = 'x'.repeat(5000);
  const bigKeys: string[] = [];
  for (let start = 0; start < 600; start += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => {
        const module = `m${String(start + i).padStart(3, '0')}`;
        bigKeys.push(`big.${module}`);
        return put(APPLIED, `big.${module}`, report('big', module, 'applied', { reason: filler }));
      }),
    );
  }
  const expected = [...bigKeys, 'N1.web', 'n1.api', 'n1.web', 'n2.api', 'n2.web'].sort(compareKeys);
  const maxPayload = nc.info!.max_payload;
  const seen: string[] = [];
  let after: string | undefined;
  let pages = 0;
  do {
    const msg = await nc.request(PROVISIONING_VERB, jsonBytes({ what: 'applied', ...(after ? { after } : {}) }), { timeout: 10_000 });
    assert.ok(msg.data.length <= maxPayload, `reply of ${msg.data.length} bytes`);
    const reply = JSON.parse(new TextDecoder().decode(msg.data)) as VerbReply;
    const keys = [...keysOf(reply), ...oddKeys(reply)].sort(compareKeys);
    if (reply.next !== undefined) assert.is(reply.next, keys[keys.length - 1]);
    seen.push(...keys);
    after = reply.next;
    pages++;
  } while (after !== undefined);
  assert.ok(pages >= 3, `${pages} pages`);
  assert.equal(seen, expected);
});

test.run();
