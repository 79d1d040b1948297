"""Name -> factory registries for every kind of policy.

Policies are configured by strings (``--allocator buddy --scheduler lazy``), so each kind
(allocators, disciplines, gang policies, workloads) keeps one :class:`Registry`. A user's own
policy registers under a new name; registering a taken name is refused so that a plugin
cannot silently replace a policy of the papers.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable


class UnknownPolicy(KeyError):
    """An unknown registry name; the message lists the names that exist."""

    def __init__(self, kind: str, name: str, known: Iterable[str]):
        self.kind, self.name, self.known = kind, name, sorted(known)
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown {self.kind} {self.name!r}; known: {', '.join(self.known) or '(none)'}"


class DuplicatePolicy(ValueError):
    pass


class Registry:
    def __init__(self, kind: str):
        self.kind = kind
        self._factories: dict[str, Callable[..., Any]] = {}
        self._docs: dict[str, str] = {}

    def register(self, name: str, factory: Callable[..., Any] | None = None, *, doc: str = ""):
        """Register ``factory`` under ``name``; usable as a decorator."""

        def add(f: Callable[..., Any]):
            if not name or not isinstance(name, str):
                raise ValueError(f"{self.kind} name must be a non-empty string")
            if name in self._factories:
                raise DuplicatePolicy(f"{self.kind} {name!r} is already registered")
            self._factories[name] = f
            text = doc or (getattr(f, "__doc__", None) or "")
            self._docs[name] = text.strip().splitlines()[0] if text.strip() else ""
            try:
                f.registry_name = name  # lets an instance report the name it was made under
            except (AttributeError, TypeError):
                pass
            return f

        return add(factory) if factory is not None else add

    def unregister(self, name: str) -> None:
        self._factories.pop(name, None)
        self._docs.pop(name, None)

    def get(self, name: str) -> Callable[..., Any]:
        try:
            return self._factories[name]
        except KeyError:
            raise UnknownPolicy(self.kind, name, self._factories) from None

    def create(self, name: str, *args, **kwargs):
        return self.get(name)(*args, **kwargs)

    def names(self) -> list[str]:
        return sorted(self._factories)

    def doc(self, name: str) -> str:
        self.get(name)
        return self._docs[name]

    def __contains__(self, name: object) -> bool:
        return name in self._factories
