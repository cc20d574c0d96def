// What the harness iterates over: targets (servers to measure) × scenarios (workloads), plus
// extra report sections. Modules register themselves at import time, so adding a target or a
// scenario never means editing the harness loop in run.ts.
import type { ProtocolId } from './protocols.js';
import type { Section } from './report.js';

/** A started server. `url` is its JSON-RPC endpoint (the agent card's url). */
export interface Running {
  url: string;
  /** The base of its A2A 1.0 HTTP+JSON (REST) binding, if it serves one (`…/message:send`). */
  restUrl?: string;
  pid: number;
  pinned: boolean;
  stop(): Promise<void>;
}

/** Skill ids a target uses for the two benchmark workloads (Handoff names workflows its own way). */
export interface SkillIds {
  echo: string;
  approval: string;
}

export interface Target {
  name: string;
  description: string;
  skills?: Partial<SkillIds>;
  /** The scenarios this target serves (default: all); in the others it is "not applicable". */
  only?: string[];
  /** The A2A bindings it serves (default: 0.3 JSON-RPC only); see lib/protocols.ts. */
  protocols?: readonly ProtocolId[];
  /** Start a fresh server; reject if it cannot (the harness then records "not available"). */
  start(): Promise<Running>;
}

export interface RunMode {
  quick: boolean;
  rounds: number;
  /** Measured seconds per run, and un-measured warm-up seconds before it (JIT, connections). */
  durationS: number;
  warmupS: number;
}

export interface ScenarioContext {
  target: Target;
  running: Running;
  skills: SkillIds;
  mode: RunMode;
  log(message: string): void;
}

/** Flat numeric figures of one run; medians are taken key by key across rounds. */
export type Figures = Record<string, number>;

/** The figures of one part of a run under `prefix.` (e.g. `pg.reqPerSec`). */
export const prefixed = (prefix: string, figures: Figures): Figures =>
  Object.fromEntries(Object.entries(figures).map(([k, v]) => [`${prefix}.${k}`, v]));

export interface CellResult {
  target: string;
  status: 'ok' | 'not available' | 'failed' | 'skipped';
  reason?: string;
  runs: Figures[];
}

export interface ScenarioResult {
  name: string;
  description: string;
  cells: CellResult[];
}

export interface Scenario {
  name: string;
  description: string;
  /** Position in the report (lower first). */
  order: number;
  /** False: the target is "not applicable" and not started (default: every target applies). */
  appliesTo?(target: Target): boolean;
  run(ctx: ScenarioContext): Promise<Figures>;
  /** The longest one run may take (default: warm-up + duration + 30 s). */
  runLimitS?(mode: RunMode): number;
  /** Run only when named in --scenarios (long, or needing what a default run does not set up). */
  optIn?: boolean;
  /** One run measures enough (it repeats its own work): later rounds skip it. */
  oneRound?: boolean;
  /** How this scenario renders in RESULTS.md. */
  section(result: ScenarioResult): Section;
}

/** A report section not tied to one scenario (e.g. a summary across scenarios). */
export interface SectionSource {
  order: number;
  build(results: ScenarioResult[]): Section[];
}

const DEFAULT_SKILLS: SkillIds = { echo: 'echo', approval: 'approval' };

const targets = new Map<string, Target>();
const scenarios = new Map<string, Scenario>();
const sections: SectionSource[] = [];

// ─── HOOK: the lead registers more targets (e.g. `handoff`) through this. ───
export function registerTarget(target: Target): void {
  targets.set(target.name, target);
}

export function registerScenario(scenario: Scenario): void {
  scenarios.set(scenario.name, scenario);
}

export function registerSection(source: SectionSource): void {
  sections.push(source);
}

export const listTargets = (): Target[] => [...targets.values()];
export const listScenarios = (): Scenario[] => [...scenarios.values()].sort((a, b) => a.order - b.order);
export const listSections = (): SectionSource[] => [...sections].sort((a, b) => a.order - b.order);

export function skillsOf(target: Target): SkillIds {
  return { ...DEFAULT_SKILLS, ...target.skills };
}
