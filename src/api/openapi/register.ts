/**
 * The OpenAPI 3.1 document of the HTTP API, made by @fastify/swagger from the zod schemas the
 * routes attach (openapi/shapes.ts `documented`), at `GET /api/v1/openapi.json`, and an
 * interactive page for it at `/api/docs` (docs/openapi.md). Both are public: the document
 * describes the API, never an installation's data, and the page fetches it without a token;
 * the operations themselves still need theirs.
 *
 * The schemas are for the document only. Every route validates its own input with zod
 * (api/http.ts `validate`), in its own order (a 404 for what the path names before a 400 for the
 * body) and with Sluice's error body, so Fastify's validation is switched off here: the
 * validator passes the input through and the serializer is JSON.stringify, as for a route with
 * no schema.
 */
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SLUICE_VERSION } from '../../version';
import { BODY_EXAMPLES, documented, TAGS } from './shapes';

export const OPENAPI_PATH = '/api/v1/openapi.json';
export const DOCS_PAGE = '/api/docs';

/** A route as Fastify registered it, for the check that the document misses none. */
export interface RegisteredRoute {
  method: string;
  url: string;
  hidden: boolean;
}

const registered = new WeakMap<FastifyInstance, RouteOptions[]>();

/** Every route of `app` registered after registerOpenApi (HEAD routes Fastify adds for GET left out). */
export const registeredRoutes = (app: FastifyInstance): RegisteredRoute[] =>
  (registered.get(app) ?? []).flatMap((route) =>
    [route.method]
      .flat()
      .filter((method) => method !== 'HEAD')
      .map((method) => ({ method, url: route.url, hidden: (route.schema as { hide?: boolean } | undefined)?.hide === true })),
  );

/**
 * For a scope whose routes are not the API (web pages, the runner's own protocol): they stay out
 * of the document. Add as the scope's `onRoute` hook before its routes.
 */
export function hideFromDocument(route: RouteOptions): void {
  route.schema = { ...route.schema, hide: true } as RouteOptions['schema'];
}

/**
 * Call first in buildApp: @fastify/swagger sees only routes registered after it has loaded, so
 * every route must be registered in a scope (`app.register`) after this, never on `app` itself.
 */
/** The zod provider's transform, with the request bodies' examples put back (openapi/shapes.ts `documented`). */
const transform: typeof jsonSchemaTransform = (input) => {
  const out = jsonSchemaTransform(input);
  const examples = (input.schema as Record<string, unknown> | undefined)?.[BODY_EXAMPLES];
  const schema = out.schema as Record<string, unknown>;
  delete schema[BODY_EXAMPLES];
  if (Array.isArray(examples) && schema.body) schema.body = { ...(schema.body as object), examples };
  return out;
};

export function registerOpenApi(app: FastifyInstance, baseUrl: string): void {
  const routes: RouteOptions[] = [];
  registered.set(app, routes);
  // Kept whole and read when asked: a scope's hideFromDocument runs after this hook.
  app.addHook('onRoute', (route) => void routes.push(route));

  app.setValidatorCompiler(() => (value) => ({ value }));
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  void app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Sluice',
        version: SLUICE_VERSION,
        description:
          'The HTTP API of Sluice, a self-hosted CI build service: the keyed trigger endpoint, reports, and the management API under /api/v1. ' +
          'Errors are JSON `{error, field?, message}`; the one exception is the plain `DROPPED` of a trigger nothing is built for (422).',
      },
      servers: [{ url: baseUrl }],
      tags: [...TAGS],
      components: {
        securitySchemes: {
          adminToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'A personal API token (`sluice_pt_…`, made on the web pages’ API tokens page or `POST /api/v1/tokens`), acting as its owner within its scope; or SLUICE_ADMIN_TOKEN, which may do anything. Each operation needs a role in the organization of what it names (docs/security.md “People and roles”).',
          },
          reportToken: { type: 'apiKey', in: 'query', name: 'token', description: 'the session’s report token, as its `url` carries it' },
        },
      },
      security: [{ adminToken: [] }],
    },
    transform,
  });

  void app.register(fastifySwaggerUi, {
    routePrefix: DOCS_PAGE,
    // No badge that sends the document to validator.swagger.io; nothing loads from elsewhere.
    uiConfig: { validatorUrl: null, deepLinking: true },
    staticCSP: true,
    // Its default CSP would also upgrade every request to https, which breaks an http:// installation.
    transformStaticCSP: (header) => header.replace(/\s*upgrade-insecure-requests;?/, '').replace(' validator.swagger.io', ''),
  });

  void app.register(async (scope) => {
    scope.get(
      OPENAPI_PATH,
      documented({
        tag: 'operations',
        summary: 'This document',
        public: true,
        response: { 200: z.looseObject({ openapi: z.literal('3.1.0') }).describe('the OpenAPI 3.1 document') },
      }),
      async () => app.swagger(),
    );
  });
}
