-- What became of the steps after the tests (spec §1 steps 4-6): push to the CI server, chat,
-- e-mail. One row per attempted step (a step that is not configured leaves none); a failed
-- step is recorded here and shown on the report page, and never changes the session's status.
CREATE TABLE post_build_steps (
  id          bigserial PRIMARY KEY,
  session_id  bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  step        text NOT NULL CHECK (step IN ('push', 'chat', 'email')),
  ok          boolean NOT NULL,
  detail      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX post_build_steps_session_idx ON post_build_steps (session_id, id);
