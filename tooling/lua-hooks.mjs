// Node module hooks that load `.lua` files as a default-exported string, the same shape tsup's
// text loader and the vitest plugin give, so scripts, workers and examples run from source.
import { readFile } from 'node:fs/promises';

export async function load(url, context, nextLoad) {
  if (url.startsWith('file:') && url.endsWith('.lua')) {
    const text = await readFile(new URL(url), 'utf8');
    return { format: 'module', source: `export default ${JSON.stringify(text)};`, shortCircuit: true };
  }
  return nextLoad(url, context);
}
