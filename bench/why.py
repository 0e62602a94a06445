"""Why a figure misses its target: the explanation stored beside it in results.json."""

from __future__ import annotations

from typing import Any

WHY: dict[str, str] = {
    "append_library": (
        "The bare reference appends rows to a table with only a rowid. Per event the ledger also does, "
        "in Python, what no storage layout removes (a type re-check, the rules, canonical encoding, "
        "uuid5, the blake3 link, the rows of its keys and spans: python -m bench.python_path measures "
        "about 14 us an event with no database, a ceiling near 70k events/s), and its commit writes "
        "the pages of the indexes every append keeps: the events' (stream, version) and "
        "(stream, type, observed_us), the recent key levels (ledger/storage/derived/keys.py), and the "
        "inbound spans and their counts (ledger/storage/derived/spans.py: the O(caps) record), keyed by "
        "the cited paper, so in no order in "
        "time. python -m bench.pages counts them from the WAL: at 1M events a commit writes 0.93 "
        "pages an event, 0.58 of them distinct pages scattered over the file (0.35 the spans and "
        "counts), and the checkpoint that moves them into the database file took 94 us an event "
        "here (161 us a scattered page, 11 us a page written in sequence): more than a whole append "
        "at 10k. The same rows inserted bare into a copy of the ledger (baseline.into_product_schema) "
        "bound the events table alone."
    ),
    "append_http": (
        "Everything of the library append (see append_library), plus what the API does before it in "
        "the server's one process: reading the body, proving no string is over the limit from its bytes "
        "(limits.short_strings), decoding it straight into events (codec.quick_body: msgspec's decoder "
        "and a colon count, some 7 us an event), the answer of 1000 items; a body the quick path "
        "cannot prove takes the exact one (codec.decode_json, limits.long_string, importer.parse_batch: "
        "about 58 us an event). These are in ledger/codec.py, ledger/importer.py and api/writes.py."
    ),
    "http_singles": (
        "Each acknowledged append waits for a COMMIT whose WAL write covers the rows and their keys "
        "(see append_library), and the server's one Python process does the write path's validation, "
        "group-commit hand-off and the transaction on top of the same per-request HTTP work the no-op "
        "route does; the profile shows the split."
    ),
    "library_singles": (
        "Group commit shares each fsync among the waiting callers (8 here, so at most 8 events a "
        "commit) and looks up every batch of a group at once; each acknowledged event still costs "
        "its share of a commit that writes the events' and the recent levels' pages, and some 60 us of "
        "Python (validation, the append, the hand-off to the writer thread) serialised by the GIL "
        "across the 8 threads; the bare one-row transaction into the product schema "
        "(baseline.into_product_schema) shows the commit alone."
    ),
    "projection": (
        "The record's reads are index seeks (source_heads: a skip-scan over the source streams and a "
        "backward seek for each), so a miss is the Python projection itself; see the profile."
    ),
    "verify": (
        "verify joins each body from the stored columns (the bare chain's bytes) and links it with "
        "blake3 as the bare chain does, in one loop over the columns as read; then it also checks seq, "
        "prev_hash, the stream version and both instants against their index columns, hashes the RFC "
        "6962 leaf and its completed nodes (SHA-256, a compact range in Python) and decodes each "
        "citation's and resolution's data for its keys, summing every derived row it implies to hold "
        "them to the stored ones as multisets; after the walk it reads every observation's steps "
        "(one statement the database sorts) and rebuilds every span to hold the inbound spans to them. "
        "At 100k events: the walk about 12 us an event against the bare chain's 4, the spans 5 more."
    ),
    "rss_verify": (
        "verify holds one page of rows, the stream versions, parse_ts's cache (65,536 instants) and the "
        "Merkle compact range; see the profile for what else grew."
    ),
    "get_record": ("Below the cache's reach, the record is rebuilt; see the profile."),
    "append_vs_peer": (
        "eventsourcing's SQLiteApplicationRecorder.insert_events runs, in one BEGIN ... COMMIT per "
        "call, one INSERT per event of four values already serialised (originator_id, "
        "originator_version, topic, state) into a table of two B-trees (rowid, and the (originator_id, "
        "originator_version) primary key, with the locality of one originator per paper), and reads "
        "nothing. Ledger.append re-checks each event, encodes it canonically, derives its uuid5 id, "
        "looks up existing ids, observations and stream versions, chains blake3 hashes, and writes 12 "
        "columns, the keys and the inbound spans (see append_library): its Python alone (about 14 us "
        "an event) is slower than the peer's whole append at 10k and 100k, and at 10k 1.5x the peer is "
        "above the bare plain table's own rate of the same rows."
    ),
    "singles_vs_peer": (
        "The peer's single event is one BEGIN, one INSERT into two B-trees and one COMMIT (one WAL "
        "fsync at FULL), from one caller. 3x its rate from 8 callers needs groups of at least 3 that "
        "cost no more than the peer's one-row commit: the ledger's group holds at most 8, but its "
        "commit writes more pages and each event adds some 60 us of Python under one GIL (see "
        "library_singles)."
    ),
    "append_flat": (
        "What falls off with size is the checkpoint, not the Python: at 1M events a commit's pages are "
        "scattered over a 1.1 GB file (0.58 distinct pages an event, 0.35 of them the inbound spans and "
        "counts, keyed by the cited paper), and the checkpoint writing them into the file took 94 us "
        "an event against 4 at 10k (python -m bench.pages; 161 us a scattered page on this disk). Run "
        "with the checkpoint off, the same appends at 1M took about 62 us an event. Checkpointing in "
        "a thread of its own, or every 100,000 pages, was measured too and gained nothing: the disk, "
        "not the append, is busy."
    ),
}


def explain(
    key: str, size: int, value: dict[str, Any], baseline: Any, backend: str = "sqlite"
) -> tuple[str, str | None]:
    """(why, profile path or None) for an unmet figure, with the split the run measured."""
    why = (WHY if backend == "sqlite" else WHY_PG).get(key, "not analysed")
    schema = baseline.get("into_product_schema") if isinstance(baseline, dict) else None
    if schema:
        bare, own, ours = baseline["events_per_s"], schema["events_per_s"], value["events_per_s"]
        why += (
            " Measured here: the same rows bare into the ledger's events table (without their keys) "
            f"{own:,} ev/s, {own / bare:.3f} of "
            f"the plain table's {bare:,}; the ledger reaches {ours / own:.2f} of that."
        )
    if key in ("append_vs_peer", "singles_vs_peer"):
        ours, peer = value["events_per_s"], baseline["events_per_s"]
        why += f" Measured here: the ledger {ours:,} ev/s, the peer {peer:,}."
    if key == "append_flat":
        why += (
            f" Measured here: the ledger {baseline['events_per_s']:,} ev/s at {baseline['size']:,} events, "
            f"{value['events_per_s']:,} at {value['size']:,}; the same rows bare into a copy of the ledger "
            f"(into_product_schema) {baseline['schema_events_per_s']:,} and {value['schema_events_per_s']:,}."
        )
    return why, value.get("profile") if isinstance(value, dict) else None


# the same figures on PostgreSQL (bench/pg.py), from its schema (postgresql/migrations.py) and its profiles
WHY_PG: dict[str, str] = {
    "append_library": (
        "The bare reference appends heap rows to a table without any index. The ledger's events table "
        "keeps three B-trees (primary key seq, UNIQUE (stream, stream_version), "
        "events_stream_type_time) and the keys without order go to the recent levels of event_keys and "
        "check_works (ledger/storage/derived/keys.py), moved down every 25,000 events. Each batch also "
        "takes the append lock and reads the head, existing ids, citing papers and stream versions "
        "first, each a round trip; the profile shows most of the time waiting on the server inside "
        "SqlWriteTx.insert. The "
        "same rows inserted bare into a copy of the ledger's events table (baseline.into_product_schema, "
        "without their keys) bound the events table alone."
    ),
    "append_http": (
        "Everything of the library append on PostgreSQL (see append_library), plus what the API does "
        "before it in the server's one process (body parsing and checks, as on SQLite)."
    ),
    "http_singles": (
        "Each acknowledged append waits for its group's COMMIT (a WAL flush at synchronous_commit=on); "
        "the group's transaction takes the append lock, then every batch in it makes its own reads "
        "(existing ids, citing papers, stream versions: round trips to the server) before the rows and "
        "keys go in; the server's one Python process does this on top of the HTTP work the no-op route "
        "does. The profile shows the group-commit writer waiting on the server."
    ),
    "library_singles": (
        "Group commit shares each WAL flush among the waiting callers, but each group's transaction "
        "takes the append lock and makes per-batch reads (round trips) before inserting the rows and "
        "their keys; the bare one-row transaction into the ledger's own database "
        "(baseline.into_product_schema) shows what the schema alone costs. The profile shows the writer "
        "thread waiting on the server."
    ),
    "verify": (
        "verify joins each body from the stored columns and links it with blake3 as the bare chain "
        "does, over rows read from the server in 5000-row pages, then also parses two instants, hashes "
        "a Merkle leaf and its nodes and compares every derived row (keys and per-work check rows, "
        "paged from both levels) with the event's data; the profile shows the split."
    ),
    "get_record": (
        "The route answers from its record cache, keyed by the head, so every request first reads the "
        "head from the server: a round trip, made in the thread pool (api/routes.py record_json, "
        "store.local is False) so that the event loop is not held. The static reference makes no round "
        "trip at all. The profile shows PostgresStore.head and the hand-offs to and from the pool "
        "(Condition.wait) under the route; a head pushed to each node (LISTEN/NOTIFY) instead of read "
        "per request would remove the round trip."
    ),
    "append_vs_peer": (
        "eventsourcing's PostgresApplicationRecorder.insert_events sends, pipelined in one transaction, "
        "LOCK TABLE ... IN EXCLUSIVE MODE, NOTIFY and one INSERT ... SELECT FROM unnest(%s) RETURNING "
        "notification_id carrying the whole batch as one array parameter of four values an event, into "
        "a heap with two B-trees (primary key (originator_id, originator_version), unique "
        "notification_id). Ledger.append takes its lock too, but reads the head, existing ids, citing "
        "papers and stream versions first (round trips) and writes 12 columns into three B-trees plus "
        "the two-level keys (see append_library)."
    ),
    "singles_vs_peer": (
        "The peer's single event is one pipelined transaction (lock, NOTIFY, INSERT, COMMIT: one WAL "
        "flush at synchronous_commit=on) from one caller. The ledger's group commit shares each flush "
        "among the waiting callers, but each group's transaction makes its per-batch round trips and "
        "writes rows and keys (see library_singles)."
    ),
    "append_flat": (
        "The bigger key levels grow with the ledger: each move (every 25,000 and 250,000 events) writes "
        "their leaf pages, and each batch's lookups probe them, outside shared_buffers as they grow."
    ),
}
