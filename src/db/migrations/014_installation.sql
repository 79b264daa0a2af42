-- This installation's id: every Temporal workflow id of Sluice carries it
-- (`sluice-<installation>-suite-<id>`), so a fresh database beside an old Temporal server, or
-- two installations on one namespace, never share a workflow. Made once, kept for good.
CREATE TABLE installation (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  id         text NOT NULL CHECK (id ~ '^[0-9a-f]{8}$'),
  created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO installation (id) VALUES (substr(replace(gen_random_uuid()::text, '-', ''), 1, 8));
