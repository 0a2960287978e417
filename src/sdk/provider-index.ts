// The provider helper a provider module imports (DESIGN §1, §3): `runProvider` and the contract its
// adapter implements. Built alone into dist/provider.mjs, apart from the asks of dist/sdk.mjs: the
// helper keeps a KV bucket, and JetStream's client is most of its bytes (docs/decisions.md).
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
export { Refused, Unavailable, type Adapter, type BoundValue, type ConsumerEntry, type Grant, type Served } from './types.ts';
export type { ProvisionRequest } from '../shared/contract/bound-request.ts';
