/** Margin for the rate difference between the client's and the server's clocks: 1% of the ttl plus 2 ms. */
export function clockDrift(ttl: number): number {
  return Math.min(Math.floor(ttl * 0.01) + 2, Math.floor(ttl / 2));
}
