// Property-based tests (fast-check) of both ends of the fill socket under hostile lines (DESIGN §3, §9):
// the engine's line handler never throws and always answers in shape, the client resolves only a
// reply that confirms exactly what it sent, and a managed block never holds its own markers.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import * as v from 'valibot';
import { handleLine, type Applier } from '../src/engine/handle.ts';
import { blockMarkers, spliceBlock } from '../src/engine/managed.ts';
import {
  confirmReply,
  contentDigest,
  FillContentSchema,
  FillReplySchema,
  FillRequestSchema,
  judgeReplyLine,
  unconfirmedPaths,
  unconfirmedReason,
  type FillContent,
  type FillReply,
} from '../src/shared/contract/fill-protocol.ts';
import { MAX_ENGINE_LINE_BYTES } from '../src/shared/contract/limits.ts';
import { SEED } from './helpers/random.ts';

const RUNS = Number(process.env['MESH_FUZZ_RUNS'] ?? 1000);
let total = 0;

/** What the cases of the property being checked reached, printed with their count (so a property that never reaches its point shows). */
const seen = new Map<string, number>();
function saw(outcome: string): void {
  seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
}

function report(name: string, runs: number): void {
  total += runs;
  const outcomes = [...seen].map(([k, n]) => `${n} ${k}`).join(', ');
  console.log(`fuzz: ${name}: ${runs} cases${outcomes ? ` (${outcomes})` : ''}`);
  seen.clear();
}

/** Runs a property with the suite's seed and counts its cases. */
function check<T>(name: string, arb: fc.Arbitrary<T>, predicate: (value: T) => boolean | void, runs = RUNS): void {
  fc.assert(fc.property(arb, predicate), { seed: SEED, numRuns: runs });
  report(name, runs);
}

/** The async form of check. */
async function checkAsync<T>(name: string, arb: fc.Arbitrary<T>, predicate: (value: T) => Promise<boolean | void>, runs = RUNS): Promise<void> {
  await fc.assert(fc.asyncProperty(arb, predicate), { seed: SEED, numRuns: runs });
  report(name, runs);
}

const hostileText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc
    .array(fc.constantFrom('${secret:k}', '$${', '\uD800', '\0', '\n', '\r', '"', '\\', '{', '[', ']', '}', 'a', '/etc/x'), { maxLength: 20 })
    .map((p) => p.join('')),
);
/** Mostly `good`, now and then `bad`: so valid requests reach the applier often and every field is also wrong. */
function mostly<T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>): fc.Arbitrary<T | U> {
  return fc.oneof({ arbitrary: good, weight: 6 }, { arbitrary: bad, weight: 1 });
}
const secretName = mostly(
  fc.constantFrom('k', 'api-key', 'db.main:pw', '__proto__', 'constructor'),
  fc.oneof(fc.constantFrom('-x', '', 'a b'), fc.string({ maxLength: 6 })),
);
const content: fc.Arbitrary<unknown> = mostly(
  fc.oneof(
    hostileText,
    fc.array(
      fc.oneof(
        hostileText,
        secretName.map((secret) => ({ secret })),
      ),
      { maxLength: 5 },
    ),
  ),
  fc.oneof(
    fc.array(fc.oneof(fc.record({ secret: secretName, extra: fc.anything() }), fc.integer(), fc.constant(null)), { maxLength: 3 }),
    fc.anything({ maxDepth: 3 }),
  ),
);
const fileLike = fc
  .record(
    {
      path: mostly(fc.constantFrom('/etc/a.conf', '/etc/b.conf', 'rel/x'), fc.oneof(fc.constantFrom('', '/x\n'), hostileText)),
      content,
      digest: mostly(fc.constant(undefined), fc.constantFrom('sha256:' + '0'.repeat(64), 'md5:x')),
      mode: mostly(fc.constantFrom('owned', 'seed', 'managed'), fc.constant('bogus')),
      change: mostly(fc.constantFrom('restart', 'reload', 'none'), fc.constant('later')),
      fileMode: fc.option(mostly(fc.constantFrom('0640', '600'), fc.constantFrom('0999', 'rw')), { nil: undefined }),
    },
    { requiredKeys: ['path', 'content', 'mode', 'change'] },
  )
  .map((f) => ({
    ...f,
    // Most files carry their true digest, so a valid request reaches the applier.
    digest: f.digest ?? (isContent(f.content) ? contentDigest(f.content) : 'sha256:x'),
  }));
const requestLike = fc.record(
  {
    id: mostly(fc.nat(), fc.oneof(fc.constantFrom(-1, 1.5), fc.string({ maxLength: 3 }))),
    op: mostly(fc.constant('fill'), fc.constant('drop')),
    module: mostly(fc.constantFrom('web', 'db'), fc.constantFrom('Web', '', 'a'.repeat(70))),
    build: mostly(fc.constant('b1'), fc.constant('')),
    files: fc.array(fileLike, { maxLength: 3 }),
    secrets: fc.option(fc.dictionary(secretName, mostly(fc.constant('module/web/k'), fc.constant(''))), { nil: undefined }),
  },
  { requiredKeys: ['id', 'op', 'module', 'build', 'files'] },
);

// A line: a request-like value, encoded and then perhaps cut, padded or nested past the depth limit.
const requestLine = fc.oneof(
  { arbitrary: requestLike.map((r) => JSON.stringify(r)), weight: 4 },
  fc.tuple(requestLike, fc.nat()).map(([r, cut]) => {
    const s = JSON.stringify(r);
    return s.slice(0, cut % (s.length + 1));
  }),
  fc.jsonValue().map((j) => JSON.stringify(j)),
  fc.nat({ max: 5000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  hostileText,
);

function isContent(value: unknown): value is FillContent {
  return v.is(FillContentSchema, value);
}

test("the engine's line handler never throws, and answers ok:false or one result per file of a valid request", async () => {
  const applierOutcome = mostly(fc.constant('apply' as const), fc.anything({ maxDepth: 1 }));
  await checkAsync(
    'handleLine answers every line in shape',
    fc.tuple(requestLine, applierOutcome),
    async ([line, outcome]) => {
      const apply: Applier = async (req) => {
        if (outcome !== 'apply') throw outcome;
        return req.files.map((f) => ({ path: f.path, action: 'written' as const }));
      };
      const reply = await handleLine(line, apply);
      assert.ok(v.is(FillReplySchema, reply), JSON.stringify(reply));
      saw(reply.ok ? 'applied' : reply.id === null ? 'refused without an id' : 'refused with the id');
      if (!reply.ok) return;
      const req = v.parse(FillRequestSchema, JSON.parse(line));
      assert.is(outcome, 'apply');
      assert.is(reply.id, req.id);
      assert.equal(
        reply.files.map((f) => f.path),
        req.files.map((f) => f.path),
      );
    },
    RUNS * 3,
  );
});

const sentPaths = fc.array(fc.constantFrom('/etc/a', '/etc/b', '/etc/c', '/etc/a b', '/etc/ä'), { maxLength: 4 });
const action = fc.constantFrom('written', 'unchanged', 'kept', 'refused', 'deleted', 7);
// A reply built from what was sent, then mangled: files dropped, doubled, replaced or added; a wrong id; junk.
const replyFor = (sent: string[]) =>
  fc.oneof(
    fc
      .record(
        {
          id: fc.constantFrom(1, 1, 1, 2, '1', null),
          ok: fc.constantFrom(true, true, false, 'yes'),
          files: fc
            .oneof(
              fc.shuffledSubarray(sent).chain((kept) => fc.array(fc.constantFrom(...kept, '/etc/shadow', '/etc/a'), { maxLength: 6 })),
              fc.constant(sent),
              fc.shuffledSubarray(sent),
            )
            .chain((paths) =>
              fc.tuple(
                ...paths.map((path) =>
                  fc.record({ path: fc.constant(path), action, reason: fc.option(fc.string(), { nil: undefined }) }, { requiredKeys: ['path', 'action'] }),
                ),
              ),
            ),
          error: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
        },
        { requiredKeys: ['id', 'ok'] },
      )
      .map((r) => JSON.stringify(r)),
    fc.jsonValue().map((j) => JSON.stringify(j)),
    hostileText,
  );

/** Whether `named` takes no path more often than `sent` holds it (a sub-multiset). */
function within(named: readonly string[], sent: readonly string[]): boolean {
  const left = new Map<string, number>();
  for (const p of sent) left.set(p, (left.get(p) ?? 0) + 1);
  return named.every((p) => {
    const n = left.get(p) ?? 0;
    left.set(p, n - 1);
    return n > 0;
  });
}

test('the client resolves a reply naming only files sent, each at most as often as sent; what it leaves out is listed; nothing throws', () => {
  const cases = sentPaths.chain((sent) => fc.tuple(fc.constant(sent), replyFor(sent)));
  check(
    'judgeReplyLine resolves only what was sent',
    cases,
    ([sent, line]) => {
      const verdict = judgeReplyLine(line, (id) => (id === 1 ? sent : undefined), MAX_ENGINE_LINE_BYTES);
      saw(
        verdict.kind === 'resolved'
          ? verdict.reply.ok
            ? unconfirmedPaths(verdict.reply, sent).length > 0
              ? 'partial'
              : 'confirmed'
            : 'ok:false'
          : verdict.kind,
      );
      if (verdict.kind !== 'resolved') {
        if (verdict.kind === 'broken') assert.is(verdict.id, 1);
        return;
      }
      assert.is(verdict.id, 1);
      if (!verdict.reply.ok) return;
      const named = verdict.reply.files.map((f) => f.path);
      assert.ok(within(named, sent), `${named} within ${sent}`);
      assert.equal([...named, ...unconfirmedPaths(verdict.reply, sent)].sort(), [...sent].sort(), 'named and unconfirmed together are what was sent');
    },
    RUNS * 5,
  );
});

test('confirmReply passes a reply naming sent paths in any order, some left out, and names the path it was not sent otherwise', () => {
  const cases = sentPaths.chain((sent) =>
    fc.tuple(fc.constant(sent), fc.shuffledSubarray(sent), fc.array(fc.constantFrom('/etc/a', '/etc/z'), { maxLength: 2 })),
  );
  check('confirmReply over kept and added paths', cases, ([sent, kept, added]) => {
    const paths = [...kept, ...added];
    const reply: FillReply = { id: 1, ok: true, files: paths.map((path) => ({ path, action: 'written' })) };
    const confirmed = confirmReply(reply, sent);
    const fits = within(paths, sent);
    saw(fits ? (paths.length === sent.length ? 'exact' : 'some left out') : 'not sent');
    assert.is(confirmed.ok, fits);
    if (confirmed.ok) {
      const missing = unconfirmedPaths(reply, sent);
      assert.is(missing.length, sent.length - paths.length);
      if (missing.length > 0) assert.match(unconfirmedReason(missing), /^engine did not confirm \//);
      return;
    }
    assert.match(confirmed.reason, /^engine (replied for|named) /);
  });
});

// Lines rich in what a splice reads: markers of this module and others, near misses, CRs.
const markerish = fc.constantFrom(
  '# BEGIN web',
  '# END web',
  '# END web\r',
  '# BEGIN web\r',
  '# BEGIN db',
  '# END db',
  '; BEGIN web',
  '; END web',
  ' # END web',
  '# END web ',
  '# END web\r\r',
  '# END web.x',
  '#BEGIN web',
  'x',
  '',
  '\r',
);
const textLines = fc.array(fc.oneof(markerish, fc.string({ maxLength: 6 })), { maxLength: 8 }).map((l) => l.join('\n'));

/** The lines of a text as a splice reads them: split at \n, one trailing CR dropped. */
function readLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
}

test("a managed splice never makes a file whose module block holds its own marker line, and keeps the block's content whole", () => {
  const cases = fc.tuple(fc.option(textLines, { nil: undefined }), textLines, fc.constantFrom('#', ';'), fc.constantFrom('web', 'db'));
  check(
    'spliceBlock keeps markers out of the block',
    cases,
    ([existing, content, comment, module]) => {
      const spliced = spliceBlock(existing, module, comment, content);
      saw(spliced.ok ? 'spliced' : /holds the line/.test(spliced.reason) ? 'refused for a marker' : 'refused otherwise');
      if (!spliced.ok) return;
      const { begin, end } = blockMarkers(comment, module);
      const lines = readLines(spliced.value);
      const first = lines.indexOf(begin);
      assert.ok(first >= 0, 'the block is there');
      const last = lines.indexOf(end, first + 1);
      assert.ok(last > first, 'the block is closed');
      const inside = lines.slice(first + 1, last);
      assert.not.ok(inside.includes(begin) || inside.includes(end), 'a marker inside the block');
      const body = content === '' || content.endsWith('\n') ? content : content + '\n';
      assert.equal(inside, readLines(body));
    },
    RUNS * 5,
  );
});

test.after(() => console.log(`fuzz: ${total} cases in all`));

test.run();
