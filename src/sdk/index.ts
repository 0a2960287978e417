// The package's SDK (DESIGN §1): what a provider module imports to serve its consumers — the
// helper and the contract its adapter implements. Built alone into dist/sdk.js.
export { runProvider, DEFAULT_RETRY, type ProviderOptions, type ProviderHandle, type ProviderLog } from './provider.ts';
export { Refused, type Adapter, type BoundValue, type ConsumerEntry, type Grant, type Served } from './types.ts';
