/**
 * One source for each response shape: the types of `src/client/wire.ts`, which the server's
 * renderers return, the client hands out, and the OpenAPI document's schemas are checked against
 * by the compiler (`npm run test:types`). What the compiler cannot see is checked here: the fields
 * a renderer spreads in (`...(r.expired && { expired: true })`) are exactly the document's, and
 * the document's paths and error responses are the routes table's.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { AccountView } from '../../src/accounts/accounts.js';
import type * as Client from '../../src/client/index.js';
import type * as Wire from '../../src/client/wire.js';
import { statusView, streamView, traceView } from '../../src/http/api.js';
import { OPENAPI } from '../../src/http/openapi.js';
import { DROP_IN_ROUTES } from '../../src/http/request.js';
import { openApiPath, ROUTES, type RouteId } from '../../src/http/routes.js';
import type { StatusRecord } from '../../src/store/records.js';
import type { Sent } from '../../src/submission/core.js';
import { REFUSALS, RPC_CODES } from '../../src/submission/refusals.js';

const SIG = '5'.repeat(88);

function record(extra: Partial<StatusRecord>): StatusRecord {
  return {
    signature: SIG,
    accountId: 'a1',
    keyName: 'bot',
    tipLamports: 1_000_000n,
    recentBlockhash: '1'.repeat(32),
    durableNonce: false,
    submittedAt: 1_700_000_000_000,
    submitSlot: 40,
    lastValidBlockHeight: 150,
    status: 'sent',
    confirmedAt: null,
    latencyMs: null,
    slot: null,
    expired: false,
    ...extra,
  };
}

/** A post-mortem with every field set. */
const PM: Wire.PostMortem = {
  cause: 'expired',
  summary: 'expired after 3 rounds; 4 writes to 2 leaders',
  rounds: 3,
  writes: 4,
  refused: [{ leader: null, close_code: 2, count: 1 }],
  throttled: 0,
  slots_sent_for: [40, 41],
  skipped_slots: [41],
  fees: { own_cu_price: 0, lowest_cu_price: 10, blocks: 1, priced_out: true, inferred: true },
};

/** Every field a renderer can send: an expired record past its deadline that also carries a chain error and a post-mortem. */
const FULL = record({ status: 'failed', expired: true, deadlinePassed: true, err: { InstructionError: [0, { Custom: 1 }] }, confirmedAt: 1_700_000_001_000, latencyMs: 900, slot: 42, postMortem: PM });
const BARE = record({});

const schemas = OPENAPI.components.schemas;
const keys = (o: object) => Object.keys(o).sort();

describe('the renderers send exactly the fields the document names', () => {
  it('statusView: every field with everything set, the required ones with nothing optional', () => {
    expect(keys(statusView(FULL))).toEqual(keys(schemas.StatusRecord!.properties!));
    expect(keys(statusView(BARE))).toEqual([...schemas.StatusRecord!.required!].sort());
  });

  it("streamView: the stream's status message (less its type)", () => {
    const withType = (o: object) => keys({ type: 'status', ...o });
    expect(withType(streamView(FULL))).toEqual(keys(schemas.StreamStatus!.properties!));
    expect(withType(streamView(BARE))).toEqual([...schemas.StreamStatus!.required!].sort());
  });

  it('traceView and its attempts', () => {
    const attempt = { atUs: 10, slot: 41, round: 0, leader: null, tpu: null, outcome: 'written' as const, closeCode: null, reason: null };
    const full = traceView(FULL, { attempts: [attempt], omitted: 0, postMortem: PM });
    expect(keys(full)).toEqual(keys(schemas.DeliveryTrace!.properties!));
    expect(keys(full.attempts[0]!)).toEqual(keys(schemas.DeliveryAttempt!.properties!));
    expect(keys(traceView(BARE, { attempts: [], omitted: 0 }))).toEqual([...schemas.DeliveryTrace!.required!].sort());
  });
});

describe('the client, the server and the document share one type per shape', () => {
  it("the client's types are the wire module's (the stream's status record adds its two optional fields)", () => {
    expectTypeOf<Client.BatchItem>().toEqualTypeOf<Wire.BatchItem>();
    expectTypeOf<Client.SendResult>().toEqualTypeOf<Wire.SendResult>();
    expectTypeOf<Client.DeliveryTrace>().toEqualTypeOf<Wire.DeliveryTrace>();
    expectTypeOf<Client.AccountRecord>().toEqualTypeOf<Wire.AccountRecord>();
    expectTypeOf<Client.TipFloorRecord>().toEqualTypeOf<Wire.TipFloorRecord>();
    expectTypeOf<Omit<Client.StatusRecord, 'tip_lamports' | 'submit_slot'>>().toEqualTypeOf<Wire.StatusRecord>();
  });

  it("the server's renderers return them", () => {
    expectTypeOf<ReturnType<typeof statusView>>().toEqualTypeOf<Wire.StatusRecord>();
    expectTypeOf<ReturnType<typeof traceView>>().toEqualTypeOf<Wire.DeliveryTrace>();
    expectTypeOf<Sent>().toEqualTypeOf<Wire.SendResult>();
    expectTypeOf<AccountView>().toEqualTypeOf<Wire.AccountRecord>();
  });
});

describe('the document is generated from the routes table and the refusal table', () => {
  const ids = Object.keys(ROUTES) as RouteId[];
  const operation = (id: RouteId) => OPENAPI.paths[openApiPath(ROUTES[id].pattern)]![ROUTES[id].method]!;

  it('one operation per route, with its id, and no other', () => {
    const documented = Object.entries(OPENAPI.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => `${method} ${path} ${op.operationId}`));
    expect(documented.sort()).toEqual(ids.map((id) => `${ROUTES[id].method} ${openApiPath(ROUTES[id].pattern)} ${id}`).sort());
  });

  it("each refusal of a route is documented at its status, with its message (REST) or as a JSON-RPC error", () => {
    for (const id of ids) {
      for (const code of ROUTES[id].refusals) {
        const { status, message, rpc } = REFUSALS[code];
        let response: any = operation(id).responses[status];
        expect(response, `${id} ${code}`).toBeDefined();
        if (response.$ref) response = OPENAPI.components.responses[response.$ref.split('/').pop()];
        const body = response.content['application/json'].schema;
        if (ROUTES[id].dialect === 'json-rpc') {
          expect(body).toEqual({ $ref: '#/components/schemas/JsonRpcError' });
          expect(response.description).toContain(`(error ${rpc})`);
        } else {
          expect(body.properties.error.properties.message.enum, `${id} ${code}`).toContain(message);
        }
      }
      // And no error status the route's refusals do not give (503 is /health's answer, not a refusal).
      const statuses = Object.keys(operation(id).responses).map(Number).filter((s) => s >= 400 && s !== 503);
      expect(statuses, id).toEqual([...new Set(ROUTES[id].refusals.map((c) => REFUSALS[c].status))].sort());
    }
  });

  it('the JSON-RPC error codes the document lists are RPC_CODES', () => {
    const codes: number[] = Object.values(RPC_CODES);
    expect((schemas.JsonRpcError!.properties!.error!.properties!.code as { enum: number[] }).enum).toEqual(codes);
    for (const code of codes) expect(operation('jsonRpc').description).toContain(`${code} `);
  });

  it("the drop-in paths the request reader knows are the table's", () => {
    expect([...DROP_IN_ROUTES].sort()).toEqual([ROUTES.jitoTransactions.pattern, ROUTES.jitoBundles.pattern, ROUTES.heliusSender.pattern].sort());
  });
});
