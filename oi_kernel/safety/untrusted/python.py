"""Outside sources in Python code, read through its syntax tree: calls that read files, fetch
from the network or run programs, named from their literal arguments, and the names bound to
what they return (the taint carried to later steps)."""

from __future__ import annotations

import ast
import shlex

from oi_kernel.safety.untrusted.common import URL, Source, Taint, file_or_url, unique
from oi_kernel.safety.untrusted.shell import shell_sources

# attribute calls that read a file (or a URL) named by their first argument
_FILE_READERS = frozenset({
    "read_csv", "read_table", "read_excel", "read_json", "read_parquet", "read_feather",
    "read_pickle", "read_html", "read_xml", "read_fwf", "read_sas", "read_spss",
    "read_stata", "read_hdf", "read_orc", "read_sql", "read_sql_query", "read_sql_table",
    "read_text", "read_bytes", "loadtxt", "genfromtxt", "fromfile", "load_workbook",
    "open_dataset", "open_dataarray", "open_mfdataset", "imread", "read_file",
    "read_image", "open_workbook", "getline", "getlines", "get_data", "ZipFile", "TarFile",
    "File", "Dataset", "read_notebook", "read_csv_auto", "scan_csv", "read_ndjson",
    "read_ipc", "read_avro", "read_database", "read_delta",
})
# calls that read from an open file object or a path (json.load(f), np.load("x.npy"))
_OBJECT_READERS = frozenset({"load", "safe_load", "full_load", "unsafe_load", "load_all",
                             "safe_load_all", "parse", "reader", "DictReader", "iterparse",
                             "input", "read", "reads"})
_READER_MODULES = frozenset({"json", "pickle", "yaml", "np", "numpy", "torch", "joblib",
                             "toml", "tomllib", "tomli", "csv", "ET", "ElementTree", "etree",
                             "fileinput", "nbformat", "dill", "cloudpickle", "marshal",
                             "xmltodict", "plistlib", "configparser", "pd", "pandas",
                             "scipy", "io", "sio", "ujson", "orjson", "msgpack", "h5py"})
_NET_MODULES = frozenset({"requests", "httpx", "urllib", "urllib3", "aiohttp", "http",
                          "socket", "ftplib", "smtplib", "imaplib", "poplib", "telnetlib",
                          "paramiko", "boto3", "botocore", "s3fs", "gcsfs", "fsspec",
                          "websocket", "websockets", "pycurl", "wget", "yfinance",
                          "pandas_datareader", "kaggle", "datasets", "openai", "anthropic",
                          "litellm", "feedparser", "tweepy", "praw", "github", "smart_open"})
# calls of a network client that fetch (``requests.get``, ``yf.download``); others on the same
# module (``requests.Session()``, ``resp.json()``) fetch nothing themselves
_FETCHES = frozenset({"get", "post", "put", "patch", "delete", "head", "options", "request",
                      "urlopen", "urlretrieve", "stream", "fetch", "download", "download_file",
                      "get_object", "recv", "recvfrom", "open", "load_dataset",
                      "Ticker", "DataReader", "cat", "cat_file", "retrbinary", "retrlines",
                      "exec_command", "completion", "create"})
_SUBPROCESS = frozenset({"run", "check_output", "Popen", "call", "check_call", "getoutput",
                         "getstatusoutput"})
_OS_RUNS = frozenset({"system", "popen", "execv", "execvp", "execl", "execlp", "spawnv",
                      "spawnvp", "spawnl", "spawnlp", "startfile"})
_PATH_ARGS = ("filepath_or_buffer", "path", "path_or_buf", "io", "file", "fname", "filename",
              "f", "fp", "url", "uri", "source", "src", "name", "file_path", "filepath")
_SHOWS_ONLY = frozenset({"print", "display", "Markdown", "HTML", "str", "repr", "len",
                         "format", "IFrame", "Image", "Video", "Audio", "webbrowser"})


def _dotted(node: ast.AST) -> list[str]:
    """``pd.io.read_csv`` -> ["pd", "io", "read_csv"]; [] for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return []


def _root(node: ast.AST) -> str:
    """The name at the root of an attribute chain or call chain (``requests`` for
    ``requests.Session().get``)."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


class _Python:
    """One pass over a Python module: sources by top-level statement, with taint."""

    def __init__(self, taint: Taint) -> None:
        self.taint = dict(taint)
        self.consts: dict[str, str] = {}  # name -> a literal path/URL it was assigned
        self.found: list[Source] = []
        self.handles: set[str] = set()  # names of files this code opened itself
        self.modules: dict[str, str] = {}  # local name -> the module it stands for

    def run(self, tree: ast.Module) -> list[Source]:
        for statement in tree.body:
            self.statement(statement)
        return unique(self.found)

    def statement(self, node: ast.stmt) -> None:
        nodes = list(ast.walk(node))
        for sub in nodes:  # `with open(...) as f`: reading f is that open() again
            if isinstance(sub, ast.withitem) and isinstance(sub.optional_vars, ast.Name) \
                    and isinstance(sub.context_expr, ast.Call):
                self.handles.add(sub.optional_vars.id)
            elif isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call) and \
                    _dotted(sub.value.func)[-1:] == ["open"]:
                self.handles.update(t.id for t in sub.targets if isinstance(t, ast.Name))
        sources: list[Source] = []
        for sub in nodes:
            if isinstance(sub, ast.Call):
                sources += self.call(sub)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                sources += self.taint.get(sub.id, ())
        sources = unique(sources)
        self.found += sources
        self.remember(node, nodes, sources)

    def remember(self, node: ast.stmt, nodes: list[ast.AST], sources: list[Source]) -> None:
        """Names this statement binds now carry its sources (or none, when it has none);
        imports and clients (``s = requests.Session()``) are remembered by module."""
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.modules[alias.asname or alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                self.modules[alias.asname or alias.name] = node.module.split(".")[0]
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and (
                module := self.root(node.value.func)) in _NET_MODULES:
            self.modules.update((t.id, module) for t in node.targets if isinstance(t, ast.Name))
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name) and (text := self.literal(node.value)):
            self.consts[node.targets[0].id] = text
        names, parts = _bound(node, nodes)
        for name in names:
            if sources:
                self.taint[name] = tuple(sources)
            elif not isinstance(node, ast.AugAssign):
                self.taint.pop(name, None)
        for name in parts if sources else ():  # a part changed: the rest keeps its taint
            self.taint[name] = tuple(unique([*self.taint.get(name, ()), *sources]))

    def literal(self, node: ast.AST | None) -> str:
        """The path or URL ``node`` stands for when the code spells it out; "" otherwise."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.consts.get(node.id, "")
        if isinstance(node, ast.Call) and _dotted(node.func)[-1:] in (["Path"], ["PurePath"],
                                                                      ["join"]):
            parts = [self.literal(a) for a in node.args]
            if parts and all(parts):
                return "/".join(p.rstrip("/") for p in parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = self.literal(node.left), self.literal(node.right)
            if left and right:
                return f"{left.rstrip('/')}/{right}"
        return ""

    def named(self, node: ast.AST | None, kind: str = "file") -> list[Source]:
        """The source a path argument names: a literal, or "computed" with the expression."""
        if node is None:
            return [Source(kind, "", "")]
        if isinstance(node, ast.Name) and (node.id in self.taint or node.id in self.handles):
            return []  # counted already: a tainted name, or a file this code opened
        text = self.literal(node)
        if text:
            return [file_or_url(text, kind)]
        if isinstance(node, ast.Call) and _dotted(node.func)[-1:] == ["open"]:
            return []  # the open() call is a source of its own
        try:
            shown = ast.unparse(node)
        except Exception:  # pragma: no cover (unparse handles every node ast.parse builds)
            shown = ""
        return [Source(kind, "", f"`{shown[:60]}`" if shown else "")]

    def call(self, node: ast.Call) -> list[Source]:
        names = _dotted(node.func)
        attr = names[-1] if names else (node.func.attr if isinstance(
            node.func, ast.Attribute) else "")
        root = self.root(node.func)
        first = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg in _PATH_ARGS), None)
        urls = [self.literal(a) for a in [*node.args, *(k.value for k in node.keywords)]]
        urls = [u for u in urls if URL.match(u)]
        if names == ["open"] or (attr == "open" and root in ("io", "codecs", "gzip", "bz2",
                                                               "lzma", "tarfile", "Image",
                                                               "PIL", "os", "zipfile")):
            return [] if _writes(node) else self.named(first)
        if attr == "open" and isinstance(node.func, ast.Attribute):  # Path(...).open()
            return [] if _writes(node, 0) else self.named(node.func.value)
        if attr in ("read_text", "read_bytes") and isinstance(node.func, ast.Attribute) \
                and not node.args:
            return self.named(node.func.value)
        if root == "subprocess" and attr in _SUBPROCESS or root == "os" and attr in _OS_RUNS \
                or names[:1] == ["pty"] or root == "sh":
            return self.program(first)
        if root in _NET_MODULES or attr in ("urlopen", "urlretrieve"):
            if urls or attr not in _FETCHES:
                return [Source("url", u) for u in urls]
            named = self.named(first, "url")
            return [s if s.kind != "file" else Source("url", "", f"`{s.name}`") for s in named]
        if attr in _FILE_READERS:
            return self.named(first)
        if attr == "load_dataset" or attr.startswith(("fetch_", "download")):
            shown = ".".join(names) or attr  # sns.load_dataset, sklearn's fetch_openml...
            what = self.literal(first)
            return [Source("url", f"{shown}({what!r})") if what
                    else Source("url", "", f"`{shown}(...)`")]
        if attr in ("read_clipboard", "paste") and root in ("pd", "pandas", "pyperclip"):
            return [Source("clipboard", "the clipboard")]
        if attr in ("connect", "create_engine") and root in ("sqlite3", "sqlalchemy",
                                                              "duckdb", "psycopg2"):
            return [Source("database", self.literal(first) or "", "")]
        if attr in _OBJECT_READERS and root in _READER_MODULES:
            return self.named(first)
        if urls and (not names or names[-1] not in _SHOWS_ONLY):
            return [Source("url", u) for u in urls]
        return []

    def root(self, node: ast.AST) -> str:
        name = _root(node)
        return self.modules.get(name, name)

    def program(self, node: ast.AST | None) -> list[Source]:
        if isinstance(node, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            return shell_sources(shlex.join([e.value for e in node.elts]))  # type: ignore[attr-defined]
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return shell_sources(node.value)
        return [Source("program", "", "")]


def _writes(node: ast.Call, mode_at: int = 1) -> bool:
    """Whether an ``open`` call's literal mode only writes ("w", "a", "x" without "+")."""
    mode = node.args[mode_at] if len(node.args) > mode_at else next(
        (k.value for k in node.keywords if k.arg == "mode"), None)
    if not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)):
        return False
    return bool(set(mode.value) & set("wax")) and "+" not in mode.value


def _bound(node: ast.stmt, nodes: list[ast.AST]) -> tuple[list[str], list[str]]:
    """The names a top-level statement binds (assignments, with-as, for, def, import), and
    those it only changes a part of (``cache["x"] = ...``, ``obj.text = ...``)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name], []
    names: list[str] = []
    parts: list[str] = []
    for sub in nodes:
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.append(sub.id)
        elif isinstance(sub, (ast.Subscript, ast.Attribute)) and isinstance(sub.ctx, ast.Store) \
                and (root := _root(sub)):
            parts.append(root)
    return names, parts


