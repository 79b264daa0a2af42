-- Issue 21: the files a build keeps (sluice.yml's `artifacts`), one row a file of one worker's
-- checkout; the bytes are in the blob store (SLUICE_CACHE_URL) under `store_key`, never under a
-- path the build chose. A row is made before its blob is stored (it reserves its size against
-- the build's limit) and is shown once `stored_at` says the blob is in place.
CREATE TABLE artifacts (
  id          bigserial PRIMARY KEY,
  session_id  bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  worker      integer NOT NULL,
  -- Relative to the checkout, `/`-separated, as the glob matched it.
  path        text NOT NULL,
  size        bigint NOT NULL CHECK (size >= 0),
  store_key   text NOT NULL UNIQUE,
  stored_at   timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX artifacts_session_idx ON artifacts (session_id, worker);

-- Sessions deleted with artifacts (by retention, or with their repository, suite or
-- organization, by cascade): their blobs wait here until the cleanup (or the API right after
-- a delete) removes them from the store. Filled by the trigger below in the transaction that
-- deletes the session, so no delete path can forget the blobs, and a crash in between loses
-- nothing: the row stays until the blobs are gone.
CREATE TABLE artifact_deletions (
  session_id  bigint PRIMARY KEY,
  queued_at   timestamptz NOT NULL DEFAULT now()
);

-- BEFORE: the session's artifact rows are still there (their cascade runs after), and a plan's
-- parts, deleted by cascade from their parent, fire it too.
CREATE FUNCTION queue_artifact_deletion() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM artifacts WHERE session_id = OLD.id) THEN
    INSERT INTO artifact_deletions (session_id) VALUES (OLD.id) ON CONFLICT DO NOTHING;
  END IF;
  RETURN OLD;
END
$$;
CREATE TRIGGER sessions_queue_artifact_deletion BEFORE DELETE ON sessions
  FOR EACH ROW EXECUTE FUNCTION queue_artifact_deletion();
