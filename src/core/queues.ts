/**
 * The build queue of an organization's own runners: where the build activities of a suite with
 * `own_runners` go, whatever the trigger's `queue` says. No keyed runner serves it; the workers'
 * gateway serves it for the organization's token runners, and only they take its jobs.
 */
export const ownRunnersQueue = (buildQueue: string, orgId: number): string => `${buildQueue}-org-${orgId}`;
