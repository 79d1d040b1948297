"""Name -> factory registries for every kind of policy.

Policies are configured by strings (``--allocator buddy --scheduler lazy``), so each kind
(allocators, disciplines, gang policies, workloads) keeps one :class:`Registry`. A user's own
policy registers under a new name; registering a taken name is refused so that a plugin
cannot silently replace a policy of the papers.

Plugins: a separate, pip-installed package registers its policies through the entry-point
group ``mcemu.policies`` (:func:`load_plugins`); the group is read once per process, the first
time any registry is looked up or listed, so ``simulate``, ``sweep``, ``up`` and Dask workers
find a plugin with no change to mcemu. An entry point names either a module, imported (it
registers with the usual ``@disciplines.register("name")`` decorators), or an object, registered
under the entry point's name in the registry of its kind (a Discipline, Allocator or gang
OfficeManager subclass, or any object with an ``mcemu_kind`` attribute naming the kind):

    [project.entry-points."mcemu.policies"]
    mine = "my_policies"                       # a module that registers itself
    shortest = "my_policies.sjf:ShortestFirst"  # a Discipline subclass, registered as "shortest"
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Iterable

GROUP = "mcemu.policies"


class UnknownPolicy(KeyError):
    """An unknown registry name; the message lists the names that exist."""

    def __init__(self, kind: str, name: str, known: Iterable[str]):
        self.kind, self.name, self.known = kind, name, sorted(known)
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown {self.kind} {self.name!r}; known: {', '.join(self.known) or '(none)'}"


class DuplicatePolicy(ValueError):
    pass


class PluginError(ValueError):
    """A plugin of the ``mcemu.policies`` entry-point group that cannot be loaded (it fails to
    import, registers a name already taken, or is of no known kind)."""


_plugins = {"state": "unloaded"}  # unloaded -> loading -> loaded


def load_plugins() -> None:
    """Load every entry point of the group :data:`GROUP`, once per process (later calls, and
    calls made while the plugins load, return at once). A plugin that fails is a
    :class:`PluginError` naming its distribution and entry point."""
    if _plugins["state"] != "unloaded":
        return
    _plugins["state"] = "loading"
    try:
        from importlib.metadata import entry_points  # 9 ms; only a process that looks a policy up pays it

        for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
            _load_one(ep)
    finally:
        _plugins["state"] = "loaded"


def reset_plugins() -> None:
    """Read the entry-point group again at the next lookup (tests; a package installed while
    the process runs)."""
    _plugins["state"] = "unloaded"


def _origin(ep) -> str:
    dist = getattr(ep, "dist", None)
    who = f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"
    return f"plugin {ep.name!r} = {ep.value!r} of {who} (entry-point group {GROUP})"


def _load_one(ep) -> None:
    try:
        obj = ep.load()
    except DuplicatePolicy as e:
        raise PluginError(f"{_origin(ep)}: {e}; rename the plugin's policy") from None
    except Exception as e:  # noqa: BLE001 - whatever a third-party import raises, said in one line
        raise PluginError(f"{_origin(ep)} fails to load: {type(e).__name__}: {e}") from None
    if isinstance(obj, ModuleType):
        return  # the module registered its policies when imported
    registry = _registry_for(obj)
    if registry is None:
        raise PluginError(f"{_origin(ep)}: {obj!r} is not a module, a Discipline, an Allocator or a gang "
                          "policy (or give it mcemu_kind = 'discipline' / 'allocator' / 'gang policy' / ...)")
    if ep.name in registry and registry.get(ep.name) is obj:
        return  # the object registered itself under that name on import
    try:
        registry.register(ep.name, obj)
    except (DuplicatePolicy, ValueError) as e:
        raise PluginError(f"{_origin(ep)}: {e}; rename the entry point") from None


def _registry_for(obj):
    kind = getattr(obj, "mcemu_kind", None)
    if isinstance(kind, str):
        found = Registry.instances.get(kind)
        if found is None:
            raise PluginError(f"mcemu_kind {kind!r} names no registry; known: {', '.join(sorted(Registry.instances))}")
        return found
    if not isinstance(obj, type):
        return None
    # a subclass of a kind's base class was defined by importing that kind's package, which
    # made its registry: so the registries made so far are all there is to look in
    for reg in Registry.instances.values():
        if reg.base is not None and issubclass(obj, reg.base):
            return reg
    return None


class Registry:
    """The factories of one kind, by name. ``base``: the class every policy of the kind derives
    from (Discipline, Allocator, OfficeManager), by which a plugin's class finds its registry;
    the package of the kind declares it, so this module imports none of them."""

    instances: dict[str, "Registry"] = {}  # kind -> the registry of that kind (plugins' mcemu_kind)

    def __init__(self, kind: str, base: type | None = None):
        self.kind, self.base = kind, base
        Registry.instances.setdefault(kind, self)
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
        load_plugins()
        try:
            return self._factories[name]
        except KeyError:
            raise UnknownPolicy(self.kind, name, self._factories) from None

    def create(self, name: str, *args, **kwargs):
        return self.get(name)(*args, **kwargs)

    def names(self) -> list[str]:
        load_plugins()
        return sorted(self._factories)

    def doc(self, name: str) -> str:
        self.get(name)
        return self._docs[name]

    def __contains__(self, name: object) -> bool:
        load_plugins()
        return name in self._factories
