import {
  IStatusMessage,
  cellSourceFor,
  defaultExportPath,
  dirname,
  formatCost,
  formatStatus,
  formatStatusTooltip,
  formatTokens,
  helloMessage,
  joinPath,
  magicPrefix,
  normalizePath,
  parseKernelMessage,
  relativePath,
  resolveReportedPath,
  usesOiMagic,
  verifySummary,
  deciderName
} from '../protocol';

const STATUS: IStatusMessage = {
  type: 'status',
  model: 'gpt-4o-mini',
  prompt_tokens: 1234,
  completion_tokens: 340,
  cost: 0.00214,
  approval: 'always',
  sandbox: false,
  sandbox_read: [],
  sandbox_write: [],
  turns: 3,
  kernel: 'open-interpreter',
  child: 'local',
  child_where: 'on this machine',
  gateway_url: '',
  policy: [],
  policy_rules: [],
  policy_strict: false,
  error: '',
  last_decision: ''
};

describe('helloMessage', () => {
  it('is version 1', () => {
    expect(helloMessage()).toEqual({
      type: 'hello',
      version: 1,
      features: ['cell_edits']
    });
  });
});

describe('parseKernelMessage', () => {
  it('parses a full status message', () => {
    expect(parseKernelMessage({ ...STATUS })).toEqual(STATUS);
  });

  it.each([
    ['null', null],
    ['a string', 'status'],
    ['an array', [STATUS]],
    ['an unknown type', { type: 'nope' }],
    ['status without model', { type: 'status', prompt_tokens: 1 }],
    ['export without request_id', { type: 'export_result', ok: true }],
    ['verify with string ok', { type: 'verify_result', request_id: 'r', ok: 'yes' }],
    ['code_ran without code', { type: 'code_ran', language: 'python' }]
  ])('rejects %s', (_, data) => {
    expect(parseKernelMessage(data)).toBeNull();
  });

  it('defaults bad optional status fields', () => {
    const parsed = parseKernelMessage({
      type: 'status',
      model: 'm',
      prompt_tokens: -5,
      completion_tokens: 'many',
      cost: Number.NaN,
      approval: 'sometimes',
      sandbox: 'yes',
      sandbox_read: ['/data', 7, null],
      sandbox_write: '/out',
      kernel: 'other'
    });
    expect(parsed).toEqual({
      type: 'status',
      model: 'm',
      prompt_tokens: 0,
      completion_tokens: 0,
      cost: null,
      approval: 'always',
      sandbox: false,
      sandbox_read: ['/data'],
      sandbox_write: [],
      turns: 0,
      kernel: 'open-interpreter',
      child: 'local',
      child_where: '',
      gateway_url: '',
      policy: [],
      policy_rules: [],
      policy_strict: false,
      error: '',
      last_decision: ''
    });
  });

  it('derives where code runs for kernels that do not say', () => {
    const old = { type: 'status', model: 'm', sandbox: true };
    expect((parseKernelMessage(old) as IStatusMessage).child).toBe('sandbox');
    const magic = { type: 'status', model: 'm', kernel: 'ipython-magic' };
    expect((parseKernelMessage(magic) as IStatusMessage).child).toBe('shell');
    const odd = { ...STATUS, child: 'moon', policy: ['/etc/p.json', 3] };
    const parsed = parseKernelMessage(odd) as IStatusMessage;
    expect(parsed.child).toBe('local');
    expect(parsed.policy).toEqual(['/etc/p.json']);
  });

  it('keeps the magic kernel flavour and a null cost', () => {
    const parsed = parseKernelMessage({
      ...STATUS,
      cost: null,
      kernel: 'ipython-magic'
    }) as IStatusMessage;
    expect(parsed.kernel).toBe('ipython-magic');
    expect(parsed.cost).toBeNull();
  });

  it('parses an export result with missing strings', () => {
    expect(
      parseKernelMessage({ type: 'export_result', request_id: 'r1', ok: false })
    ).toEqual({
      type: 'export_result',
      request_id: 'r1',
      ok: false,
      path: '',
      error: ''
    });
  });

  it('parses verify cells and drops malformed ones', () => {
    const parsed = parseKernelMessage({
      type: 'verify_result',
      request_id: 'r2',
      ok: false,
      report: 'text',
      cells: [
        { index: 0, status: 'same', detail: '' },
        { index: 1, status: 'weird', detail: 'x' },
        { status: 'same' },
        'junk'
      ]
    });
    expect(parsed).toEqual({
      type: 'verify_result',
      request_id: 'r2',
      ok: false,
      report: 'text',
      cells: [
        { index: 0, status: 'same', detail: '' },
        { index: 1, status: 'error', detail: 'x' }
      ],
      error: ''
    });
  });

  it('parses code_ran with an empty cell id as null', () => {
    expect(
      parseKernelMessage({
        type: 'code_ran',
        language: 'shell',
        code: 'ls',
        cell_id: '',
        turn: 2,
        step: 1
      })
    ).toEqual({
      type: 'code_ran',
      language: 'shell',
      code: 'ls',
      cell_id: null,
      turn: 2,
      step: 1
    });
  });
});

describe('paths', () => {
  it.each([
    ['a/b/../c', 'a/c'],
    ['/a//b/./c/', 'a/b/c'],
    ['../x', '../x'],
    ['a/../../x', '../x'],
    ['', '']
  ])('normalizePath(%j) = %j', (input, expected) => {
    expect(normalizePath(input)).toBe(expected);
  });

  it.each([
    ['nb.ipynb', ''],
    ['dir/sub/nb.ipynb', 'dir/sub']
  ])('dirname(%j) = %j', (input, expected) => {
    expect(dirname(input)).toBe(expected);
  });

  it('joins without empty pieces', () => {
    expect(joinPath('', 'x.ipynb')).toBe('x.ipynb');
    expect(joinPath('a/b', '../c.ipynb')).toBe('a/c.ipynb');
  });

  it.each([
    ['', 'out.ipynb', 'out.ipynb'],
    ['work', 'work/out.ipynb', 'out.ipynb'],
    ['work', 'work/exports/out.ipynb', 'exports/out.ipynb'],
    ['work/deep', 'other/out.ipynb', '../../other/out.ipynb'],
    ['work', 'out.ipynb', '../out.ipynb'],
    ['work', 'work', '.'],
    ['workspace', 'work/out.ipynb', '../work/out.ipynb']
  ])('relativePath(%j, %j) = %j', (from, to, expected) => {
    expect(relativePath(from, to)).toBe(expected);
  });

  it('resolves the kernel-reported path against the notebook directory', () => {
    expect(resolveReportedPath('work', 'out.ipynb', 'x')).toBe(
      'work/out.ipynb'
    );
    expect(resolveReportedPath('work', '../o.ipynb', 'x')).toBe('o.ipynb');
  });

  it('falls back to the requested path for absolute or empty reports', () => {
    expect(
      resolveReportedPath('work', '/home/u/work/out.ipynb', 'work/out.ipynb')
    ).toBe('work/out.ipynb');
    expect(resolveReportedPath('work', 'C:\\x\\o.ipynb', 'w/o.ipynb')).toBe(
      'w/o.ipynb'
    );
    expect(resolveReportedPath('work', '', 'work/out.ipynb')).toBe(
      'work/out.ipynb'
    );
  });

  it.each([
    ['analysis.ipynb', '', 'analysis-export.ipynb'],
    ['dir/Sales.IPYNB', '', 'dir/Sales-export.ipynb'],
    ['dir/a.b.ipynb', 'exports', 'exports/a.b-export.ipynb'],
    ['dir/nb.ipynb', '  ', 'dir/nb-export.ipynb']
  ])('defaultExportPath(%j, %j) = %j', (nb, dir, expected) => {
    expect(defaultExportPath(nb, dir)).toBe(expected);
  });
});

describe('status text', () => {
  it.each([
    [0, '0'],
    [340, '340'],
    [999, '999'],
    [1000, '1k'],
    [1234, '1.2k'],
    [9960, '10k'],
    [56789, '57k'],
    [999_499, '999k'],
    [999_500, '1M'],
    [2_500_000, '2.5M']
  ])('formatTokens(%d) = %j', (n, expected) => {
    expect(formatTokens(n)).toBe(expected);
  });

  it.each([
    [null, ''],
    [0, '$0.00'],
    [0.00214, '$0.0021'],
    [0.5, '$0.50'],
    [0.0214, '$0.02'],
    [1.5, '$1.50'],
    [12.345, '$12.35']
  ])('formatCost(%j) = %j', (cost, expected) => {
    expect(formatCost(cost)).toBe(expected);
  });

  it('matches the documented example', () => {
    expect(formatStatus(STATUS)).toBe(
      'gpt-4o-mini · 1.2k in / 340 out · $0.0021 · ask each'
    );
  });

  it('leaves out an unknown cost and shows sandbox and policy', () => {
    expect(
      formatStatus({ ...STATUS, cost: null, approval: 'never', sandbox: true })
    ).toBe('gpt-4o-mini · 1.2k in / 340 out · auto-run · sandbox');
    expect(formatStatus({ ...STATUS, approval: 'risky' })).toContain(
      'ask if risky'
    );
    const governed = {
      ...STATUS,
      child: 'gateway' as const,
      child_where: 'on the gateway http://gw:8888 (kernel k1)',
      policy: ['/etc/jupyter/oi_kernel_policy.json'],
      policy_rules: ['approval at least `risky`']
    };
    expect(formatStatus(governed)).toBe(
      'gpt-4o-mini · 1.2k in / 340 out · $0.0021 · ask each · gateway · policy'
    );
    expect(formatStatus({ ...governed, policy_strict: true })).toContain(
      'policy ⚠'
    );
  });

  it('spells out the gateway and the policy in the tooltip', () => {
    const tip = formatStatusTooltip({
      ...STATUS,
      child: 'gateway',
      child_where: 'on the gateway http://gw:8888 (kernel k1)',
      policy: ['/etc/jupyter/oi_kernel_policy.json'],
      policy_rules: ['approval at least `risky`']
    });
    expect(tip).toContain('Code runs: in a child kernel on the gateway http://gw:8888');
    expect(tip).toContain("Sandbox: the gateway's job");
    expect(tip).toContain(
      "Administrator's policy in force (/etc/jupyter/oi_kernel_policy.json)"
    );
    expect(tip).toContain('  - approval at least risky');
  });

  it('counts the sandbox grants and lists them in the tooltip', () => {
    const granted = {
      ...STATUS,
      sandbox: true,
      sandbox_read: ['/home/u/docs', '/data'],
      sandbox_write: ['/home/u/out']
    };
    expect(formatStatus(granted)).toMatch(/ · sandbox \+3$/);
    const tooltip = formatStatusTooltip(granted);
    expect(tooltip).toContain('Sandbox: on\n  may read: /home/u/docs, /data\n');
    expect(tooltip).toContain('  may write: /home/u/out');
    expect(formatStatusTooltip(STATUS)).not.toContain('may read');
  });
});

describe('verifySummary', () => {
  it('counts statuses and leaves out zeros', () => {
    expect(
      verifySummary([
        { index: 0, status: 'same', detail: '' },
        { index: 1, status: 'same', detail: '' },
        { index: 2, status: 'different', detail: 'x' }
      ])
    ).toBe('3 cells: 2 same, 1 different');
  });

  it('handles one and zero cells', () => {
    expect(verifySummary([{ index: 0, status: 'error', detail: '' }])).toBe(
      '1 cell: 1 error'
    );
    expect(verifySummary([])).toBe('0 cells');
  });
});

describe('magics for inserted cells', () => {
  it.each([
    ['python', ''],
    ['Python', ''],
    ['', ''],
    ['shell', '%%bash'],
    ['bash', '%%bash'],
    ['javascript', '%%script node'],
    ['html', '%%html'],
    ['markdown', '%%markdown'],
    ['r', '%%script Rscript'],
    ['lua', '%%script lua'],
    ['rm -rf /; x', '']
  ])('magicPrefix(%j) = %j', (language, expected) => {
    expect(magicPrefix(language)).toBe(expected);
  });

  it('prefixes non-python code and trims trailing blank lines', () => {
    expect(cellSourceFor('shell', 'ls -la\n\n')).toBe('%%bash\nls -la');
    expect(cellSourceFor('python', 'x = 1\n')).toBe('x = 1');
  });

  it('does not add a magic the code already has', () => {
    expect(cellSourceFor('html', '%%html\n<b>hi</b>')).toBe('%%html\n<b>hi</b>');
  });

  it.each([
    ['%%oi plot sales', true],
    ['  %%oi\nplot', true],
    ['%load_ext oi_kernel', true],
    ['x = 1\n%reload_ext oi_kernel', true],
    ['%oi model gpt-4o', true],
    ['print("%%oi")', false],
    ['%load_ext autoreload', false],
    ['%%oink', false]
  ])('usesOiMagic(%j) = %j', (source, expected) => {
    expect(usesOiMagic(source)).toBe(expected);
  });
});

describe('shared approval cards', () => {
  it('parses a pending card state with its kernel-made fields', () => {
    const msg = parseKernelMessage({
      type: 'card_state',
      request_id: 'r1',
      card: 'abc',
      state: 'pending',
      step: 2,
      code: 'print(1)',
      run_all: true
    });
    expect(msg).toMatchObject({
      type: 'card_state',
      card: 'abc',
      state: 'pending',
      step: 2,
      code: 'print(1)',
      run_all: true,
      header_html: ''
    });
  });

  it('parses a refused decision and a decided event', () => {
    expect(
      parseKernelMessage({
        type: 'decide_result',
        request_id: 'r2',
        card: 'abc',
        ok: false,
        refused: true,
        error: 'no'
      })
    ).toMatchObject({ ok: false, refused: true, error: 'no', state: 'unknown' });
    expect(
      parseKernelMessage({ type: 'card', card: 'abc', state: 'decided', by: 'bob' })
    ).toMatchObject({ type: 'card', state: 'decided', by: 'bob' });
    expect(parseKernelMessage({ type: 'card', state: 'decided' })).toBeNull();
    expect(parseKernelMessage({ type: 'decide_result', card: 'x' })).toBeNull();
  });

  it('decides under the username, or an anonymous user\'s display name', () => {
    expect(deciderName({ username: 'alice', display_name: 'Alice A' })).toBe(
      'alice'
    );
    expect(
      deciderName({
        username: '0123456789abcdef0123456789abcdef',
        display_name: 'Anonymous Io'
      })
    ).toBe('Anonymous Io');
    expect(deciderName(null)).toBe('');
  });

  it('shows four-eyes approval as itself', () => {
    const status = parseKernelMessage({
      ...STATUS,
      approval: 'four-eyes'
    }) as IStatusMessage;
    expect(status.approval).toBe('four-eyes');
    expect(formatStatus(status)).toContain('four-eyes');
  });

  it('names who decided the last step in the tooltip', () => {
    expect(
      formatStatusTooltip({ ...STATUS, last_decision: 'step 2 · approved by bob' })
    ).toContain('Last decision: step 2 · approved by bob');
    expect(formatStatusTooltip(STATUS)).not.toContain('Last decision');
  });
});
