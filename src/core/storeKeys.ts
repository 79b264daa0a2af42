/** Where things are in the blob store (src/store): names the data layer and the runner share. */

/** Where a repository's cache entries are in the store: everything under it goes with the repository. */
export const repoCachePrefix = (repoId: number) => `caches/${repoId}`;
