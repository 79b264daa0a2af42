-- Sluice's first schema: configuration (orgs, repos, suites, webhooks), what arrived
-- (ci_events), what ran (sessions, test_results) and what went out (deliveries).

CREATE TABLE orgs (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL UNIQUE,
  email       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE repos (
  id                   bigserial PRIMARY KEY,
  org_id               bigint NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name                 text NOT NULL,
  scm                  text NOT NULL CHECK (scm IN ('git', 'hg')),
  pull_url             text NOT NULL,
  ci_push_url          text,
  pull_request_only    boolean NOT NULL DEFAULT false,
  ci_squash            boolean NOT NULL DEFAULT false,
  branch_blacklist     text[] NOT NULL DEFAULT '{}',
  chat_url             text,
  -- The webhook key: looked up by its SHA-256 (so lookup timing says nothing about the key),
  -- kept sealed so the admin API can show the webhook URL again.
  key_hash             bytea NOT NULL UNIQUE,
  key_sealed           text NOT NULL,
  ssh_public_key       text NOT NULL,
  ssh_private_key_sealed text NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, name)
);

CREATE TABLE suites (
  id                 bigserial PRIMARY KEY,
  repo_id            bigint NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
  branch             text NOT NULL,
  test_pattern       text NOT NULL,
  test_command       text,
  workers            integer NOT NULL DEFAULT 1 CHECK (workers BETWEEN 1 AND 64),
  last_built_commit  text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (repo_id, branch)
);

CREATE TABLE branches (
  repo_id         bigint NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
  name            text NOT NULL,
  enabled         boolean NOT NULL DEFAULT true,
  hidden          boolean NOT NULL DEFAULT false,
  locked_visible  boolean NOT NULL DEFAULT false,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (repo_id, name)
);

CREATE TABLE webhooks (
  id               bigserial PRIMARY KEY,
  org_id           bigint NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  url              text NOT NULL,
  username         text,
  password_sealed  text,
  closure          text,
  active           boolean NOT NULL DEFAULT true,
  created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ci_events (
  id           bigserial PRIMARY KEY,
  guid         uuid NOT NULL UNIQUE,
  repo_id      bigint NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
  provider     text NOT NULL,
  decision     text NOT NULL CHECK (decision IN ('build', 'skip', 'drop')),
  reason       text,
  trigger      jsonb NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sessions (
  id            bigserial PRIMARY KEY,
  ci_event_id   bigint NOT NULL REFERENCES ci_events(id) ON DELETE CASCADE,
  suite_id      bigint NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
  parent_id     bigint REFERENCES sessions(id) ON DELETE CASCADE,
  status        text NOT NULL DEFAULT 'queued',
  reason        text,
  profile_name  text NOT NULL DEFAULT 'default',
  branch        text NOT NULL,
  ref           text,
  head          text NOT NULL,
  force         boolean NOT NULL DEFAULT false,
  commit_id     text,
  committers    jsonb NOT NULL DEFAULT '[]',
  counts        jsonb NOT NULL DEFAULT '{}',
  workers       integer NOT NULL DEFAULT 1,
  timing        jsonb NOT NULL DEFAULT '{}',
  stopped_by    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_suite_idx ON sessions (suite_id, id DESC);
CREATE INDEX sessions_event_idx ON sessions (ci_event_id);

CREATE TABLE test_results (
  id           bigserial PRIMARY KEY,
  session_id   bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  path         text NOT NULL,
  status       text NOT NULL CHECK (status IN ('passed', 'failed', 'error', 'skipped')),
  exit_code    integer,
  duration_ms  integer NOT NULL,
  output       text NOT NULL DEFAULT '',
  finished_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (session_id, path)
);

CREATE TABLE deliveries (
  id            bigserial PRIMARY KEY,
  webhook_id    bigint NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  session_id    bigint REFERENCES sessions(id) ON DELETE SET NULL,
  event         text NOT NULL,
  xid           text NOT NULL,
  attempt       integer NOT NULL,
  status_code   integer,
  outcome       text NOT NULL CHECK (outcome IN ('delivered', 'retrying', 'dropped', 'gave_up')),
  error         text,
  duration_ms   integer NOT NULL,
  request_body  jsonb,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deliveries_webhook_idx ON deliveries (webhook_id, id DESC);
CREATE INDEX deliveries_xid_idx ON deliveries (xid);
