// Generated from oi_kernel/core/approval_modes.py: do not edit. Regenerate with
//   python -m oi_kernel.core.approval_modes > labextension/src/approvalModes.ts
// (tests/test_approval_modes.py fails when this file is stale).

export const APPROVAL_MODES = [
  'always',
  'risky',
  'never',
  'four-eyes',
  'four-eyes-all'
] as const;

export type ApprovalPolicy = (typeof APPROVAL_MODES)[number];

export const APPROVAL_LABELS: Record<ApprovalPolicy, string> = {
  'always': 'ask each',
  'risky': 'ask if risky',
  'never': 'auto-run',
  'four-eyes': 'four-eyes',
  'four-eyes-all': 'four-eyes (all)'
};
