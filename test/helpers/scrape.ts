// Reads the Prometheus text format as the tests check it: each sample line's name with its labels, as
// printed, to its value.

/** Every sample of `text`: `name{labels}` (as printed) → its value. */
export function figuresOf(text: string): Map<string, number> {
  const figures = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    figures.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return figures;
}

/** Scrapes `http://HOST:PORT/metrics` once. */
export async function scrape(port: number, host = '127.0.0.1'): Promise<Map<string, number>> {
  const res = await fetch(`http://${host}:${port}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${await res.text()}`);
  return figuresOf(await res.text());
}
