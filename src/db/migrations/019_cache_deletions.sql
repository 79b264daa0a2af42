-- A deleted repository's cache entries go with it (cascade), but their blobs are in the store:
-- the transaction that deletes the repository queues it here, and the daily cleanup (or the
-- API right after the delete) removes the blobs under its prefix, then the row. Evictions
-- delete their blobs themselves.
CREATE TABLE cache_deletions (
  repo_id    bigint PRIMARY KEY,
  queued_at  timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION queue_cache_deletion() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM cache_entries WHERE repo_id = OLD.id) THEN
    INSERT INTO cache_deletions (repo_id) VALUES (OLD.id) ON CONFLICT DO NOTHING;
  END IF;
  RETURN OLD;
END
$$;
CREATE TRIGGER repos_queue_cache_deletion BEFORE DELETE ON repos
  FOR EACH ROW EXECUTE FUNCTION queue_cache_deletion();
