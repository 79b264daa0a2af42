-- Issue 40: running only the test files a change can affect.
--
-- A dependency map is what each test file's run touched in the repository (core/affected.ts),
-- recorded by a mapping run: a build of the default branch, pushed, whose lanes ran each file
-- alone under strace. One map per such build (its session), for that build's commit and profile;
-- builds of other branches and pull requests read it and never write one.
CREATE TABLE dependency_maps (
  session_id    bigint PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
  repo_id       bigint NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
  profile_name  text NOT NULL,
  commit_id     text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dependency_maps_repo_idx ON dependency_maps (repo_id, profile_name, session_id DESC);

CREATE TABLE dependency_map_files (
  session_id  bigint NOT NULL REFERENCES dependency_maps(session_id) ON DELETE CASCADE,
  path        text NOT NULL,
  reads       text[] NOT NULL,
  lists       text[] NOT NULL,
  probes      text[] NOT NULL,
  PRIMARY KEY (session_id, path)
);

-- A file a selecting build left out ("not affected") is done without a run: skipped.
ALTER TABLE test_queue DROP CONSTRAINT test_queue_status_check;
ALTER TABLE test_queue ADD CONSTRAINT test_queue_status_check CHECK (status IN ('passed', 'failed', 'error', 'skipped'));

-- What the build did about selection (full, why; or which files ran and why, the map's commit;
-- or that it recorded a map): the build page and the API say it.
ALTER TABLE sessions ADD COLUMN affected jsonb;
