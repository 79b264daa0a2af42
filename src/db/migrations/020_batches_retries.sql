-- Issue 22: test files run in batches (a profile whose test_command holds {files}), failing
-- files run again (retry_failed), and when each file ran, for the build's timeline.

-- One process that ran many files of a lane. Its output is kept here, once; its files' rows in
-- test_results point at it. `note` says what became of a batch that did not pass whole: which
-- files its JUnit XML pinned the failure on, which ran again one by one.
CREATE TABLE test_batches (
  id           bigserial PRIMARY KEY,
  session_id   bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  lane         integer NOT NULL,
  runner       text,
  files        integer NOT NULL,
  status       text NOT NULL CHECK (status IN ('running', 'passed', 'failed', 'error')),
  exit_code    integer,
  duration_ms  integer,
  output       text NOT NULL DEFAULT '',
  note         text,
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz
);
CREATE INDEX test_batches_session_idx ON test_batches (session_id, id);

ALTER TABLE test_results ADD COLUMN batch_id bigint REFERENCES test_batches(id) ON DELETE SET NULL;
-- How many times the file ran for its verdict (1, or more with retry_failed), and whether it
-- passed only on a retry: flaky, shown as such rather than hidden.
ALTER TABLE test_results ADD COLUMN attempts integer NOT NULL DEFAULT 1;
ALTER TABLE test_results ADD COLUMN flaky boolean NOT NULL DEFAULT false;
ALTER TABLE test_results ADD COLUMN started_at timestamptz;
CREATE INDEX test_results_flaky_idx ON test_results (path) WHERE flaky;

-- A suite's own retry_failed (its default profile's): how many times a failing file runs again.
ALTER TABLE suites ADD COLUMN retry_failed integer NOT NULL DEFAULT 0 CHECK (retry_failed BETWEEN 0 AND 10);
