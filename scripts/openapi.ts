/**
 * Writes the OpenAPI document the service serves at `/v1/openapi.json` (`src/http/openapi.ts`)
 * to `docs/openapi.json`, so the repository carries its API reference for readers and tools
 * (Swagger UI, Redocly, code generators) without a running service.
 *
 *   npm run docs:openapi
 *
 * `test/e2e/openapi.test.ts` fails when the committed file differs from what the service serves.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { OPENAPI } from '../src/http/openapi.js';

const target = fileURLToPath(new URL('../docs/openapi.json', import.meta.url));
writeFileSync(target, JSON.stringify(OPENAPI, null, 2) + '\n');
console.log(`wrote ${target}`);
