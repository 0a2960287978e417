// The package's SDK (DESIGN §1, §7 point 13): what a provider module imports to serve its consumers
// (the helper and the contract its adapter implements), and what any module imports to ask its
// node's client for values at run time. Built alone into dist/sdk.mjs.
export {
  runProvider,
  DEFAULT_RETRY,
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_CONCURRENCY,
  DEFAULT_STOP_TIMEOUT_MS,
  type ProviderOptions,
  type ProviderHandle,
  type ProviderLog,
} from './provider.ts';
export { Refused, type Adapter, type BoundValue, type ConsumerEntry, type Grant, type Served } from './types.ts';
export { ask, asker, watch, close, AskError, DEFAULT_ASK_TIMEOUT_MS, type Asker, type AskerOptions } from './ask.ts';
