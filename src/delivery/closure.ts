/**
 * The web hook closure sandbox (spec §2 "Web hook closure contract"): an organization's
 * `transform_payload(payload)` runs in QuickJS, compiled to WebAssembly, once per event.
 *
 * Isolation, and why each part is there:
 * - A fresh QuickJS runtime and context per run: nothing one event (or one organization's
 *   closure) leaves behind is seen by the next.
 * - No host objects at all: no console (a no-op one written in plain JS inside the sandbox),
 *   no fetch, no timers, no module loader, no std/os. The payload goes in as JSON text and is
 *   parsed inside; the result comes out as JSON text. No host function is ever callable.
 * - Memory: the WebAssembly instance gets a Memory whose `initial` equals its `maximum`, so
 *   the heap cannot grow past it whatever QuickJS does. QuickJS's own `setMemoryLimit` is set
 *   too (it gives an earlier, cleaner "out of memory") but alone it does not hold: this build
 *   cannot measure its allocations (no malloc_usable_size), and measured, an ArrayBuffer bomb
 *   under a 16 MiB limit got to 26 MiB before the heap itself ran out.
 * - Stack: QuickJS's stack limit. Some paths (JSON.parse of deep nesting, String() of deeply
 *   nested arrays, or a host that is already deep) exhaust V8's own stack first; that surfaces
 *   as a host RangeError, and the instance is thrown away (below).
 * - Time: an interrupt handler stops the run at the deadline (QuickJS interrupts are not
 *   catchable by the closure). Past the deadline in wall-clock time, a run goes on only while
 *   its own thread has used less CPU time than the deadline (Linux's scheduler statistics), so
 *   a machine busy with other work (builds, other workers) does not fail a good closure; and
 *   never past WALL_CLOCK_FACTOR times the deadline, so no closure holds the event loop long.
 *
 * The compiled WebAssembly.Module is cached for the process; the instance (and its memory) is
 * reused across runs until a run leaves it in doubt (out of memory, stack overflow, an engine
 * abort, a failed dispose), and then replaced. Runs are synchronous once the engine is loaded,
 * so two runs never interleave inside one instance.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import QuickJSEmscriptenLoader from '@jitl/quickjs-wasmfile-release-sync/emscripten-module';
import { QuickJSFFI } from '@jitl/quickjs-wasmfile-release-sync/ffi';
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type CustomizeVariantOptions,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core';
import { FRAMING_HEADERS } from './headers';

/**
 * The `@jitl/quickjs-wasmfile-release-sync` variant, assembled from its parts. The package's
 * own default export loads them with a dynamic import(), which Jest's module sandbox refuses
 * without --experimental-vm-modules; plain imports work everywhere.
 */
const releaseSyncVariant: QuickJSSyncVariant = {
  type: 'sync',
  importFFI: () => Promise.resolve(QuickJSFFI),
  importModuleLoader: () => Promise.resolve(QuickJSEmscriptenLoader),
};

export interface ClosureLimits {
  /**
   * Time budget of one run: top-level code, transform_payload and encoding its result. In
   * wall-clock time, stretched up to WALL_CLOCK_FACTOR times while the thread was not running.
   */
  deadlineMs?: number;
  /**
   * Size of the sandbox's whole WebAssembly memory (engine, stack and heap): the hard cap.
   * At least 16 MiB, the engine's own minimum; rounded up to 64 KiB pages.
   */
  memoryBytes?: number;
  /** QuickJS stack budget. */
  stackBytes?: number;
  /** Largest result accepted (the JSON text of `{status, headers, body}`). */
  maxResultBytes?: number;
}

export const DEFAULT_CLOSURE_LIMITS: Required<ClosureLimits> = {
  deadlineMs: 50,
  memoryBytes: 32 * 1024 * 1024,
  // ~1,500 frames of a simple recursive function; deep enough for any payload transform, and
  // small enough that QuickJS's check usually fires before V8's own stack runs out.
  stackBytes: 256 * 1024,
  maxResultBytes: 1024 * 1024,
};

export type FallbackReason = 'status' | 'throw' | 'timeout' | 'memory' | 'stack' | 'malformed';

export type ClosureResult =
  | { kind: 'ok'; headers: Record<string, string>; body: string }
  | { kind: 'fallback'; reason: FallbackReason; detail: string };

export type CompileResult = { ok: true } | { ok: false; error: string };

const MAX_HEADERS = 64;
const MAX_HEADER_VALUE_CHARS = 8 * 1024;
/** RFC 9110 token: what a header name may be made of. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** RFC 9110 field-value characters that undici accepts: no CR, LF, NUL or other controls. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

const WASM_PAGE = 64 * 1024;
/** The engine's static data and C stack live in the same memory as the heap (~5 MiB measured). */
const ENGINE_OVERHEAD_BYTES = 8 * 1024 * 1024;
const MIN_MEMORY_BYTES = 16 * 1024 * 1024;
/** Extra time granted after a failure, to read the closure's error out of the sandbox. */
const DESCRIBE_GRACE_MS = 10;
const FILENAME = 'closure.js';
/** A run is stopped after this many times its deadline of wall-clock time, whatever its CPU time. */
export const WALL_CLOCK_FACTOR = 3;

let schedstatReadable: boolean | undefined;

/**
 * CPU time of the calling thread in ms, from /proc/thread-self/schedstat (nanoseconds run);
 * null where the system has no such file. Only this thread: not the process's, whose other
 * threads (V8 compiling the closure's hot code, say) would eat into the closure's budget.
 */
export function threadCpuMs(): number | null {
  if (schedstatReadable === false) return null;
  try {
    const ns = Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ', 1)[0]);
    schedstatReadable = Number.isFinite(ns);
    return schedstatReadable ? ns / 1e6 : null;
  } catch {
    schedstatReadable = false;
    return null;
  }
}

/**
 * Runs before the closure, in the same context: captures JSON and friends before the closure
 * can replace them, installs a console that does nothing, and returns the three functions the
 * host calls. Plain JavaScript: it gives the sandbox nothing it could not write itself.
 */
const PRELUDE = `(function () {
  'use strict';
  var parse = JSON.parse, stringify = JSON.stringify, S = String, E = Error, P = Promise;
  var noop = function () {};
  globalThis.console = { log: noop, info: noop, warn: noop, error: noop, debug: noop, trace: noop };
  return [
    function call(fn, json) { return fn(parse(json)); },
    function encode(value) {
      if (value instanceof P) return 2;
      try { var text = stringify(value); return typeof text === 'string' ? text : 1; }
      catch (e) { return 1; }
    },
    function describe(e) {
      try {
        if (e instanceof E) {
          return stringify({ name: S(e.name), message: S(e.message).slice(0, 500), stack: S(e.stack).slice(0, 2000) });
        }
        return stringify({ thrown: typeof e, message: S(e).slice(0, 500) });
      } catch (_) {
        return null;
      }
    },
  ];
})()`;

/**
 * The little of the WebAssembly API used here. The project compiles against ES2022 without the
 * DOM library, which is where TypeScript declares WebAssembly; Node has it all the same.
 */
interface WasmApi {
  compile(bytes: Uint8Array): Promise<object>;
  Memory: new (descriptor: { initial: number; maximum: number }) => { readonly buffer: ArrayBuffer };
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

interface Engine {
  quickjs: QuickJSWASMModule;
  memory: InstanceType<WasmApi['Memory']>;
  pages: number;
  /** Set once a run has left the instance in doubt; the next run makes a new one. */
  poisoned: boolean;
}

let compiledModule: Promise<object> | undefined;
let currentEngine: Promise<Engine> | undefined;
let instancesCreated = 0;
/** The newest instance, poisoned or not: what closureEngineInfo() reports on. */
let lastEngine: Engine | undefined;

/**
 * Checks a closure when it is saved: it must parse, its top-level code must run within the
 * limits, and it must define a function `transform_payload`. The error names the line where
 * QuickJS could tell.
 */
export async function compileClosure(source: string, limits: ClosureLimits = {}): Promise<CompileResult> {
  const outcome = await withSandbox(source, limits, (sandbox) => sandbox.loadTransform());
  return outcome.kind === 'failed' ? { ok: false, error: outcome.detail } : { ok: true };
}

/**
 * Runs `transform_payload(payload)` on one event. `ok` carries what to send; `fallback` says
 * why the default payload must be sent instead. Never throws for anything the closure does.
 */
export async function runClosure(source: string, payload: unknown, limits: ClosureLimits = {}): Promise<ClosureResult> {
  const payloadJson = JSON.stringify(payload) ?? 'null';
  const max = limits.maxResultBytes ?? DEFAULT_CLOSURE_LIMITS.maxResultBytes;
  const outcome = await withSandbox(source, limits, (sandbox) => {
    const loaded = sandbox.loadTransform();
    if (loaded.kind !== 'ready') return loaded;
    return sandbox.transform(payloadJson);
  });
  if (outcome.kind !== 'result') {
    return outcome.kind === 'ready'
      ? { kind: 'fallback', reason: 'malformed', detail: 'no result' }
      : { kind: 'fallback', reason: outcome.reason, detail: outcome.detail };
  }
  if (Buffer.byteLength(outcome.json, 'utf8') > max) {
    return { kind: 'fallback', reason: 'malformed', detail: `result is larger than ${max} bytes` };
  }
  return interpretResult(JSON.parse(outcome.json) as unknown);
}

/**
 * For tests and diagnostics: how many instances were made so far, and the size of the newest
 * one's memory right now (it never exceeds the limit it was made with: that is the cap).
 */
export function closureEngineInfo(): { instancesCreated: number; memoryBytes: number | null; poisoned: boolean } {
  return {
    instancesCreated,
    memoryBytes: lastEngine ? lastEngine.memory.buffer.byteLength : null,
    poisoned: lastEngine?.poisoned ?? false,
  };
}

/**
 * Checks the result's shape and turns it into headers and a body. Exported for tests; the
 * input is what came out of the sandbox, already parsed on the host side.
 */
export function interpretResult(result: unknown): ClosureResult {
  const malformed = (detail: string): ClosureResult => ({ kind: 'fallback', reason: 'malformed', detail });
  if (!isPlainObject(result)) {
    return malformed(`transform_payload must return an object {status, headers, body}, got ${describeType(result)}`);
  }
  if (!('status' in result)) return malformed('the result has no status');
  if (typeof result.status !== 'string') return malformed(`status must be a string, got ${describeType(result.status)}`);
  if (result.status !== 'ok') {
    return { kind: 'fallback', reason: 'status', detail: `transform_payload returned status ${JSON.stringify(result.status.slice(0, 100))}` };
  }
  if (!('body' in result)) return malformed('the result has no body');

  const headers: Record<string, string> = {};
  if (result.headers !== undefined) {
    if (!isPlainObject(result.headers)) return malformed(`headers must be an object, got ${describeType(result.headers)}`);
    const entries = Object.entries(result.headers);
    if (entries.length > MAX_HEADERS) return malformed(`more than ${MAX_HEADERS} headers`);
    const seen = new Set<string>();
    for (const [name, value] of entries) {
      const shown = JSON.stringify(name.slice(0, 100));
      if (!HEADER_NAME.test(name)) return malformed(`header name ${shown} is not a valid HTTP header name`);
      if (typeof value !== 'string') return malformed(`header ${shown} must be a string, got ${describeType(value)}`);
      if (value.length > MAX_HEADER_VALUE_CHARS) return malformed(`header ${shown} is longer than ${MAX_HEADER_VALUE_CHARS} characters`);
      if (!HEADER_VALUE.test(value)) return malformed(`header ${shown} contains characters a header value cannot carry`);
      const lower = name.toLowerCase();
      if (seen.has(lower)) return malformed(`header ${shown} is given twice`);
      seen.add(lower);
      // Framing and hop-by-hop headers are ours; dropping them (rather than failing) keeps a
      // closure that copies headers from elsewhere working.
      if (!FRAMING_HEADERS.has(lower)) headers[name] = value;
    }
  }
  const body = typeof result.body === 'string' ? result.body : JSON.stringify(result.body);
  return { kind: 'ok', headers, body };
}

// ---------------------------------------------------------------------------------------------
// The sandbox

type Failure = { kind: 'failed'; reason: FallbackReason; detail: string };
type SandboxOutcome = Failure | { kind: 'ready' } | { kind: 'result'; json: string };

interface Sandbox {
  /** Runs the closure's top-level code and finds transform_payload. */
  loadTransform(): Failure | { kind: 'ready' };
  /** Calls transform_payload on the payload and encodes its result as JSON text. */
  transform(payloadJson: string): Failure | { kind: 'result'; json: string };
}

/** Thrown inside a run when the engine itself broke (not the closure's code): poisons the instance. */
class EngineFailure extends Error {
  constructor(
    readonly reason: FallbackReason,
    message: string,
  ) {
    super(message);
  }
}

async function withSandbox(
  source: string,
  limits: ClosureLimits,
  body: (sandbox: Sandbox) => SandboxOutcome,
): Promise<SandboxOutcome> {
  const l = { ...DEFAULT_CLOSURE_LIMITS, ...limits };
  const pages = Math.ceil(Math.max(l.memoryBytes, MIN_MEMORY_BYTES) / WASM_PAGE);
  // A run never awaits once it has its engine, but another run may have poisoned this one
  // between getEngine() and our turn: then fetch again.
  for (;;) {
    const engine = await getEngine(pages);
    if (!engine.poisoned) return runInEngine(engine, source, l, body);
  }
}

function runInEngine(
  engine: Engine,
  source: string,
  l: Required<ClosureLimits>,
  body: (sandbox: Sandbox) => SandboxOutcome,
): SandboxOutcome {
  const handles: QuickJSHandle[] = [];
  const keep = (h: QuickJSHandle): QuickJSHandle => (handles.push(h), h);
  let budget = l.deadlineMs;
  let wallStart = performance.now();
  let cpuStart = threadCpuMs();
  /** Past the budget in wall-clock time, and (where the system tells) in the thread's CPU time. */
  const overBudget = (): boolean => {
    const elapsed = performance.now() - wallStart;
    if (elapsed <= budget) return false;
    if (elapsed > budget * WALL_CLOCK_FACTOR) return true;
    const cpu = cpuStart === null ? null : threadCpuMs();
    return cpu === null || cpuStart === null || cpu - cpuStart > budget;
  };
  /** What is running, for the log: the closure's top level, transform_payload, or encoding. */
  let stage = 'the closure';
  let interrupted = false;
  let outcome: SandboxOutcome;
  let ctx: QuickJSContext | undefined;

  const rt = engine.quickjs.newRuntime();
  try {
    rt.setMemoryLimit(Math.max(engine.pages * WASM_PAGE - ENGINE_OVERHEAD_BYTES, (engine.pages * WASM_PAGE) / 2));
    rt.setMaxStackSize(l.stackBytes);
    const c = (ctx = rt.newContext());

    // Our own prelude runs before the deadline is armed: on a fresh engine under load it can take
    // longer than a closure's whole budget, and an interrupted prelude would read as "out of memory".
    const prelude = c.evalCode(PRELUDE, 'sluice-prelude.js', { type: 'global' });
    if (prelude.error) {
      keep(prelude.error);
      throw new EngineFailure('memory', 'the sandbox could not start');
    }
    wallStart = performance.now();
    cpuStart = threadCpuMs();
    rt.setInterruptHandler(() => {
      if (!overBudget()) return false;
      interrupted = true;
      return true;
    });
    const fns = keep(prelude.value);
    const [callFn, encodeFn, describeFn] = [0, 1, 2].map((i) => keep(c.getProp(fns, i)));

    /** What a failed evaluation means, read with a short grace period past the deadline. */
    const failure = (error: QuickJSHandle): Failure => {
      keep(error);
      if (interrupted) return { kind: 'failed', reason: 'timeout', detail: `${stage} ran past the ${l.deadlineMs} ms deadline` };
      budget = DESCRIBE_GRACE_MS;
      wallStart = performance.now();
      cpuStart = threadCpuMs();
      const described = c.callFunction(describeFn!, c.undefined, error);
      const text = described.error ? (keep(described.error), null) : readString(c, keep(described.value));
      if (text === null && interrupted) {
        // What it threw runs code of its own when described (a toString, a getter) that loops.
        return { kind: 'failed', reason: 'throw', detail: `${stage} threw a value that could not be described in time` };
      }
      if (text === null) {
        // Not even the error could be read: the sandbox is out of room.
        throw new EngineFailure('memory', `${stage} failed and its error could not be read (out of memory?)`);
      }
      return classifyError(JSON.parse(text) as ErrorDescription, stage);
    };

    let fn: QuickJSHandle | undefined;
    const sandbox: Sandbox = {
      loadTransform() {
        const top = c.evalCode(source, FILENAME, { type: 'global' });
        if (top.error) return failure(top.error);
        keep(top.value);
        const found = c.evalCode('typeof transform_payload === "function" ? transform_payload : undefined', 'sluice-lookup.js', {
          type: 'global',
        });
        if (found.error) return failure(found.error);
        fn = keep(found.value);
        if (c.typeof(fn) !== 'function') {
          return { kind: 'failed', reason: 'malformed', detail: 'the closure does not define a function transform_payload(payload)' };
        }
        return { kind: 'ready' };
      },
      transform(payloadJson) {
        if (!fn) throw new Error('transform() before loadTransform()');
        stage = 'transform_payload';
        const input = keep(c.newString(payloadJson));
        const called = c.callFunction(callFn!, c.undefined, fn, input);
        if (called.error) return failure(called.error);
        stage = 'encoding the result';
        const encoded = c.callFunction(encodeFn!, c.undefined, keep(called.value));
        if (encoded.error) return failure(encoded.error);
        const json = readString(c, keep(encoded.value));
        if (json !== null) return { kind: 'result', json };
        const promise = c.typeof(encoded.value) === 'number' && c.getNumber(encoded.value) === 2;
        return {
          kind: 'failed',
          reason: 'malformed',
          detail: promise
            ? 'transform_payload must return its result directly, not a Promise (it runs synchronously)'
            : 'transform_payload must return a JSON-encodable object (got undefined, a function, a cycle or a BigInt)',
        };
      },
    };
    outcome = body(sandbox);
  } catch (err) {
    engine.poisoned = true;
    outcome = engineFailure(err, stage);
  }
  // After an engine failure its state is not to be trusted, so nothing more is called in it:
  // the whole instance is dropped, memory and all (quickjs-emscripten keeps no finalizers).
  if (!engine.poisoned) {
    // Every handle must go before the context, or QuickJS aborts in JS_FreeRuntime.
    try {
      for (const h of handles.reverse()) if (h.alive) h.dispose();
      ctx?.dispose();
      rt.dispose();
    } catch {
      engine.poisoned = true;
    }
  }
  // Out of memory or stack may have left the heap fragmented or the C stack pointer astray.
  if (outcome.kind === 'failed' && (outcome.reason === 'memory' || outcome.reason === 'stack')) engine.poisoned = true;
  return outcome;
}

function readString(ctx: QuickJSContext, h: QuickJSHandle): string | null {
  return ctx.typeof(h) === 'string' ? ctx.getString(h) : null;
}

interface ErrorDescription {
  name?: string;
  message: string;
  stack?: string;
  thrown?: string;
}

function classifyError(e: ErrorDescription, stage: string): Failure {
  if (e.thrown !== undefined) {
    return { kind: 'failed', reason: 'throw', detail: `${stage} threw a ${e.thrown}: ${e.message}` };
  }
  const where = location(e.stack);
  const text = `${e.name}: ${e.message}${where}`;
  // QuickJS's ceiling on one string's length is a memory limit too, met by the same bombs.
  if (e.name === 'InternalError' && (e.message === 'out of memory' || e.message === 'string too long')) {
    return { kind: 'failed', reason: 'memory', detail: `${stage} ran out of memory${where}` };
  }
  if (e.name === 'InternalError' && e.message === 'stack overflow') {
    return { kind: 'failed', reason: 'stack', detail: `${stage} overflowed the stack${where}` };
  }
  return { kind: 'failed', reason: 'throw', detail: stage === 'the closure' ? text : `${stage} threw ${text}` };
}

/** " (line 3, column 7)" from the first frame in the closure's own source, if any. */
function location(stack: string | undefined): string {
  const m = new RegExp(`${FILENAME.replace('.', '\\.')}:(\\d+)(?::(\\d+))?`).exec(stack ?? '');
  if (!m) return '';
  return m[2] ? ` (line ${m[1]}, column ${m[2]})` : ` (line ${m[1]})`;
}

function engineFailure(err: unknown, stage: string): Failure {
  if (err instanceof EngineFailure) return { kind: 'failed', reason: err.reason, detail: err.message };
  const message = err instanceof Error ? err.message : String(err);
  // V8's own stack ran out inside the WebAssembly code (deep C recursion in QuickJS).
  if (err instanceof RangeError && /call stack/i.test(message)) {
    return { kind: 'failed', reason: 'stack', detail: `${stage} overflowed the stack (in the engine)` };
  }
  // An engine abort: with a fixed-size memory, running out of it is what makes one.
  return { kind: 'failed', reason: 'memory', detail: `the sandbox failed in ${stage}: ${message.slice(0, 300)}` };
}

// ---------------------------------------------------------------------------------------------
// The engine: one compiled module per process, one instance at a time

async function getEngine(pages: number): Promise<Engine> {
  for (;;) {
    const pending = (currentEngine ??= newEngine(pages).catch((err: unknown) => {
      currentEngine = undefined; // a failed load is retried by the next run
      throw err;
    }));
    const engine = await pending;
    if (!engine.poisoned && engine.pages === pages) return engine;
    // Poisoned (or sized for other limits): let it go, memory and all, and make a new one.
    if (currentEngine === pending) currentEngine = undefined;
  }
}

async function newEngine(pages: number): Promise<Engine> {
  compiledModule ??= readFile(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm'))
    .then((bytes) => wasm.compile(bytes))
    .catch((err: unknown) => {
      compiledModule = undefined;
      throw err;
    });
  const wasmModule = await compiledModule;
  // initial === maximum: the instance can never grow its memory, whatever the engine asks for.
  const memory = new wasm.Memory({ initial: pages, maximum: pages });
  const quiet = (): void => {};
  const quickjs = await newQuickJSWASMModuleFromVariant(
    newVariant(releaseSyncVariant, {
      wasmModule,
      wasmMemory: memory,
      // An engine abort prints to stderr before it throws; the throw is what we act on.
      emscriptenModule: { print: quiet, printErr: quiet } as CustomizeVariantOptions['emscriptenModule'],
    }),
  );
  instancesCreated++;
  const engine: Engine = { quickjs, memory, pages, poisoned: false };
  if (!warmedUp) {
    warmUp(engine);
    warmedUp = true;
  }
  lastEngine = engine;
  return engine;
}

/**
 * WebAssembly functions are compiled lazily, on their first call: measured, the first run of
 * an ordinary closure takes ~20 ms on an idle machine, and past the deadline on a busy one, so
 * a good closure would fall back for no fault of its own. These runs, with time to spare, take
 * that cost once per process (the compiled code is the module's, shared by later instances):
 * parsing, calling, building objects and strings, encoding, and describing a thrown error.
 */
const WARM_UP_SOURCES = [
  `function transform_payload(p) {
     var h = {}; h['X-' + p.event] = String(p.session);
     return { status: 'ok', headers: h, body: { text: p.repository.name + ' ' + p.status, n: p.list.map(function (x) { return x * 2; }), ok: /^[a-z]+$/.test(p.event) } };
   }`,
  `function transform_payload(p) { throw new TypeError('no ' + p.nope.deeper); }`,
];
const WARM_UP_PAYLOAD = JSON.stringify({ event: 'stop', session: 1, status: 'passed', repository: { name: 'warm' }, list: [1, 2, 3] });
let warmedUp = false;

function warmUp(engine: Engine): void {
  const limits = { ...DEFAULT_CLOSURE_LIMITS, deadlineMs: 5_000 };
  for (const source of WARM_UP_SOURCES) {
    runInEngine(engine, source, limits, (sandbox) => {
      const loaded = sandbox.loadTransform();
      return loaded.kind === 'ready' ? sandbox.transform(WARM_UP_PAYLOAD) : loaded;
    });
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describeType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.slice(0, 50))}`;
  return `${typeof v} ${String(v)}`;
}
