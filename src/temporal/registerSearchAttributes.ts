/**
 * Registers Sluice's search attributes in a namespace, as every role that needs them does at
 * start (src/temporal/prepare.ts, which lets Sluice processes do it one at a time): the API (it
 * starts workflows with SluiceRepo and SluiceBranch) and the worker (workflow code upserts
 * SluiceSession and SluiceStatus).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isGrpcServiceError, type Connection } from '@temporalio/client';
// Not re-exported from the package index; the SDK's own tests use the encoder the same way.
import {
  encodeSearchAttributeIndexedValueType,
  type SearchAttributeKey,
  type SearchAttributeType,
} from '@temporalio/common/lib/search-attributes';
import { SLUICE_SEARCH_ATTRIBUTES } from '../workflows/searchAttributes';

type Keys = readonly SearchAttributeKey<SearchAttributeType>[];

const GRPC_INVALID_ARGUMENT = 3;
const GRPC_ALREADY_EXISTS = 6;
const GRPC_UNIMPLEMENTED = 12;
const GRPC_UNAVAILABLE = 14;

/** Rounds of "list, add what is missing" before giving up on a namespace that keeps changing. */
const ROUNDS = 5;

/** A search attribute exists with another type: retrying cannot help, an operator must. */
export class SearchAttributeConflict extends Error {}

/**
 * Adds whichever of the Sluice search attributes the namespace lacks. Idempotent: attributes
 * already there are left alone; one that exists with a different type is an error
 * (SearchAttributeConflict), because writes to it would fail at run time.
 *
 * Someone else adding attributes at the same moment makes the server answer ALREADY_EXISTS
 * (Elasticsearch visibility) or, on SQL visibility when both picked the same storage field,
 * UNAVAILABLE ("Generated search attributes mapping unavailable"). After either this lists
 * again, and returns once the listing shows every attribute with its type. (When the two picked
 * different fields, SQL visibility keeps both mappings and says nothing: see
 * doublyMappedSearchAttributes; Sluice's own processes take turns to avoid that.)
 * Returns the names this call added.
 */
export async function registerSearchAttributes(
  connection: Connection,
  namespace: string,
  keys: Keys = SLUICE_SEARCH_ATTRIBUTES,
): Promise<string[]> {
  const added = new Set<string>();
  for (let round = 1; ; round++) {
    const missing = await missingSearchAttributes(connection, namespace, keys);
    const names = Object.keys(missing);
    if (names.length === 0) return [...added];
    if (round > ROUNDS) {
      throw new Error(`search attributes ${names.join(', ')} are still missing in namespace ${namespace} after ${ROUNDS} attempts to add them`);
    }
    try {
      await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
      for (const name of names) added.add(name);
    } catch (err) {
      if (!(isGrpcServiceError(err) && (err.code === GRPC_ALREADY_EXISTS || err.code === GRPC_UNAVAILABLE))) throw err;
      // Someone else's add won, or is under way: look again shortly (jittered, so racers part).
      await sleep(50 + Math.random() * 200 * round);
    }
  }
}

/** The keys the namespace lacks, as the encoded types addSearchAttributes wants. */
async function missingSearchAttributes(connection: Connection, namespace: string, keys: Keys): Promise<Record<string, number>> {
  const existing = (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
  const missing: Record<string, number> = {};
  for (const key of keys) {
    const wanted = encodeSearchAttributeIndexedValueType(key.type);
    if (wanted === undefined) throw new Error(`search attribute ${key.name}: unknown type ${key.type}`);
    const have = existing[key.name];
    if (have === undefined) missing[key.name] = wanted;
    else if (have !== wanted) {
      throw new SearchAttributeConflict(
        `search attribute ${key.name} exists in namespace ${namespace} with another type (${have}); Sluice needs ${key.type}`,
      );
    }
  }
  return missing;
}

/** A value of each type for the probe query; any value will do, it only has to parse. */
const PROBE_VALUES: Record<SearchAttributeType, string> = {
  TEXT: '"probe"',
  KEYWORD: '"probe"',
  KEYWORD_LIST: '"probe"',
  INT: '0',
  DOUBLE: '0',
  BOOL: 'true',
  DATETIME: '"2000-01-01T00:00:00Z"',
};

/**
 * Whether the frontend that answers accepts the attributes yet. A server learns of newly added
 * attributes through its namespace cache, which each frontend and history host refreshes on
 * its own (every 2 s by default): for that long, starting a workflow with them can still fail
 * with "no mapping defined for search attribute". A visibility query naming each one fails the
 * same way until then, and succeeds after. A server without count support (UNIMPLEMENTED) is
 * taken at its word.
 */
export async function searchAttributesUsable(connection: Connection, namespace: string, keys: Keys = SLUICE_SEARCH_ATTRIBUTES): Promise<boolean> {
  const query = keys.map((key) => `${key.name} = ${PROBE_VALUES[key.type]}`).join(' AND ');
  try {
    await connection.workflowService.countWorkflowExecutions({ namespace, query });
    return true;
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === GRPC_UNIMPLEMENTED) return true;
    if (isGrpcServiceError(err) && err.code === GRPC_INVALID_ARGUMENT) return false;
    throw err;
  }
}

/**
 * Sluice's attributes that SQL visibility maps to more than one storage field, with the fields
 * (none on Elasticsearch visibility, which maps names directly). Adds that race can leave such
 * a mapping, and which field a write or a query then uses is up to the server.
 */
export async function doublyMappedSearchAttributes(
  connection: Connection,
  namespace: string,
  keys: Keys = SLUICE_SEARCH_ATTRIBUTES,
): Promise<Record<string, string[]>> {
  const aliases = (await connection.workflowService.describeNamespace({ namespace })).config?.customSearchAttributeAliases ?? {};
  const fieldsOf: Record<string, string[]> = {};
  for (const [field, name] of Object.entries(aliases)) (fieldsOf[name] ??= []).push(field);
  return Object.fromEntries(
    keys.filter((key) => (fieldsOf[key.name]?.length ?? 0) > 1).map((key) => [key.name, fieldsOf[key.name]!.sort()]),
  );
}

