// `npm run release`: builds the bundles and packs everything a node needs — the bundles, the systemd
// units and example env files, an example bus configuration and the READMEs — into
// release/mesh-provisioner-<version>.tar.gz (`--out DIR` writes it elsewhere; `--no-build` packs dist/
// as it is, for a test that must not rewrite the bundles other suites run). Installed by copying:
// deploy/README.md. Plain JS, so it runs without tsx.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { packTar } from 'modern-tar';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The bundles shipped, each self-contained: programs run as they are, the SDK a module imports and the provider helper. */
const BUNDLES = ['server', 'client', 'engine', 'vault', 'sdk', 'provider', 'postgres-provider'];
/** The bundles a module imports rather than runs: ES modules named `.mjs` (build.mjs says why). */
const LIBRARIES = new Set(['sdk', 'provider']);
/** The nodes of the example bus configuration. */
const EXAMPLE_NODES = ['n1', 'n2'];
/** An nkey seed of any kind (user, account, operator): `S`, a type letter, base32 — never shipped. */
const SEED_PATTERN = /\bS[UANOCPX][A-Z2-7]{50,}/;

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const name = `mesh-provisioner-${pkg.version}`;

function run(args, what) {
  const done = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8' });
  if (done.status !== 0) throw new Error(`${what} failed (exit ${done.status}): ${done.stderr}`);
  return done.stdout;
}

/** What bus-config prints for the example nodes; the seeds it makes go with their temp dir. */
function exampleBusConfig() {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-release-'));
  try {
    const nodes = EXAMPLE_NODES.flatMap((n) => ['--node', n]);
    return run([join(ROOT, 'dist', 'server.js'), 'bus-config', ...nodes, '--credentials', join(dir, 'credentials')], 'bus-config');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The example modules shipped for the README's lab, each a directory under examples/. */
const EXAMPLE_MODULES = ['web', 'app', 'postgres-provider/module'];

/** Every file under `dir` (relative to the repository), in name order, as [path, bytes]. */
function filesUnder(dir) {
  return readdirSync(join(ROOT, dir), { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [[join(dir, e.name), readFileSync(join(ROOT, dir, e.name))]]));
}

/** Each file of the tarball: its path inside `<name>/` and its bytes. */
function releaseFiles() {
  const files = BUNDLES.map((b) => (LIBRARIES.has(b) ? `${b}.mjs` : `${b}.js`)).map((f) => [f, readFileSync(join(ROOT, 'dist', f))]);
  files.push(['README.md', readFileSync(join(ROOT, 'README.md'))]);
  files.push(['deploy/README.md', readFileSync(join(ROOT, 'deploy', 'README.md'))]);
  // The README links these: the contract, the decisions, what the mesh survives, what each login may do.
  for (const doc of ['design.md', 'decisions.md', 'reliability.md', 'isolation.md', 'rollout.md', 'scale.md'])
    files.push([`docs/${doc}`, readFileSync(join(ROOT, 'docs', doc))]);
  files.push(['examples/postgres-provider/README.md', readFileSync(join(ROOT, 'examples', 'postgres-provider', 'README.md'))]);
  // The modules the README's lab publishes: each a composition and a directory of templates.
  for (const module of EXAMPLE_MODULES) files.push(...filesUnder(join('examples', module)));
  for (const file of readdirSync(join(ROOT, 'deploy', 'systemd')).sort()) {
    files.push([`deploy/systemd/${file}`, readFileSync(join(ROOT, 'deploy', 'systemd', file))]);
  }
  const header =
    `# An example: bus-config ${EXAMPLE_NODES.map((n) => `--node ${n}`).join(' ')}, its seeds thrown away.\n` +
    '# Generate your own: node server.js bus-config --node … --credentials /etc/mesh/credentials --out /etc/nats/nats.conf\n';
  files.push(['deploy/nats.conf.example', Buffer.from(header + exampleBusConfig())]);
  return files;
}

/** The first path of this machine (the repository, the home dir, this script's temp dirs) that `text` names, if any. */
function localPathIn(text) {
  const local = [ROOT, homedir(), join(tmpdir(), 'mesh-release-')].filter((p) => p !== '/' && p !== '');
  // A whole path, not the tail of another: /tmp/root does not name the home dir /root.
  const escape = (p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return local.find((p) => new RegExp(`(^|[^\\w.~/-])${escape(p)}`).test(text));
}

/** Refuses a release holding a seed or a path of this machine. */
function checkNothingLeaks(files) {
  for (const [path, bytes] of files) {
    const text = bytes.toString('latin1');
    if (SEED_PATTERN.test(text)) throw new Error(`${path} holds an nkey seed`);
    const found = localPathIn(text);
    if (found) throw new Error(`${path} names ${found}, a path of this machine`);
  }
}

async function main() {
  const outAt = process.argv.indexOf('--out');
  const outDir = outAt >= 0 ? resolve(process.argv[outAt + 1] ?? '') : join(ROOT, 'release');
  if (!process.argv.includes('--no-build')) run(['build.mjs'], 'node build.mjs');
  const files = releaseFiles();
  checkNothingLeaks(files);
  const mtime = process.env.SOURCE_DATE_EPOCH ? new Date(Number(process.env.SOURCE_DATE_EPOCH) * 1000) : new Date();
  const owner = { uid: 0, gid: 0, uname: 'root', gname: 'root', mtime };
  const dirs = [...new Set(files.map(([p]) => dirname(p)).filter((d) => d !== '.'))].sort();
  const tar = await packTar([
    { header: { name: `${name}/`, type: 'directory', size: 0, mode: 0o755, ...owner } },
    ...dirs.map((d) => ({ header: { name: `${name}/${d}/`, type: 'directory', size: 0, mode: 0o755, ...owner } })),
    ...files.map(([path, bytes]) => ({ header: { name: `${name}/${path}`, size: bytes.length, mode: 0o644, ...owner }, body: new Uint8Array(bytes) })),
  ]);
  mkdirSync(outDir, { recursive: true });
  const out = join(outDir, `${name}.tar.gz`);
  writeFileSync(out, gzipSync(tar, { level: 9 }));
  process.stdout.write(`${out} (${Math.round(statSync(out).size / 1024)} KiB, ${files.length} files)\n`);
}

main().catch((err) => {
  process.stderr.write(`release: ${err.message}\n`);
  process.exit(1);
});
