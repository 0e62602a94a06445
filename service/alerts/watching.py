"""The alerts a door serves: watches made, read, rotated and removed, their alerts and deliveries, a
paper's notices, the raising of new alerts and the webhook deliverer. The store stays inside."""

from __future__ import annotations

from collections.abc import Callable

from ledger.model.instants import Clock, format_recorded
from ledger.storage.interface import Store
from ledger.storage.state.alerts import Alert, Delivery, Watch
from service.alerts import alerts as al
from service.alerts.paper_notices import PaperNotice, paper_notices
from service.alerts.watch_spec import WatchSpec
from service.alerts.watches import Rotated, rotate_secret, watch_of
from service.alerts.webhooks import DEADLINE_S, Deliverer, Send


class Alerts:
    """The watches and alerts of one ledger."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        # when a watch is made, stopped or rotated, an alert raised and a delivery tried
        self._clock = clock

    def add_watch(
        self, spec: WatchSpec, owner: str | None = None, most: int | None = None
    ) -> tuple[Watch, list[str]]:
        """Store a watch made by `owner` (None: the operator) and cover the works it finds now
        (service/alerts/alerts.py `add_watch`); TooManyWatches past `most`."""
        return al.add_watch(self._store, self._clock, spec, owner, most)

    def watch_of(self, watch_id: str, owner: str | None = None) -> Watch:
        """The watch in force with this id that `owner` may see (None: any); NotFound otherwise."""
        return watch_of(self._store, watch_id, owner)

    def watches(self, after: str = "", limit: int = 100, owner: str | None = None) -> list[Watch]:
        """The watches in force by id after `after`: only `owner`'s, or every one for None."""
        return self._store.alerts.watches(after, limit, owner)

    def covered(self, watch_id: str) -> list[str]:
        """The work_ids a watch covers now, sorted."""
        return sorted({w for w, _ in self._store.alerts.covered(watch_id)})

    def remove_watch(self, watch_id: str, owner: str | None = None) -> Watch:
        """Stop the watch `owner` may see (its pending deliveries dropped); NotFound when none."""
        watch = watch_of(self._store, watch_id, owner)
        tables = self._store.alerts
        with tables.updating():
            tables.remove_watch(watch.id, format_recorded(self._clock.now_us()))
        return watch

    def rotate_secret(
        self, watch_id: str, secret: str, made: bool, grace_s: float, owner: str | None = None
    ) -> Rotated:
        """Give a watch a new webhook secret, the old one signing beside it for `grace_s`."""
        return rotate_secret(self._store, self._clock, watch_id, secret, made, grace_s, owner)

    def alerts(
        self, watch_id: str | None, after: int = 0, limit: int = 100, since_us: int | None = None
    ) -> list[Alert]:
        """A watch's alerts (every watch's, for None) after number `after`, raised at or after `since_us`."""
        return self._store.alerts.alerts(watch_id, after, limit, since_us)

    def deliveries(self, watch_id: str, after: int = 0, limit: int = 100) -> list[Delivery]:
        """A watch's webhook delivery attempts after id `after`, in order."""
        return self._store.alerts.deliveries(watch_id, after, limit)

    def paper_notices(self, arxiv_id: str, as_of_us: int) -> list[PaperNotice]:
        """The notices held as of T for the works the paper's outbound references cite."""
        return paper_notices(self._store, arxiv_id, as_of_us)

    def raise_new(self) -> int:
        """Raise the alerts the events appended since the last round imply; how many were raised."""
        return al.raise_new(self._store, self._clock)

    def deliverer(
        self,
        send: Send,
        base: float,
        deadline_s: float = DEADLINE_S,
        on_result: Callable[[str], None] | None = None,
    ) -> Deliverer:
        """A deliverer of this ledger's webhook outbox, posting through `send`."""
        return Deliverer(self._store, self._clock, send, base, deadline_s, on_result=on_result)
