/**
 * The `oi_kernel` comm protocol between the kernel and this extension, and the
 * pure helpers around it: message parsing, path arithmetic, status text and
 * cell-magic prefixes.
 *
 * Nothing here touches JupyterLab or the DOM, so it is unit-tested directly.
 */

import {
  APPROVAL_LABELS,
  APPROVAL_MODES,
  ApprovalPolicy
} from './approvalModes';

export type { ApprovalPolicy };

/** Comm target name registered by the kernel (and by `%load_ext oi_kernel`). */
export const COMM_TARGET = 'oi_kernel';

/** Protocol version sent in `hello`. */
export const PROTOCOL_VERSION = 1;

/** Kernelspec name of the Open Interpreter kernel. */
export const KERNEL_NAME = 'open-interpreter';

/** Where code runs: a child kernel here, sandboxed, on a gateway, or the notebook's own. */
export type Placement = 'local' | 'sandbox' | 'gateway' | 'shell';

// ---------------------------------------------------------------------------
// Kernel -> frontend
// ---------------------------------------------------------------------------

export interface IStatusMessage {
  type: 'status';
  model: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number | null;
  approval: ApprovalPolicy;
  sandbox: boolean;
  /** Paths the sandboxed child may read / read and write besides its workspace. */
  sandbox_read: string[];
  sandbox_write: string[];
  turns: number;
  kernel: 'open-interpreter' | 'ipython-magic';
  /** Where code runs (kernels before 0.2 send none: derived from `sandbox`). */
  child: Placement;
  /** The same in words, e.g. "on the gateway http://gw:8888 (kernel 1234)". */
  child_where: string;
  gateway_url: string;
  /** The administrator's policy files in force (empty: no policy). */
  policy: string[];
  /** Its rules in words. */
  policy_rules: string[];
  /** A policy file could not be read fully: the kernel is in its strictest mode. */
  policy_strict: boolean;
  /** Why the last `set_model` was refused ('' when it was not). */
  error: string;
  /** Who decided the last step, e.g. "step 2 · approved by alice" ('' before any). */
  last_decision: string;
}

export interface IExportResult {
  type: 'export_result';
  request_id: string;
  ok: boolean;
  path: string;
  error: string;
}

export type VerifyCellStatus = 'same' | 'different' | 'error' | 'skipped';

export interface IVerifyCell {
  index: number;
  status: VerifyCellStatus;
  detail: string;
}

export interface IVerifyResult {
  type: 'verify_result';
  request_id: string;
  ok: boolean;
  report: string;
  cells: IVerifyCell[];
  error: string;
}

export interface ICodeRan {
  type: 'code_ran';
  language: string;
  code: string;
  cell_id: string | null;
  turn: number;
  step: number;
}

/** Mime type of the shared approval card (the kernel's `approval.card.CARD_MIME`). */
export const CARD_MIME = 'application/vnd.oi-kernel.card+json';

export type CardState = 'pending' | 'decided' | 'unknown';

/**
 * What the kernel says of one approval card: `pending` (with what to show: the
 * code and the kernel-made header, flags and visible-characters view),
 * `decided` (with its record), or `unknown` (the kernel restarted).
 */
export interface ICardInfo {
  card: string;
  state: CardState;
  step: number;
  language: string;
  header_html: string;
  visible_html: string;
  code: string;
  run_all: boolean;
  four_eyes_html: string;
  /** Preview (issue 44): 'available', 'unavailable' (see `preview_why`) or '' (off). */
  preview?: string;
  preview_html?: string;
  preview_why?: string;
  label: string;
  by: string;
  html: string;
}

/** Answer to `card_state`. */
export interface ICardStateReply extends ICardInfo {
  type: 'card_state';
  request_id: string;
}

/** Pushed to every view when a card is decided. */
export interface ICardEvent extends ICardInfo {
  type: 'card';
}

/** Answer to `decide`: `ok` when this decision counted, else why not. */
export interface IDecideResult extends ICardInfo {
  type: 'decide_result';
  request_id: string;
  ok: boolean;
  refused: boolean;
  error: string;
}

export type KernelMessage =
  | IStatusMessage
  | IExportResult
  | IVerifyResult
  | ICodeRan
  | ICardStateReply
  | IDecideResult
  | ICardEvent;

/** A reply that answers one request, matched by `request_id`. */
export type ReplyMessage =
  | IExportResult
  | IVerifyResult
  | ICardStateReply
  | IDecideResult;

// ---------------------------------------------------------------------------
// Frontend -> kernel
// ---------------------------------------------------------------------------

export interface IHello {
  type: 'hello';
  version: number;
  /** What this extension can do beyond the basics (the kernel adapts to it). */
  features: string[];
}

/** Features announced in `hello`: `cell_edits` shows edit_cell proposals as diffs. */
export const FEATURES: readonly string[] = ['cell_edits'];

export interface IGetStatus {
  type: 'get_status';
}

export interface ISetModel {
  type: 'set_model';
  model: string;
}

export interface IExportRequest {
  type: 'export';
  request_id: string;
  path: string;
  include_failed: boolean;
}

export interface IVerifyRequest {
  type: 'verify';
  request_id: string;
  path: string;
}

export type CardAction = 'run' | 'run_all' | 'skip' | 'stop' | 'preview';

export interface ICardStateRequest {
  type: 'card_state';
  request_id: string;
  card: string;
}

/** A shared card's button; `user` backs up the message header's username. */
export interface IDecideRequest {
  type: 'decide';
  request_id: string;
  card: string;
  action: CardAction;
  user: string;
  /** Present only when the code was edited. */
  code?: string;
  reason: string;
}

export type FrontendMessage =
  | IHello
  | IGetStatus
  | ISetModel
  | IExportRequest
  | IVerifyRequest
  | ICardStateRequest
  | IDecideRequest;

export function helloMessage(): IHello {
  return { type: 'hello', version: PROTOCOL_VERSION, features: [...FEATURES] };
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(data: Json, key: string, fallback = ''): string {
  const value = data[key];
  return typeof value === 'string' ? value : fallback;
}

function int(data: Json, key: string): number {
  const value = data[key];
  return typeof value === 'number' && Number.isFinite(value)
    ? Math.max(0, Math.trunc(value))
    : 0;
}

const APPROVALS: readonly ApprovalPolicy[] = APPROVAL_MODES;
const PLACEMENTS: Placement[] = ['local', 'sandbox', 'gateway', 'shell'];

function strings(data: Json, key: string): string[] {
  const value = data[key];
  return Array.isArray(value)
    ? value.filter((v): v is string => typeof v === 'string')
    : [];
}
const CELL_STATUSES: VerifyCellStatus[] = [
  'same',
  'different',
  'error',
  'skipped'
];

/** The strings of a list (anything else: none). */
function parseStatus(data: Json): IStatusMessage | null {
  if (typeof data.model !== 'string') {
    return null;
  }
  const cost = data.cost;
  const approval = APPROVALS.includes(data.approval as ApprovalPolicy)
    ? (data.approval as ApprovalPolicy)
    : 'always';
  const sandbox = data.sandbox === true;
  const kernel =
    data.kernel === 'ipython-magic' ? 'ipython-magic' : 'open-interpreter';
  const fallback: Placement =
    kernel === 'ipython-magic' ? 'shell' : sandbox ? 'sandbox' : 'local';
  return {
    type: 'status',
    model: data.model,
    prompt_tokens: int(data, 'prompt_tokens'),
    completion_tokens: int(data, 'completion_tokens'),
    cost: typeof cost === 'number' && Number.isFinite(cost) ? cost : null,
    approval,
    sandbox,
    sandbox_read: strings(data, 'sandbox_read'),
    sandbox_write: strings(data, 'sandbox_write'),
    turns: int(data, 'turns'),
    kernel,
    child: PLACEMENTS.includes(data.child as Placement)
      ? (data.child as Placement)
      : fallback,
    child_where: str(data, 'child_where'),
    gateway_url: str(data, 'gateway_url'),
    policy: strings(data, 'policy'),
    policy_rules: strings(data, 'policy_rules'),
    policy_strict: data.policy_strict === true,
    error: str(data, 'error'),
    last_decision: str(data, 'last_decision')
  };
}

const CARD_STATES: CardState[] = ['pending', 'decided', 'unknown'];

/** The card fields of a `card_state`, `decide_result` or `card` message. */
export function parseCardInfo(data: Json): ICardInfo | null {
  if (typeof data.card !== 'string') {
    return null;
  }
  return {
    card: data.card,
    state: CARD_STATES.includes(data.state as CardState)
      ? (data.state as CardState)
      : 'unknown',
    step: int(data, 'step'),
    language: str(data, 'language'),
    header_html: str(data, 'header_html'),
    visible_html: str(data, 'visible_html'),
    code: str(data, 'code'),
    run_all: data.run_all === true,
    four_eyes_html: str(data, 'four_eyes_html'),
    preview: str(data, 'preview'),
    preview_html: str(data, 'preview_html'),
    preview_why: str(data, 'preview_why'),
    label: str(data, 'label'),
    by: str(data, 'by'),
    html: str(data, 'html')
  };
}

function parseCardReply(data: Json): KernelMessage | null {
  const info = parseCardInfo(data);
  if (!info) {
    return null;
  }
  if (data.type === 'card') {
    return { ...info, type: 'card' };
  }
  if (typeof data.request_id !== 'string') {
    return null;
  }
  if (data.type === 'card_state') {
    return { ...info, type: 'card_state', request_id: data.request_id };
  }
  return {
    ...info,
    type: 'decide_result',
    request_id: data.request_id,
    ok: data.ok === true,
    refused: data.refused === true,
    error: str(data, 'error')
  };
}

/**
 * The name this frontend's user decides under: JupyterLab's identity
 * (`ICurrentUser`). An anonymous server user's name is a random hex id, so its
 * display name ("Anonymous Io") is sent instead: it tells collaborators apart.
 */
export function deciderName(identity: {
  username?: string;
  name?: string;
  display_name?: string;
} | null): string {
  if (!identity) {
    return '';
  }
  const username = (identity.username ?? '').trim();
  const display = (identity.display_name || identity.name || '').trim();
  if (/^[0-9a-f]{32}$/i.test(username) && display) {
    return display;
  }
  return username || display;
}

function parseVerifyCell(value: unknown): IVerifyCell | null {
  if (!isObject(value) || typeof value.index !== 'number') {
    return null;
  }
  const status = CELL_STATUSES.includes(value.status as VerifyCellStatus)
    ? (value.status as VerifyCellStatus)
    : 'error';
  return { index: value.index, status, detail: str(value, 'detail') };
}

function parseVerify(data: Json): IVerifyResult | null {
  if (typeof data.request_id !== 'string' || typeof data.ok !== 'boolean') {
    return null;
  }
  const cells = Array.isArray(data.cells)
    ? data.cells
        .map(parseVerifyCell)
        .filter((c): c is IVerifyCell => c !== null)
    : [];
  return {
    type: 'verify_result',
    request_id: data.request_id,
    ok: data.ok,
    report: str(data, 'report'),
    cells,
    error: str(data, 'error')
  };
}

function parseExport(data: Json): IExportResult | null {
  if (typeof data.request_id !== 'string' || typeof data.ok !== 'boolean') {
    return null;
  }
  return {
    type: 'export_result',
    request_id: data.request_id,
    ok: data.ok,
    path: str(data, 'path'),
    error: str(data, 'error')
  };
}

function parseCodeRan(data: Json): ICodeRan | null {
  if (typeof data.code !== 'string') {
    return null;
  }
  const cellId = data.cell_id;
  return {
    type: 'code_ran',
    language: str(data, 'language', 'python'),
    code: data.code,
    cell_id: typeof cellId === 'string' && cellId ? cellId : null,
    turn: int(data, 'turn'),
    step: int(data, 'step')
  };
}

/**
 * Validate a comm message payload from the kernel.
 *
 * Returns null for anything that is not a well-formed kernel message, so an
 * older or newer kernel can never crash the frontend. Optional fields that
 * are missing or of the wrong type get neutral defaults.
 */
export function parseKernelMessage(data: unknown): KernelMessage | null {
  if (!isObject(data)) {
    return null;
  }
  switch (data.type) {
    case 'status':
      return parseStatus(data);
    case 'export_result':
      return parseExport(data);
    case 'verify_result':
      return parseVerify(data);
    case 'code_ran':
      return parseCodeRan(data);
    case 'card':
    case 'card_state':
    case 'decide_result':
      return parseCardReply(data);
    default:
      return null;
  }
}

// ---------------------------------------------------------------------------
// Paths (POSIX, relative to the Jupyter server root, as the file browser uses)
// ---------------------------------------------------------------------------

/** Normalize a server path: no leading/trailing slash, no `.`, `..` folded. */
export function normalizePath(path: string): string {
  const out: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') {
      continue;
    }
    if (part === '..' && out.length > 0 && out[out.length - 1] !== '..') {
      out.pop();
    } else {
      out.push(part);
    }
  }
  return out.join('/');
}

/** Directory part of a server path ('' for the root). */
export function dirname(path: string): string {
  const norm = normalizePath(path);
  const slash = norm.lastIndexOf('/');
  return slash < 0 ? '' : norm.slice(0, slash);
}

/** File name part of a server path. */
export function basename(path: string): string {
  const norm = normalizePath(path);
  return norm.slice(norm.lastIndexOf('/') + 1);
}

/** Join server path pieces; a piece starting with '/' does not reset. */
export function joinPath(...parts: string[]): string {
  return normalizePath(parts.filter(p => p !== '').join('/'));
}

/** True for '/x', 'C:\\x' or 'C:/x': a path the server root cannot express. */
export function isAbsolutePath(path: string): boolean {
  return path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path);
}

/**
 * The path of `target` relative to directory `fromDir` (both server paths).
 *
 * The kernel's working directory is the notebook's directory, so paths sent
 * to the kernel are made relative to it.
 */
export function relativePath(fromDir: string, target: string): string {
  const from = normalizePath(fromDir).split('/').filter(Boolean);
  const to = normalizePath(target).split('/').filter(Boolean);
  let common = 0;
  while (
    common < from.length &&
    common < to.length &&
    from[common] === to[common]
  ) {
    common++;
  }
  const ups = from.slice(common).map(() => '..');
  return [...ups, ...to.slice(common)].join('/') || '.';
}

/**
 * Where the kernel's answer `reported` (relative to the notebook directory,
 * or absolute) lives as a server path; falls back to `requested` when the
 * kernel reported nothing usable.
 */
export function resolveReportedPath(
  notebookDir: string,
  reported: string,
  requested: string
): string {
  if (!reported || isAbsolutePath(reported)) {
    return normalizePath(requested);
  }
  return joinPath(notebookDir, reported);
}

/**
 * Default export path for a notebook: `<name>-export.ipynb` next to it, or in
 * `directory` when that setting is not empty.
 */
export function defaultExportPath(notebookPath: string, directory = ''): string {
  const name = basename(notebookPath).replace(/\.ipynb$/i, '');
  const dir = directory.trim() ? directory : dirname(notebookPath);
  return joinPath(dir, `${name || 'notebook'}-export.ipynb`);
}

// ---------------------------------------------------------------------------
// Status text
// ---------------------------------------------------------------------------

/** 340 -> "340", 1234 -> "1.2k", 56789 -> "57k", 2500000 -> "2.5M". */
export function formatTokens(n: number): string {
  if (n < 1000) {
    return String(n);
  }
  const scaled = (value: number, unit: string): string =>
    (value < 10 ? value.toFixed(1).replace(/\.0$/, '') : Math.round(value)) +
    unit;
  return n < 999_500 ? scaled(n / 1000, 'k') : scaled(n / 1_000_000, 'M');
}

/** 0.00214 -> "$0.0021", 0.5 -> "$0.50", null -> "" (unknown). */
export function formatCost(cost: number | null): string {
  if (cost === null) {
    return '';
  }
  return '$' + (cost > 0 && cost < 0.01 ? cost.toFixed(4) : cost.toFixed(2));
}

export function approvalLabel(policy: ApprovalPolicy): string {
  return APPROVAL_LABELS[policy];
}

/**
 * One-line status bar text, e.g.
 * "gpt-4o-mini · 1.2k in / 340 out · $0.0021 · ask each · sandbox +2 · policy"
 * (+2: paths granted to the sandbox besides its workspace).
 */
export function formatStatus(status: IStatusMessage): string {
  const parts = [
    status.model || 'no model',
    `${formatTokens(status.prompt_tokens)} in / ${formatTokens(
      status.completion_tokens
    )} out`
  ];
  const cost = formatCost(status.cost);
  if (cost) {
    parts.push(cost);
  }
  parts.push(approvalLabel(status.approval));
  if (status.child === 'gateway') {
    parts.push('gateway');
  } else if (status.sandbox || status.child === 'sandbox') {
    const grants = status.sandbox_read.length + status.sandbox_write.length;
    parts.push(grants ? `sandbox +${grants}` : 'sandbox');
  }
  if (status.policy.length > 0) {
    parts.push(status.policy_strict ? 'policy ⚠' : 'policy');
  }
  return parts.join(' · ');
}

/** Tooltip lines for the sandbox's grants (kept while it is off, so shown then too). */
function sandboxGrants(status: IStatusMessage): string[] {
  const lines: string[] = [];
  if (status.sandbox_read.length) {
    lines.push(`  may read: ${status.sandbox_read.join(', ')}`);
  }
  if (status.sandbox_write.length) {
    lines.push(`  may write: ${status.sandbox_write.join(', ')}`);
  }
  return lines;
}

/** Where code runs and what confines it, for the tooltip. */
function placementLines(status: IStatusMessage): string[] {
  switch (status.child) {
    case 'gateway':
      return [
        `Code runs: in a child kernel ${status.child_where || 'on a gateway'}`,
        "Sandbox: the gateway's job (its kernelspec)"
      ];
    case 'shell':
      return ["Code runs: in this notebook's own kernel"];
    default:
      return [
        `Code runs: in a child kernel ${status.child_where || 'on this machine'}`,
        `Sandbox: ${status.sandbox || status.child === 'sandbox' ? 'on' : 'off'}`
      ];
  }
}

/** The administrator's policy, for the tooltip ([] when there is none). */
function policyLines(status: IStatusMessage): string[] {
  if (status.policy.length === 0) {
    return [];
  }
  const head = status.policy_strict
    ? "Administrator's policy: could not be read fully, strictest mode"
    : "Administrator's policy in force";
  return [
    `${head} (${status.policy.join(', ')})`,
    ...status.policy_rules.map(rule => `  - ${rule.replace(/`/g, '')}`)
  ];
}

/** Multi-line tooltip with every field spelled out. */
export function formatStatusTooltip(status: IStatusMessage): string {
  const where =
    status.kernel === 'ipython-magic' ? '%%oi magic' : 'Open Interpreter kernel';
  return [
    `Open Interpreter (${where})`,
    `Model: ${status.model || '(none)'} (click to change)`,
    `Tokens: ${status.prompt_tokens} prompt, ${status.completion_tokens} completion`,
    `Cost: ${status.cost === null ? 'unknown' : formatCost(status.cost)}`,
    `Approval: ${approvalLabel(status.approval)} (${status.approval})`,
    ...placementLines(status),
    ...sandboxGrants(status),
    `Turns: ${status.turns}`,
    ...(status.last_decision
      ? [`Last decision: ${status.last_decision}`]
      : []),
    ...policyLines(status)
  ].join('\n');
}

// ---------------------------------------------------------------------------
// Verify report
// ---------------------------------------------------------------------------

export type VerifyCounts = Record<VerifyCellStatus, number>;

export function countVerifyCells(cells: IVerifyCell[]): VerifyCounts {
  const counts: VerifyCounts = { same: 0, different: 0, error: 0, skipped: 0 };
  for (const cell of cells) {
    counts[cell.status]++;
  }
  return counts;
}

/** "12 cells: 10 same, 1 different, 1 error" (zero counts left out). */
export function verifySummary(cells: IVerifyCell[]): string {
  const counts = countVerifyCells(cells);
  const noun = cells.length === 1 ? 'cell' : 'cells';
  const detail = CELL_STATUSES.filter(s => counts[s] > 0)
    .map(s => `${counts[s]} ${s}`)
    .join(', ');
  return detail
    ? `${cells.length} ${noun}: ${detail}`
    : `${cells.length} ${noun}`;
}

// ---------------------------------------------------------------------------
// Inserting generated code as notebook cells
// ---------------------------------------------------------------------------

/** A block of code in some language, as the interpreter ran it. */
export interface ICodeBlock {
  language: string;
  code: string;
}

const MAGIC_BY_LANGUAGE: Record<string, string> = {
  python: '',
  python3: '',
  py: '',
  ipython: '',
  shell: '%%bash',
  bash: '%%bash',
  sh: '%%bash',
  zsh: '%%bash',
  javascript: '%%script node',
  js: '%%script node',
  node: '%%script node',
  html: '%%html',
  markdown: '%%markdown',
  md: '%%markdown',
  ruby: '%%ruby',
  perl: '%%perl',
  r: '%%script Rscript',
  powershell: '%%script pwsh',
  applescript: '%%script osascript'
};

/**
 * IPython cell magic that runs `language` in a python3 kernel: '' for Python,
 * `%%bash` for shell, and `%%script <language>` for anything unknown.
 */
export function magicPrefix(language: string): string {
  const key = language.trim().toLowerCase();
  if (!key) {
    return '';
  }
  if (key in MAGIC_BY_LANGUAGE) {
    return MAGIC_BY_LANGUAGE[key];
  }
  return /^[a-z0-9_+.-]+$/.test(key) ? `%%script ${key}` : '';
}

/** Cell source for `code` in `language`, with the magic line when needed. */
export function cellSourceFor(language: string, code: string): string {
  const body = code.replace(/\s+$/, '');
  const magic = magicPrefix(language);
  if (!magic || body.trimStart().startsWith(magic)) {
    return body;
  }
  return `${magic}\n${body}`;
}

/** Whether a cell's source loads or uses the `%%oi` magic. */
export function usesOiMagic(source: string): boolean {
  return /^\s*(%%oi\b|%oi\b|%(re)?load_ext\s+oi_kernel\b)/m.test(source);
}
