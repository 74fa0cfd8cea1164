import { inspect } from 'node:util';

/**
 * The error `call` throws, or its promise rejects with, after checking that `secret` (a value
 * given under a wrong name) shows nowhere the error gets printed: its message, `JSON.stringify`
 * (pino and other structured loggers) and `util.inspect` (`console.error`, Node's print of an
 * uncaught error). Rejects when `call` succeeds, or naming the print that shows the secret.
 */
export async function refusalHiding(secret: string, call: () => unknown): Promise<Error> {
  let error: unknown;
  try {
    await call();
  } catch (caught) {
    error = caught;
  }
  if (!(error instanceof Error)) throw new Error(`expected a refusal, got ${inspect(error)}`);
  const prints = { message: error.message, JSON: JSON.stringify(error), 'util.inspect': inspect(error) };
  for (const [how, printed] of Object.entries(prints)) {
    if (printed.includes(secret)) throw new Error(`the refusal shows the secret in its ${how}: ${printed}`);
  }
  return error;
}
