// Every credential reaches PostgreSQL as a SCRAM verifier, whatever its bytes (issue 18 item 9),
// against a real PostgreSQL logging every statement: the verifier computed here equals the one the
// server computes from the same password (its own SASLprep included) over a property test; a role
// set with accents, decomposed accents, full-width letters, ligatures, non-ASCII spaces, prohibited
// and bidi-breaking characters logs in through libpq (psql, which SASLpreps as the server does) and
// through node-postgres; what cannot be computed for sure is refused; no credential is in the log.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import pg from 'pg';
import { postgresAdapter, type PostgresAdapter } from '../examples/postgres-provider/adapter.ts';
import { scramVerifier } from '../examples/postgres-provider/scram.ts';
import { saslprep } from '../examples/postgres-provider/saslprep.ts';
import { Refused, type Grant } from '../src/sdk/types.ts';
import { ROOT } from './helpers/bundle.ts';
import { findPostgresBin, startPostgres, type Postgres } from './helpers/postgres.ts';
import { SEED } from './helpers/random.ts';
import { envWithoutMesh } from './helpers/spawn.ts';

const RUNS = Number(process.env['MESH_FUZZ_RUNS'] ?? 150);

let server: Postgres | undefined;
let adapter: PostgresAdapter | undefined;
let admin: pg.Client | undefined;
let startError: unknown;
/** Every credential the adapter set: none may reach the server's log. */
const handed: string[] = [];

test.before(async () => {
  try {
    server = await startPostgres({ settings: { log_statement: "'all'", log_min_error_statement: "'error'" } });
    adapter = postgresAdapter({ host: server.host, port: server.port, user: server.adminUser, password: server.adminPassword, connectTimeoutMs: 3000 });
    admin = new pg.Client({ host: server.host, port: server.port, user: server.adminUser, password: server.adminPassword, database: 'postgres' });
    await admin.connect();
    await admin.query('CREATE ROLE c_probe');
  } catch (e) {
    startError = e;
  }
});

// A PostgreSQL that did not start fails every test with the reason; nothing is skipped.
test.before.each(() => {
  if (startError) throw startError;
});

test.after(async () => {
  await admin?.end().catch(() => undefined);
  await adapter?.close();
  await server?.stop();
});

/** Characters SASLprep maps, normalizes, prohibits or judges by direction, beside plain ones. */
const ALPHABET = [
  'a',
  'Z',
  '7',
  ' ',
  '-',
  'é',
  'e\u0301',
  'a\u0308',
  'ß',
  'İ',
  'ǅ',
  'ΐ',
  'Σ',
  'ς',
  'ﬁ',
  'ﬂ',
  'Ａ',
  'ｚ',
  '１',
  '²',
  '½',
  '①',
  '\u212a',
  '\u2126',
  '\u212b',
  '\u00a0',
  '\u3000',
  '\u2003',
  '\u200b',
  '\u00ad',
  '\u200d',
  '\ufe0f',
  '\u180b',
  'ᄀ',
  'ᅡ',
  '가',
  '豈',
  '\u{2f868}',
  '日',
  '😀',
  'א',
  'ב',
  'ا',
  '٣',
  '\u0080',
  '\u009f',
  '\ue000',
  '\ufffd',
  '\u2ff0',
  '\u0340',
  '\u200e',
  '\u202e',
  '\u{e0001}',
  '\ufdd0',
  '\u0001',
  '\u007f',
];

test('the verifier computed here is the one PostgreSQL computes from the same password, SASLprep and its raw-bytes fallback included (property)', async () => {
  const probe = admin!;
  let prepared = 0;
  let raw = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.constantFrom(...ALPHABET), { minLength: 1, maxLength: 12 }).map((parts) => parts.join('')),
      async (password) => {
        await probe.query(`ALTER ROLE c_probe PASSWORD ${pg.escapeLiteral(password)}`);
        const stored = (await probe.query<{ secret: string }>("SELECT rolpassword AS secret FROM pg_authid WHERE rolname = 'c_probe'")).rows[0]!.secret;
        const [, iterations, salt] = /^SCRAM-SHA-256\$(\d+):([^$]+)\$/.exec(stored) ?? [];
        assert.ok(iterations && salt, `not a SCRAM secret: ${stored.slice(0, 20)}`);
        const ours = await scramVerifier(password, Buffer.from(salt, 'base64'), Number(iterations));
        assert.is(ours, stored, `the verifiers differ for ${JSON.stringify(password)} (SASLprep ${JSON.stringify(saslprep(password))})`);
        if (saslprep(password).ok) prepared += 1;
        else raw += 1;
      },
    ),
    { seed: SEED, numRuns: RUNS },
  );
  assert.ok(prepared > RUNS / 10 && raw > RUNS / 10, `both paths exercised: ${prepared} prepared, ${raw} raw`);
});

/** Credentials of every kind the issue names, each long enough for the helper. */
const ACCEPTED: Record<string, string> = {
  c_nfc: 'pässwörd-ключ-密码',
  c_nfd: 'pa\u0308sswo\u0308rd-decomposed',
  c_full: 'ｆｕｌｌｗｉｄｔｈ－ｐｗ１２',
  c_liga: 'ﬁﬂ-ligature-pass',
  c_space: 'non\u00a0ascii\u3000space\u2003pw',
  c_hyphen: 'soft\u00adhyphen-and-zwj\u200d-pw',
  c_prohib: 'prohibited\u0080control-pw',
  c_private: 'private\ue000use-area-pw',
  c_rtl: 'אבגדהוזחטי',
  c_bidi: 'abc-אבג-mixed-pw',
  c_kelvin: '\u212a\u2126\u212b-signs-normalized',
  c_newer: 'newer-letter-\u0221-and-\u{1f600}',
  c_long: 'lång-'.repeat(300),
};

/** Whether psql (libpq, which SASLpreps the password as the server does) logs in as `user` with `password`. */
function psqlLogin(user: string, password: string, database: string): Promise<string> {
  const s = server!;
  const psql = join(findPostgresBin(), 'psql');
  const env = { ...envWithoutMesh(), PGPASSWORD: password, PGCONNECT_TIMEOUT: '5' };
  for (const k of ['PGHOST', 'PGPORT', 'PGUSER', 'PGDATABASE', 'PGPASSFILE', 'PGSERVICE']) delete (env as NodeJS.ProcessEnv)[k];
  return new Promise((resolve) => {
    execFile(
      psql,
      ['-h', s.host, '-p', String(s.port), '-U', user, '-d', database, '-w', '-X', '-A', '-t', '-c', 'SELECT current_user'],
      { env, timeout: 10_000 },
      (err, stdout, stderr) => resolve(err ? `failed: ${stderr.trim()}` : stdout.trim()),
    );
  });
}

const grantFor = (as: string, credential: string): Grant => ({ as, credential, values: {}, consumer: { node: 'n1', module: as, local: null } });

test('a role set with a non-ASCII credential of every kind logs in through libpq and node-postgres; a wrong one does not', async () => {
  const a = adapter!;
  for (const [as, credential] of Object.entries(ACCEPTED)) {
    handed.push(credential);
    const served = await a.create(grantFor(as, credential));
    assert.is(await psqlLogin(as, credential, as), as, `psql as ${as} (${JSON.stringify(credential)})`);
    assert.is(await a.check(grantFor(as, credential), served), true, `node-postgres as ${as}`);
  }
  assert.match(await psqlLogin('c_nfc', 'passwörd-ключ-密码', 'c_nfc'), /failed: .*password authentication failed/);
});

test('a credential no verifier serves every client with (a NUL, a lone surrogate, one failing SASLprep that drivers would normalize) is refused, quoting nothing of it, and nothing is made', async () => {
  const a = adapter!;
  const refused: [string, string, RegExp][] = [
    ['c_surrogate', 'lone-\ud800-surrogate', /lone surrogate/],
    ['c_nul', 'nul-\u0000-inside-pw', /NUL/],
    ['c_mixed', 'ｆｕｌｌ\u0080width-prohibited', /fails SASLprep.*drivers that only map and normalize/],
  ];
  for (const [as, credential, reason] of refused) {
    const err = await a.create(grantFor(as, credential)).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof Refused, `${as}: expected Refused, got ${String(err)}`);
    assert.match(err.message, reason, as);
    assert.not.ok(err.message.includes(credential.slice(0, 8)), `${as}: the reason quotes the credential`);
    assert.is((await admin!.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [as])).rowCount, 0, `${as} was made`);
  }
});

test("the SASLprep tables are what the generator makes from Python's stringprep (Unicode 3.2)", () => {
  const dir = join(ROOT, 'examples', 'postgres-provider');
  const generated = execFileSync('python3', [join(dir, 'saslprep-tables.py')], { encoding: 'utf8' });
  assert.ok(generated === readFileSync(join(dir, 'saslprep-tables.ts'), 'utf8'), 'saslprep-tables.ts differs from `python3 saslprep-tables.py`');
});

test("no credential the adapter set, ASCII or not, reaches the server's log, where every statement is", async () => {
  const a = adapter!;
  for (let i = 0; i < 5; i++) {
    const credential = randomBytes(18).toString('base64url');
    handed.push(credential);
    await a.create(grantFor(`c_ascii${i}`, credential));
    await a.create(grantFor(`c_ascii${i}`, credential));
  }
  const log = readFileSync(server!.logPath, 'utf8');
  assert.match(log, /statement: (CREATE|ALTER) ROLE "c_nfc"/, 'statements are logged');
  assert.ok(handed.length >= Object.keys(ACCEPTED).length + 5);
  for (const credential of handed) assert.not.ok(log.includes(credential), `a credential is in the server log: ${JSON.stringify(credential)}`);
  assert.match(log, /statement: CREATE ROLE "c_nfc" LOGIN PASSWORD 'SCRAM-SHA-256\$4096:/, 'a non-ASCII credential went as a verifier');
  assert.match(log, /statement: ALTER ROLE "c_ascii0" WITH LOGIN PASSWORD 'SCRAM-SHA-256\$4096:/);
});

test.run();
