-- SSH host keys are trusted on first use, per repository: what ssh learned on the first
-- connection to the SCM (and CI) servers, in known_hosts format; a later connection to a host
-- whose key differs fails. NULL: nothing learned yet (or reset by an administrator).
ALTER TABLE repos ADD COLUMN ssh_known_hosts text;
