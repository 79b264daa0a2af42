-- The full delivery log of outgoing webhooks (issue 5), closures and signatures.

-- Standard Webhooks signing secret (`whsec_...`), sealed like the password; NULL: unsigned.
ALTER TABLE webhooks ADD COLUMN secret_sealed text;

-- The event payload (before any closure), kept apart from what was sent: redelivery sends the
-- same payload again. Rows written before this migration sent exactly their payload.
ALTER TABLE deliveries ADD COLUMN payload jsonb;
UPDATE deliveries SET payload = request_body;

-- What went over the wire, byte for byte: a closure may send something that is not JSON.
ALTER TABLE deliveries ALTER COLUMN request_body TYPE text USING request_body::text;

ALTER TABLE deliveries
  -- How the attempt came about: a session's event, a redelivery asked for, or a ping.
  ADD COLUMN origin          text NOT NULL DEFAULT 'event' CHECK (origin IN ('event', 'redeliver', 'ping')),
  -- The receiver's URL at the time of the attempt.
  ADD COLUMN url             text,
  -- Credentials and the signature are replaced by "[redacted]" before they get here.
  ADD COLUMN request_headers  jsonb,
  ADD COLUMN response_headers jsonb,
  -- The first few KiB of the receiver's answer.
  ADD COLUMN response_body    text,
  ADD COLUMN error_class      text CHECK (error_class IN
    ('http_status', 'timeout', 'connection', 'dns', 'tls', 'blocked', 'invalid_request', 'configuration')),
  -- When the next attempt is due (outcome `retrying` only).
  ADD COLUMN next_attempt_at  timestamptz,
  -- What the webhook's closure made of the payload; NULL when it has none.
  ADD COLUMN closure_outcome  text CHECK (closure_outcome IN ('ok', 'status', 'throw', 'timeout', 'memory', 'stack', 'malformed')),
  ADD COLUMN closure_detail   text;

CREATE INDEX deliveries_session_idx ON deliveries (session_id) WHERE session_id IS NOT NULL;
