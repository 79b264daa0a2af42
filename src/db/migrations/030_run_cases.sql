-- Test cases from the reports every run leaves (issue 37): a batch's, and a file's run by
-- itself, read from SLUICE_REPORT_DIR, not only the files a suite's junit_pattern names.
-- run: the run that read it (its report directory's id: a batch's number, `<batch>-<n>` for a
-- file run alone); NULL for a junit_pattern report's case, collected at the lane's end.
-- test_file: the test file of the checkout the case belongs to (NULL: a junit_pattern report's
-- case, or one whose report names no file a run had). A file's cases are replaced when it runs
-- again (a retry, a pinning run); a case that failed and then passed on the retry is flaky.
ALTER TABLE test_cases
  ADD COLUMN run text,
  ADD COLUMN test_file text,
  ADD COLUMN failure_file text,
  ADD COLUMN failure_line integer,
  ADD COLUMN flaky boolean NOT NULL DEFAULT false;
-- The build page and GET /sessions/:id/cases list a session's cases by status (failing first).
CREATE INDEX test_cases_session_status_idx ON test_cases (session_id, status, id);
CREATE INDEX test_cases_session_file_idx ON test_cases (session_id, test_file) WHERE test_file IS NOT NULL;
