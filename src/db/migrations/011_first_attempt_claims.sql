-- `received` goes out from the API as soon as a trigger is accepted (issue 11: it waited for
-- the suite's queue), and from the session workflow's delivery lane only if the API's attempt
-- did not deliver it. Whoever inserts the claim first makes the first attempt; the other reads
-- the log. A claim with no attempt after a while (the API died mid-send) is taken over.
CREATE TABLE first_attempt_claims (
  session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  webhook_id bigint NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  event      text NOT NULL,
  claimed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, webhook_id, event)
);
