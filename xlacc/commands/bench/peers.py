"""The implementations an op is timed against besides its own: peers a template declares in its
template.toml and peers a project declares in xlacc.toml, both as ``[bench] peers = ["module:name"]``.

A peer is a callable with the op's signature (``peer(*operands, **attrs)`` on jax arrays), or an
object whose ``prepare(operands, attrs, device)`` returns the calls to time (:class:`PeerCall`, or
several to pick the fastest of), so that a layout change happens once, outside the timed calls. A
peer that cannot run here (no GPU, a jax without the private API it uses) raises
:class:`PeerUnavailable` with the reason; the bench says it and goes on.
"""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable

REFERENCE = re.compile(r"^(?P<module>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*):(?P<name>[A-Za-z_]\w*)$")


class PeerUnavailable(Exception):
    """This peer cannot run here; the message says why."""


@dataclass
class PeerCall:
    label: str  # what the table shows: "cudnn paged", "pallas (k_splits 8, block 8)"
    call: Callable[..., Any]
    operands: list[Any]
    note: str = ""


def check_reference(text: Any, where: str) -> str:
    """``module:function`` as a project or template names a peer; anything else is refused."""
    if not isinstance(text, str) or not REFERENCE.match(text):
        raise ValueError(f"{where}: {text!r} is not module:function (such as mypkg.peers:flash_decode)")
    return text


def load(reference: str) -> Any:
    module, _, name = reference.partition(":")
    try:
        found = importlib.import_module(module)
    except ImportError as exc:
        raise PeerUnavailable(f"cannot import {module}: {exc}") from None
    if not hasattr(found, name):
        raise PeerUnavailable(f"{module} defines no {name}")
    return getattr(found, name)


def label_of(reference: str, peer: Any) -> str:
    return str(getattr(peer, "label", reference.partition(":")[2]))


def name_of(reference: str) -> str:
    """The peer's label where it loads, else the name it was declared by."""
    try:
        return label_of(reference, load(reference))
    except PeerUnavailable:
        return reference


def prepare(reference: str, operands: list[Any], attrs: dict[str, Any], device: Any) -> list[PeerCall]:
    """The calls to time for one peer at one problem (device arrays in ``operands``)."""
    peer = load(reference)
    if hasattr(peer, "prepare"):
        prepared = peer.prepare(operands, attrs, device)
        return list(prepared) if isinstance(prepared, (list, tuple)) else [prepared]
    if not callable(peer):
        raise PeerUnavailable(f"{reference} is neither callable nor has prepare()")
    return [PeerCall(label_of(reference, peer), functools.partial(peer, **attrs), list(operands))]
