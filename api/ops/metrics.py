"""The server's Prometheus metrics: what it did, counted in each process (summed over `--workers` by
prometheus-client's multiprocess mode, whose directory `ledger serve` sets before any worker imports
this), and what the ledger is, read from the database only when GET /metrics is scraped.

Everything here is told after the fact (an append once committed, outside its transaction), by the
code that did it; nothing here runs SQL except the scrape. Label values are the code's own (routes,
event types, results, the operator's witness URLs), never a client's text, so series stay bounded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections import Counter as Tally
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

import prometheus_client
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.registry import Collector

from ledger.model.codec import type_of
from ledger.model.events import Event
from service.ops.status import Status

if TYPE_CHECKING:
    from ledger.model.facts import ScrubPass
    from service.ledger import AppendResult
    from service.ops.operations import Operations
    from service.ops.scrub import PassLog
    from service.sources import Summary

log = logging.getLogger("api.metrics")

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# decided when prometheus_client was imported (just above): it picks its value class then
MULTIPROCESS = bool(os.environ.get(MULTIPROC_ENV))
CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST

prometheus_client.disable_created_metrics()  # no *_created series: the multiprocess mode has none either

SIZES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
GROUPS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# a result name the alerts code reports a delivery with
_RESULT = re.compile(r"[a-z][a-z0-9_]{0,31}")

EVENTS = Counter(
    "ledger_events_appended",
    "Events appended (new ones, not duplicates), by event type and route",
    ["type", "route"],
)
DUPLICATES = Counter(
    "ledger_events_duplicate", "Events sent again and found already stored, by route", ["route"]
)
BATCH = Histogram(
    "ledger_append_batch_events",
    "Events per append (one write body or ingest file), by route",
    ["route"],
    buckets=SIZES,
)
APPEND_SECONDS = Histogram(
    "ledger_append_seconds",
    "Seconds from an append's call to its acknowledged commit (its wait for the group included), by route",
    ["route"],
    buckets=SECONDS,
)
COMMIT_SECONDS = Histogram(
    "ledger_commit_seconds",
    "Seconds one write transaction took, BEGIN to COMMIT (fsync included)",
    buckets=SECONDS,
)
GROUP = Histogram(
    "ledger_commit_group_batches", "Appends sharing one write transaction (group commit)", buckets=GROUPS
)
RECORDS = Counter(
    "ledger_records_served",
    "Paper Citation Records answered, by format (json, html) and cache (hit: cached bytes, built: projected)",
    ["format", "cache"],
)
RECORD_SECONDS = Histogram(
    "ledger_record_seconds", "Seconds to answer a record, by format", ["format"], buckets=SECONDS
)
HTTP = Counter(
    "ledger_http_requests",
    "HTTP requests answered, by route template (unmatched: no route), method and status",
    ["route", "method", "status"],
)
HTTP_SECONDS = Histogram(
    "ledger_http_request_seconds",
    "Seconds from a request to its answer's end, by route template",
    ["route"],
    buckets=SECONDS,
)
SSE = Gauge("ledger_sse_subscribers", "Live /evidence/stream subscriptions", multiprocess_mode="livesum")
SCRUBS = Counter(
    "ledger_scrub_passes",
    "Full walks of the chain this server recorded by kind (scrub, verify, integrity) and result (ok, broken)",
    ["kind", "result"],
)
COSIGNATURES = Counter(
    "ledger_witness_cosignatures",
    "Checkpoints sent to a witness, by witness URL and result (cosigned, refused, unreachable)",
    ["witness", "result"],
)
DELIVERIES = Counter("ledger_webhook_deliveries", "Webhook delivery attempts, by result", ["result"])
INGEST_ROWS = Counter(
    "ledger_ingest_rows",
    "Rows (items) of source files ingested over HTTP by source and outcome (read, matched, skipped, ignored)",
    ["source", "outcome"],
)
INGESTS = Counter(
    "ledger_ingests",
    "Source files ingested over HTTP, by source and result (appended, duplicate, refused)",
    ["source", "result"],
)


M = TypeVar("M", bound=MetricWrapperBase)


class _Children(Generic[M]):
    """A metric's labelled children by label values, kept: `.labels()` validates and locks on every call."""

    def __init__(self, metric: M) -> None:
        self.metric = metric
        self._made: dict[tuple[str, ...], M] = {}

    def __call__(self, *labels: str) -> M:
        child = self._made.get(labels)
        if child is None:
            child = self._made[labels] = self.metric.labels(*labels)
        return child


_events, _duplicates, _batch, _append_s = (
    _Children(EVENTS),
    _Children(DUPLICATES),
    _Children(BATCH),
    _Children(APPEND_SECONDS),
)
_records, _record_s = _Children(RECORDS), _Children(RECORD_SECONDS)
_http, _http_s = _Children(HTTP), _Children(HTTP_SECONDS)


# -- told by the code that did it ------------------------------------------------------------------


def appended(route: str, events: Sequence[Event], result: AppendResult, seconds: float) -> None:
    """Count one committed append: its new events by type, its duplicates, its size and its latency."""
    new: Tally[str] = Tally()
    duplicates = 0
    for item in result.items:
        if item.duplicate:
            duplicates += 1
        else:
            new[type_of(events[item.position])] += 1
    for event_type, n in new.items():
        _events(event_type, route).inc(n)
    if duplicates:
        _duplicates(route).inc(duplicates)
    _batch(route).observe(len(result.items))
    _append_s(route).observe(seconds)


def group_committed(batches: int, seconds: float) -> None:
    """Count one committed write transaction: how many appends shared it and how long it took."""
    GROUP.observe(batches)
    COMMIT_SECONDS.observe(seconds)


def record_served(fmt: str, cache: str, seconds: float) -> None:
    """Count one record answered."""
    _records(fmt, cache).inc()
    _record_s(fmt).observe(seconds)


def http_request(route: str, method: str, status: int, seconds: float) -> None:
    """Count one HTTP request answered (a method no route knows counts as `other`)."""
    _http(route, method if method in METHODS else "other", str(status)).inc()
    _http_s(route).observe(seconds)


def scrub_recorded(p: ScrubPass) -> None:
    """Count one full walk of the chain recorded."""
    SCRUBS.labels(p.kind, "ok" if p.ok else "broken").inc()


def witness_answered(witness: str, result: str) -> None:
    """Count one checkpoint sent to a witness, by what came of it."""
    COSIGNATURES.labels(witness, result).inc()


def ingested(source: str, summary: Summary | None) -> None:
    """Count one source file ingested (None: refused, nothing written) and its rows by outcome."""
    if summary is None:
        INGESTS.labels(source, "refused").inc()
        return
    INGESTS.labels(source, "appended" if summary.appended else "duplicate").inc()
    rows = {
        "read": summary.read,
        "matched": summary.matched,
        "skipped": sum(summary.skipped.values()),
        "ignored": sum(summary.ignored.values()),
    }
    for outcome, n in rows.items():
        INGEST_ROWS.labels(source, outcome).inc(n)


# -- the standing alerts' webhook deliveries --------------------------------------------------------


def webhook_delivery(result: str) -> None:
    """Count one webhook delivery attempt by its result (e.g. delivered, failed, gave_up)."""
    if not _RESULT.fullmatch(result):
        raise ValueError(
            f"webhook delivery result {result!r}: expected a short lowercase name like 'delivered'"
        )
    DELIVERIES.labels(result).inc()


# -- the scrape ------------------------------------------------------------------------------------


class LedgerGauges:
    """The gauges of one ledger, read from its database when collected (one consistent read)."""

    def __init__(self, ops: Operations, passes: PassLog | None) -> None:
        self.ops = ops
        self.passes = passes

    def collect(self) -> Iterator[Metric]:
        """ledger_up, then the head, size, last walk, checkpoint and outbox gauges (if the read worked)."""
        try:
            status = self.ops.status(self.passes)
        except Exception:  # a database that is down is a reading too, not a failed scrape
            log.exception("GET /metrics: reading the ledger's state failed")
            yield _gauge("ledger_up", "Whether the ledger's database could be read for this scrape", 0)
            return
        yield _gauge("ledger_up", "Whether the ledger's database could be read for this scrape", 1)
        yield from _status_gauges(status)


def _gauge(name: str, doc: str, value: float | None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc)
    if value is not None:
        family.add_metric([], value)
    return family


def _seconds(us: int | None) -> float | None:
    return None if us is None else us / 1e6


def _status_gauges(s: Status) -> Iterator[GaugeMetricFamily]:
    p, cp = s.last_pass, s.checkpoint
    yield _gauge("ledger_head_seq", "The ledger's last seq", s.head.seq)
    yield _gauge(
        "ledger_head_timestamp_seconds", "When the last event was recorded", _seconds(s.head_recorded_us)
    )
    yield _gauge("ledger_db_size_bytes", "Bytes the database takes on disk", s.disk_bytes)
    yield _gauge(
        "ledger_scrub_last_timestamp_seconds",
        "When the last full walk of the chain (scrub, verify or integrity) finished",
        None if p is None else p.finished_us / 1e6,
    )
    yield _gauge(
        "ledger_scrub_last_ok",
        "Whether the last full walk found the chain whole (1) or broken (0)",
        None if p is None else int(p.ok),
    )
    yield _gauge(
        "ledger_scrub_last_events",
        "Seqs the last full walk walked and found good (1..N)",
        None if p is None else p.events,
    )
    yield _gauge(
        "ledger_scrub_last_duration_seconds",
        "How long the last full walk took",
        None if p is None else (p.finished_us - p.started_us) / 1e6,
    )
    yield _gauge(
        "ledger_checkpoint_size",
        "Tree size of the last signed checkpoint (0: none)",
        0 if cp is None else cp.size,
    )
    yield _gauge(
        "ledger_checkpoint_age_seconds",
        "Seconds since the newest event the last signed checkpoint covers was recorded",
        s.seconds_since(s.checkpoint_recorded_us),
    )
    yield _gauge(
        "ledger_checkpoint_behind_events", "Events after the last signed checkpoint", s.checkpoint_behind
    )
    yield _gauge(
        "ledger_checkpoint_lag_seconds",
        "Seconds the oldest event no signed checkpoint covers has waited (0: the checkpoint covers the head)",
        s.seconds_since(s.unsigned_since_us) or 0.0,
    )
    yield _gauge(
        "ledger_webhook_outbox_depth",
        "Webhook deliveries pending in the outbox",
        s.outbox_depth,
    )


class _Together:
    """Several collectors as one, for generate_latest."""

    def __init__(self, collectors: Iterable[Collector]) -> None:
        self.collectors = list(collectors)

    def collect(self) -> Iterator[Metric]:
        for collector in self.collectors:
            yield from collector.collect()


def exposition(ops: Operations, passes: PassLog | None) -> bytes:
    """The text GET /metrics answers: every process's counters, and the ledger's gauges read now."""
    if MULTIPROCESS:
        _forget_dead_workers(Path(os.environ[MULTIPROC_ENV]))
        counted = CollectorRegistry()
        multiprocess.MultiProcessCollector(counted)
    else:
        counted = REGISTRY
    return prometheus_client.generate_latest(_Together([counted, LedgerGauges(ops, passes)]))


_LIVE_FILE = re.compile(r"gauge_live\w*?_(\d+)\.db")


def _forget_dead_workers(directory: Path) -> None:
    """Drop the live gauges of worker processes that are gone (killed, restarted by the supervisor):
    a worker that stops cleanly drops its own (`process_ended`)."""
    for path in directory.glob("gauge_live*.db"):
        m = _LIVE_FILE.fullmatch(path.name)
        if m is None:
            continue
        pid = int(m[1])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, str(directory))
        except PermissionError:  # alive, someone else's
            continue


def process_ended() -> None:
    """This process stops serving: in multiprocess mode, its live gauges (SSE subscribers) go."""
    if MULTIPROCESS:
        with contextlib.suppress(OSError):
            multiprocess.mark_process_dead(os.getpid())
