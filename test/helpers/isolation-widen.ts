// The generated configuration with each grant issue 18's rows test made wider, so the isolation test
// can show every such row flip: what refuses an action is that grant, not something else.
import { INBOX_PREFIXES } from '../../src/server/commands/bus-config/config.ts';
import { nodeAccount } from '../../src/server/commands/bus-config/users.ts';
import { PLANS } from '../../src/shared/contract/buckets.ts';
import { vaultCredentialOf } from '../../src/shared/contract/subjects.ts';
import { A, B, PROVIDER } from './isolation-actions.ts';
import { NAMESAKES } from './isolation-rows-streams.ts';

/** Inserts `line` after the one occurrence of `anchor` in `text`; throws when it is not there once. */
function after(text: string, anchor: string, line: string): string {
  const at = text.indexOf(anchor);
  if (at < 0 || text.indexOf(anchor, at + 1) >= 0) throw new Error(`the configuration does not hold ${anchor} once`);
  return text.slice(0, at + anchor.length) + line + text.slice(at + anchor.length);
}

/** The configuration with stream rights for the seat, the provider and the vault; a node's update, impersonation and inbox grants. */
export function widenGrants(config: string): string {
  const q = JSON.stringify;
  const item = (subject: string) => `\n            ${q(subject)}`;
  let c = config;
  c = after(c, `            ${q('provisioner_health')}`, item('$JS.API.STREAM.>'));
  c = after(c, `            ${q(`$KV.${PROVIDER}_bound.>`)}`, item('$JS.API.STREAM.>'));
  c = after(c, `            ${q('mesh-vault.changed')}`, item('$JS.API.STREAM.CREATE.>'));
  // na may update a stream, and ask the vault as nb.
  c = after(c, '{ service: "$JS.FC.>" }', '\n      { service: "$JS.API.STREAM.UPDATE.>" }');
  c = c.replace(
    `{ service: ${q(vaultCredentialOf(B))}, accounts: [${q(nodeAccount(B))}] }`,
    `{ service: ${q(vaultCredentialOf(B))}, accounts: [${q(nodeAccount(B))}, ${q(nodeAccount(A))}] }`,
  );
  const naVault = `{ service: { account: MESH, subject: ${q(vaultCredentialOf(A))} }, to: "mesh-vault.credential" }`;
  c = after(
    c,
    naVault,
    `\n      { service: { account: MESH, subject: ${q(`$JS.API.STREAM.UPDATE.KV_${PLANS}`)} } }\n      { service: { account: MESH, subject: ${q(vaultCredentialOf(B))} }, to: ${q(vaultCredentialOf(B))} }`,
  );
  // Each namesake node gets the inbox its name once gave it.
  const prefixes: Record<string, string> = {
    [NAMESAKES.seat]: INBOX_PREFIXES.seat,
    [NAMESAKES.vault]: INBOX_PREFIXES.vault,
    [NAMESAKES.provider]: INBOX_PREFIXES.provider(PROVIDER),
  };
  for (const [node, prefix] of Object.entries(prefixes)) {
    c = after(c, '{ service: "$JS.FC.>" }', `\n      { stream: ${q(`${prefix}.>`)}, accounts: [${q(nodeAccount(node))}] }`);
    c = after(
      c,
      `{ service: { account: MESH, subject: ${q(vaultCredentialOf(node))} }, to: "mesh-vault.credential" }`,
      `\n      { stream: { account: MESH, subject: ${q(`${prefix}.>`)} } }`,
    );
    c = c.replace(`[ ${q(`${INBOX_PREFIXES.node(node)}.>`)}, `, `[ ${q(`${INBOX_PREFIXES.node(node)}.>`)}, ${q(`${prefix}.>`)}, `);
  }
  return c;
}
