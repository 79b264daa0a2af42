-- Issue 21: dependency cache entries, one row a blob in the store (SLUICE_CACHE_URL). `scope`
-- is the branch that wrote it: a build reads its own branch's entries and its repository's
-- default branch's, never another's (GitHub Actions' rule against cache poisoning). `family`
-- hashes the runner's platform and the save paths: a fallback restores only an entry of the
-- same family. Rows go before their blobs when evicted, and a blob is stored before its row,
-- so a row always names a blob that was complete.
CREATE TABLE cache_entries (
  id            bigserial PRIMARY KEY,
  repo_id       bigint NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
  scope         text NOT NULL,
  key           text NOT NULL,
  family        text NOT NULL,
  size          bigint NOT NULL CHECK (size >= 0),
  store_key     text NOT NULL UNIQUE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (repo_id, scope, key)
);

-- The fallback: a scope's newest entry of a family.
CREATE INDEX cache_entries_newest ON cache_entries (repo_id, scope, family, created_at DESC);
-- Eviction: a repository's entries by last use.
CREATE INDEX cache_entries_lru ON cache_entries (repo_id, last_used_at DESC);
