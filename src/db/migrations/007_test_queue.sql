-- One build spread over runners (queue mode): the build's test files in one shared list that
-- every runner of the build takes files from. `position` is the order they are taken in
-- (longest first by durations recorded in earlier builds); a claim is a lease that its lane
-- renews while it runs the file, so a file whose runner died goes back to the list when its
-- lease runs out. A file is `done` once, by the lane that held it: counted once.
CREATE TABLE test_queue (
  session_id   bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  path         text NOT NULL,
  position     integer NOT NULL,
  -- The file's duration in the suite's latest build that ran it; NULL for a new file.
  estimate_ms  integer,
  state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'claimed', 'done')),
  -- The lane attempt holding the claim (lane number, attempt, runner), and until when.
  claimed_by   text,
  lane         integer,
  lease_until  timestamptz,
  status       text CHECK (status IN ('passed', 'failed', 'error')),
  PRIMARY KEY (session_id, path)
);
CREATE INDEX test_queue_open_idx ON test_queue (session_id, position) WHERE state <> 'done';

-- Which runner ran each file (a runner is host-pid), shown in the report.
ALTER TABLE test_results ADD COLUMN runner text;
-- The first file that failed, set once: the lane that sets it sends `first-fail`.
ALTER TABLE sessions ADD COLUMN first_failure text;

-- Each lane collects the JUnit reports of its own checkout.
ALTER TABLE junit_files ADD COLUMN lane integer NOT NULL DEFAULT 0;
ALTER TABLE junit_files DROP CONSTRAINT junit_files_pkey;
ALTER TABLE junit_files ADD PRIMARY KEY (session_id, lane, file);
ALTER TABLE test_cases ADD COLUMN lane integer NOT NULL DEFAULT 0;
