/** Prints the figures a scenario publishes (CI log, docs/reliability.md) as one line. */
export function reportFigures(scenario: string, figures: Record<string, number | string>): void {
  const text = Object.entries(figures)
    .map(([name, value]) => `${name} ${typeof value === 'number' ? Math.round(value * 10) / 10 : value}`)
    .join(', ');
  console.info(`[figures] ${scenario}: ${text}`);
}
