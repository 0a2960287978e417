// The package's SDK (DESIGN §7 point 13): what any module imports to ask its node's client for values
// at run time. Core NATS only (a request and a subscription), built alone into dist/sdk.mjs; a provider
// module's helper is dist/provider.mjs (provider-index.ts).
export { ask, asker, watch, close, AskError, DEFAULT_ASK_TIMEOUT_MS, DEFAULT_CLIENT_ABSENT_MS, type Asker, type AskerOptions } from './ask.ts';
