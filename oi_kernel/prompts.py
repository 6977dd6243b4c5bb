"""System prompts and the tool schema. Pure: text in, text out.

Two prompts: one for capable models (function calling or fenced blocks) and a
short one for small local models, where every prompt token costs latency.
"""

from __future__ import annotations

import ast
import itertools
import platform
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

TOOL_NAME = "execute"

_CAPABLE = """\
You are Open Interpreter running inside a Jupyter notebook. The user writes instructions; \
you complete them by running code on the user's machine, step by step.

How to work:
- Run code with {how}. Each step runs in one persistent IPython kernel: variables, imports \
and files from earlier steps are still there. The working directory is {cwd}.
- Languages: {languages}. Python is the default; IPython magics work in python.
- The user sees every step and may approve, edit or decline it before it runs. You then get \
its output (long output is cut to its head and tail). If a step fails, read the error and fix it.
- Prefer small steps that print or display what they find. Plots and tables display inline.
- Do not ask for confirmation in prose: propose the code; the user approves it.
- When the task is done (or cannot be done), answer in a few sentences without code.

System: {system} · Python {python}."""

_HOW_TOOLS = "the `execute` function (arguments: language, code)"
_HOW_MARKDOWN = (
    "a fenced code block, e.g. ```python ... ``` (one block per step; every block you write "
    "is run, so never show code you do not want run)"
)

_SMALL = """\
You write one short Python code block that does the task and prints the result. \
Do not define functions."""

# Worked examples for small models, sent as earlier user/assistant turns: the few that share
# the most words with the instruction (see ``small_model_examples``). A 135M model mostly
# copies the pattern of a close example, but it copies digits and quoted text badly (asked
# for the sum of 1 to 100 next to an example summing 1 to 10, SmolLM2-135M writes
# ``range(1, 11)``). So every value of a task is bound to a name first (``bind_values``):
# the task reads "Add up the numbers from a to b." with ``a = 1`` and ``b = 10`` under it,
# and the example's code is those assignment lines and then the code below, which uses
# only the names. The model then copies the assignments and the pattern, not digits.
SMALL_EXAMPLES: tuple[tuple[str, str], ...] = (
    # arithmetic
    ("What is 7 times 8 plus 3?", "print(a * b + c)"),
    ("Multiply 25 by 4.", "print(a * b)"),
    ("Divide 81 by 9.", "print(a / b)"),
    ("What is 3 to the power of 4?", "print(a ** b)"),
    ("What is 6 squared?", "print(a ** 2)"),
    ("Subtract 13 from 29.", "print(b - a)"),
    ("What is 17 mod 5?", "print(a % b)"),
    ("Integer-divide 17 by 5.", "print(a // b)"),
    ("Add 15, 25 and 35.", "print(a + b + c)"),
    ("What is the mean of 2, 4 and 9?", "print((a + b + c) / 3)"),
    ("What is 12 percent of 250?", "print(b * a / 100)"),
    ("Compute the square root of 144.", "import math\nprint(math.sqrt(a))"),
    ("Round 3.14159 to 2 decimal places.", "print(round(a, b))"),
    ("What is the absolute value of -8?", "print(abs(a))"),
    # strings
    ("Make 'data science' upper case.", "print(text.upper())"),
    ("Convert 'SHOUT' to lower case.", "print(text.lower())"),
    ("Capitalize every word in 'new york city'.", "print(text.title())"),
    ("What is the length of the string 'keyboard'?", "print(len(text))"),
    ("Remove the spaces around '  hi  '.", "print(text.strip())"),
    ("Replace 'cat' with 'dog' in 'my cat sleeps'.", "print(text3.replace(text, text2))"),
    ("Print the last 4 characters of 'programming'.", "print(text[-a:])"),
    ("Print the first 2 letters of 'window'.", "print(text[:a])"),
    ("Split 'one two three' into words.", "print(text.split())"),
    ("Split 'a;b;c' at each semicolon.", "print(text.split(';'))"),
    ("Join 'x', 'y' and 'z' with commas.", "print(','.join([text, text2, text3]))"),
    ("Does 'apple' start with 'ap'? Print True or False.", "print(text.startswith(text2))"),
    ("Reverse the word 'stressed'.", "print(text[::-1])"),
    ("Write 'drawer' backwards.", "print(text[::-1])"),
    ("Is 'noon' the same forwards and backwards?", "print(text == text[::-1])"),
    ("Repeat 'ab' 3 times.", "print(text * a)"),
    ("Does 'banana' contain 'nan'?", "print(text2 in text)"),
    # lists
    ("Sort [8, 3, 6] from largest to smallest.", "print(sorted(items, reverse=True))"),
    ("Sort the words ['pear', 'fig', 'apple'].", "print(sorted(items))"),
    ("What is the biggest value in [4, 9, 2]?", "print(max(items))"),
    ("Find the lowest value in [6, 3, 8].", "print(min(items))"),
    ("Add up the numbers in [5, 15, 25].", "print(sum(items))"),
    ("Get the unique values of [4, 4, 5, 6, 6].", "print(sorted(set(items)))"),
    ("Add 'd' to the end of ['a', 'b', 'c'].", "items.append(text)\nprint(items)"),
    ("What is the first element of [9, 8, 7]?", "print(items[0])"),
    ("What is the last item of ['a', 'b', 'c']?", "print(items[-1])"),
    ("Double every number in [1, 2, 3].", "print([n * 2 for n in items])"),
    ("Put the list [7, 8, 9] in reverse order.", "print(items[::-1])"),
    ("How long is the list [4, 5, 6, 7, 8]?", "print(len(items))"),
    ("Keep the numbers above 10 in [5, 12, 8, 20].", "print([n for n in items if n > a])"),
    ("Combine [1, 2] and [3, 4] into one list.", "print(items + items2)"),
    ("Where is 8 in [5, 8, 2]? Print its index.", "print(items.index(a))"),
    # counting
    ("How many times does 'o' occur in 'foo boo'?", "print(text2.count(text))"),
    ("Count the words in 'we like small models'.", "print(len(text.split()))"),
    ("How many odd numbers are there from 1 to 9?",
     "print(len([n for n in range(a, b + 1) if n % 2 == 1]))"),
    ("How many vowels are in 'kernel'?", "print(len([c for c in text if c in 'aeiou']))"),
    ("How many times is 2 in [2, 5, 2, 7]?", "print(items.count(a))"),
    ("How many numbers from 1 to 30 are multiples of 4?",
     "print(len([n for n in range(a, b + 1) if n % c == 0]))"),
    # sequences
    ("List the numbers from 1 to 6.", "print(list(range(a, b + 1)))"),
    ("List the odd numbers from 1 to 9.", "print(list(range(a, b + 1, 2)))"),
    ("List the multiples of 5 up to 20.", "print(list(range(a, b + 1, a)))"),
    ("List the numbers from 9 down to 6.", "print(list(range(a, b - 1, -1)))"),
    ("Print the squares of the numbers 2 to 4.", "print([n ** 2 for n in range(a, b + 1)])"),
    ("Print the first 3 even numbers.", "print([2 * n for n in range(1, a + 1)])"),
    ("Print the first 4 powers of 2.", "print([b ** n for n in range(1, a + 1)])"),
    ("Add up the numbers from 1 to 10.", "print(sum(range(a, b + 1)))"),
    ("What is 5 factorial?", "import math\nprint(math.factorial(a))"),
    ("Print the first 6 Fibonacci numbers.",
     "x, y = 0, 1\nfib = []\nfor _ in range(a):\n"
     "    fib.append(x)\n    x, y = y, x + y\nprint(fib)"),
)

_STOP_WORDS = frozenset(
    "a an and are as at be by do does for from have how i in into is it its me my of on or "
    "please print show tell that the then there this to what which with".split()
)
# Words that name the same operation, mapped to one spelling so a task finds its example.
_SYNONYMS = {
    "backward": "reverse", "backwards": "reverse", "reversed": "reverse",
    "biggest": "max", "largest": "max", "maximum": "max", "highest": "max", "greatest": "max",
    "smallest": "min", "lowest": "min", "minimum": "min", "least": "min",
    "total": "sum", "add": "sum", "plus": "sum",
    "average": "mean", "avg": "mean",
    "uppercase": "upper", "capital": "upper", "lowercase": "lower",
    "long": "length", "len": "length", "characters": "length",
    "occur": "count", "occurs": "count", "appear": "count", "appears": "count", "many": "count",
    "duplicates": "unique", "distinct": "unique", "deduplicate": "unique",
    "remainder": "mod", "modulo": "mod",
    "times": "multiply", "product": "multiply",
    "ascending": "sort", "descending": "sort", "order": "sort", "sorted": "sort",
    "palindrome": "reverse", "forwards": "reverse",
    "title": "capitalize", "capitalise": "capitalize",
}


def _keywords(text: str) -> list[str]:
    """The words of ``text`` that say what to do, synonyms merged, in order."""
    words = re.findall(r"[a-z]+", text.lower())
    return [_SYNONYMS.get(w, w).removesuffix("s") for w in words if w not in _STOP_WORDS]


def _shape(text: str) -> tuple[bool, bool, bool]:
    """What kinds of values a task gives: a list, a quoted string, a number."""
    return "[" in text, bool(re.search(r"'[^']*'|\"[^\"]*\"", text)), bool(re.search(r"\d", text))


def _similarity(instruction: str, wanted: list[str], example: str) -> tuple[int, int, int]:
    """Shared keywords (the instruction's first one, usually the operation, counts twice);
    between equals, the same kinds of values (a list is a better model for a list); then
    the fewest keywords the instruction does not have."""
    have = set(_keywords(example))
    shared = len(set(wanted) & have) + (1 if wanted and wanted[0] in have else 0)
    same_shape = sum(a == b for a, b in zip(_shape(instruction), _shape(example), strict=True))
    return shared, same_shape, -len(have - set(wanted))


# A value in a task: a flat list, a quoted string (an apostrophe inside a word is not a
# quote) or a number (a sentence's full stop after it is not a decimal point; dates,
# versions, names such as "x2" and zero-padded digits are left as they are).
_VALUE_RE = re.compile(
    r"\[[^\[\]\n]*\]"
    r"|(?<!\w)'[^'\n]*'(?!\w)|(?<!\w)\"[^\"\n]*\"(?!\w)"
    r"|(?<![\w.-])-?(?!0\d)\d+(?:\.\d+)?(?!\w|\.\d|-\d)"
)
_NUMBER_NAMES = "abcdefghjk"


def bind_values(task: str) -> tuple[str, list[tuple[str, str]]]:
    """``task`` with each value (list, quoted string, number) replaced by a name, and the
    (name, value as written) pairs in order: "Sum 1 to 10." -> ("Sum a to b.", [("a", "1"),
    ("b", "10")]). Numbers are named a, b, c..., strings text, text2..., lists items,
    items2...; a name that is also a word of the task is skipped (the article "a")."""
    words = set(re.findall(r"[a-z_]\w*", task.lower()))
    taken: set[str] = set()
    pairs: list[tuple[str, str]] = []

    def fresh(candidates: Iterable[str]) -> str:
        name = next(c for c in candidates if c not in words and c not in taken)
        taken.add(name)
        return name

    def name_value(match: re.Match[str]) -> str:
        value = match[0]
        if value.startswith("["):
            name = fresh(_numbered("items"))
        elif value[0] in "'\"":
            name = fresh(_numbered("text"))
        else:
            name = fresh(itertools.chain(_NUMBER_NAMES, (f"n{i}" for i in itertools.count(1))))
        pairs.append((name, value))
        return name

    return _VALUE_RE.sub(name_value, task), pairs


def _numbered(stem: str) -> Iterator[str]:
    yield stem
    yield from (f"{stem}{i}" for i in itertools.count(2))


def _assignments(pairs: list[tuple[str, str]]) -> str:
    return "".join(f"{name} = {value}\n" for name, value in pairs)


def small_model_task(task: str) -> str:
    """A task as a small model is shown it: its values named, their assignments below."""
    text, pairs = bind_values(task)
    return f"{text}\n{_assignments(pairs).rstrip()}" if pairs else task


def small_model_examples(
    instruction: str, count: int = 3, skip: int = 0
) -> list[dict[str, str]]:
    """The ``count`` worked examples closest to ``instruction`` after the ``skip`` closest,
    as user/assistant message pairs, the closest last (nearest the instruction); each
    task with its values named and each reply assigning them before the example's code."""
    wanted = _keywords(instruction)
    ranked = sorted(SMALL_EXAMPLES, key=lambda ex: _similarity(instruction, wanted, ex[0]),
                    reverse=True)
    messages: list[dict[str, str]] = []
    for task, code in reversed(ranked[skip : skip + count]):
        reply = _assignments(bind_values(task)[1]) + code
        messages.append({"role": "user", "content": small_model_task(task)})
        messages.append({"role": "assistant", "content": f"```python\n{reply}\n```"})
    return messages


def system_prompt(
    *,
    use_tools: bool,
    languages: Sequence[str],
    cwd: str,
    small_model: bool = False,
    extra: str = "",
    base: str = "",
) -> str:
    """The system message for the next request; ``base`` (a profile's system_message)
    replaces the built-in text when not empty."""
    if base.strip():
        text = base.strip()
    elif small_model:
        text = _SMALL
    else:
        text = _CAPABLE.format(
            how=_HOW_TOOLS if use_tools else _HOW_MARKDOWN,
            cwd=cwd,
            languages=", ".join(languages),
            system=f"{platform.system()} {platform.machine()}",
            python=platform.python_version(),
        )
    if extra.strip():
        text += "\n\nAdditional instructions:\n" + extra.strip()
    return text


def execute_tool(languages: Sequence[str]) -> dict[str, object]:
    """The OpenAI-style schema of the one tool, listing only available languages."""
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Run code in the user's persistent Jupyter kernel and return its output.",
            "parameters": {
                "type": "object",
                "properties": {
                    "language": {
                        "type": "string",
                        "enum": list(languages),
                        "description": "Language of the code.",
                    },
                    "code": {"type": "string", "description": "The code to run."},
                },
                "required": ["language", "code"],
            },
        },
    }


def uncalled_functions(code: str) -> list[str]:
    """Top-level functions that ``code`` defines but never calls (a small-model habit)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    called = {n.func.id for n in ast.walk(tree)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return [name for name in defined if name not in called]


def step_feedback(
    status: str, output_text: str, flags_text: str = "", code: str = "", small: bool = False
) -> str:
    """What the LLM is told after a step ran (or did not); ``small``: for a small model,
    which also gets told to write the fixed code after an error."""
    if status == "ok":
        body = output_text or _no_output(code)
        if small and output_text and (why := not_a_result(output_text)):
            body = f"The code printed `{output_text.strip()}`, {_NOT_A_RESULT}: {why}"
    elif status == "error":
        body = "The code raised an error:\n" + output_text
        if small:
            body += "\nWrite the corrected code."
    elif status == "interrupted":
        body = "The user interrupted the code." + (
            f" Output so far:\n{output_text}" if output_text else ""
        )
    else:
        body = output_text
    if flags_text:
        body += "\n\nRisk review of this code:\n" + flags_text
    return body


_NOTHING_PRINTED = "printed nothing"
_NOT_A_RESULT = "which is not a result"
# Printed reprs that are never the answer a small model meant to show.
_NOT_RESULTS = (
    (re.compile(r"range\(-?\d+, -?\d+(, -?\d+)?\)"),
     "a range object, not its numbers. Print list(range(...)) instead."),
    (re.compile(r"<(generator|map|filter|zip|enumerate|list_reverseiterator|reversed) object "
                r"(<genexpr> )?at 0x[0-9a-f]+>"),
     "an iterator object, not its values. Print list(...) of it instead."),
    (re.compile(r"<(function|built-in function|bound method|built-in method) .*>"),
     "a function, not its result. Call it and print what it returns."),
    (re.compile(r"None"),
     "methods such as list.append() and list.sort() change the list and return None. "
     "Print the list itself after calling them."),
)


def not_a_result(output_text: str) -> str:
    """Why ``output_text`` (all a step printed) is not an answer, or "" when it may be."""
    text = output_text.strip()
    return next((why for pattern, why in _NOT_RESULTS if pattern.fullmatch(text)), "")


def shows_no_result(feedback: str) -> bool:
    """Whether ``feedback`` (from ``step_feedback``) says the code ran but showed nothing
    useful: no output, an uncalled function, or only a value that is not a result."""
    first = feedback.split("\n", 1)[0]
    return feedback.startswith("The code ") and (_NOTHING_PRINTED in first
                                                 or _NOT_A_RESULT in first)


def _no_output(code: str) -> str:
    uncalled = uncalled_functions(code)
    if uncalled:
        names = ", ".join(f"{n}()" for n in uncalled)
        return (f"The code defined {names} but never called it, so nothing ran and it "
                f"{_NOTHING_PRINTED}. Call it and print the result{_call_hint(code, uncalled)}.")
    hint = _print_hint(code)
    return f"The code ran and {_NOTHING_PRINTED}. " + (
        f"Print the result: add `print({hint})` at the end." if hint
        else "Print or display the result to see it."
    )


def _call_hint(code: str, names: list[str]) -> str:
    """``, e.g. `print(f())``` for the last uncalled function when it takes no arguments."""
    tree = ast.parse(code)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == names[-1]:
            args = node.args
            if not (args.posonlyargs or args.args or args.kwonlyargs or args.vararg):
                return f", e.g. `print({node.name}())`"
    return ", with the values from the task"


def _print_hint(code: str) -> str:
    """The name the code's last statement assigned, if it is a plain assignment."""
    try:
        last = ast.parse(code).body[-1]
    except (SyntaxError, IndexError):
        return ""
    targets = last.targets if isinstance(last, ast.Assign) else (
        [last.target] if isinstance(last, (ast.AugAssign, ast.AnnAssign)) else [])
    return targets[0].id if len(targets) == 1 and isinstance(targets[0], ast.Name) else ""


_CELL_FRAME = re.compile(r"^\s*Cell In\[(\d+)\], line (\d+)")


def compact_error(output: dict[str, Any], code: str) -> str:
    """An IPython error output in two lines, for a small model: the failing line of
    ``code`` (from the last frame in the current cell) and the error itself."""
    from .outputs import strip_ansi

    ename = output.get("ename", "Error")
    lines = strip_ansi("\n".join(output.get("traceback") or [])).splitlines()
    frames = [(int(m[1]), int(m[2])) for line in lines if (m := _CELL_FRAME.match(line))]
    error = next((ln.strip() for ln in reversed(lines) if ln.startswith(f"{ename}:")),
                 f"{ename}: {output.get('evalue', '')}".strip())
    source = code.splitlines()
    if frames:
        cell = max(number for number, _ in frames)  # the cell just run; older ones are lower
        line = [n for number, n in frames if number == cell][-1]
        if 1 <= line <= len(source):
            return f"Line {line}: {source[line - 1].strip()}\n{error}"
    return error


def small_model_output_text(outputs: list[dict[str, Any]], code: str, max_chars: int) -> str:
    """A step's outputs for a small model: as for any model, but errors compact."""
    from .outputs import outputs_to_text

    shown = outputs_to_text([o for o in outputs if o.get("output_type") != "error"],
                            max_chars=max_chars)
    errors = [compact_error(o, code) for o in outputs if o.get("output_type") == "error"]
    return "\n".join(part for part in (shown, *errors) if part)
