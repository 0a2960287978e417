// The contract shipped as docs/design.md is the project's contract (../shared/DESIGN.md) word for
// word, so an operator with the repository or the release reads what the programs implement.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helpers/bundle.ts';

const SHIPPED = join(ROOT, 'docs', 'design.md');
const SOURCE = join(ROOT, '..', 'shared', 'DESIGN.md');

test('docs/design.md is the contract after its one comment line', () => {
  assert.match(readFileSync(SHIPPED, 'utf8'), /^<!-- [^\n]* -->\n\n# mesh-provisioner — design and bus contract\n/);
});

// Without ../shared/ beside the checkout (a clone alone) there is nothing to compare with: counted skipped, not passed.
const compare = existsSync(SOURCE) ? test : test.skip;
compare('docs/design.md holds ../shared/DESIGN.md word for word', () => {
  const shipped = readFileSync(SHIPPED, 'utf8');
  assert.is(shipped.slice(shipped.indexOf('\n\n') + 2), readFileSync(SOURCE, 'utf8'), 'docs/design.md differs from ../shared/DESIGN.md: copy it again');
});

test.run();
