"""Every question about a wrapped function at once: what xlacc cannot place from the source alone
(an integer, a fixed text, an output's shape), each with the answer it guesses from the names and
the other parameters, so that one command (or ``--accept-guesses``) answers them all.

Guesses read, in order: a shape comment on a tensor parameter (``torch::Tensor& query,  //
[num_seqs, num_heads, head_size]`` places ``num_seqs`` at ``query.shape[0]``), then the names
kernels commonly give their sizes (``num_seqs`` the first input's first dim, ``head_size`` its
last, ``block_size`` a cache's second...)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlacc.ground.errors import UsageError


@dataclass(frozen=True)
class Question:
    name: str  # the parameter (or output) asked about
    what: str  # "an integer", "a text", "an output's shape"
    flag: str  # the answer guessed, as the flag that gives it: --size num_seqs=query.shape[0]
    why: str  # where the guess comes from


class QuestionsError(UsageError):
    """Raised with every open question of one wrapped function."""

    def __init__(self, function: str, questions: list[Question], command: str = "", in_spec: bool = False):
        self.function, self.questions = function, questions
        super().__init__(render(function, questions, command, in_spec))


def render(function: str, questions: list[Question], command: str = "", in_spec: bool = False) -> str:
    """The questions, one a line, and how to answer them all at once (one question: one line)."""
    if len(questions) == 1 and not command:
        (q,) = questions
        answer = "write it into xlacc.toml, then run `xlacc update` again" if in_spec else "pass it, or --accept-guesses to take the guess"
        return f"{function}'s parameter `{q.name}` is {q.what} xlacc cannot place from the source alone: {q.flag} ({q.why}); {answer}"
    lines = [f"{function}: {len(questions)} parameter{'s' if len(questions) != 1 else ''} xlacc cannot place from the source alone; its guesses:"]
    width = max(len(q.name) for q in questions)
    lines += [f"  {q.name:<{width}}  {q.what}: {q.flag}  ({q.why})" for q in questions]
    if command:
        lines.append("Take them all (edit any that is wrong):")
        lines.append(f"  {command}")
    if in_spec:
        lines.append("Write each into xlacc.toml (the [from] sizes table, or [[attrs]]), then run `xlacc update` again.")
    else:
        lines.append(("or pass" if command else "Pass them, or") + " --accept-guesses to take these guesses as they are.")
    return "\n".join(lines)


# Names of sizes, and where such a size usually lies: (pattern, which tensor, dim).
# Tensor roles: "first" the first input, "cache" a parameter named like a cache or keys, "table" a
# block table.
NAME_RULES: tuple[tuple[re.Pattern[str], str, int], ...] = (
    (re.compile(r"^(num_seqs|num_tokens|batch|batch_size|bs|num_rows|rows|m|M|B)$"), "first", 0),
    (re.compile(r"^(num_heads|num_q_heads|num_query_heads|num_attention_heads|heads)$"), "first", 1),
    (re.compile(r"^(head_size|head_dim|hidden_size|hidden_dim|dim|d_model|num_cols|cols|last_dim|d|D)$"), "first", -1),
    (re.compile(r"^(num_kv_heads|kv_heads|num_key_value_heads)$"), "cache", -2),
    (re.compile(r"^(block_size|page_size|tokens_per_block)$"), "cache", 1),
    (re.compile(r"^(num_blocks|num_pages)$"), "cache", 0),
    (re.compile(r"^(max_num_blocks_per_seq|max_blocks_per_seq|blocks_per_seq|max_num_blocks)$"), "table", 1),
)
# A dim comment on a cache names its heads `num_heads` where the launcher says `num_kv_heads`.
SAME_DIM = {"num_kv_heads": ("num_heads",), "head_size": ("head_dim",), "head_dim": ("head_size",)}
CACHE = re.compile(r"(cache|key|^k$|^kv)", re.IGNORECASE)
TABLE = re.compile(r"(block_table|page_table|block_tables)", re.IGNORECASE)


def guess_size(name: str, tensors: list[str], dims: dict[str, list[str]]) -> tuple[str, str] | None:
    """``(INPUT.shape[K], why)`` for an integer parameter ``name``; None when nothing suggests one.
    ``tensors``: the function's tensor parameters in order (inputs first); ``dims``: tensor ->
    the names in its shape comment."""
    wanted = (name, *SAME_DIM.get(name, ()))
    for alias in wanted:
        for tensor in tensors:
            names = dims.get(tensor, [])
            if alias in names and (alias == name or CACHE.search(tensor)):
                return f"{tensor}.shape[{names.index(alias)}]", f"the comment on {tensor}: [{', '.join(names)}]"
    for pattern, role, dim in NAME_RULES:
        if not pattern.match(name):
            continue
        tensor = _tensor_for(role, tensors)
        if tensor is not None:
            return f"{tensor}.shape[{dim}]", f"a size named {name} is usually {'the first input' if role == 'first' else role + ' tensor ' + tensor}'s dim {dim}"
    return None


def _tensor_for(role: str, tensors: list[str]) -> str | None:
    if role == "first":
        return tensors[0] if tensors else None
    pattern = CACHE if role == "cache" else TABLE
    return next((t for t in tensors if pattern.search(t)), None)


SHAPE_COMMENT = re.compile(r"^\s*\[([^\]\n]*)\]?")


def signature_dims(text: str, first_line: int, body_line: int, params: set[str]) -> dict[str, list[str]]:
    """Parameter -> the dims its trailing comment names (``// [num_seqs, num_heads, head_size]``,
    continued over comment lines), read from the signature's lines ``first_line..body_line``."""
    lines = text.splitlines()[max(first_line - 1, 0) : body_line]
    dims: dict[str, list[str]] = {}
    current, collecting, current_collect = None, None, None
    for line in lines:
        code, _, comment = line.partition("//")
        names = [w for w in re.findall(r"[A-Za-z_]\w*", code) if w in params]
        if names:
            current = names[-1]
        if collecting is not None:
            collecting += comment.strip().rstrip("]") if comment else ""
            if "]" in comment or not comment:
                dims.setdefault(current_collect, _dim_names(collecting))
                collecting = None
            continue
        stripped = comment.strip()
        if current and stripped.startswith("["):
            if "]" in stripped:
                dims.setdefault(current, _dim_names(stripped[1 : stripped.index("]")]))
            else:
                collecting, current_collect = stripped[1:] + " ", current
    return dims


def _dim_names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",")]
