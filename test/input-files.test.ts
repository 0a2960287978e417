// The files a command reads (issue 31 item 8, DESIGN §3's limits): `config import FILE`, `publish`'s
// `--composition` and ARCHIVE, and every program's `--nkey`, `--creds` and `--tls-ca` take a regular
// file only — a FIFO, a device or a directory refused at once naming the path and what it is — and
// a file past its limit is refused by its size, before it is read. Run as the seat's bundle.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_LOGIN_FILE_BYTES } from '../src/shared/cli/bus-flags.ts';
import { MAX_IMPORT_BYTES } from '../src/server/commands/config/import.ts';
import { MAX_PLAN_BYTES } from '../src/shared/contract/limits.ts';
import { ensureBuilt, ROOT, runBundle } from './helpers/bundle.ts';
import { tempDir } from './helpers/temp.ts';

let dir: string;
let fifo: string;

/** A file of `bytes` bytes that takes no room: its size is what a look at it says. */
function sparse(name: string, bytes: number): string {
  const path = join(dir, name);
  const fd = openSync(path, 'w');
  closeSync(fd);
  execFileSync('truncate', ['-s', String(bytes), path]);
  return path;
}

test.before(() => {
  ensureBuilt('server');
  dir = tempDir('mesh-input-files-');
  fifo = join(dir, 'pipe');
  // A FIFO with no writer: a blocking open or read of it never returns.
  execFileSync('mkfifo', [fifo]);
  mkdirSync(join(dir, 'templates'));
  writeFileSync(join(dir, 'templates', 'web.conf'), 'level ${config:level}\n');
  writeFileSync(join(dir, 'composition.json'), JSON.stringify({ module: 'web', build: '1', provisioning: { files: [] } }));
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the seat's bundle with `args` against a port nothing listens on: every refusal here comes before the bus. */
const server = (args: string[]) => runBundle('node', ROOT, 'dist/server', [...args, '--nats', 'nats://127.0.0.1:1'], {}, 15_000);

/** Each case: the arguments and the one line said. */
type Case = [what: string, args: string[], line: RegExp];

async function refusedAtOnce(cases: Case[]): Promise<void> {
  for (const [what, args, line] of cases) {
    const ran = await server(args);
    assert.is(ran.code, 2, `${what}: exit ${ran.code} (signal ${ran.signal}) after ${ran.ms} ms: ${ran.stderr}`);
    assert.ok(ran.ms < 5000, `${what}: refused at once, not after ${ran.ms} ms`);
    const said = ran.stderr.split('\n').filter((l) => l !== '');
    assert.is(said.length, 1, `${what}: one line: ${ran.stderr}`);
    assert.match(said[0]!, line, what);
    assert.is(ran.stdout, '', what);
  }
}

test('config import of /dev/zero, a FIFO, a directory or a file past 64 MiB is refused at once, naming the path and why (and - for a stream)', async () => {
  const big = sparse('big.json', MAX_IMPORT_BYTES + 1);
  await refusedAtOnce([
    [
      '/dev/zero',
      ['config', 'import', '/dev/zero'],
      /^mesh-provisioner: config import: \/dev\/zero is a character device, not a regular file \(give - to read standard input\)$/,
    ],
    // What `… | config import /dev/stdin` and `config import <(…)` hand it: `-` is the way.
    ['a FIFO', ['config', 'import', fifo], /^mesh-provisioner: config import: \S+\/pipe is a FIFO, not a regular file \(give - to read standard input\)$/],
    ['a directory', ['config', 'import', dir], /^mesh-provisioner: config import: \S+ is a directory, not a regular file$/],
    [
      'past the limit',
      ['config', 'import', big],
      new RegExp(`^mesh-provisioner: config import: \\S+big\\.json is ${MAX_IMPORT_BYTES + 1} bytes, past the limit of ${MAX_IMPORT_BYTES} bytes$`),
    ],
  ]);
});

test('publish’s --composition and ARCHIVE: /dev/zero, a FIFO, a directory or a composition past 1 MiB are refused at once, naming the flag, the path and why', async () => {
  const templates = join(dir, 'templates');
  const composition = join(dir, 'composition.json');
  const big = sparse('big-composition.json', MAX_PLAN_BYTES + 1);
  await refusedAtOnce([
    [
      'composition /dev/zero',
      ['publish', templates, '--composition', '/dev/zero'],
      /^mesh-provisioner: --composition: \/dev\/zero is a character device, not a regular file$/,
    ],
    ['composition FIFO', ['publish', templates, '--composition', fifo], /^mesh-provisioner: --composition: \S+\/pipe is a FIFO, not a regular file$/],
    [
      'composition directory',
      ['publish', templates, '--composition', templates],
      /^mesh-provisioner: --composition: \S+\/templates is a directory, not a regular file$/,
    ],
    [
      'composition past the limit',
      ['publish', templates, '--composition', big],
      new RegExp(`^mesh-provisioner: --composition: \\S+ is ${MAX_PLAN_BYTES + 1} bytes, past the limit of ${MAX_PLAN_BYTES} bytes$`),
    ],
    [
      'archive /dev/zero',
      ['publish', '/dev/zero', '--composition', composition],
      /^mesh-provisioner: cannot read \/dev\/zero: \/dev\/zero is a character device, not a regular file$/,
    ],
    ['archive FIFO', ['publish', fifo, '--composition', composition], /^mesh-provisioner: cannot read \S+\/pipe: \S+\/pipe is a FIFO, not a regular file$/],
  ]);
});

test('--nkey, --creds and --tls-ca of /dev/zero, a FIFO or a file past 1 MiB are refused at once, naming the flag, the path and why', async () => {
  const big = sparse('big.nk', MAX_LOGIN_FILE_BYTES + 1);
  const status = ['status'];
  await refusedAtOnce([
    ['--nkey /dev/zero', [...status, '--nkey', '/dev/zero'], /^mesh-provisioner: --nkey: \/dev\/zero is a character device, not a regular file$/],
    ['--nkey FIFO', ['config', 'get', 'n1', 'web', '--nkey', fifo], /^mesh-provisioner: --nkey: \S+\/pipe is a FIFO, not a regular file$/],
    [
      '--nkey past the limit',
      [...status, '--nkey', big],
      new RegExp(`^mesh-provisioner: --nkey: \\S+big\\.nk is ${MAX_LOGIN_FILE_BYTES + 1} bytes, past the limit`),
    ],
    ['--creds FIFO', [...status, '--creds', fifo], /^mesh-provisioner: --creds: \S+\/pipe is a FIFO, not a regular file$/],
    ['--tls-ca /dev/zero', [...status, '--tls-ca', '/dev/zero'], /^mesh-provisioner: --tls-ca: \/dev\/zero is a character device, not a regular file$/],
  ]);
});

test.run();
