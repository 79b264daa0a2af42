-- Issue 26: the API accepts a trigger from what it knows of the repository and hands it to
-- Temporal; the suite's workflow records it (db/intake.ts). A record may be written twice (an
-- activity retried after its commit): the session's intake key (`<guid>:<ref index>`) makes
-- the second write find the first.
ALTER TABLE sessions ADD COLUMN intake_key text;
CREATE UNIQUE INDEX sessions_intake_key_idx ON sessions (intake_key) WHERE intake_key IS NOT NULL;

-- Branch hiding and showing arrive by more than one way (a suite's workflow, the repository's
-- intake workflow), so they may be recorded out of order: the newest trigger's word stands.
ALTER TABLE branches ADD COLUMN hidden_at timestamptz;

-- What the API decides triggers from (api/triggerKnowledge.ts) is read again whenever it
-- changes, by whichever process changed it: the API keeps a copy to accept triggers while
-- PostgreSQL is away.
CREATE FUNCTION sluice_trigger_knowledge_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('sluice_trigger_knowledge', TG_TABLE_NAME);
  RETURN NULL;
END $$;
CREATE TRIGGER trigger_knowledge AFTER INSERT OR DELETE OR UPDATE ON orgs
  FOR EACH STATEMENT EXECUTE FUNCTION sluice_trigger_knowledge_changed();
CREATE TRIGGER trigger_knowledge AFTER INSERT OR DELETE OR UPDATE ON repos
  FOR EACH STATEMENT EXECUTE FUNCTION sluice_trigger_knowledge_changed();
CREATE TRIGGER trigger_knowledge AFTER INSERT OR DELETE OR UPDATE OF repo_id, branch, workers ON suites
  FOR EACH STATEMENT EXECUTE FUNCTION sluice_trigger_knowledge_changed();
CREATE TRIGGER trigger_knowledge AFTER INSERT OR DELETE OR UPDATE ON branches
  FOR EACH STATEMENT EXECUTE FUNCTION sluice_trigger_knowledge_changed();
