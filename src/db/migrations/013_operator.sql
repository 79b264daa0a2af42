-- Issue 13, the operator's daily needs: a deadline per suite, and what the daily retention
-- cleanup needs to find old rows without reading whole tables. (Deleting an organization,
-- repository or suite needs no schema: the foreign keys of 001 cascade.)

-- How long one build of the suite may take, in minutes, from its turn to the end of its tests;
-- past it the build is stopped and ends in `error`. NULL: no deadline (each test file still has
-- SLUICE_TEST_TIMEOUT_MS). At most 7 days, the longest a test lane may run.
ALTER TABLE suites ADD COLUMN deadline_minutes integer CHECK (deadline_minutes BETWEEN 1 AND 10080);

-- Ended sessions by when they ended (updated_at is set when they end), for the cleanup.
CREATE INDEX sessions_ended_idx ON sessions (updated_at) WHERE status NOT IN ('queued', 'running');
-- Deleting a session looks for its plan's parts: without this, one scan of sessions per row.
CREATE INDEX sessions_parent_idx ON sessions (parent_id) WHERE parent_id IS NOT NULL;
-- Triggers and delivery attempts by age.
CREATE INDEX ci_events_received_idx ON ci_events (received_at);
CREATE INDEX ci_events_repo_idx ON ci_events (repo_id);
CREATE INDEX deliveries_created_idx ON deliveries (created_at);
