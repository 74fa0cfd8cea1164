/** Refuses a value that is not an integer `>= min`, naming the option and the value. */
export function checkInteger(name: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(`${name} must be an integer >= ${min}, got ${String(value)}`);
  }
}
