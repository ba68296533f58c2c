"""XMLParser: fields written as ``<tag>...</tag>`` blocks, with a graded format reward."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from verifiers.parsers.parser import Parser, RewardFn, identity, require_str

if TYPE_CHECKING:
    from verifiers.types import Messages

Field = str | tuple[str, ...]


class XMLParser(Parser):
    """Parse XML-tagged fields such as ``<think>...</think><answer>...</answer>``.

    Each field is a tag name, or a tuple whose first name is canonical (used by
    :meth:`format`) and whose other names are accepted alternatives when parsing.

    >>> parser = XMLParser(["think", ("answer", "code")])
    >>> parser.parse("<think>hmm</think><code>x = 1</code>").code
    'x = 1'
    >>> parser.format(think="hmm", answer="4")
    '<think>\\nhmm\\n</think>\\n<answer>\\n4\\n</answer>'

    ``extract_fn`` is accepted for signature compatibility; as in classic
    verifiers, :meth:`parse` and :meth:`parse_answer` return field text as written.
    """

    def __init__(
        self,
        fields: list[Field],
        answer_field: str = "answer",
        extract_fn: Callable[[str], Any] = identity,
        **kwargs: Any,
    ) -> None:
        super().__init__(extract_fn=extract_fn, **kwargs)
        self._fields: list[tuple[str, list[str]]] = _normalise_fields(fields)
        self.answer_field = answer_field
        self._patterns = {
            tag: re.compile(rf"<{re.escape(tag)}>\s*(.*?)\s*</{re.escape(tag)}>", re.DOTALL)
            for _, alternatives in self._fields
            for tag in alternatives
        }
        if "think" in self.get_fields():
            self.logger.warning(
                "XMLParser has a 'think' field: every answer must then contain <think>...</think> "
                "written by the model. Servers or chat templates that strip reasoning (e.g. Qwen3, "
                "DeepSeek-R1) make such answers fail to parse."
            )

    def parse(self, text: str, strip: bool = True, last: bool = False) -> SimpleNamespace:
        """Read every allowed tag from ``text``.

        The result has one attribute per allowed tag (alternatives included),
        ``None`` where the tag is absent. ``last=True`` takes the last occurrence
        of each tag instead of the first.
        """
        require_str(text, type(self).__name__)
        values: dict[str, str | None] = {}
        for tag, pattern in self._patterns.items():
            if last:
                found = list(pattern.finditer(text))
                match = found[-1] if found else None
            else:
                match = pattern.search(text)
            if match is None:
                values[tag] = None
            else:
                values[tag] = match.group(1).strip() if strip else match.group(1)
        return SimpleNamespace(**values)

    def parse_answer(self, completion: Messages) -> str | None:
        """The ``answer_field`` text of the latest message that has one, else ``None``.

        A string is read with ``last=True``; a chat is scanned from its last
        assistant message backwards, each message read from its *first* match
        (the original's rule, which scores depend on).
        """
        texts = self._assistant_texts(completion)
        last = isinstance(completion, str)
        for text in reversed(texts):
            value = getattr(self.parse(text, last=last), self.answer_field, None)
            if value is not None:
                return value
        return None

    def get_fields(self) -> list[str]:
        """The canonical field names, in order."""
        return [canonical for canonical, _ in self._fields]

    def get_format_str(self) -> str:
        """A description of the expected layout, for system prompts."""
        blocks = []
        for canonical, alternatives in self._fields:
            name = f"[ {' | '.join(alternatives)} ]" if len(alternatives) > 1 else canonical
            blocks.append(f"<{name}>\n...\n</{name}>")
        return "\n".join(blocks)

    def format(self, **kwargs: Any) -> str:
        """Render fields as ``<tag>\\nvalue\\n</tag>`` blocks joined by newlines.

        Values may be given under the canonical name or any alternative (the
        canonical one wins); the canonical tag is always written. A field with
        no value raises ``ValueError``.
        """
        blocks = []
        for canonical, alternatives in self._fields:
            names = [canonical] + [a for a in alternatives if a != canonical]
            value = next((kwargs[n] for n in names if kwargs.get(n) is not None), None)
            if value is None:
                raise ValueError(f"missing value for field {canonical!r} (accepted names: {alternatives})")
            blocks.append(f"<{canonical}>\n{value}\n</{canonical}>")
        return "\n".join(blocks)

    def get_format_reward_func(self) -> RewardFn:
        """Reward for following the field layout, averaged over assistant messages.

        Each message scores the sum of:

        - 0.4 x the fraction of field sets present, granted only when at least
          one field parses (a set is present when one of its tags parses, or its
          opening or closing tag merely appears);
        - 0.2 for spacing; both parses of a field use the same pattern, so this
          part is always granted (kept so scores equal classic verifiers');
        - 0.2 when the stripped message starts with a tag of the first field;
        - 0.2 when it ends with a closing tag of the last field.

        A chat without assistant messages scores 0.0.
        """

        def format_reward_func(completion: Messages = "", **kwargs: Any) -> float:
            texts = self._assistant_texts(completion)
            if not texts:
                return 0.0
            scores = [self._format_score(t) for t in texts]
            return sum(scores) / len(scores)

        return format_reward_func

    def _format_score(self, text: str) -> float:
        parsed = self.parse(text)
        any_parsed = False
        present_sets = 0
        for _, alternatives in self._fields:
            parsed_here = [a for a in alternatives if getattr(parsed, a) is not None]
            any_parsed = any_parsed or bool(parsed_here)
            if parsed_here or any(f"<{a}>" in text or f"</{a}>" in text for a in alternatives):
                present_sets += 1
        stripped = text.strip()
        starts = any(stripped.startswith(f"<{a}>") for a in self._fields[0][1])
        ends = any(stripped.endswith(f"</{a}>") for a in self._fields[-1][1])
        # Summed in this order so the floats equal classic verifiers' exactly.
        score = 0.0
        if any_parsed:
            score += 0.4 * (present_sets / len(self._fields))
        score += 0.2
        if starts:
            score += 0.2
        if ends:
            score += 0.2
        return score


def _normalise_fields(fields: list[Field]) -> list[tuple[str, list[str]]]:
    if isinstance(fields, (str, tuple)) or not hasattr(fields, "__iter__"):
        raise TypeError("fields must be a list of tag names or tuples of tag names")
    normalised: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    for field in fields:
        if isinstance(field, str):
            alternatives = [field]
        elif isinstance(field, tuple):
            if not field:
                raise ValueError("a field tuple needs at least one tag name")
            if not all(isinstance(a, str) for a in field):
                raise TypeError(f"every name in a field tuple must be a str, got {field!r}")
            alternatives = list(field)
        else:
            raise TypeError(f"a field must be a str or a tuple of str, got {type(field).__name__}")
        if not all(alternatives):
            raise ValueError(f"tag names must be non-empty, got {field!r}")
        canonical = alternatives[0]
        if canonical in seen:
            raise ValueError(f"duplicate field name: {canonical!r}")
        seen.add(canonical)
        normalised.append((canonical, alternatives))
    if not normalised:
        raise ValueError("XMLParser needs at least one field")
    return normalised
