/**
 * Where a worker's workflow code comes from. `npm run build` bundles it once, into
 * dist/workflow-bundle.js (scripts/build.js calls writeWorkflowBundle), and a worker running
 * from dist loads that file: no webpack at start. Run from sources (tsx, jest) there is no
 * bundle, and the worker bundles src/workflows when it starts, as the SDK does by default.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, type WorkerOptions } from '@temporalio/worker';

const WORKFLOWS_DIR = path.join(__dirname, '..', 'workflows');
/** Next to the compiled workflows: dist/workflow-bundle.js. */
export const WORKFLOW_BUNDLE_FILE = path.join(__dirname, '..', 'workflow-bundle.js');

/** The worker options that name its workflow code: the prebuilt bundle if it is current, else the sources. */
export function workflowCode(): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (bundleIsCurrent()) return { workflowBundle: { codePath: WORKFLOW_BUNDLE_FILE } };
  return { workflowsPath: require.resolve('../workflows') };
}

/** Bundles the workflow code next to it (what `npm run build` does last). */
export async function writeWorkflowBundle(file = WORKFLOW_BUNDLE_FILE): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    logger: new DefaultLogger('WARN'),
  });
  await writeFile(file, code);
}

/**
 * A bundle older than any compiled workflow file is from an earlier build (dist/ recompiled
 * without `npm run build`): running it would run other workflow code than the files beside it.
 */
function bundleIsCurrent(): boolean {
  if (!existsSync(WORKFLOW_BUNDLE_FILE)) return false;
  const bundled = statSync(WORKFLOW_BUNDLE_FILE).mtimeMs;
  return readdirSync(WORKFLOWS_DIR).every((f) => statSync(path.join(WORKFLOWS_DIR, f)).mtimeMs <= bundled);
}
