"""The resolver a door uses when none is passed in: the matcher of `service/resolver/match.py` and the
catalogue the Ledger holds. Looked up when first asked for, so the flow runs (and is tested) with any
matcher and catalogue passed in."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, NamedTuple

from ledger.model.errors import LedgerError
from ledger.storage.interface import CatalogueTables
from service.ledger import Ledger
from service.resolver.run import Decide


class NoResolver(LedgerError):
    """This build has no matcher or no catalogue to resolve against."""

    code = "not_supported"


class Resolver(NamedTuple):
    """A matcher, its name and version (after `citation-ledger/` in resolver_source), and where a
    ledger's catalogue is read."""

    decide: Decide
    method: str
    catalogue: Callable[[Ledger], CatalogueTables]


def ledger_catalogue(ledger: Ledger) -> CatalogueTables:
    """The catalogue of this ledger: `Ledger.catalogue` (a property or a method), else its tables."""
    found: Any = getattr(ledger, "catalogue", None)
    if callable(found):
        found = found()
    if found is None and hasattr(ledger.store.tables, "catalogue_by_keys"):
        found = ledger.store.tables
    if found is None:
        raise NoResolver("this ledger has no catalogue of works to resolve against")
    catalogue: CatalogueTables = found
    return catalogue


def default_resolver() -> Resolver:
    """The ledger's own matcher (`resolve_many`, `METHOD_VERSION`) over the ledger's catalogue."""
    try:
        match = importlib.import_module("service.resolver.match")
    except ImportError as e:
        raise NoResolver(f"this build has no matcher ({e})") from None
    return Resolver(match.resolve_many, str(match.METHOD_VERSION), ledger_catalogue)
