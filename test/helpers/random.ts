// The seed of the property tests (fast-check): the same seed gives the same cases, so a failure
// repeats, and fast-check shrinks it to a small case.

/** The seed of this run: MESH_TEST_SEED or a fixed default, printed by fast-check with a failing case. */
export const SEED = Number(process.env['MESH_TEST_SEED'] ?? 20261129);
