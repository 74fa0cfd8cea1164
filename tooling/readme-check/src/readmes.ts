/** Every README whose ```ts blocks are checked, relative to the repository root. */
export const READMES = [
  'README.md',
  'packages/core/README.md',
  'packages/core/src/protocols/legacy/README.md',
  'packages/redisson/README.md',
  'packages/thinkphp/README.md',
  'packages/express/README.md',
  'packages/koa/README.md',
  'packages/graphql/README.md',
  'packages/otel/README.md',
  'packages/testing/README.md',
  'docs/migrating.md',
] as const;
