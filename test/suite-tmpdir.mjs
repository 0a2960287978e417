// Preloaded after tsx in every suite's process (test/run.mjs): points TMPDIR at the suite's own dir.
// tsx has by then put its transform cache under the runner's temp dir, where it is kept across
// suites and runs as tsx means it to be (each suite compiling the sources afresh costs ~0.15 s of CPU);
// everything else the suite and its children make in the temp dir goes to the suite's own.
const dir = process.env['MESH_SUITE_TMPDIR'];
if (dir) process.env['TMPDIR'] = dir;
