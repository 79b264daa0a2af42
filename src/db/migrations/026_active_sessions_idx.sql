-- Issue 24: /metrics reads the sessions not ended, per suite, at every scrape (db/gauges.ts);
-- they are few among many ended ones, so a partial index keeps that read small.
CREATE INDEX sessions_active_idx ON sessions (suite_id, status) WHERE status IN ('queued', 'running') AND parent_id IS NULL;
