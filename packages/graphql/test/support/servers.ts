import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import express from 'express';
import type { GraphQLSchema } from 'graphql';
import { createYoga } from 'graphql-yoga';

/** A GraphQL server listening on a free loopback port. */
export interface TestServer {
  readonly url: string;
  close(): Promise<void>;
}

export type ServerKind = 'apollo' | 'yoga';

/** How the server is set up. */
export interface ServerOptions {
  /** Accept an array of operations in one request (Apollo's `allowBatchedHttpRequests`, Yoga's `batching`). Default: false. */
  readonly batching?: boolean;
}

export function startServer(
  kind: ServerKind,
  schema: GraphQLSchema,
  { batching = false }: ServerOptions = {},
): Promise<TestServer> {
  return kind === 'apollo' ? startApollo(schema, batching) : startYoga(schema, batching);
}

/**
 * Apollo Server 5 on Express 5. Its context carries a `signal` aborted when the client goes
 * away before the response finished, as the package README tells Apollo users to do.
 */
async function startApollo(schema: GraphQLSchema, batching: boolean): Promise<TestServer> {
  const apollo = new ApolloServer({ schema, allowBatchedHttpRequests: batching });
  await apollo.start();
  const app = express();
  app.use(
    '/graphql',
    express.json(),
    expressMiddleware(apollo, {
      context: async ({ res }) => {
        const aborted = new AbortController();
        res.on('close', () => {
          if (!res.writableFinished) aborted.abort();
        });
        return { signal: aborted.signal };
      },
    }),
  );
  const server = createServer(app);
  return listen(server, async () => {
    await apollo.stop();
  });
}

/** GraphQL Yoga 5 on node:http, with its default error masking. */
function startYoga(schema: GraphQLSchema, batching: boolean): Promise<TestServer> {
  const yoga = createYoga({ schema, logging: false, batching });
  return listen(createServer(yoga), async () => {});
}

async function listen(server: Server, stop: () => Promise<void>): Promise<TestServer> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await stop();
    },
  };
}

/** One GraphQL response over HTTP. */
export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly data: Record<string, unknown> | null | undefined;
  readonly errors: readonly { message: string; path?: string[]; extensions?: Record<string, unknown> }[];
}

export async function post(
  url: string,
  query: string,
  variables: Record<string, unknown> = {},
  signal?: AbortSignal,
): Promise<Reply> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query, variables }),
    signal,
  });
  const body = (await response.json()) as Pick<Reply, 'data' | 'errors'>;
  return { status: response.status, headers: response.headers, data: body.data, errors: body.errors ?? [] };
}

/** One GraphQL operation of a request. */
export interface Operation {
  readonly query: string;
  readonly variables?: Record<string, unknown>;
}

/** A batched request: the operations' results in one response. */
export async function postBatch(
  url: string,
  operations: readonly Operation[],
): Promise<{ status: number; headers: Headers; results: Pick<Reply, 'data' | 'errors'>[] }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(operations),
  });
  const results = (await response.json()) as Pick<Reply, 'data' | 'errors'>[];
  return { status: response.status, headers: response.headers, results };
}
