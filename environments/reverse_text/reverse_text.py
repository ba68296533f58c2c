"""reverse-text: reverse a short piece of text, character by character.

The system prompt carries the instruction and the user message is exactly the
text to reverse, so the reply is plain text (no tags): a task small enough for
a tiny byte-level model to learn. The reward gives partial credit through the
longest common subsequence with the reversed text, so it rises smoothly from
0.0 (nothing in common) to 1.0 (exact).

Texts are made in code from a fixed word list and a seed: no downloads, the same
rows on every machine. Three disjoint splits: training, validation (for tuning) and
test (the held-out rows ``vf-eval`` measures by default; ``eval_split="validation"``
measures the validation rows instead). A text's near-duplicates are the texts of the
same words in any order ("sea all" and "all sea"): no split holds a near-duplicate of
another split's text.
"""

from __future__ import annotations

import random
import string

from datasets import Dataset

import verifiers as vf
from verifiers.errors import UsageError

SYSTEM_PROMPT = "Reverse the text character by character. Reply with the reversed text only."

# Lowercase words of 1-7 letters; "a" keeps every length from 1 up reachable.
WORDS = """
a an at be by do go he if in is it me my no of on or so to up us we
act age air all and ant any ape arm art ask bag bat bed bee big bit box boy bus
cat cow cup cut day dog dry ear eat egg end eye fan far fix fly fog fox fun gas
hat hen hot ice ink jam jar jet joy key kid lab leg lid log map mix mud net new
nut oak oil old owl pan pen pet pig pin pot red rug run sad sea sun tea ten top
toy van war wax web wet win yes zoo
bake band bell bird blue boat book cake calm card coin cold cook corn crab desk
door drum duck dust farm fish flag frog gift gold good grid hand harp hill home
idea iron jump kite lake lamp leaf lime lion mask milk moon nest note oven park
pear rain ring road rock rose sand ship shoe snow song star tent tree wind wolf
apple beach bread brick chair chalk cloud dream eagle field flame glass grape
house juice knife lemon light money mouse music night ocean paper piano plant
quiet river robot salad sheep smile stone storm sugar table tiger train water
animal basket bridge butter candle castle cookie flower forest garden jacket
orange pencil pepper rabbit rocket silver spring summer window winter yellow
balloon cabinet captain dolphin kitchen morning rainbow thunder village whistle
""".split()

_MAX_TRIES_PER_TEXT = 1000


def reverse(text: str) -> str:
    """The text with its characters in reverse order."""
    return text[::-1]


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (O(len(a)·len(b)))."""
    if len(a) < len(b):
        a, b = b, a
    row = [0] * (len(b) + 1)
    for ch in a:
        diagonal = 0
        for j, other in enumerate(b, start=1):
            above = row[j]
            row[j] = diagonal + 1 if ch == other else max(row[j], row[j - 1])
            diagonal = above
    return row[-1]


def lcs_ratio(response: str, target: str) -> float:
    """``2·LCS / (len(response) + len(target))``: 1.0 iff equal, 0.0 if nothing is shared.

    Both missing and extra characters cost, so padding a reply does not pay.
    """
    total = len(response) + len(target)
    return 2 * lcs_length(response, target) / total if total else 1.0


def lcs_reward(completion: vf.Messages, answer: str, parser: vf.Parser) -> float:
    """Partial credit: the LCS ratio between the reply and the reversed text."""
    response = (parser.parse_answer(completion) or "").strip()
    return lcs_ratio(response, answer)


def exact_match(completion: vf.Messages, answer: str, parser: vf.Parser) -> float:
    """1.0 when the reply is exactly the reversed text (surrounding whitespace ignored)."""
    response = (parser.parse_answer(completion) or "").strip()
    return 1.0 if response == answer else 0.0


def word_key(text: str) -> tuple[str, ...]:
    """The text's words in sorted order: texts with one key are near-duplicates (the same words reordered)."""
    return tuple(sorted(text.split()))


def make_texts(
    count: int,
    min_len: int,
    max_len: int,
    rng: random.Random,
    exclude: set[tuple[str, ...]],
    kind: str = "words",
) -> list[str]:
    """``count`` texts of ``min_len``-``max_len`` characters (whole words, or random lowercase letters for
    ``kind="letters"``), no two with one :func:`word_key` and none whose key is in ``exclude``."""
    sample = _sample_text if kind == "words" else _sample_letters
    texts: list[str] = []
    seen = set(exclude)
    for _ in range(count):
        for _ in range(_MAX_TRIES_PER_TEXT):
            text = sample(rng, min_len, max_len)
            if text is not None and word_key(text) not in seen:
                break
        else:
            raise UsageError(
                f"could not make {count} distinct texts of {min_len}-{max_len} characters; "
                "widen the length range or ask for fewer examples"
            )
        seen.add(word_key(text))
        texts.append(text)
    return texts


def _sample_letters(rng: random.Random, min_len: int, max_len: int) -> str:
    """A random lowercase string: a subword tokenizer cuts it into short pieces, which a model can reverse by
    copying them backwards, where a whole word is one token it would have to spell."""
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(min_len, max_len)))


def _sample_text(rng: random.Random, min_len: int, max_len: int) -> str | None:
    """Words joined by spaces up to a random target length; ``None`` if it missed the range."""
    target = rng.randint(min_len, max_len)
    words: list[str] = []
    while len(" ".join(words)) < target:
        words.append(rng.choice(WORDS))
    if len(" ".join(words)) > max_len:
        words.pop()
    text = " ".join(words)
    return text if min_len <= len(text) <= max_len else None


def build_split(texts: list[str]) -> Dataset:
    """Rows with the text as ``question`` and its reversal as ``answer``."""
    return Dataset.from_dict(
        {"question": texts, "answer": [reverse(t) for t in texts], "task": ["reverse-text"] * len(texts)}
    )


def load_environment(
    num_train_examples: int = 1000,
    num_eval_examples: int = 100,
    min_len: int = 5,
    max_len: int = 20,
    seed: int = 0,
    eval_split: str = "test",
    kind: str = "words",
) -> vf.Environment:
    """Build the reverse-text environment.

    Args:
        num_train_examples: rows in the training split (0 for none).
        num_eval_examples: rows in the evaluation split (0 for none).
        min_len, max_len: length range of each text, in characters.
        seed: picks the texts; the same seed gives the same rows.
        eval_split: the rows evaluated: ``"test"`` (held out: never trained or tuned on) or
            ``"validation"`` (as many rows, for choosing hyperparameters).
        kind: ``"words"`` (texts of whole words from the word list) or ``"letters"`` (random
            lowercase strings, what the main job trains SmolLM2 on).

    The test texts depend only on ``num_eval_examples``, the lengths and the seed,
    so changing the training size never changes them; the validation texts avoid
    them, and the training texts avoid both (near-duplicates included, :func:`word_key`),
    whichever split is evaluated, so tuning on one and reporting the other trains on
    the same rows.
    """
    _check_args(num_train_examples, num_eval_examples, min_len, max_len, seed)
    if eval_split not in ("test", "validation"):
        raise UsageError(f"eval_split must be 'test' or 'validation', got {eval_split!r}")
    if kind not in ("words", "letters"):
        raise UsageError(f"kind must be 'words' or 'letters', got {kind!r}")
    # letters draw from their own streams, so the word texts of a seed stay what they were
    tag = "" if kind == "words" else "letters/"
    test_texts = make_texts(
        num_eval_examples, min_len, max_len, random.Random(f"{seed}/{tag}eval"), exclude=set(), kind=kind
    )
    held_out = {word_key(t) for t in test_texts}
    validation_texts = make_texts(
        num_eval_examples, min_len, max_len, random.Random(f"{seed}/{tag}validation"), exclude=held_out, kind=kind
    )
    held_out |= {word_key(t) for t in validation_texts}
    train_texts = make_texts(
        num_train_examples, min_len, max_len, random.Random(f"{seed}/{tag}train"), exclude=held_out, kind=kind
    )
    eval_texts = test_texts if eval_split == "test" else validation_texts
    parser = vf.Parser()
    rubric = vf.Rubric(funcs=[lcs_reward, exact_match], weights=[1.0, 0.0], parser=parser)
    return vf.SingleTurnEnv(
        dataset=build_split(train_texts) if train_texts else None,
        eval_dataset=build_split(eval_texts) if eval_texts else None,
        system_prompt=SYSTEM_PROMPT,
        parser=parser,
        rubric=rubric,
    )


def _check_args(num_train: int, num_eval: int, min_len: int, max_len: int, seed: int) -> None:
    for name, value in {
        "num_train_examples": num_train,
        "num_eval_examples": num_eval,
        "min_len": min_len,
        "max_len": max_len,
        "seed": seed,
    }.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise UsageError(f"{name} must be an integer, got {value!r}")
    if num_train < 0 or num_eval < 0:
        raise UsageError("num_train_examples and num_eval_examples must be 0 or more")
    if num_train == 0 and num_eval == 0:
        raise UsageError("num_train_examples and num_eval_examples are both 0; ask for at least one row")
    if min_len < 1 or max_len < min_len:
        raise UsageError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
