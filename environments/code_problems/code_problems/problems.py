"""Procedurally generated stdin/stdout programming problems, each with a reference solution.

A problem is a template (string, list, number-theory or simulation task) with
parameters drawn from a seeded generator; its test inputs are random too, and
the expected outputs come from the template's reference implementation, so
every case is right by construction. ``difficulty`` (1-3) scales input sizes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_WORDS = ["apple", "river", "stone", "cloud", "ember", "maple", "orbit", "pixel", "quartz", "tiger", "velvet", "zephyr"]


@dataclass(frozen=True)
class Template:
    """One kind of task: its statement, a random input maker and the reference solution, given parameters."""

    name: str
    params: Callable[[random.Random], dict[str, Any]]
    statement: Callable[[dict[str, Any]], str]
    make_input: Callable[[random.Random, dict[str, Any], int], str]
    solve: Callable[[str, dict[str, Any]], str]


def _numbers(rng: random.Random, difficulty: int, low: int = -100, high: int = 100) -> list[int]:
    return [rng.randint(low, high) for _ in range(rng.randint(1, 5 * 10 ** difficulty // 10 + 3))]


def _list_input(rng: random.Random, p: dict[str, Any], difficulty: int) -> str:
    values = _numbers(rng, difficulty)
    return f"{len(values)}\n{' '.join(map(str, values))}\n"


def _list_of(text: str) -> list[int]:
    lines = text.split("\n")
    return [int(v) for v in lines[1].split()]


def _rotate(text: str, p: dict[str, Any]) -> str:
    values = _list_of(text)
    k = p["k"] % len(values)
    return " ".join(map(str, values[-k:] + values[:-k] if k else values))


def _running(text: str, p: dict[str, Any]) -> str:
    values, out, best = _list_of(text), [], None
    for v in values:
        best = v if best is None else (max(best, v) if p["op"] == "maximum" else min(best, v))
        out.append(best)
    return " ".join(map(str, out))


def _count_multiples(text: str, p: dict[str, Any]) -> str:
    return str(sum(1 for v in _list_of(text) if v % p["m"] == 0))


def _words_input(rng: random.Random, p: dict[str, Any], difficulty: int) -> str:
    lines = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3 * difficulty)))
             for _ in range(rng.randint(1, 2 * difficulty + 1))]
    return f"{len(lines)}\n" + "\n".join(lines) + "\n"


def _word_lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[1:1 + int(lines[0])]


def _caesar(text: str, p: dict[str, Any]) -> str:
    shift = p["shift"]
    return "\n".join("".join(chr((ord(c) - 97 + shift) % 26 + 97) if c.isalpha() else c for c in line)
                     for line in _word_lines(text))


def _count_letter(text: str, p: dict[str, Any]) -> str:
    return "\n".join(str(line.count(p["letter"])) for line in _word_lines(text))


def _rle_input(rng: random.Random, p: dict[str, Any], difficulty: int) -> str:
    return "".join(rng.choice("ab" if difficulty == 1 else "abc") * rng.randint(1, 4)
                   for _ in range(rng.randint(1, 4 * difficulty))) + "\n"


def _rle(text: str, p: dict[str, Any]) -> str:
    s, out, i = text.strip(), [], 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        out.append(f"{s[i]}{j - i}" if p["order"] == "letter first" else f"{j - i}{s[i]}")
        i = j
    return "".join(out)


def _pairs_input(rng: random.Random, p: dict[str, Any], difficulty: int) -> str:
    pairs = [(rng.randint(1, 10 ** (2 * difficulty)), rng.randint(1, 10 ** (2 * difficulty)))
             for _ in range(rng.randint(1, 3 + 2 * difficulty))]
    return f"{len(pairs)}\n" + "\n".join(f"{a} {b}" for a, b in pairs) + "\n"


def _gcd_lcm(text: str, p: dict[str, Any]) -> str:
    lines = text.split("\n")
    out = []
    for line in lines[1:1 + int(lines[0])]:
        a, b = map(int, line.split())
        out.append(str((math.gcd(a, b) if p["what"] == "greatest common divisor" else math.lcm(a, b)) % p["mod"]))
    return "\n".join(out)


def _n_input(rng: random.Random, p: dict[str, Any], difficulty: int) -> str:
    return f"{rng.randint(1, 10 ** (difficulty + 1))}\n"


def _digit_steps(text: str, p: dict[str, Any]) -> str:
    n, steps = int(text.split()[0]), 0
    while n >= p["base"]:
        digits, m = 0, n
        while m:
            digits, m = digits + m % p["base"], m // p["base"]
        n, steps = digits, steps + 1
    return f"{steps} {n}"


def _primes(text: str, p: dict[str, Any]) -> str:
    n = int(text.split()[0])
    sieve = [True] * (n + 1)
    sieve[:2] = [False] * min(2, n + 1)
    for i in range(2, math.isqrt(n) + 1):
        if sieve[i]:
            sieve[i * i::i] = [False] * len(range(i * i, n + 1, i))
    return str(sum(1 for i, prime in enumerate(sieve) if prime and i % p["m"] == p["r"]))


def _moves_input(rng: random.Random, p: dict[str, Any], difficulty: int) -> str:
    return "".join(rng.choice("UDLR") for _ in range(rng.randint(1, 10 ** difficulty))) + "\n"


def _robot(text: str, p: dict[str, Any]) -> str:
    size, x, y = p["size"], 0, 0
    step = {"U": (0, 1), "D": (0, -1), "L": (-1, 0), "R": (1, 0)}
    for move in text.strip():
        dx, dy = step[move]
        if p["walls"] == "wraps around":
            x, y = (x + dx) % size, (y + dy) % size
        else:
            x, y = min(max(x + dx, 0), size - 1), min(max(y + dy, 0), size - 1)
    return f"{x} {y}"


_LIST_FORMAT = "The first line holds n; the second line holds n space-separated integers."
_WORDS_FORMAT = "The first line holds n; each of the next n lines holds lowercase words separated by single spaces."
_PAIRS_FORMAT = "The first line holds n; each of the next n lines holds two positive integers a and b."

TEMPLATES: list[Template] = [
    Template("rotate", lambda r: {"k": r.randint(1, 20)},
             lambda p: f"Rotate the list to the right by {p['k']} positions (the last element moves to the front, "
                       f"{p['k']} times) and print it on one line, space-separated. {_LIST_FORMAT}",
             _list_input, _rotate),
    Template("running", lambda r: {"op": r.choice(["maximum", "minimum"])},
             lambda p: f"Print, on one line and space-separated, the running {p['op']} of the list: the i-th value "
                       f"is the {p['op']} of its first i elements. {_LIST_FORMAT}",
             _list_input, _running),
    Template("multiples", lambda r: {"m": r.randint(2, 13)},
             lambda p: f"Print how many of the integers are divisible by {p['m']} (zero counts). {_LIST_FORMAT}",
             _list_input, _count_multiples),
    Template("caesar", lambda r: {"shift": r.randint(1, 25)},
             lambda p: f"Shift every letter {p['shift']} places forward in the alphabet, wrapping from z to a, and "
                       f"print each line so changed, spaces kept. {_WORDS_FORMAT}",
             _words_input, _caesar),
    Template("count_letter", lambda r: {"letter": r.choice("aeiortz")},
             lambda p: f"For each line, print on a line of its own how many times the letter '{p['letter']}' "
                       f"occurs in it. {_WORDS_FORMAT}",
             _words_input, _count_letter),
    Template("rle", lambda r: {"order": r.choice(["letter first", "count first"])},
             lambda p: "Run-length encode the string on the single input line: each maximal run of one letter "
                       "becomes " + ("the letter followed by the run's length (aaab -> a3b1)"
                                     if p["order"] == "letter first" else
                                     "the run's length followed by the letter (aaab -> 3a1b)") + "; print the result.",
             _rle_input, _rle),
    Template("gcd_lcm", lambda r: {"what": r.choice(["greatest common divisor", "least common multiple"]),
                                   "mod": r.choice([97, 1000, 1009, 10007, 1000003])},
             lambda p: f"For each pair, print on a line of its own the {p['what']} of a and b, modulo {p['mod']}. "
                       f"{_PAIRS_FORMAT}",
             _pairs_input, _gcd_lcm),
    Template("digit_steps", lambda r: {"base": r.randint(2, 16)},
             lambda p: f"Start from the integer n on the single input line. While n has more than one digit in base "
                       f"{p['base']}, replace it by the sum of its base-{p['base']} digits. Print the number of "
                       f"replacements and the final value (in decimal), separated by a space.",
             _n_input, _digit_steps),
    Template("primes", lambda r: {"m": (m := r.randint(2, 10)), "r": r.randint(0, m - 1)},
             lambda p: f"Print how many primes p <= n satisfy p mod {p['m']} = {p['r']}, where n is the integer "
                       f"on the single input line.",
             _n_input, _primes),
    Template("robot", lambda r: {"size": r.randint(3, 50), "walls": r.choice(["wraps around", "stops the robot"])},
             lambda p: f"A robot starts at (0, 0) on a {p['size']}x{p['size']} grid with cells (x, y), "
                       f"0 <= x, y < {p['size']}. The single input line is a string of moves: U is y+1, D is y-1, "
                       f"R is x+1, L is x-1. Leaving the grid {p['walls']} (a blocked move does nothing). "
                       f"Print the final x and y separated by a space.",
             _moves_input, _robot),
]


def make_problem(rng: random.Random, difficulty: int, num_tests: int) -> dict[str, Any]:
    """One problem: ``statement`` (with a worked example) and ``test_cases`` from the reference solution."""
    template = rng.choice(TEMPLATES)
    params = template.params(rng)
    cases = []
    for _ in range(num_tests + 1):
        given = template.make_input(rng, params, difficulty)
        cases.append({"input": given, "output": template.solve(given, params) + "\n"})
    example, tests = cases[0], cases[1:]
    statement = (f"{template.statement(params)}\n\nExample input:\n{example['input']}\n"
                 f"Example output:\n{example['output']}")
    return {"template": template.name, "params": params, "statement": statement, "test_cases": tests}
