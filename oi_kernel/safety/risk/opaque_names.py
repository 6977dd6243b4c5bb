"""The names the opacity checks know: lookups by name, importers, code runners, decoders,
deserialisers, IPython's runners, downloaders, and calls whose URL argument is not a read."""

from __future__ import annotations

GETATTR = {"getattr", "builtins.getattr"}
IMPORTERS = {
    "__import__",
    "builtins.__import__",
    "importlib.import_module",
    "importlib.__import__",
    "pkgutil.resolve_name",
    "pydoc.locate",
}
EXEC = {"exec", "eval", "compile", "builtins.exec", "builtins.eval", "builtins.compile"}
NATIVE = ("ctypes", "_ctypes", "cffi", "_cffi_backend")
WALK = {
    "__builtins__", "__globals__", "__subclasses__", "__mro__", "__bases__", "__base__",
    "__code__", "__closure__", "__loader__", "func_globals", "f_globals", "f_locals",
    "f_builtins", "f_back", "f_code", "gi_frame", "gi_code", "cr_frame", "ag_frame", "tb_frame",
    "__getattribute__", "__self__",
}  # fmt: skip
_WALK_CALLS = {
    "sys._getframe", "inspect.currentframe", "inspect.stack", "inspect.getouterframes",
    "inspect.trace", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
}  # fmt: skip
RISKY_ATTRS = {
    "system", "popen", "Popen", "check_output", "check_call", "getoutput", "getstatusoutput",
    "spawnv", "spawnl", "spawnvp", "spawnlp", "execv", "execve", "execvp", "execl", "execlp",
    "posix_spawn", "fork", "rmtree", "unlink", "eval", "exec", "__import__", "import_module",
    "load_module", "exec_module", "run_cell", "runsource", "runcode", "CDLL", "dlopen",
}  # fmt: skip
RISKY_MODULES = {
    "os", "posix", "nt", "subprocess", "sys", "shutil", "socket", "pty", "builtins",
    "importlib", "pickle", "marshal", "code", "runpy", "signal", "multiprocessing", "asyncio",
    "requests", "urllib", "http", "ftplib", "telnetlib", "smtplib", "webbrowser", "ctypes",
    "cffi",
}  # fmt: skip
_CODE_RUNNERS = {
    "runpy.run_path": "runs the Python file {arg}",
    "runpy.run_module": "runs the module {arg}",
    "code.interact": "opens an interpreter that runs code typed later",
    "code.InteractiveInterpreter": "creates an interpreter that runs code strings",
    "code.InteractiveConsole": "creates an interpreter that runs code strings",
    "code.compile_command": "compiles code built at run time",
    "types.FunctionType": "builds a function from a code object",
    "types.CodeType": "builds a code object",
    "types.LambdaType": "builds a function from a code object",
    "importlib.util.spec_from_file_location": "loads the Python file {arg} as a module",
    "importlib.util.spec_from_loader": "loads a module from a custom loader",
    "importlib.machinery.SourceFileLoader": "loads the Python file {arg} as a module",
    "importlib.machinery.SourcelessFileLoader": "loads compiled code {arg} as a module",
    "imp.load_source": "loads the Python file {arg} as a module",
    "zipimport.zipimporter": "imports code from the archive {arg}",
}
DECODERS = {
    "base64.b64decode", "base64.b32decode", "base64.b16decode", "base64.a85decode",
    "base64.b85decode", "base64.decodebytes", "base64.urlsafe_b64decode",
    "base64.standard_b64decode", "base64.decodestring", "binascii.a2b_base64",
    "binascii.a2b_hex", "binascii.unhexlify", "binascii.a2b_uu", "binascii.a2b_qp",
    "codecs.decode", "zlib.decompress", "gzip.decompress", "bz2.decompress", "lzma.decompress",
    "marshal.loads", "pickle.loads", "dill.loads", "cloudpickle.loads", "bytes.fromhex",
    "bytearray.fromhex", "quopri.decodestring",
}  # fmt: skip
DESERIALIZERS = {
    "pickle.load", "pickle.loads", "pickle.Unpickler", "_pickle.loads", "_pickle.load",
    "marshal.load", "marshal.loads", "dill.load", "dill.loads", "cloudpickle.load",
    "cloudpickle.loads", "jsonpickle.decode", "shelve.open",
}  # fmt: skip
_IPYTHON_RUNNERS = {
    "run_cell": "python", "run_cell_async": "python", "ex": "python", "ev": "python",
    "run_line_magic": "line", "magic": "line", "run_cell_magic": "cell",
    "system": "shell", "system_raw": "shell", "system_piped": "shell", "getoutput": "shell",
    "runsource": "python", "runcode": "python", "run_code": "python",
}  # fmt: skip
_ANY_OBJECT_RUNNERS = {"run_cell", "run_cell_async", "run_line_magic", "run_cell_magic",
                       "runsource", "runcode"}  # fmt: skip
_DOWNLOAD_CALLS = (
    "seaborn.load_dataset", "sklearn.datasets.fetch_", "torch.hub.", "torchvision.datasets.utils.download",
    "datasets.load_dataset", "nltk.download", "keras.utils.get_file", "tensorflow.keras.utils.get_file",
    "tf.keras.utils.get_file", "huggingface_hub.hf_hub_download", "huggingface_hub.snapshot_download",
    "gdown.", "wget.download", "yfinance.download", "pandas_datareader.", "webbrowser.open",
    "spacy.cli.download", "kagglehub.", "opendatasets.download",
)  # fmt: skip
_URL_SINKS = {
    "print", "display", "len", "str", "repr", "isinstance", "urlparse", "urlsplit", "urljoin",
    "urlunparse", "urlunsplit", "quote", "quote_plus", "unquote", "urlencode", "parse_qs",
    "startswith", "endswith", "split", "rsplit", "partition", "replace", "strip", "rstrip",
    "lstrip", "format", "join", "encode", "lower", "upper", "find", "rfind", "index", "count",
    "append", "extend", "insert", "add", "match", "search", "fullmatch", "sub", "findall",
    "info", "debug", "warning", "error", "warn", "exception", "critical", "log", "Markdown",
    "HTML", "Latex", "set_title", "title", "suptitle", "xlabel", "ylabel", "set_xlabel",
    "set_ylabel", "text", "annotate", "figtext", "legend", "write", "writelines",
    "set", "list", "tuple", "dict", "setdefault", "update",
}  # fmt: skip
