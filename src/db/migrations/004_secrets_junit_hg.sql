-- Issue 4: build secrets, JUnit test cases. (Mercurial needs no schema: repos.scm already
-- allows 'hg'; the name says which change brought it.)

-- Build secrets, per repository: environment variables of the test processes, sealed with
-- SLUICE_SECRET_KEY like the SSH keys. The API never returns a value.
CREATE TABLE repo_secrets (
  repo_id       bigint NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
  name          text NOT NULL CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_]{0,99}$'),
  value_sealed  text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repo_id, name)
);

-- Where a suite's tests leave JUnit XML reports (a glob relative to the repository root);
-- NULL: none are collected.
ALTER TABLE suites ADD COLUMN junit_pattern text;

-- The test cases read from those reports, one row per <testcase>. Messages and output are
-- masked (secrets) and cut short before they get here.
CREATE TABLE test_cases (
  id          bigserial PRIMARY KEY,
  session_id  bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  -- The JUnit XML file it came from, relative to the repository root.
  file        text NOT NULL,
  classname   text NOT NULL DEFAULT '',
  name        text NOT NULL,
  status      text NOT NULL CHECK (status IN ('passed', 'failed', 'error', 'skipped')),
  -- Seconds, as the report says; NULL when it says nothing usable.
  time        double precision,
  message     text,
  output      text
);
CREATE INDEX test_cases_session_idx ON test_cases (session_id, id);

-- Every JUnit XML file collected for a session: how many cases it gave, and what was wrong
-- with it (malformed, too large, not JUnit) when something was.
CREATE TABLE junit_files (
  session_id  bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  file        text NOT NULL,
  cases       integer NOT NULL,
  note        text,
  PRIMARY KEY (session_id, file)
);
