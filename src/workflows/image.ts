/**
 * The build's image, resolved once when its build starts (workflow code): its tag to a digest on
 * a runner, or a rebuild's digest checked there, and recorded on the session. Every worker on
 * every runner then runs that digest (steps/image/), and the history holds only the reference
 * and the digest: nothing of the image's own configuration, no credential.
 */
import type { ResolvedImage, SessionContext } from '../core/session';
import { normalizeImageRef } from '../core/imageRef';
import { imageResolver, records } from './proxies';

export async function resolveBuildImage(ctx: SessionContext, image: string): Promise<ResolvedImage> {
  const key = normalizeImageRef(image);
  const pinned = key !== null ? (ctx.imageDigests?.[key] ?? null) : null;
  const resolved = await imageResolver(ctx).resolveImage({ sessionId: ctx.sessionId, repoId: ctx.repoId, image, digest: pinned, secrets: ctx.trust.secrets });
  await records.recordImage(ctx.sessionId, resolved);
  return resolved;
}
