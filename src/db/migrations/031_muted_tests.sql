-- Quarantine (issue 37, Buildkite's "muted"): a maintainer marks a suite's test so it still runs
-- and reports, but its failure no longer fails a build. A test is its classname and name, as its
-- reports give them. Cases record whether they were muted when they ran.
CREATE TABLE muted_tests (
  suite_id   bigint NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
  classname  text NOT NULL,
  name       text NOT NULL,
  muted_by   text NOT NULL,
  muted_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (suite_id, classname, name)
);
ALTER TABLE test_cases ADD COLUMN muted boolean NOT NULL DEFAULT false;
