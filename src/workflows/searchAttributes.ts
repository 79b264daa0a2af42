/**
 * Sluice's custom search attributes: they make builds findable in the Temporal UI and with
 * `temporal workflow list --query 'SluiceRepo = "acme/app"'`.
 *
 * Workflow code sets them (suite.ts, status.ts), so they live beside it and stay
 * deterministic-sandbox safe: @temporalio/common only, no node: imports. The roles' start-up
 * (temporal/) registers them with the server.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** `org/repo` of the build. */
export const SluiceRepo = defineSearchAttributeKey('SluiceRepo', SearchAttributeType.KEYWORD);
export const SluiceBranch = defineSearchAttributeKey('SluiceBranch', SearchAttributeType.KEYWORD);
/** The session number (spec: integer `session`). */
export const SluiceSession = defineSearchAttributeKey('SluiceSession', SearchAttributeType.INT);
/** Where a session (or a suite, between sessions) stands: queued, running, passed, failed, ... */
export const SluiceStatus = defineSearchAttributeKey('SluiceStatus', SearchAttributeType.KEYWORD);

export const SLUICE_SEARCH_ATTRIBUTES = [SluiceRepo, SluiceBranch, SluiceSession, SluiceStatus] as const;

/** The spelling `temporal server start-dev --search-attribute` wants for each SDK type. */
const CLI_TYPE_NAMES: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** `Name=Type` pairs, e.g. `SluiceRepo=Keyword`, one per `--search-attribute` flag. */
export const SLUICE_SEARCH_ATTRIBUTE_FLAGS: readonly string[] = SLUICE_SEARCH_ATTRIBUTES.map(
  (key) => `${key.name}=${CLI_TYPE_NAMES[key.type]}`,
);
