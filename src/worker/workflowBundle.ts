/**
 * Where a worker's workflow code comes from. `npm run build` bundles it once, into
 * dist/workflow-bundle.js (scripts/build.js calls writeWorkflowBundle), and a worker running
 * from dist loads that file: no webpack at start. Run from sources (tsx, jest) there is no
 * bundle, and the worker bundles src/workflows when it starts, as the SDK does by default.
 *
 * A worker that traces runs the same workflows with the tracing interceptors bundled in
 * (workflows/tracing.ts): dist/workflow-bundle-traced.js. Two bundles, so that a worker that
 * does not trace runs no interceptor at all.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, type WorkerOptions } from '@temporalio/worker';

const WORKFLOWS_DIR = path.join(__dirname, '..', 'workflows');
/** Next to the compiled workflows: dist/workflow-bundle.js. */
export const WORKFLOW_BUNDLE_FILE = path.join(__dirname, '..', 'workflow-bundle.js');
/** The same with the tracing interceptors: dist/workflow-bundle-traced.js. */
export const TRACED_WORKFLOW_BUNDLE_FILE = path.join(__dirname, '..', 'workflow-bundle-traced.js');

/** The workflow interceptor modules of a worker that traces. */
const tracingModules = () => [require.resolve('../workflows/tracing')];

/**
 * The worker options that name its workflow code: the prebuilt bundle if it is current, else
 * the sources (with the tracing interceptors, for a worker that traces).
 */
export function workflowCode(opts: { traced?: boolean } = {}): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath' | 'interceptors'> {
  const file = opts.traced ? TRACED_WORKFLOW_BUNDLE_FILE : WORKFLOW_BUNDLE_FILE;
  if (bundleIsCurrent(file)) return { workflowBundle: { codePath: file } };
  return { workflowsPath: require.resolve('../workflows'), ...(opts.traced ? { interceptors: { workflowModules: tracingModules() } } : {}) };
}

/** Bundles the workflow code next to it, without and with tracing (what `npm run build` does last). */
export async function writeWorkflowBundle(file = WORKFLOW_BUNDLE_FILE, traced = TRACED_WORKFLOW_BUNDLE_FILE): Promise<void> {
  const bundle = (workflowInterceptorModules: string[]) =>
    bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), workflowInterceptorModules, logger: new DefaultLogger('WARN') });
  await writeFile(file, (await bundle([])).code);
  await writeFile(traced, (await bundle(tracingModules())).code);
}

/**
 * A bundle older than any compiled workflow file is from an earlier build (dist/ recompiled
 * without `npm run build`): running it would run other workflow code than the files beside it.
 */
function bundleIsCurrent(file: string): boolean {
  if (!existsSync(file)) return false;
  const bundled = statSync(file).mtimeMs;
  return readdirSync(WORKFLOWS_DIR).every((f) => statSync(path.join(WORKFLOWS_DIR, f)).mtimeMs <= bundled);
}
