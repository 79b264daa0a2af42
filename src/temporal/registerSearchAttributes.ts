/**
 * Registers Sluice's search attributes on a Temporal server that someone else runs (when
 * TEMPORAL_ADDRESS points at it). The dev server Sluice starts itself gets them on its command
 * line instead (see devServer.ts).
 */
import { isGrpcServiceError, type Connection } from '@temporalio/client';
// Not re-exported from the package index; the SDK's own tests use the encoder the same way.
import {
  encodeSearchAttributeIndexedValueType,
  type SearchAttributeKey,
  type SearchAttributeType,
} from '@temporalio/common/lib/search-attributes';
import { SLUICE_SEARCH_ATTRIBUTES } from './searchAttributes';

const GRPC_ALREADY_EXISTS = 6;

/**
 * Adds whichever of the Sluice search attributes the namespace lacks. Idempotent: attributes
 * already there (or added concurrently by another process) are fine; one that exists with a
 * different type is an error, because writes to it would fail at run time.
 * Returns the names it added.
 */
export async function registerSearchAttributes(
  connection: Connection,
  namespace: string,
  keys: readonly SearchAttributeKey<SearchAttributeType>[] = SLUICE_SEARCH_ATTRIBUTES,
): Promise<string[]> {
  const existing = (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
  const missing: Record<string, number> = {};
  for (const key of keys) {
    const wanted = encodeSearchAttributeIndexedValueType(key.type);
    if (wanted === undefined) throw new Error(`search attribute ${key.name}: unknown type ${key.type}`);
    const have = existing[key.name];
    if (have === undefined) missing[key.name] = wanted;
    else if (have !== wanted) {
      throw new Error(
        `search attribute ${key.name} exists in namespace ${namespace} with another type (${have}); Sluice needs ${key.type}`,
      );
    }
  }
  const names = Object.keys(missing);
  if (names.length === 0) return [];
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
  } catch (err) {
    if (!(isGrpcServiceError(err) && err.code === GRPC_ALREADY_EXISTS)) throw err;
  }
  return names;
}
