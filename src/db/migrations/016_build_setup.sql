-- Issue 21: what a build sets up around its tests, Solano's way. A suite's own setup (sluice.yml's
-- keys of the same names win over these, key by key; core/buildSetup.ts). NULL: not set.
ALTER TABLE suites ADD COLUMN hooks jsonb;
ALTER TABLE suites ADD COLUMN cache jsonb;
ALTER TABLE suites ADD COLUMN services text[];
ALTER TABLE suites ADD COLUMN artifacts text[];

-- The branch whose cache entries every other branch of the repository may read (GitHub
-- Actions' rule); the spec's default branch is master.
ALTER TABLE repos ADD COLUMN default_branch text NOT NULL DEFAULT 'master';

-- Every hook a build ran (package setup too, detected or not), as it runs: shown on the build
-- page and in GET /api/v1/sessions/:id. `worker` is 1..N, NULL for post_build (once a build).
-- Output is the end of what it printed, secrets masked.
CREATE TABLE session_hooks (
  id           bigserial PRIMARY KEY,
  session_id   bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  name         text NOT NULL CHECK (name IN ('pre_setup', 'package_setup', 'worker_setup', 'post_setup', 'post_worker', 'post_build')),
  worker       integer,
  command      text NOT NULL,
  -- `skipped`: package setup that a cache hit made needless, said why in `detail`.
  status       text NOT NULL CHECK (status IN ('running', 'passed', 'failed', 'error', 'skipped')),
  exit_code    integer,
  duration_ms  integer,
  output       text NOT NULL DEFAULT '',
  -- What Sluice adds: how package setup was chosen, why a hook was skipped or killed.
  detail       text,
  runner       text,
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz
);
CREATE INDEX session_hooks_session_idx ON session_hooks (session_id, id);

-- The workers of a build and their setup: the rendezvous (no worker starts its tests before
-- every worker is ready), the first setup failure (the build fails once, not once per worker),
-- and when each step of each worker ended (the session's timing keys are their latest).
CREATE TABLE session_workers (
  session_id  bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  worker      integer NOT NULL,
  ready_at    timestamptz,
  failure     text,
  timing      jsonb NOT NULL DEFAULT '{}',
  -- Lines for the build page: what the cache restored, which services the worker had, ...
  notes       text[] NOT NULL DEFAULT '{}',
  runner      text,
  PRIMARY KEY (session_id, worker)
);
