-- Issue 23: runners that hold no keys. Such a runner has only a token of its own: it takes
-- jobs (one build activity each) from the API over HTTP, and reads and writes only the records
-- of the builds it is running (api/runnerApi). The worker role hands build activities to these
-- jobs and waits for their results (worker/gateway.ts).
CREATE TABLE runner_tokens (
  id            bigserial PRIMARY KEY,
  name          text NOT NULL UNIQUE,
  -- NULL: the installation's, for any organization's builds that do not ask for their own runners.
  org_id        bigint REFERENCES orgs (id) ON DELETE CASCADE,
  -- sha256 of the token; the token itself is shown once, when it is made.
  token_hash    bytea NOT NULL UNIQUE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz,
  last_seen_at  timestamptz,
  -- What the runner using it said of itself at its last poll.
  version       text,
  runner        text,
  -- The build queues it serves, as its runner said at its last poll: the worker role serves
  -- these in Temporal on its behalf while it is seen.
  queues        text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE runner_jobs (
  id                bigserial PRIMARY KEY,
  -- The build queue the activity was scheduled on (a trigger's `queue`, or the default one).
  queue             text NOT NULL,
  -- The activity: checkout, queueTests, runLane, postBuildHook.
  kind              text NOT NULL,
  -- The activity: its id within its workflow run (a run continued as new starts again at 1).
  activity_id       text NOT NULL,
  run_id            text NOT NULL,
  attempt           int NOT NULL,
  workflow_id       text NOT NULL,
  session_id        bigint NOT NULL,
  repo_id           bigint NOT NULL,
  org_id            bigint NOT NULL,
  -- Only runners of the organization's own tokens may take it.
  own_runners       boolean NOT NULL DEFAULT false,
  input             jsonb NOT NULL,
  -- queued → running → done | failed; a queued or running job is `cancelled` when its activity is.
  state             text NOT NULL DEFAULT 'queued',
  cancel_requested  boolean NOT NULL DEFAULT false,
  token_id          bigint REFERENCES runner_tokens (id) ON DELETE SET NULL,
  runner            text,
  heartbeat_at      timestamptz,
  output            jsonb,
  created_at        timestamptz NOT NULL DEFAULT now(),
  taken_at          timestamptz,
  finished_at       timestamptz
);
CREATE INDEX runner_jobs_queued_idx ON runner_jobs (queue, id) WHERE state = 'queued';
CREATE INDEX runner_jobs_token_idx ON runner_jobs (token_id) WHERE state = 'running';
CREATE INDEX runner_jobs_activity_idx ON runner_jobs (run_id, activity_id);
