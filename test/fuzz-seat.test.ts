// Property tests of what the seat reads (DESIGN §3): whatever arrives as an assignment, a
// composition or a verb request, nothing throws, every refusal is a reason, and the good still compose.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { posix } from 'node:path';
import fc from 'fast-check';
import type { NatsConnection } from '@nats-io/transport-node';
import { isInboxSubject } from '../src/shared/bus/inbox.ts';
import { encodeToken, segmentNameProblem } from '../src/shared/contract/keys.ts';
import { MAX_PLAN_BYTES, MAX_SUBJECT_BYTES, MAX_TOKEN_BYTES } from '../src/shared/contract/limits.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { AssignmentSchema } from '../src/shared/contract/assignment.ts';
import { CompositionSchema } from '../src/shared/contract/composition.ts';
import { decodeJson, validate } from '../src/shared/contract/decode.ts';
import { pathProblem } from '../src/shared/contract/fields.ts';
import { PlanSchema } from '../src/shared/contract/plan.ts';
import { VERB_WHATS, VerbRequestSchema, type Health } from '../src/shared/contract/verb.ts';
import { Composer } from '../src/server/seat/composer.ts';
import { answerProvisioning } from '../src/server/verb/serve.ts';
import { MAX_REQUEST_BYTES, parseVerbRequest, watchFilter } from '../src/server/verb/request.ts';
import { assignment, composition, compositionWithValues, nestedJson } from './helpers/seat.ts';

const enc = (text: string) => new TextEncoder().encode(text);
const json = (value: unknown) => enc(JSON.stringify(value));

/** Runs a property `runs` times, then says how many cases ran and what they reached. */
async function fuzz<Ts>(what: string, runs: number, property: fc.IRawProperty<Ts>, reached: () => string = () => ''): Promise<void> {
  let ran = 0;
  await fc.assert(property, {
    numRuns: runs,
    reporter: (details) => {
      ran = details.numRuns;
      if (details.failed) throw new Error(fc.defaultReportMessage(details) ?? `${what} failed`);
    },
  });
  const extra = reached();
  console.log(`fuzz: ${what}: ${ran} cases${extra ? ` (${extra})` : ''}`);
}

// What a hostile or broken writer may put anywhere: any JSON, any bytes, any text, nesting far past
// the limit (bare and inside an otherwise good value), and a value past the size limit.
const OVERSIZED = json({ module: 'web', build: '1', pad: 'x'.repeat(MAX_PLAN_BYTES) });
const deep = fc.integer({ min: 65, max: 20_000 }).map((depth) => enc(nestedJson(depth)));
const deepInside = fc.integer({ min: 65, max: 5_000 }).map((depth) => enc(compositionWithValues('a', nestedJson(depth))));
const garbage = fc.oneof(
  fc.jsonValue().map(json),
  fc.uint8Array({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }).map(enc),
  deep,
  deepInside,
  fc.constant(OVERSIZED),
);

// Values near the contract, so that the composition itself (placement, paths, names) is exercised.
const pathPart = fc.oneof(
  fc.constantFrom(
    '/',
    '..',
    '.',
    '//',
    '${dir:config}',
    '${dir:x}',
    '${port:http}',
    '${seat:a}',
    '${dir:__proto__}',
    '${config:a}',
    '$${',
    '\n',
    '\0',
    'web.conf',
  ),
  fc.string({ maxLength: 8 }),
);
const goodPath = fc.constantFrom('${dir:config}/a.conf', '/etc/a/${port:http}.conf', '${dir:config}');
const path = fc.oneof({ arbitrary: goodPath, weight: 6 }, { arbitrary: fc.array(pathPart, { maxLength: 6 }).map((parts) => parts.join('')), weight: 1 });
const hostileName = fc.oneof(
  fc.constantFrom(
    'a}b',
    'a b',
    '-x',
    'x'.repeat(256),
    ':'.repeat(90),
    '',
    '../victim/api-key',
    '..',
    '.',
    'db.main:password',
    'ü',
    'a/b',
    '../../../../../module/victim/api-key',
  ),
  fc.string({ maxLength: 12 }),
);
const secretName = fc.oneof({ arbitrary: fc.constantFrom('api-key', 'db_main', 'A1'), weight: 8 }, { arbitrary: hostileName, weight: 1 });
const ARCHIVE = composition('a').archive;
const plausibleComposition = fc.record(
  {
    module: fc.constantFrom('a', 'b'),
    build: fc.string({ minLength: 1, maxLength: 5 }),
    published: fc.constantFrom(true, true, true, false),
    archive: fc.constantFrom(ARCHIVE, ARCHIVE, ARCHIVE, undefined),
    provisioning: fc.record(
      {
        files: fc.array(fc.record({ path, template: fc.string({ minLength: 1, maxLength: 5 }) }), { maxLength: 3 }),
        secrets: fc.uniqueArray(fc.record({ name: secretName, path }, { requiredKeys: ['name'] }), { maxLength: 3, selector: (x) => x.name }),
        provisions: fc.array(
          fc.record(
            {
              provider: fc.constantFrom('postgres', 'postgres', 'postgres', 'Bad'),
              provision: secretName,
              local: secretName,
              name: fc.oneof({ arbitrary: fc.constant('db-password'), weight: 8 }, { arbitrary: hostileName, weight: 1 }),
              node: fc.constantFrom('db1', 'db1', 'db1', 'x y'),
            },
            { requiredKeys: ['provider', 'provision'] },
          ),
          { maxLength: 1 },
        ),
        items: fc.array(fc.record({ collection: secretName, template: fc.constant('t') }), { maxLength: 2 }),
        collections: fc.array(fc.record({ name: secretName }), { maxLength: 2 }),
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: ['module', 'build', 'published'] },
);
const plausibleAssignment = fc.record({
  node: fc.constantFrom('n1', 'n2'),
  module: fc.constantFrom('a', 'b'),
  placement: fc.record(
    {
      dir: fc.oneof(fc.constant({ config: '/etc/a' }), fc.dictionary(fc.constantFrom('config', 'x', '__proto__'), fc.oneof(path, fc.integer()))),
      port: fc.oneof(fc.constant({ http: 8080 }), fc.dictionary(fc.constantFrom('http', 'x'), fc.oneof(fc.integer(), fc.string({ maxLength: 4 })))),
    },
    { requiredKeys: [] },
  ),
});

/** The key a value belongs under, now and then another. */
const mostly = (key: string, other: string) => fc.oneof({ arbitrary: fc.constant(key), weight: 6 }, { arbitrary: fc.constant(other), weight: 1 });
const anyKey = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('n1.a', 'n2.b', 'a', 'b', 'N1.a', 'n1.a.b', ''));
const notTheGoodOnes = (key: string) => key !== 'n1.web' && key !== 'web';
const assignmentEntry = fc
  .oneof(
    fc.tuple(anyKey, garbage),
    plausibleAssignment.chain((a) => fc.tuple(mostly(`${a.node}.${a.module}`, 'n1.a'), fc.constant(json(a)))),
    plausibleAssignment.chain((a) => fc.tuple(mostly(`${a.node}.${a.module}`, 'n1.a'), fc.constant(json(a)))),
  )
  .filter(([key]) => notTheGoodOnes(key));
const moduleEntry = fc
  .oneof(
    fc.tuple(anyKey, garbage),
    plausibleComposition.chain((c) => fc.tuple(mostly(c.module, 'a'), fc.constant(json(c)))),
    plausibleComposition.chain((c) => fc.tuple(mostly(c.module, 'a'), fc.constant(json(c)))),
  )
  .filter(([key]) => notTheGoodOnes(key));

// A composition and an assignment of it under their own keys: the composition itself is what varies.
const plausiblePair = fc
  .tuple(plausibleComposition, plausibleAssignment, fc.constantFrom('n1', 'n2'))
  .map(([c, a, node]) => ({ module: c.module, composition: json(c), key: `${node}.${c.module}`, assignment: json({ ...a, node, module: c.module }) }));

test('the composer over arbitrary assignments and compositions never throws, composes the good pair, and writes only plans the client accepts', async () => {
  let plans = 0;
  let refusals = 0;
  await fuzz(
    'composer over arbitrary inputs',
    2000,
    fc.asyncProperty(
      fc.array(assignmentEntry, { maxLength: 6 }),
      fc.array(moduleEntry, { maxLength: 6 }),
      fc.array(plausiblePair, { maxLength: 2 }),
      async (assignments, modules, pairs) => {
        const written = new Map<string, Uint8Array>();
        const lines: Health[] = [];
        const log = memoryLogger();
        const composer = new Composer(
          {
            putPlan: async (key, value) => void written.set(key, value),
            deletePlan: async (key) => void written.delete(key),
            health: (line) => void lines.push(line),
          },
          log,
        );
        for (const [key, bytes] of assignments) composer.update('assignments', key, bytes);
        for (const [key, bytes] of modules) composer.update('modules', key, bytes);
        for (const pair of pairs) {
          composer.update('modules', pair.module, pair.composition);
          composer.update('assignments', pair.key, pair.assignment);
        }
        composer.update('assignments', 'n1.web', json(assignment('n1', 'web')));
        composer.update('modules', 'web', json(composition('web')));
        for (const input of ['assignments', 'modules', 'plans'] as const) composer.loaded(input);
        await composer.idle();
        assert.ok(written.has('n1.web'), 'the good pair has no plan');
        for (const [key, bytes] of written) {
          const plan = decodeJson(PlanSchema, bytes);
          assert.ok(plan.ok, `plan ${key} is refused by PlanSchema: ${plan.ok ? '' : plan.reason}`);
        }
        // One pass: a key's plan is written, or it is held or failed in the verb's health, never both.
        const book = composer.healthBook;
        for (const key of book.keys()) {
          const entry = book.entry(key)!;
          assert.is(key, `${entry.node}.${entry.module}`);
          assert.not.ok(written.has(key), `plan ${key} written and said ${entry.state}: ${entry.reason}`);
        }
        const broken = log.lines.find((l) => /internal error|ended early/.test(l));
        assert.is(broken, undefined, broken);
        for (const line of lines) assert.ok(line.reason.length < 4096, `a health line of ${line.reason.length} characters`);
        plans += written.size - 1;
        refusals += lines.length;
      },
    ),
    () => `${plans} other plans written, ${refusals} health lines`,
  );
});

// A bus that fails every call: the verb must still answer with {error}, never throw.
const NO_BUS = new Proxy(
  {},
  {
    get: () => {
      throw new Error('no bus');
    },
  },
) as NatsConnection;
const often = <T>(good: fc.Arbitrary<T>, other: fc.Arbitrary<T>) => fc.oneof({ arbitrary: good, weight: 6 }, { arbitrary: other, weight: 1 });
const fields = {
  node: often(fc.constantFrom('n1', 'n'.repeat(63)), fc.string({ maxLength: 70 })),
  module: often(fc.constant('web'), fc.string({ maxLength: 70 })),
  contributor: often(fc.constant('web'), fc.string({ maxLength: 70 })),
  collection: often(
    fc.oneof(fc.string({ unit: 'binary', maxLength: 60 }), fc.constantFrom(':'.repeat(85), 'c'.repeat(255))),
    fc.string({ minLength: 250, maxLength: 5000 }),
  ),
  limit: often(fc.integer({ min: 1 }), fc.oneof(fc.integer(), fc.double(), fc.string({ maxLength: 3 }))),
  after: often(fc.string({ maxLength: 20 }), fc.string({ minLength: 1000, maxLength: 3000 })),
};
const NARROWING = {
  registry: [],
  needs: ['node', 'module'],
  applied: ['node', 'module'],
  collect: ['node', 'collection', 'contributor'],
  health: ['node', 'module'],
  alive: ['node'],
} as const;
const requestish = fc.oneof(
  // Mostly the fields a what takes, so that the bounds on each are reached.
  fc.constantFrom(...VERB_WHATS).chain((what) => {
    const { node, module, collection, contributor, limit, after } = fields;
    const all = { node, module, collection, contributor };
    const narrowing = Object.fromEntries(NARROWING[what].map((field) => [field, all[field]]));
    return fc.record({ what: fc.constant(what), ...narrowing, limit, after }, { requiredKeys: ['what'] });
  }),
  fc.record({ what: fc.string({ maxLength: 10 }), ...fields, extra: fc.jsonValue() }, { requiredKeys: [] }),
);
const body = fc.oneof(
  requestish.map(json),
  requestish.map(json),
  fc.jsonValue().map(json),
  fc.uint8Array({ maxLength: 300 }),
  fc.string({ unit: 'binary', maxLength: 300 }).map(enc),
  deep,
  fc.integer({ min: 65, max: 5000 }).map((depth) => enc(`{"what":"needs","node":${nestedJson(depth)}}`)),
  fc.constant(json({ what: 'needs', pad: ' '.repeat(MAX_REQUEST_BYTES) })),
);

test('verb request parsing over arbitrary bytes never throws: a request within every bound, or an {error} reason', async () => {
  let accepted = 0;
  await fuzz(
    'verb request parsing over arbitrary bodies',
    5000,
    fc.asyncProperty(body, async (bytes) => {
      const parsed = parseVerbRequest(bytes);
      if (parsed.ok) {
        accepted++;
        assert.ok(validate(VerbRequestSchema, parsed.value).ok);
        const request = parsed.value;
        const filter = request.what === 'health' || request.what === 'alive' ? undefined : watchFilter({ ...request, what: request.what });
        if (filter) assert.ok(filter.ok && Buffer.byteLength(filter.value) <= MAX_SUBJECT_BYTES, JSON.stringify(filter));
        const collection = parsed.value.collection;
        if (collection !== undefined) assert.ok(encodeToken(collection).length <= MAX_TOKEN_BYTES);
      } else {
        assert.type(parsed.reason, 'string');
        assert.ok(parsed.reason.length > 0 && parsed.reason.length < 2000, `a reason of ${parsed.reason.length} characters`);
      }
      const reply = await answerProvisioning(NO_BUS, bytes, 1024 * 1024);
      assert.type((reply as { error?: unknown }).error, 'string');
    }),
    () => `${accepted} accepted, the rest refused`,
  );
});

const SCHEMAS = { Assignment: AssignmentSchema, Composition: CompositionSchema, Plan: PlanSchema, VerbRequest: VerbRequestSchema };
const OVERSIZED_TEXT = JSON.stringify({ node: 'n1', pad: 'x'.repeat(MAX_PLAN_BYTES) });
const hostileText = fc.oneof(
  fc.integer({ min: 65, max: 20_000 }).map((depth) => ({ text: nestedJson(depth), refused: /nested deeper than 64 levels/ })),
  fc
    .integer({ min: 65, max: 5_000 })
    .map((depth) => ({ text: `{"node":"n1","module":"a","placement":{"dir":${nestedJson(depth)}}}`, refused: /nested deeper than 64 levels/ })),
  fc.integer({ min: 65, max: 5_000 }).map((depth) => ({ text: compositionWithValues('a', nestedJson(depth)), refused: /nested deeper than 64 levels/ })),
  fc.constant({ text: OVERSIZED_TEXT, refused: /past the limit of 1048576 bytes/ }),
);

test('every schema over arbitrary, nested and oversized input returns a value or a reason, never throws; past a bound it is always a reason', async () => {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    await fuzz(
      `${name}Schema over arbitrary JSON and text`,
      300,
      fc.property(
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc.string({ unit: 'binary', maxLength: 200 }),
        ),
        (text) => {
          const decoded = decodeJson(schema, text);
          assert.ok(decoded.ok || (typeof decoded.reason === 'string' && decoded.reason !== ''));
        },
      ),
    );
    await fuzz(
      `${name}Schema over arbitrary bytes`,
      300,
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const decoded = decodeJson(schema, bytes);
        assert.ok(decoded.ok || decoded.reason !== '');
      }),
    );
    await fuzz(
      `${name}Schema over nested and oversized input`,
      100,
      fc.property(hostileText, ({ text, refused }) => {
        const decoded = decodeJson(schema, text);
        assert.not.ok(decoded.ok);
        assert.match((decoded as { reason: string }).reason, refused);
      }),
    );
    await fuzz(
      `${name}Schema validating arbitrary values`,
      300,
      fc.property(fc.jsonValue(), (value) => {
        const checked = validate(schema, value);
        assert.ok(checked.ok || checked.reason !== '');
      }),
    );
  }
});

test('the pure checks agree with their definitions over arbitrary text', async () => {
  const runs = 2000;
  await fuzz(
    'pathProblem against posix.normalize',
    runs,
    fc.property(
      fc.oneof(
        fc.string({ unit: 'binary', maxLength: 30 }),
        fc.array(pathPart, { maxLength: 6 }).map((p) => '/' + p.join('')),
      ),
      (text) => {
        const normal = text.startsWith('/') && !/[\0\n\r]/.test(text) && !text.endsWith('/') && posix.normalize(text) === text;
        assert.is(pathProblem(text) === undefined, normal, JSON.stringify(text));
      },
    ),
  );
  await fuzz(
    'segmentNameProblem: nothing with /, . or a character outside the class; every name of the class',
    runs,
    fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), secretName), (text) => {
      const accepted = segmentNameProblem(text) === undefined;
      if (/[^A-Za-z0-9_-]/.test(text) || text === '' || text.length > 128 || /^[_-]/.test(text)) assert.not.ok(accepted, JSON.stringify(text));
      else assert.ok(accepted, JSON.stringify(text));
      // A name of the grammar stands for itself as a key token and as a vault name's segment.
      if (accepted) assert.is(encodeToken(text), text);
    }),
  );
  const token = fc.string({ minLength: 1, maxLength: 8 }).filter((t) => /^[^\s.*>]+$/.test(t));
  await fuzz(
    'isInboxSubject',
    runs,
    fc.property(
      fc.oneof(
        fc.string({ maxLength: 40 }),
        fc
          .tuple(
            fc.constantFrom(
              '_INBOX',
              '_INBOX_node_n1',
              '_INBOX_runner_n1',
              '_INBOX_provider_pg',
              '_INBOX_seat',
              '_INBOX_admin',
              '_INBOX_vault',
              '_R_',
              '$KV',
              '$JS',
              '_INBOX_node_N1',
              '_INBOX_n1',
              '_INBOX_node_',
            ),
            fc.array(token, { minLength: 1, maxLength: 3 }),
          )
          .map(([h, t]) => [h, ...t].join('.')),
      ),
      (subject) => {
        const inbox = isInboxSubject(subject);
        if (subject.startsWith('$') || !subject.startsWith('_')) assert.not.ok(inbox, subject);
        if (/^(_INBOX|_INBOX_(node|runner|provider)_n1|_INBOX_provider_pg|_INBOX_(seat|admin|vault)|_R_)(\.[^\s.*>]+)+$/.test(subject))
          assert.ok(inbox, subject);
        if (/^(_INBOX_node_N1|_INBOX_n1|_INBOX_node_)\./.test(subject)) assert.not.ok(inbox, subject);
      },
    ),
  );
});

test.run();
