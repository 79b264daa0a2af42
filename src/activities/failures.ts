/**
 * The `ApplicationFailure.type` of every failure Sluice's activities throw on purpose, in one
 * table: what the Temporal UI shows, what workflow code and retry policies
 * (`nonRetryableErrorTypes`) may match on. Constants only, no imports.
 *
 * Retryable ones (`*Retrying`, `CheckoutUnreachable`) say "this attempt failed, the retry policy
 * decides about the next"; the others are thrown non-retryable: no attempt can mend them.
 */
export const FAILURE_TYPES = {
  // checkout (steps/checkout)
  /** The SCM host could not be reached or timed out; retryable. */
  checkoutUnreachable: 'CheckoutUnreachable',
  /** A wrong key, an unknown commit, a bad URL, a repository that is gone. */
  checkoutFailed: 'CheckoutFailed',
  // the build's image (steps/image)
  /** The registry did not answer (or answered oddly); retryable. */
  imageUnavailable: 'ImageUnavailable',
  /** The registry refused the pull, has no such image, or rate-limits it; or the reference is not valid. */
  imageRefused: 'ImageRefused',
  // tests (steps/tests)
  /** A test or JUnit pattern that is absolute or leaves the tree. */
  invalidPattern: 'InvalidPattern',
  /** More test files match than one build may run (SLUICE_MAX_TEST_FILES). */
  tooManyTestFiles: 'TooManyTestFiles',
  // after the tests (activities/post): a failed step is recorded, not thrown, once it is final
  /** The repository to push from is gone. */
  pushFailed: 'PushFailed',
  /** This push attempt failed (CI server unreachable); more attempts remain. */
  pushRetrying: 'PushRetrying',
  /** This chat attempt failed (connection, time-out, 408, 429, 5xx); more attempts remain. */
  chatRetrying: 'ChatPostRetrying',
  /** This e-mail attempt failed (connection, time-out, a 4xx reply); more attempts remain. */
  emailRetrying: 'EmailRetrying',
  // webhook deliveries (activities/delivery.ts)
  /** This delivery attempt failed (connection, time-out, 408, 429, 5xx); more attempts remain. */
  webhookDeliveryRetrying: 'WebhookDeliveryRetrying',
  /** The last attempt failed too: logged as `gave_up`. */
  webhookDeliveryGaveUp: 'WebhookDeliveryGaveUp',
  /** The receiver refused for good (other 4xx, 3xx, TLS, SSRF guard, unsealable secret): `dropped`. */
  webhookDeliveryDropped: 'WebhookDeliveryDropped',
  // commit statuses on the hosting site (activities/commitStatus.ts)
  /** This status post failed (connection, time-out, 408, 429, a rate limit, 5xx); more attempts remain. */
  commitStatusRetrying: 'CommitStatusRetrying',
  /** The last attempt failed too: logged as `gave_up`. */
  commitStatusGaveUp: 'CommitStatusGaveUp',
  /** The provider refused for good (other 4xx, 3xx, TLS, SSRF guard, settings that make no request): `dropped`. */
  commitStatusDropped: 'CommitStatusDropped',
} as const;

export type FailureType = (typeof FAILURE_TYPES)[keyof typeof FAILURE_TYPES];

/** The delivery activity's part of the table, in the shape activities/delivery.ts exports as its FAILURE_TYPES. */
export const DELIVERY_FAILURE_TYPES = {
  retrying: FAILURE_TYPES.webhookDeliveryRetrying,
  gaveUp: FAILURE_TYPES.webhookDeliveryGaveUp,
  dropped: FAILURE_TYPES.webhookDeliveryDropped,
} as const;
