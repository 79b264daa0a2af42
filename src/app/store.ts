/** The blob store the API serves artifacts from and deletes blobs in (SLUICE_CACHE_URL; DEFAULT_CACHE_DIR when unset). */
import { DEFAULT_CACHE_DIR, type Config, type StoreSettings } from '../config';
import { openStore, type BlobStore } from '../store';

const stores = new WeakMap<Config, { settings: StoreSettings | undefined; store: BlobStore }>();

/** One per configuration: its S3 client or directory, opened once. */
export function apiStore(config: Config): BlobStore {
  const known = stores.get(config);
  if (known && known.settings === config.store) return known.store;
  const store = openStore(config.store ?? { kind: 'dir', dir: DEFAULT_CACHE_DIR });
  stores.set(config, { settings: config.store, store });
  return store;
}
