"""The resolver a door uses when none is passed in: the matcher of `service/resolver/match.py` and the
catalogue the Ledger holds. The doors take another (a test double) in its place."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ledger.storage.interface import CatalogueTables
from service.ledger import Ledger
from service.resolver.match import METHOD_VERSION, resolve_many
from service.resolver.run import Decide


class Resolver(NamedTuple):
    """A matcher, its name and version (after `citation-ledger/` in resolver_source), and where a
    ledger's catalogue is read."""

    decide: Decide
    method: str
    catalogue: Callable[[Ledger], CatalogueTables]


def ledger_catalogue(ledger: Ledger) -> CatalogueTables:
    """The catalogue of this ledger, brought up to its head."""
    return ledger.catalogue


def catalogue_for(given: Resolver | None, ledger: Ledger) -> CatalogueTables:
    """The catalogue a resolution is checked against: the given resolver's, else the ledger's own."""
    return given.catalogue(ledger) if given is not None else ledger_catalogue(ledger)


def default_resolver() -> Resolver:
    """The ledger's own matcher (`resolve_many`, `METHOD_VERSION`) over the ledger's catalogue."""
    return Resolver(resolve_many, METHOD_VERSION, ledger_catalogue)
