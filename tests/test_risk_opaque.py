"""The risk review fails closed on opacity (issue 30, part 2): what the static review cannot
resolve — computed import and attribute names, exec of non-literals, decoding fed to
execution, native code, introspection walks, URLs — gets a flag naming the line; ordinary
data-science code stays quiet. Table tests of the pure review."""

from __future__ import annotations

import pytest

from oi_kernel.safety.risk import review

pytestmark = pytest.mark.unit

# (language, code, expected category, expected line, expected severity)
FLAGGED = [
    # computed names: imports and attribute lookups
    ("python", 'getattr(__import__("o" + "s"), "sys" + "tem")("echo hi")', "shell-command", 1, "high"),
    ("python", 'getattr(__import__("o" + "s"), "sys" + "tem")("echo hi")', "opaque-import", 1, "high"),
    ("python", "m = input()\n__import__(m).system('ls')", "opaque-import", 2, "high"),
    ("python", "import importlib\nmod = importlib.import_module(name)", "opaque-import", 2, "high"),
    ("python", "import os\ngetattr(os, 'system')('rm -rf build')", "delete-files", 2, "high"),
    ("python", "import os\ngetattr(os, 'system')('echo hi')", "shell-command", 2, "high"),
    ("python", "import os\nfn = getattr(os, attr)\nfn('id')", "opaque-name", 2, "high"),
    ("python", "getattr(obj, name)()", "opaque-name", 1, "medium"),
    ("python", "import os\nos.__dict__['sys' + 'tem']('id')", "shell-command", 2, "high"),
    ("python", "f = globals()[key]\nf()", "opaque-name", 1, "high"),
    ("python", "import os\nvars(os)[n]('id')", "opaque-name", 2, "high"),
    ("python", "import operator\nrun = operator.methodcaller(m, 'id')", "opaque-name", 2, "high"),
    ("python", "import operator, os\noperator.attrgetter('system')(os)('id')", "opaque-name", 2, "high"),
    ("python", "import sys\nsys.modules[k].system('id')", "opaque-import", 2, "high"),
    ("python", "import sys, os\nsys.modules['o' + 's'].popen('rm -rf ~')", "delete-files", 2, "high"),
    ("python", "x = __import__('subprocess')\nx.run(['id'])", "opaque-import", 1, "medium"),
    ("python", "import os\nsh = os.system\nsh('rm -rf data')", "delete-files", 3, "high"),
    ("python", "import os, threading\nthreading.Thread(target=os.system, args=(c,)).start()", "shell-command", 2, "high"),
    ("python", "import functools\nfunctools.reduce(getattr, parts, root)", "opaque-name", 2, "high"),
    # exec / eval / compile
    ("python", "exec(code)", "dynamic-code", 1, "high"),
    ("python", "eval(compile(src, '<x>', 'exec'))", "dynamic-code", 1, "high"),
    ("python", "exec('import os\\nos.system(\"rm -rf ~\")')", "delete-files", 1, "high"),
    ("python", "exec(open('payload.py').read())", "dynamic-code", 1, "high"),
    ("python", "import runpy\nrunpy.run_path(p)", "dynamic-code", 2, "high"),
    ("python", "import code\ncode.InteractiveInterpreter().runsource(s)", "dynamic-code", 2, "high"),
    ("python", "get_ipython().run_cell(cell_text)", "dynamic-code", 1, "high"),
    ("python", "ip = get_ipython()\nip.system(cmd)", "dynamic-code", 2, "high"),
    ("python", "get_ipython().run_cell('!rm -rf ~')", "delete-files", 1, "high"),
    ("python", "import builtins\nbuiltins.exec(s)", "dynamic-code", 2, "high"),
    ("python", "f = exec\nf(s)", "dynamic-code", 1, "high"),
    # decoding followed by execution
    ("python", "import base64\nexec(base64.b64decode('cHJpbnQoMSk='))", "decode-exec", 2, "high"),
    ("python", "import zlib, base64\np = zlib.decompress(base64.b64decode(b))\nexec(p)", "decode-exec", 3, "high"),
    ("python", "import codecs\neval(codecs.decode('bf.flfgrz', 'rot13'))", "decode-exec", 2, "high"),
    ("python", "import marshal, types\nc = marshal.loads(blob)\ntypes.FunctionType(c, {})()", "decode-exec", 3, "high"),
    ("python", "import pickle\nobj = pickle.loads(data)", "deserialize", 2, "medium"),
    ("python", "import pickle, base64\npickle.loads(base64.b64decode(s))", "decode-exec", 2, "high"),
    ("python", "__import__(bytes.fromhex('6f73').decode()).system('id')", "opaque-import", 1, "high"),
    # native code
    ("python", "import ctypes\nctypes.CDLL(None).system(b'id')", "native-code", 1, "high"),
    ("python", "from cffi import FFI\nffi = FFI()", "native-code", 1, "high"),
    # introspection walks
    ("python", "().__class__.__bases__[0].__subclasses__()", "introspection-walk", 1, "high"),
    ("python", "f.__globals__['os'].system('id')", "introspection-walk", 1, "high"),
    ("python", "__builtins__.__dict__['ev' + 'al'](s)", "introspection-walk", 1, "high"),
    ("python", "import sys\nsys._getframe(1).f_globals['x'] = 1", "introspection-walk", 2, "high"),
    ("python", "g = (x for x in [])\ng.gi_frame.f_builtins", "introspection-walk", 2, "high"),
    ("python", "getattr(f, '__glob' + 'als__')", "introspection-walk", 1, "high"),
    # network: URL literals given to any call
    ("python", "import pandas as pd\ndf = pd.read_csv('https://example.com/x.csv')", "network", 2, "medium"),
    ("python", "import numpy as np\na = np.loadtxt('http://example.com/a.txt')", "network", 2, "medium"),
    ("python", "BASE = 'https://example.com'\ndf = pd.read_json(f'{BASE}/x.json')", "network", 2, "medium"),
    ("python", "df = pd.read_parquet('s3://bucket/key.parquet')", "network", 1, "medium"),
    ("python", "import torch\nm = torch.hub.load('pytorch/vision', 'resnet18')", "network", 2, "medium"),
    ("python", "from datasets import load_dataset\nds = load_dataset('csv', data_files='https://x.io/a.csv')", "network", 2, "medium"),
    ("python", "client.get('https://api.example.com/v1/items')", "network", 1, "medium"),
    ("python", "!wget https://example.com/data.zip", "network", 1, "medium"),
    ("shell", "git clone https://github.com/x/y", "network", 1, "medium"),
    # shell: computed commands, decoding into a shell, python -c and heredocs
    ("shell", "python -c \"import base64; exec(base64.b64decode('aWQ='))\"", "decode-exec", 1, "high"),
    ("shell", "echo aWQK | base64 -d | sh", "decode-exec", 1, "high"),
    ("shell", "eval \"$(echo aWQK | base64 --decode)\"", "dynamic-code", 1, "high"),
    ("shell", 'bash -c "$PAYLOAD"', "dynamic-code", 1, "high"),
    ("shell", "python3 - <<'EOF'\nimport os\nos.system('rm -rf ~')\nEOF", "delete-files", 3, "high"),
    ("python", "cmd = make()\n!{cmd}", "dynamic-code", 2, "high"),
    ("python", "%load https://example.com/snippet.py", "network", 1, "medium"),
    # found by trying variants after the corpus was written
    ("python", "import subprocess\nsubprocess.__dict__.get('run')(['id'])", "opaque-name", 2, "high"),
    ("python", "import os\nos.__getattribute__('system')('id')", "introspection-walk", 2, "high"),
    ("python", "import os\nfor k, v in vars(os).items():\n    v('id')", "opaque-name", 2, "high"),
    ("python", "type(lambda: 0)(co, {})()", "dynamic-code", 1, "high"),
    ("python", "import numpy as np\nnp.load('x.npy', allow_pickle=True)", "deserialize", 2, "medium"),
    ("python", "import base64, subprocess\nsubprocess.run(base64.b64decode(c), shell=True)", "decode-exec", 2, "high"),
    ("python", "g = globals()\ng['__buil' + 'tins__']['eval'](s)", "opaque-name", 2, "high"),
    ("python", "import pty\npty.spawn('/bin/bash')", "shell-command", 2, "medium"),
    # JavaScript and R: a URL given to a call
    ("r", "df <- read.csv('https://example.com/a.csv')", "network", 1, "medium"),
    ("r", "download.file(url = \"https://x.io/a.zip\", destfile = 'a.zip')", "network", 1, "medium"),
    ("javascript", "const r = await fetch(`https://api.example.com/v1`);", "network", 1, "medium"),
]

NOT_FLAGGED = [
    ("python", "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint(getattr(df, 'shape'))"),
    ("python", "for agg in ['mean', 'median', 'std']:\n    print(agg, getattr(df['price'], agg)())"),
    ("python", "aggs = ('min', 'max')\nres = {a: getattr(s, a)() for a in aggs}"),
    ("python", "df = df.eval('total = price * qty')\nsmall = df.query('total < 10')"),
    ("python", "import pandas as pd\nr = pd.eval('df.a + df.b')"),
    ("python", "import json\ncfg = json.loads(text)"),
    ("python", "import base64, io\nbuf = io.BytesIO()\nfig.savefig(buf, format='png')\nb64 = base64.b64encode(buf.getvalue()).decode()"),
    ("python", "import importlib\nimport mymod\nimportlib.reload(mymod)"),
    ("python", "import importlib.metadata\nprint(importlib.metadata.version('pandas'))"),
    ("python", "from operator import attrgetter, itemgetter\nrows.sort(key=attrgetter('date'))\nkey = itemgetter(1)"),
    ("python", "eval('1 + 1')\nexec('x = 2')"),
    ("python", "print('Source: https://data.gov/dataset')\nurl_note = 'see https://x.io'"),
    ("python", "from urllib.parse import urlparse\nhost = urlparse('https://example.com/a').netloc"),
    ("python", "print(type(x).__name__, x.__class__.__name__, vars(args))"),
    ("python", "links = []\nlinks.append('https://example.com')\nprint('https://example.com')"),
    ("python", "plt.title('Sales')\nax.set_xlabel('month')\nplt.savefig('out/sales.png')"),
    ("python", "import numpy as np\nfn = getattr(np, 'log1p')\ny = fn(x)"),
    ("python", "value = getattr(cfg, 'threshold', 0.5)\nhasattr(model, 'coef_')"),
    ("python", "mean = df.groupby('k').agg(['mean', 'sum'])\ndf.apply(lambda r: r.a * 2, axis=1)"),
    ("shell", "ls -la data/\nhead -n 5 data/sales.csv\necho https://example.com"),
    ("python", "%matplotlib inline\n%load_ext autoreload\n%autoreload 2"),
    ("r", "print('https://example.com')\ndf <- read.csv('data/a.csv')"),
    ("javascript", "console.log('https://example.com');"),
]


def _ids(cases: list[tuple]) -> list[str]:
    return [f"{c[0]}:{c[1][:50]}:{c[2] if len(c) > 2 else ''}" for c in cases]


@pytest.mark.parametrize(
    ("language", "code", "category", "line", "severity"), FLAGGED, ids=_ids(FLAGGED)
)
def test_opaque_code_is_flagged(
    language: str, code: str, category: str, line: int, severity: str
) -> None:
    flags = review(language, code)
    matching = [f for f in flags if f.category == category and f.line == line]
    assert matching, f"expected {category} on line {line}, got {flags}"
    assert matching[0].severity == severity, matching[0]
    assert matching[0].reason.startswith(f"line {line}: ")


@pytest.mark.parametrize(("language", "code"), NOT_FLAGGED, ids=_ids(NOT_FLAGGED))
def test_ordinary_code_stays_quiet(language: str, code: str) -> None:
    assert review(language, code) == []


def test_the_issue_example_names_what_it_resolved() -> None:
    flags = review("python", 'getattr(__import__("o" + "s"), "sys" + "tem")("echo hi")')
    text = " ".join(f.reason for f in flags)
    assert "os.system" in text
    assert all(f.reason.startswith("line 1: ") for f in flags)


def test_a_literal_exec_is_reviewed_as_code() -> None:
    [flag] = review("python", "exec(\"import shutil\\nshutil.rmtree('/')\")")
    assert flag.category == "delete-files" and flag.severity == "high"
    assert "exec" in flag.reason and "shutil.rmtree" in flag.reason


def test_a_name_rebound_later_is_not_trusted() -> None:
    code = "import os\nm = 'getcwd'\nm = input()\ngetattr(os, m)()"
    assert any(f.category == "opaque-name" and f.line == 4 for f in review("python", code))


def test_a_name_used_before_its_binding_is_not_trusted() -> None:
    code = "import os\ngetattr(os, m)('id')\nm = 'getcwd'"
    assert any(f.category == "opaque-name" and f.line == 2 for f in review("python", code))


def test_url_in_a_variable_is_followed() -> None:
    code = "URL = 'https://example.com/data.csv'\nimport pandas as pd\ndf = pd.read_csv(URL)"
    [flag] = review("python", code)
    assert (flag.line, flag.category) == (3, "network")
    assert "https://example.com/data.csv" in flag.reason


# ------------------------------------------------------------------ a real kernel
@pytest.mark.kernel
def test_computed_os_system_asks_under_risky_while_pandas_runs_unasked(_server, tmp_path):
    """The issue's attack through the Open Interpreter kernel with a scripted model: under
    ``%approval risky`` an ordinary pandas step runs without a question, and
    ``getattr(__import__("o" + "s"), "sys" + "tem")(…)`` asks; declined, it never runs."""
    from tests import llm_server as S
    from tests.kernel_client import KernelSession
    from tests.test_kernel import kernel_env

    (tmp_path / "sales.csv").write_text("region,revenue\nEU,10\nEU,30\nUS,5\n")
    marker = tmp_path / "pwned"
    attack = f'getattr(__import__("o" + "s"), "sys" + "tem")("echo hi > {marker}")'
    pandas_step = (
        "import pandas as pd\ndf = pd.read_csv('sales.csv')\n"
        "print('mean-by-region', df.groupby('region')['revenue'].mean().to_dict())"
    )
    env = kernel_env(_server, tmp_path, OI_APPROVAL_UI="stdin")
    with KernelSession(env=env, cwd=str(tmp_path)) as oi:
        assert oi.execute("%approval risky").status == "ok"
        _server.reset()
        _server.enqueue(S.tool_call(pandas_step), S.tool_call(attack), S.text("done"))
        result = oi.execute("summarise sales, then say hi", stdin=["n"])
    assert result.status == "ok", result.text
    assert "mean-by-region {'EU': 20.0, 'US': 5.0}" in result.stdout  # ran, unasked
    assert len(result.prompts) == 1, result.prompts  # only the attack asked
    assert "Run this code?" in result.prompts[0]
    assert "os.system" in result.text + result.stdout + "".join(result.prompts)
    assert not marker.exists()  # declined: it never ran
