-- Issue 22: live output. While a test file, a batch or a hook runs, its runner appends what it
-- printed, masked, every 250 ms (steps/liveOutput.ts); GET /api/v1/sessions/:id/output and the
-- build page follow it from any runner. A process that ends within its first 250 ms writes
-- nothing here (its output is stored with its result, as before).
--
-- One row per piece of output, numbered per session: `seq` is taken from output_streams in the
-- statement that inserts the row, whose row lock holds until it commits, so rows of a session
-- become visible in `seq` order and a reader that has seen seq N never finds a smaller one
-- later (a bigserial could commit out of order between two runners).
CREATE TABLE output_streams (
  session_id  bigint PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
  last_seq    bigint NOT NULL
);

-- Kept until the session is deleted (retention): a follower that fell behind or reconnects
-- (after=<seq>, Last-Event-ID) finds every row after its last one.
CREATE TABLE output_chunks (
  session_id  bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq         bigint NOT NULL,
  -- What printed it: a test file run alone, a batch of files, or a hook.
  kind        text NOT NULL CHECK (kind IN ('file', 'batch', 'hook')),
  -- 1..N: the worker (lane) of a file or batch; a hook's worker is its session_hooks row's.
  worker      integer,
  -- A file: its path, the lane's activity attempt (a runner lost), and its run (a retry is run 2, 3, ...).
  path        text,
  attempt     integer,
  run         integer,
  -- test_batches.id, session_hooks.id; no foreign keys: those rows go with their session, as
  -- these do, and a key here would need an index of its own for every delete there.
  batch_id    bigint,
  hook_id     bigint,
  -- Masked with the build's secrets before it was written.
  text        text NOT NULL,
  -- Set on a process's last row: how it ended (its result's verdict may differ: batches, retries).
  end_status  text CHECK (end_status IN ('passed', 'failed', 'error')),
  exit_code   integer,
  duration_ms integer,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, seq),
  CHECK ((kind = 'file') = (path IS NOT NULL)),
  CHECK ((kind = 'batch') = (batch_id IS NOT NULL)),
  CHECK ((kind = 'hook') = (hook_id IS NOT NULL))
);
