// A composition is read strictly (issue 20 item 6, DESIGN §4, §12): a field no schema knows, at any
// depth, is out of shape and named by its path with the nearest known name; `rollout` is validated
// as §12 says. A plan, which only the seat writes, is still read as it comes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { CompositionFileSchema, CompositionSchema } from '../src/shared/contract/composition.ts';
import { PlanSchema } from '../src/shared/contract/plan.ts';
import { validate, validateEach } from '../src/shared/contract/decode.ts';
import { wavesProblem } from '../src/shared/contract/rollout-schema.ts';
import { composition } from './helpers/seat.ts';
import { emptyPlan } from './helpers/planted.ts';
import { SEED } from './helpers/random.ts';

const reasonOf = (value: unknown) => {
  const read = validate(CompositionSchema, value);
  return read.ok ? '' : read.reason;
};
const withProvisioning = (provisioning: Record<string, unknown>) => ({ ...composition('web'), provisioning });

test('a typo anywhere in a composition is refused with its path and the field it was meant as', () => {
  const cases: [unknown, string][] = [
    [{ ...composition('web'), pubished: true }, 'field "pubished" is an unknown field; did you mean "published"?'],
    [
      { ...composition('web'), archive: { ref: 'obj://a/b', digets: 'x', digest: `sha256:${'0'.repeat(64)}` } },
      'field "archive.digets" is an unknown field; did you mean "digest"?',
    ],
    [withProvisioning({ secrest: [{ name: 'api-key' }] }), 'field "provisioning.secrest" is an unknown field; did you mean "secrets"?'],
    [withProvisioning({ files: [{ path: '/a', template: 'a', mdoe: 'seed' }] }), 'field "provisioning.files.0.mdoe" is an unknown field; did you mean "mode"?'],
    [withProvisioning({ secrets: [{ name: 'k', paht: '/k' }] }), 'field "provisioning.secrets.0.paht" is an unknown field; did you mean "path"?'],
    [
      withProvisioning({ provisions: [{ provider: 'pg', provision: 'db', lcoal: 'main' }] }),
      'field "provisioning.provisions.0.lcoal" is an unknown field; did you mean "local"?',
    ],
    [withProvisioning({ provides: [{ provisoin: 'db' }] }), 'field "provisioning.provides.0.provisoin" is an unknown field; did you mean "provision"?'],
    [
      withProvisioning({ items: [{ colection: 'c', template: 't' }] }),
      'field "provisioning.items.0.colection" is an unknown field; did you mean "collection"?',
    ],
    [withProvisioning({ collections: [{ name: 'c', coment: ';' }] }), 'field "provisioning.collections.0.coment" is an unknown field; did you mean "comment"?'],
    [{ ...composition('web'), rollout: { waves: [1], hlat: 2 } }, 'field "rollout.hlat" is an unknown field; did you mean "halt"?'],
  ];
  for (const [value, reason] of cases) assert.ok(reasonOf(value).includes(reason), `${reasonOf(value)}\nwanted: ${reason}`);
});

test('every unknown field is said, not only the first of an object; one far from every name lists the fields there', () => {
  const read = validateEach(CompositionSchema, withProvisioning({ files: [{ path: '/a', template: 'a', mdoe: 'seed', chnage: 'restart', colour: 'red' }] }));
  assert.equal(read.ok ? [] : read.reasons, [
    'field "provisioning.files.0.mdoe" is an unknown field; did you mean "mode"?',
    'field "provisioning.files.0.chnage" is an unknown field; did you mean "change"?',
    'field "provisioning.files.0.colour" is an unknown field (the fields here: path, template, owner, mode, change, fileMode, comment)',
  ]);
});

test('unknown fields are said beside the known fields’ problems; a missing field is "missing"; a mode typo gets its nearest', () => {
  const read = validateEach(CompositionSchema, {
    build: '1',
    published: true,
    extra: 1,
    provisioning: { files: [{ path: '/a', template: 'a', mode: 'sed' }] },
  });
  assert.equal(read.ok ? [] : read.reasons, [
    'field "extra" is an unknown field (the fields here: module, build, provisioning, rollout, published, archive)',
    'field "module" is missing',
    'field "provisioning.files.0.mode" is "sed", not one of owned, seed, managed; did you mean "seed"?',
  ]);
});

test('keys an object prototype knows are unknown fields too, never dropped', () => {
  for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
    const text = `{"module":"web","build":"1","published":true,"provisioning":{"files":[{"path":"/a","template":"a","${key}":{"x":1}}]}}`;
    assert.match(reasonOf(JSON.parse(text)), `field "provisioning.files.0.${key}" is an unknown field`);
  }
});

test('a composition as it should be reads as before, defaults filled; a plan with a field it does not know still reads', () => {
  const read = validate(CompositionSchema, composition('web'));
  assert.ok(read.ok && read.value.provisioning.files[0]!.mode === 'owned' && read.value.rollout === undefined);
  const plan = emptyPlan('n1', 'web', {
    archive: composition('web').archive,
    files: [{ path: '/etc/web.conf', template: 'web.conf', newer: true }],
    newer: 'a field a newer seat writes',
  });
  assert.ok(validate(PlanSchema, plan).ok);
});

test('rollout: waves strictly increasing fractions in (0, 1], the last 1; halt a whole number from 1; wait more than 0 s; defaults 1 and 600', () => {
  const valid = (waves: number[]) => waves.length > 0 && waves.every((w, i) => w > 0 && w <= 1 && (i === 0 || w > waves[i - 1]!)) && waves.at(-1) === 1;
  const fraction = fc.oneof(fc.constantFrom(0, 0.01, 0.1, 0.5, 1, 1.5, -1), fc.double({ min: -0.5, max: 1.5, noNaN: true }));
  fc.assert(
    fc.property(fc.array(fraction, { maxLength: 6 }), (waves) => {
      const read = validate(CompositionSchema, { ...composition('web'), rollout: { waves } });
      assert.is(read.ok, valid(waves), `${JSON.stringify(waves)}: ${read.ok ? 'accepted' : read.reason}`);
      assert.is(wavesProblem(waves) === undefined, valid(waves));
    }),
    { seed: SEED, numRuns: 2000 },
  );
  const rollout = (r: Record<string, unknown>) => validate(CompositionSchema, { ...composition('web'), rollout: r });
  const ok = rollout({ waves: [0.01, 0.1, 0.5, 1] });
  assert.equal(ok.ok && ok.value.rollout, { waves: [0.01, 0.1, 0.5, 1], halt: 1, wait: 600 });
  assert.equal(
    [{ waves: [1], halt: 0 }, { waves: [1], halt: 1.5 }, { waves: [1], wait: 0 }, { waves: [1], wait: '600' }, {}, { waves: [0.5, 0.5, 1] }].map((r) => {
      const read = rollout(r);
      return read.ok ? 'accepted' : read.reason;
    }),
    [
      'field "rollout.halt" must be at least 1',
      'field "rollout.halt" is not a whole number',
      'field "rollout.wait" must be more than 0 seconds',
      'field "rollout.wait" is not a number',
      'field "rollout.waves" is missing',
      'field "rollout.waves" holds 0.5 (wave 2) after 0.5: the waves must strictly increase',
    ],
  );
  assert.match(reasonOf({ ...composition('web'), rollout: { waves: [0.1, 0.5] } }), 'ends with 0.5, not 1');
});

test("publish's file: no archive, published true unless said, build optional (--build gives it); strict alike", () => {
  const read = validate(CompositionFileSchema, { module: 'web', provisioning: { files: [{ path: '/a', template: 'a' }] } });
  assert.ok(read.ok && read.value.published === true && read.value.build === undefined);
  const archived = validate(CompositionFileSchema, composition('web'));
  assert.match(archived.ok ? '' : archived.reason, 'field "archive" is an unknown field');
});

test.run();
