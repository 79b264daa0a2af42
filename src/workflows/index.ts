// Everything the worker's workflow bundle contains. Workflow code only: no I/O, no Node APIs.
export { suiteWorkflow } from './suite';
export { sessionWorkflow } from './session';
export { squashedWorkflow } from './squashed';
export { cleanupWorkflow } from './cleanup';
export { intakeWorkflow } from './intake';
