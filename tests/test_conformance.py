"""The Jupyter kernel conformance suite (jupyter_kernel_test) on the Open Interpreter kernel,
with `%%python` cells as the code samples (they bypass the LLM)."""

from __future__ import annotations

import jupyter_kernel_test as jkt


class OpenInterpreterKernelTests(jkt.KernelTests):
    kernel_name = "open-interpreter"
    language_name = "markdown"
    file_extension = ".md"

    code_hello_world = "%%python\nprint('hello, world')"
    code_stderr = "%%python\nimport sys\nprint('test', file=sys.stderr)"
    code_page_something = "%%python\nprint?"
    code_generate_error = "%%python\nraise ValueError('boom')"
    code_execute_result = [
        {"code": "%%python\n6 * 7", "result": "42"},
        {"code": "%%python\n'a' + 'b'", "result": "'ab'"},
    ]
    code_display_data = [
        {"code": "%%python\nfrom IPython.display import HTML, display\ndisplay(HTML('<b>x</b>'))",
         "mime": "text/html"},
        {"code": "%%python\nfrom IPython.display import Markdown, display\ndisplay(Markdown('*x*'))",
         "mime": "text/markdown"},
    ]
    code_clear_output = "%%python\nfrom IPython.display import clear_output\nclear_output()"
    completion_samples = [{"text": "%%python\nimport collections\ncollections.OrderedD", "matches": {"OrderedDict"}}]
    code_inspect_sample = "%%python\nprint"
    complete_code_samples = ["plot revenue by month", "what is 2+2?", "%%python\nx = 1",
                             "%model", "!ls"]
    incomplete_code_samples = ["%%python", "%%python\nx = (1,", "%%python\nfor i in x:",
                               "%%bash", "%%bash\nls"]
    code_history_pattern = "%%python\n6*"
    supported_history_operations = ("tail", "range", "search")
