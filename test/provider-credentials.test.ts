// Credentials kept out of what the provider helper publishes and logs (DESIGN §3, issue 18 item 6):
// the forms a credential takes in a text (property-tested against independent encoders), and the
// helper against a real nats-server with an adapter that quotes, upper-cases, base64s, hexes and
// URL-encodes the credential in its refusals, errors and served values.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { WITHHELD_REFUSAL, WITHHELD_SERVED, SHORT_CREDENTIAL_REFUSAL } from '../src/sdk/consumer-sync.ts';
import { CredentialMatcher, MIN_CREDENTIAL_BYTES } from '../src/sdk/credential-forms.ts';
import { Refused, type Adapter, type Grant } from '../src/sdk/provider-index.ts';
import { consumer, fakeAdapter, startProviderBus, stopProviderBus, world } from './helpers/provider-world.ts';
import { SEED } from './helpers/random.ts';
import { waitFor } from './helpers/wait.ts';

const RUNS = Number(process.env['MESH_FUZZ_RUNS'] ?? 300);

/** Ways a credential is written into a longer text, each by an encoder that knows nothing of the matcher. */
const ENCODERS: Record<string, (before: string, credential: string, after: string) => string> = {
  raw: (b, c, a) => b + c + a,
  json: (b, c, a) => JSON.stringify({ note: b, password: c, more: a }),
  jsonTwice: (b, c, a) => b + JSON.stringify(JSON.stringify({ password: c }).slice(1, -1)) + a,
  upper: (b, c, a) => (b + c + a).toUpperCase(),
  lower: (b, c, a) => (b + c + a).toLowerCase(),
  uri: (b, c, a) => `postgres://u:${encodeURIComponent(c)}@host/${b}${a}`,
  uriLower: (b, c, a) => `${b}${encodeURIComponent(c).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())}${a}`,
  form: (b, c, a) => new URLSearchParams({ b, password: c, a }).toString(),
  base64: (b, c, a) => Buffer.from(b + c + a).toString('base64'),
  base64url: (b, c, a) => Buffer.from(b + c + a).toString('base64url'),
  hex: (b, c, a) => Buffer.from(b + c + a).toString('hex'),
  hexUpper: (b, c, a) =>
    Buffer.from(b + c + a)
      .toString('hex')
      .toUpperCase(),
};

/** Credentials of 8 bytes or more, of characters every encoder above escapes or folds in its own way. */
const credentialArb = fc
  .string({
    unit: fc.oneof(
      fc.constantFrom('a', 'Z', '9', '"', '\\', '/', ' ', '%', '+', '=', '~', '*', 'é', 'ß', 'Σ', 'İ', 'ﬁ', '日', '😀', '\n'),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    ),
    minLength: 1,
    maxLength: 40,
  })
  .filter((c) => Buffer.byteLength(c) >= MIN_CREDENTIAL_BYTES);

test('a credential of 8 bytes or more is found in a text however it is written, at every offset of a longer base64 text (property)', () => {
  fc.assert(
    fc.property(
      credentialArb,
      fc.string({ maxLength: 12 }),
      fc.string({ maxLength: 12 }),
      fc.constantFrom(...Object.keys(ENCODERS)),
      (credential, before, after, how) => {
        const matcher = new CredentialMatcher([credential]);
        const text = ENCODERS[how]!(before, credential, after);
        assert.ok(matcher.holds(text), `${how}: ${JSON.stringify(credential)} not found in ${JSON.stringify(text)}`);
      },
    ),
    { seed: SEED, numRuns: RUNS },
  );
});

test("the helper's own lines and ordinary values hold no vault-made credential (property)", () => {
  const lines = [
    'n1/web: served as web_n1',
    'prov_bound: 3 bound entries of database at start',
    'n2/api/ro: withdrawn (api_n2_ro removed, its bound entry deleted)',
    'postgres://db1.mesh.test:5432/webdb',
    'consumers file /run/postgres/consumers.json is absent: nothing is withdrawn while it is absent (keeping the last good list, 3 consumers)',
  ];
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
      const matcher = new CredentialMatcher([Buffer.from(bytes).toString('base64url')]);
      for (const line of lines) assert.not.ok(matcher.holds(line), line);
    }),
    { seed: SEED, numRuns: RUNS },
  );
});

test('a credential shorter than 8 bytes is not looked for (it would be in every line)', () => {
  const matcher = new CredentialMatcher(['e', 'ab', '1234567']);
  assert.not.ok(matcher.holds('every line holds an e, ab and 1234567'));
  assert.ok(new CredentialMatcher(['e', '12345678']).holds('x 12345678 y'));
});

let started = false;
test.before(async () => {
  await startProviderBus();
  started = true;
});
test.after(async () => {
  if (started) await stopProviderBus();
});

/** A credential needing every escape: a quote, a backslash, a slash, a space, `@`, non-ASCII. */
const HARD = 'pa"ss\\w/rd @é-7f3a9c';

test('refusals and errors quoting the credential JSON-quoted, upper-cased, base64 at each offset, base64url or hex publish a refusal naming no value, and no line holds them', async () => {
  const w = await world();
  const fake = fakeAdapter();
  /** Each module's refusal: the credential written one way, and that piece (planted: no line or value may hold it). */
  const forms: Record<string, (c: string) => [string, string]> = {
    json: (c) => ['rejected', JSON.stringify({ password: c })],
    upper: (c) => ['PASSWORD IS TOO WEAK:', c.toUpperCase()],
    b64a: (c) => ['token', Buffer.from(`${c};x`).toString('base64')],
    b64b: (c) => ['token', Buffer.from(`u=${c};x`).toString('base64')],
    b64c: (c) => ['token', Buffer.from(`us=${c}`).toString('base64')],
    b64url: (c) => ['token', Buffer.from(`user:${c}`).toString('base64url')],
    hex: (c) => ['bytes', Buffer.from(c).toString('hex')],
  };
  const adapter: Adapter = {
    ...fake.adapter,
    async create(g: Grant, signal: AbortSignal) {
      const form = forms[g.consumer.module];
      if (form) {
        const [before, piece] = form(g.credential);
        w.planted.add(piece);
        throw new Refused(`${before} ${piece}`);
      }
      if (g.consumer.module === 'flaky' && fake.count('create', g.as) === 0) {
        const text = Buffer.from(`postgres://flaky:${g.credential}@db1`).toString('base64');
        w.planted.add(text);
        await fake.adapter.create(g, signal);
        throw new Error(`connection failed for ${text}`);
      }
      return fake.adapter.create(g, signal);
    },
  };
  try {
    const entries = [...Object.keys(forms), 'flaky'].map((m, i) => consumer('n1', m, null, `${HARD}-${i}`));
    w.write(entries);
    w.start(adapter, { retry: { firstMs: 50, maxMs: 50 } });
    for (const module of Object.keys(forms)) {
      assert.equal(await waitFor(`${module} refused`, () => w.bound(`n1.${module}.database`)), { refused: WITHHELD_REFUSAL }, module);
    }
    assert.ok(await waitFor('flaky served after its failure', () => w.bound('n1.flaky.database')));
    assert.ok(
      w.log.lines.some((l) => l.includes('n1/flaky: serving failed (try 1): (its message is withheld')),
      w.log.lines.join('\n'),
    );
    assert.ok(
      w.log.lines.some((l) => l.includes(`n1/json: refused: ${WITHHELD_REFUSAL}`)),
      'the refusal is said, naming the consumer',
    );
  } finally {
    await w.done(); // scans every line and bucket value for every credential and every planted text
  }
});

test('served values holding the credential URL-encoded (either case), base64 or as a key are not published', async () => {
  const w = await world();
  const fake = fakeAdapter();
  const leaks: Record<string, (c: string) => Record<string, string | number>> = {
    urlupper: (c) => ({ dsn: `postgres://u:${encodeURIComponent(c)}@db1/x` }),
    urllower: (c) => ({ dsn: `postgres://u:${encodeURIComponent(c).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())}@db1/x` }),
    b64: (c) => ({ auth: Buffer.from(`u:${c}`).toString('base64') }),
    key: (c) => ({ [c]: 1 }),
    user: () => ({}),
  };
  const adapter: Adapter = {
    ...fake.adapter,
    async create(g: Grant, signal: AbortSignal) {
      const served = await fake.adapter.create(g, signal);
      const leak = leaks[g.consumer.module];
      if (!leak) return served;
      if (g.consumer.module === 'user') {
        w.planted.add(g.credential.toUpperCase());
        return { user: g.credential.toUpperCase(), values: served.values };
      }
      const values = leak(g.credential);
      for (const [k, v] of Object.entries(values)) w.planted.add(k.length >= 8 ? k : String(v));
      return { user: served.user, values: { ...served.values, ...values } };
    },
  };
  try {
    w.write([...Object.keys(leaks), 'web'].map((m, i) => consumer('n1', m, null, `${HARD}-${i}`)));
    w.start(adapter);
    for (const module of Object.keys(leaks)) {
      assert.equal(await waitFor(`${module} refused`, () => w.bound(`n1.${module}.database`)), { refused: WITHHELD_SERVED }, module);
    }
    assert.equal(await waitFor('web served', () => w.served('n1.web.database')), {
      as: 'web_n1',
      user: 'web_n1',
      values: { host: 'db1', port: 5432, database: 'web' },
    });
  } finally {
    await w.done();
  }
});

test('a credential shorter than 8 bytes is refused without reaching the adapter, and no line is garbled by it', async () => {
  const w = await world();
  const fake = fakeAdapter();
  try {
    w.write([consumer('n1', 'tiny', null, 'e'), consumer('n1', 'seven', null, 'ab-cdef'), consumer('n1', 'web', null, 'cred-web-9b1d4e')]);
    w.start(fake.adapter);
    assert.equal(await waitFor('tiny refused', () => w.bound('n1.tiny.database')), { refused: SHORT_CREDENTIAL_REFUSAL });
    assert.equal(await waitFor('seven refused', () => w.bound('n1.seven.database')), { refused: SHORT_CREDENTIAL_REFUSAL });
    await waitFor('web served', () => w.bound('n1.web.database'));
    assert.is(fake.count('create', 'tiny_n1') + fake.count('create', 'seven_n1'), 0, 'a short credential was handed to the adapter');
    await waitFor('the served line, whole', () => w.log.lines.some((l) => l.endsWith('n1/web: served as web_n1')));
    assert.ok(
      w.log.lines.some((l) => l.endsWith(`n1/tiny: refused: ${SHORT_CREDENTIAL_REFUSAL}`)),
      w.log.lines.join('\n'),
    );
  } finally {
    await w.done();
  }
});

test.run();
