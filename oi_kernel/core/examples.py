"""Worked examples for small models: a bank of one-line tasks with their code, the few
closest to an instruction picked by shared keywords, and every value of a task named
(``a = 1``) so the model copies names instead of retyping digits. Pure: text in, text out.

The bank (``SMALL_EXAMPLES``) is one cohesive table; the functions below it pick from it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator

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


def task_with_names(task: str) -> str:
    """A task as a small model is shown it: its values named, their assignments below."""
    text, pairs = bind_values(task)
    return f"{text}\n{_assignments(pairs).rstrip()}" if pairs else task


def closest(
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
        messages.append({"role": "user", "content": task_with_names(task)})
        messages.append({"role": "assistant", "content": f"```python\n{reply}\n```"})
    return messages
