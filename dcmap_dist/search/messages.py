"""The messages the search holds (docs/search.md, "Messages as codes").

A cost model passes each cluster-layer's message up to its parents. The search keeps
the messages in branches and link keys, sends them between processes and writes
them into checkpoints. The built-in ``dcmap`` model's message is a frozenset of node
names: the search holds it as a code, the bitmask of those nodes' indices in the whole
network's order. A code is an int that means the same in every process and after a
resume, so keys holding codes hash and compare as ints. Any other model's messages
are held as the objects it returns, one object per distinct value in a process (equal
messages then compare by identity in the keys that hold them).

The model always sees its own values: the search decodes a message before handing it
back (:meth:`MessageCodes.value`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..cost.dcmap import DcmapCost
from ..model.network import Network
from ..model.topology import bits

__all__ = ["MessageCodes", "node_set_messages"]


def node_set_messages(model: Any) -> bool:
    """Whether ``model``'s messages are held as codes: true for the built-in model (its
    own class, not a subclass that may pass other messages)."""
    return type(model) is DcmapCost


class MessageCodes:
    """The messages of one search over ``graph`` (the whole network: codes follow its
    node order), for a model whose messages are frozensets of node names
    (``coded``; :func:`node_set_messages`) or of any other kind. :meth:`held` is what
    the search holds for a message the model returned, :meth:`value` the message
    again, :meth:`adopted` a frontier that comes from another process."""

    def __init__(self, graph: Network, coded: bool) -> None:
        self.coded = coded
        self.nodes = graph.nodes
        self._index = graph.index
        self._held: dict[Hashable, Hashable] = {}  # a message -> what the search holds for it
        self._codes: dict[int, int] = {}  # a code -> the one int object kept for it
        self._values: dict[int, frozenset[str]] = {}  # a code -> its message

    def held(self, message: Hashable) -> Hashable:
        """The code of ``message`` (one int object per code), or the one object kept for
        its value; ValueError if the model is coded and ``message`` is not a set of the
        network's nodes."""
        try:
            return self._held[message]
        except KeyError:
            pass
        if not self.coded:
            self._held[message] = message
            return message
        if not isinstance(message, frozenset):
            raise ValueError(f"the cost model passed the message {message!r}: a frozenset of node names expected")
        code = 0
        for name in message:
            index = self._index.get(name)
            if index is None:
                raise ValueError(f"the cost model passed a message naming {name!r}, which is not a node of the network")
            code |= 1 << index
        code = self._held[message] = self._codes.setdefault(code, code)
        self._values.setdefault(code, message)
        return code

    def value(self, held: Hashable) -> Hashable:
        """The message the model passed for ``held`` (:meth:`held`)."""
        if not self.coded:
            return held
        found = self._values.get(held)
        if found is None:  # a code from another process or a checkpoint
            if not isinstance(held, int) or held < 0 or held >> len(self.nodes):
                raise ValueError(f"{held!r} is not the code of a set of the network's nodes")
            found = self._values[held] = frozenset([self.nodes[i] for i in bits(held)])
        return found

    def adopted(self, frontier: tuple[tuple[int, Hashable], ...]) -> tuple[tuple[int, Hashable], ...]:
        """``frontier`` (``(members, message)`` items) from another process or a checkpoint:
        codes as they are, other messages replaced by the one object this process keeps
        for their value (a dict hit on a key holding another object would compare it
        element by element)."""
        if self.coded:
            return frontier
        held = self._held
        return tuple([(members, held.setdefault(message, message)) for members, message in frontier])
