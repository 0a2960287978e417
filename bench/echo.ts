// The bus's own request/reply floor for bench/asks.ts: a responder that answers each request with
// its own body, in a process of its own as the client is.
//   node --import tsx bench/echo.ts URL SUBJECT
import { connectBus } from '../src/shared/bus/bus.ts';

const [url, subject] = process.argv.slice(2);
const nc = await connectBus({ servers: [url!], name: 'bench-echo' });
nc.subscribe(subject!, { callback: (_err, msg) => void msg.respond(msg.data) });
await nc.flush();
process.stdout.write('ready\n');
process.on('SIGTERM', () => void nc.close().then(() => process.exit(0)));
