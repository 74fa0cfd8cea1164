import type { Redis } from 'ioredis';

/** One section of `INFO` as name → value, e.g. `role` → `master`. */
export async function info(client: Redis, section: string): Promise<Record<string, string>> {
  const text = await client.info(section);
  const fields: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}
