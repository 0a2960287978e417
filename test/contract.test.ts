// The contract shipped as docs/design.md is the project's contract (../shared/DESIGN.md) word for
// word, so an operator with the repository or the release reads what the programs implement.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helpers/bundle.ts';

const SHIPPED = join(ROOT, 'docs', 'design.md');
const SOURCE = join(ROOT, '..', 'shared', 'DESIGN.md');

test('docs/design.md holds the contract after its one comment line', () => {
  const shipped = readFileSync(SHIPPED, 'utf8');
  assert.match(shipped, /^<!-- [^\n]* -->\n\n# mesh-provisioner — design and bus contract\n/);
  if (!existsSync(SOURCE)) return void console.log('# SKIPPED the comparison: ../shared/DESIGN.md is not beside this checkout (CI)');
  assert.is(shipped.slice(shipped.indexOf('\n\n') + 2), readFileSync(SOURCE, 'utf8'), 'docs/design.md differs from ../shared/DESIGN.md: copy it again');
});

test.run();
