// bus-config's leaf-node flags (deploy/README.md, sites): the hub taking sites' leaf servers
// (--leaf-listen …), or a site's leaf server rendered instead of the hub (--leaf SITE --hub URL…).
import type { FlagTable, FlagValues } from '../../../shared/cli/flags.ts';
import { checkName } from '../../../shared/contract/keys.ts';
import { ok, type Parsed } from '../../../shared/base/result.ts';
import type { BusConfigOptions } from '../../options.ts';
import { DEFAULT_JS_DOMAIN } from './leaf-hub.ts';

/** The leaf flags, in the order --help lists them after bus-config's own. */
export const LEAF_FLAGS = [
  { name: 'leaf-listen', type: 'string', arg: 'HOST:PORT', help: "take sites' leaf servers here (one login per node), naming the JetStream domain" },
  {
    name: 'leaf-advertise',
    type: 'string',
    arg: 'HOST:PORT',
    help: 'with --leaf-listen: where sites reach it, behind NAT or a load balancer (default: its listen address)',
  },
  {
    name: 'leaf-tls-cert',
    type: 'string',
    arg: 'FILE',
    help: "with --leaf-listen: the certificate its leaf port serves TLS with (a path on the hub's servers)",
  },
  { name: 'leaf-tls-key', type: 'string', arg: 'FILE', help: 'with --leaf-tls-cert: its key' },
  { name: 'js-domain', type: 'string', arg: 'NAME', help: `the hub's JetStream domain, with --leaf-listen or --leaf (default ${DEFAULT_JS_DOMAIN})` },
  { name: 'leaf', type: 'string', arg: 'SITE', help: "print the leaf server of site SITE for the --node's there, instead of the hub's" },
  { name: 'hub', type: 'list', arg: 'URL[,URL…]', help: "with --leaf: every hub server's leaf URL (nats-leaf://HOST:PORT)" },
  { name: 'hub-ca', type: 'string', arg: 'FILE', help: "with --leaf: the CA (a path at the site) that verifies the hub's leaf certificate" },
] as const satisfies FlagTable;

/** bus-config's leaf flags: the hub taking leaf connections, or a site's leaf server; contradictions named. */
export function parseLeafFlags(
  values: FlagValues<typeof LEAF_FLAGS>,
): Parsed<Pick<BusConfigOptions, 'leafListen' | 'leafAdvertise' | 'leafTls' | 'jsDomain' | 'leaf'>> {
  const { leaf: site, hub: hubs = [], 'leaf-listen': leafListen, 'leaf-advertise': leafAdvertise, 'js-domain': jsDomain = DEFAULT_JS_DOMAIN } = values;
  const badDomain = checkName('--js-domain:', jsDomain);
  if (badDomain !== undefined) return { ok: false, reason: badDomain };
  const { 'leaf-tls-cert': cert, 'leaf-tls-key': key, 'hub-ca': hubCa } = values;
  for (const [flag, v] of [
    ['--leaf-advertise', leafAdvertise],
    ['--leaf-tls-cert', cert],
  ] as const) {
    if (v !== undefined && leafListen === undefined) return { ok: false, reason: `${flag} needs --leaf-listen` };
  }
  if ((cert === undefined) !== (key === undefined)) return { ok: false, reason: '--leaf-tls-cert and --leaf-tls-key go together' };
  if (hubCa !== undefined && site === undefined) return { ok: false, reason: '--hub-ca needs --leaf SITE' };
  const leafTls = cert !== undefined && key !== undefined ? { leafTls: { cert, key } } : {};
  if (site === undefined) {
    if (hubs.length > 0) return { ok: false, reason: '--hub needs --leaf SITE' };
    for (const [flag, v] of [
      ['--leaf-listen', leafListen],
      ['--leaf-advertise', leafAdvertise],
    ] as const) {
      if (v !== undefined && !/^[^\s:]+:\d{1,5}$/.test(v)) return { ok: false, reason: `${flag}: "${v}" is not HOST:PORT` };
    }
    return ok({ jsDomain, ...(leafListen === undefined ? {} : { leafListen }), ...(leafAdvertise === undefined ? {} : { leafAdvertise }), ...leafTls });
  }
  const badSite = checkName('--leaf:', site);
  if (badSite !== undefined) return { ok: false, reason: badSite };
  if (leafListen !== undefined) return { ok: false, reason: "--leaf and --leaf-listen contradict: --leaf-listen is the hub's, --leaf a site's" };
  if (hubs.length === 0) return { ok: false, reason: "--leaf needs --hub: every hub server's leaf URL (nats-leaf://HOST:PORT)" };
  const bad = hubs.find((h) => !/^nats-leaf:\/\/[^\s@/]+:\d{1,5}$/.test(h));
  if (bad !== undefined) return { ok: false, reason: `--hub: "${bad}" is not nats-leaf://HOST:PORT` };
  return ok({ jsDomain, leaf: { site, hubs, ...(hubCa === undefined ? {} : { hubCa }) } });
}
