// Runs every test/*.test.ts suite in its own process and closes with one line: N passed, N failed.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const suites = readdirSync(here)
  .filter((f) => f.endsWith('.test.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

let passed = 0;
let failed = 0;
const broken = [];
for (const suite of suites) {
  const started = Date.now();
  const out = await new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, suite)], {
      env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let text = '';
    child.stdout.on('data', (d) => { text += d; process.stdout.write(d); });
    child.on('exit', (code) => resolve({ text, code }));
  });
  const total = Number(/Total:\s+(\d+)/.exec(out.text)?.[1] ?? NaN);
  const ok = Number(/Passed:\s+(\d+)/.exec(out.text)?.[1] ?? NaN);
  const skipped = Number(/Skipped:\s+(\d+)/.exec(out.text)?.[1] ?? 0);
  if (Number.isNaN(total) || Number.isNaN(ok)) {
    failed += 1;
    broken.push(`${suite}: no uvu summary (exit ${out.code})`);
  } else {
    passed += ok;
    failed += total - ok - skipped;
    if (out.code !== 0 || total - ok - skipped > 0) broken.push(`${suite}: ${total - ok - skipped} failed (exit ${out.code})`);
  }
  console.log(`# ${suite}: ${Math.round((Date.now() - started) / 100) / 10}s`);
}
for (const line of broken) console.log(`# FAILED ${line}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
