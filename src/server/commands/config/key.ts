// What a config key may be (DESIGN §2, §3, §8), checked before anything is written: a name a
// template can give `${config:<key>}`, whose parts between dots each fit a key token once encoded,
// in a KV key within the bus's limits. Pure: nothing here reaches the bus.
import { checkName, configKey } from '../../../shared/contract/keys.ts';
import { keyProblem, PLACEHOLDER_NAME_PATTERN, tokenProblem } from '../../../shared/contract/fields.ts';

/** A lone UTF-16 surrogate: text that no UTF-8 can carry, so no key or value of the bus. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether `text` is text UTF-8 can carry as it is (no lone surrogate). */
export function isUtf8Text(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/** Says why `key` cannot be a config key; nothing when it can. */
export function configKeyNameProblem(key: string): string | undefined {
  const quoted = JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key);
  if (!isUtf8Text(key)) return `${quoted} is not UTF-8 text (a lone surrogate)`;
  if (!PLACEHOLDER_NAME_PATTERN.test(key)) {
    return `${quoted} is not a name \${config:…} can hold (not empty, no whitespace, {, } or $, not starting with - = + or ?)`;
  }
  for (const part of key.split('.')) {
    if (part === '') return `${quoted} has an empty part between dots`;
    const problem = tokenProblem(part);
    if (problem !== undefined) return part === key ? `${quoted} ${problem}` : `${quoted}: its part ${JSON.stringify(part.slice(0, 64))} ${problem}`;
  }
  return undefined;
}

/** Says why node, module and key cannot make a key of `mesh-config_resolved`; nothing when they can. */
export function configTargetProblem(node: string, module: string, key: string): string | undefined {
  const bad = checkName('node', node) ?? checkName('module', module);
  if (bad !== undefined) return bad;
  const keyBad = configKeyNameProblem(key);
  if (keyBad !== undefined) return `config key ${keyBad}`;
  const whole = keyProblem(configKey(node, module, key));
  return whole === undefined ? undefined : `config key ${JSON.stringify(key.slice(0, 64))}: the bus key ${whole}`;
}
