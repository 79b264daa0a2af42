-- Issue 23: a suite whose builds run only on its organization's own runners (runners started
-- with a token of that organization). Its sessions' build activities go to the organization's
-- own build queue (core/queues.ts), which only the worker's gateway serves, for those runners.
ALTER TABLE suites ADD COLUMN own_runners boolean NOT NULL DEFAULT false;
