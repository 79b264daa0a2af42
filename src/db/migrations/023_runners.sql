-- Issue 23: the runners that are up, and how each keeps builds away from itself (its
-- sandbox and build user, decided at its start: runner/isolation.ts). A runner writes its row
-- at start and every 30 s, and deletes it when it stops; the web UI warns administrators
-- while a runner seen in the last minutes runs builds without isolation.
CREATE TABLE runners (
  name          text PRIMARY KEY,               -- host-pid, as test results name it
  version       text NOT NULL,
  sandboxed     boolean NOT NULL,
  build_user    text,                           -- NULL: the runner's own (not root) user
  -- What builds on it can do that they should not, in words (empty when isolated).
  gaps          text[] NOT NULL DEFAULT '{}',
  started_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now()
);

-- The runners list counts each runner's busy lanes from the claims held now: few rows at a time.
CREATE INDEX test_queue_claimed_idx ON test_queue (claimed_by) WHERE state = 'claimed';
