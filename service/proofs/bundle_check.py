"""Checking an evidence bundle with no database and no server, in memory that does not grow with it.

Pass 1 reads the whole file once: the checkpoint and its signature, each event's hash, leaf and
neighbour, and each inclusion proof as it comes (proofs follow events in key order, so only a
32-byte leaf and the two hashes of each seq are kept), the record last. Pass 2 reads the events
again, now that T and K are known, keeping per observation only what decides whether it is inbound and
where it sorts (projections/record.py `inbound_observations`). Pass 3 reads in full only the events
the record needs (the paper's own stream, the checks, the latest snapshots and the inbound
observations it shows) and rebuilds the record from them, handing the projection the inbound count.

A screen's bundle (its schema, or its claims, say so) shares pass 1; screen_check.py does the rest,
and checker.py tells the two kinds apart.
"""

from __future__ import annotations

import base64
import binascii
import heapq
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, NamedTuple, TypeAlias

import msgspec

from ledger.model.codec import canonical, context_digest, decode_data, observation_digest
from ledger.model.errors import NotFound
from ledger.model.events import Glance, StoredEvent
from ledger.model.instants import parse_ts
from ledger.model.jsonvalue import Json, JsonObject
from ledger.model.record_types import Record
from ledger.tlog import merkle_store
from ledger.tlog.chain import envelope_body, link_hash
from ledger.tlog.checkpoint import Checkpoint, NoteError, Verifier, open_checkpoint, unsigned_checkpoint
from ledger.tlog.cosign import Quorum
from ledger.tlog.merkle import ProofError, leaf_hash, node_hash, verify_inclusion
from projections import record as projection
from projections.diff import Missing, Side, as_json, json_diff
from projections.memory import MemoryReader
from service.proofs.bundle import SCHEMA
from service.proofs.bundle_json import JsonReader, Malformed
from service.proofs.screen_claims import SCREEN_SCHEMA, Claim, ScreenHead

_MAX_DIFFS = 10
_READ = 1 << 20
Opener = Callable[[], IO[bytes]]


class _Proof(msgspec.Struct, forbid_unknown_fields=True):
    seq: int
    leaf_index: int
    tree_size: int
    inclusion_path: list[str]


_EVENT = msgspec.json.Decoder(StoredEvent[msgspec.Raw])
_PROOF = msgspec.json.Decoder(_Proof)
# what a bundle's members other than its arrays decode to
_Value: TypeAlias = str | JsonObject | ScreenHead | None
_Member: TypeAlias = msgspec.json.Decoder[_Value]
_STR: _Member = msgspec.json.Decoder(str)
_STR_OR_NULL: _Member = msgspec.json.Decoder(str | None)
_OBJECT: _Member = msgspec.json.Decoder(dict)
# an array checked element by element as it streams, only where it starts kept
_ARRAYS = {"claims": msgspec.json.Decoder(Claim)}
# the members of a bundle, in the order msgspec names a missing one; None: streamed (events and proofs,
# and a screen's claims, whose offset is kept)
_FIELDS: dict[str, _Member | None] = {
    "schema": _STR,
    "record": _OBJECT,
    "known_at": _STR_OR_NULL,
    "events": None,
    "proofs": None,
    "checkpoint": _STR,
    "key": _STR,
}
# a screen's bundle (service/proofs/screen_bundle.py)
SCREEN_FIELDS: dict[str, _Member | None] = {
    "schema": _STR,
    "screen": msgspec.json.Decoder(ScreenHead),
    "claims": None,
    "events": None,
    "proofs": None,
    "checkpoint": _STR,
    "key": _STR_OR_NULL,
}
# the first pass reads any member of either kind; the schema then says which set it must be
_ANY_FIELDS: dict[str, _Member | None] = {**_FIELDS, **SCREEN_FIELDS}


class BundleReport(NamedTuple):
    """What check_bundle found: every problem, in order, and a summary."""

    ok: bool
    problems: list[str]
    summary: str
    notes: list[str]


def first_pass(opener: Opener, pinned: Verifier, quorum: Quorum) -> tuple[_Pass1, bool] | BundleReport:
    """Pass 1 over a bundle of either kind, and whether it is a screen's (its schema, or its claims,
    say so); a report when it is not a bundle at all."""
    seen = _Pass1(pinned, quorum, _ANY_FIELDS)
    try:
        seen.read(opener)
        screen = seen.values.get("schema") == SCREEN_SCHEMA or (
            seen.values.get("schema") != SCHEMA and ("claims" in seen.values or "screen" in seen.values)
        )
        seen.require(SCREEN_FIELDS if screen else _FIELDS)
    except Malformed as e:
        return BundleReport(False, [f"not an evidence bundle: {e}"], "", [])
    return seen, screen


def finish_record(opener: Opener, seen: _Pass1, pinned: Verifier) -> BundleReport:
    """The report on a record's bundle whose first pass has read it: passes 2 and 3."""
    key, schema, known_at = seen.text("key"), seen.text("schema"), seen.text("known_at")
    if key is None:
        return BundleReport(
            False, ["not an evidence bundle: Expected `str`, got `null` - at `$.key`"], "", []
        )
    problems: list[str] = []
    notes = key_notes(key, pinned)
    if schema != SCHEMA:
        problems.append(f"bundle schema is {schema!r}, expected {SCHEMA!r}")
    problems += seen.checkpoint_problems + seen.events.problems + seen.proofs.problems()
    seen.events.release_hashes()
    record = seen.record()
    digests = _rebuild(opener, seen.events, record, known_at, problems)
    if problems:
        return BundleReport(False, problems, "", notes)
    cp = seen.checkpoint
    assert cp is not None
    known = f" known at {known_at}" if known_at else ""
    summary = (
        f"OK: arXiv:{_arxiv_id(record)} as of {record['as_of']}{known}: the record was rebuilt "
        f"byte for byte from its {seen.events.valid_count} events; each event's hash was recomputed and its "
        f"inclusion proof leads to checkpoint {cp.origin} of size {cp.size} (root "
        f"{merkle_store.b64(cp.root)}), signed by {pinned.name}+{pinned.hash.hex()}"
        f"{cosigned_by(seen.cosigned)}; "
        f"{digests} observation digests and the context digest recomputed."
    )
    return BundleReport(True, [], summary, notes)


class _Pass1:
    """The first read of the whole file: every member, events and proofs checked as they stream."""

    def __init__(self, pinned: Verifier, quorum: Quorum, fields: dict[str, _Member | None] = _FIELDS) -> None:
        self.pinned = pinned
        self.quorum = quorum
        self.fields = fields
        self.arrays: dict[str, int] = {}  # a streamed member -> where its array starts
        self.cosigned: dict[str, int] = {}
        self.values: dict[str, _Value] = {}
        self.checkpoint: Checkpoint | None = None
        self.checkpoint_problems: list[str] = []
        self.events = _Events()
        self.proofs = _Proofs(self.events)

    def read(self, opener: Opener) -> None:
        deferred: int | None = None  # where the proofs start, when they come before what they need
        with opener() as f:
            reader = JsonReader(f)
            for key in reader.members():
                if key in self.values:
                    raise Malformed(f"Object contains the field `{key}` twice")
                if key not in self.fields:
                    raise Malformed(f"Object contains unknown field `{key}`")
                if key == "events":
                    for offset, raw, e in reader.elements(_EVENT, "$.events"):
                        self.events.add(offset, len(raw), e)
                    self.events.finish()
                elif key == "proofs":
                    ready = "events" in self.values and "checkpoint" in self.values
                    deferred = None if ready else reader.offset()
                    for _, _, p in reader.elements(_PROOF, "$.proofs"):
                        if ready:
                            self.proofs.add(p)
                elif key in _ARRAYS:
                    # each element's shape checked now, kept only as where the array starts
                    self.arrays[key] = reader.offset()
                    for _ in reader.elements(_ARRAYS[key], f"$.{key}"):
                        pass
                elif (member := self.fields[key]) is not None:
                    value = self.values[key] = reader.value(member, f"$.{key}")
                    if key == "checkpoint" and isinstance(value, str):
                        self.checkpoint = self._checkpoint(value)
                        self.proofs.checkpoint = self.checkpoint
                self.values.setdefault(key, None)
            reader.end()
        if deferred is not None:
            with opener() as f:
                f.seek(deferred)
                for _, _, p in JsonReader(f).elements(_PROOF, "$.proofs"):
                    self.proofs.add(p)

    def text(self, name: str) -> str | None:
        """A member read as a string; None when it is null or was not read."""
        value = self.values.get(name)
        return value if isinstance(value, str) else None

    def record(self) -> JsonObject:
        """The record member (an object, as pass 1 checked)."""
        value = self.values.get("record")
        return value if isinstance(value, dict) else {}

    def screen(self) -> ScreenHead:
        """The screen member (a ScreenHead, as pass 1 checked)."""
        value = self.values.get("screen")
        if not isinstance(value, ScreenHead):
            raise Malformed("Object missing required field `screen`")
        return value

    def require(self, fields: dict[str, _Member | None]) -> None:
        """Malformed unless the members read are exactly `fields` (a missing one named first)."""
        missing = [name for name in fields if name not in self.values]
        if missing:
            raise Malformed(f"Object missing required field `{missing[0]}`")
        unknown = [name for name in self.values if name not in fields]
        if unknown:
            raise Malformed(f"Object contains unknown field `{unknown[0]}`")

    def _checkpoint(self, note: str) -> Checkpoint | None:
        try:
            checkpoint = open_checkpoint(note, self.pinned).checkpoint
            self.cosigned = self.quorum.check(note)
            return checkpoint
        except NoteError as e:
            self.checkpoint_problems.append(f"checkpoint: {e.message}")
        # Keep checking the proofs against the unsigned checkpoint, to name every failure at once.
        try:
            return unsigned_checkpoint(note)
        except NoteError:
            return None


def key_notes(key: str | None, pinned: Verifier) -> list[str]:
    """A note when the bundle names another key than the pinned one it is checked with."""
    if key is None:
        return ["the bundle names no key; checked with the pinned key"]
    if key.strip() != pinned.vkey:
        return [f"the bundle names the key {key.strip()!r}; checked with the pinned key instead"]
    return []


def cosigned_by(found: dict[str, int]) -> str:
    """ ", cosigned by N witness(es) (names)" when the checkpoint carried cosignatures, else ""."""
    if not found:
        return ""
    names = ", ".join(sorted(vkey.split("+", 1)[0] for vkey in found))
    return f", cosigned by {len(found)} witness(es) ({names})"


class _Events:
    """Per readable event, in bundle order: its seq, where it is in the file, its leaf hash, its
    prev_hash and hash, and whether its data is valid (packed: some 120 bytes an event)."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.seqs = array("q")
        self.offsets = array("q")
        self.lengths = array("q")
        self.valid = bytearray()
        self.leaves = bytearray()
        self.links = bytearray()  # prev_hash then hash, 32 bytes each, when both are lowercase hex
        self.odd: dict[int, tuple[str, str]] = {}  # entry -> (prev_hash, hash) otherwise
        self._sorted_upto: int | None = None  # entries before it ascend; None: all of them do
        self._late: dict[int, int] = {}  # seq -> entry, for the entries after an out-of-order one
        self.valid_count = 0

    def __len__(self) -> int:
        return len(self.seqs)

    def index(self, seq: int) -> int | None:
        """The entry of `seq`, if the bundle lists a readable event of it."""
        hi = len(self.seqs) if self._sorted_upto is None else self._sorted_upto
        i = bisect_left(self.seqs, seq, 0, hi)
        if i < hi and self.seqs[i] == seq:
            return i
        return self._late.get(seq)

    def add(self, offset: int, length: int, e: StoredEvent[msgspec.Raw]) -> None:
        """Check one event's hash (from its envelope fields) and data, and keep what later checks need."""
        seq = e.seq
        later = self._sorted_upto is None and (not self.seqs or seq > self.seqs[-1])
        if not later and self.index(seq) is not None:
            self.problems.append(f"event seq {seq}: listed twice")
            return
        typed = _typed(e.type, e.data)
        try:
            # the ledger hashes canonical data bytes: a re-indented bundle still checks
            data = bytes(e.data) if typed is not None else canonical(msgspec.json.decode(e.data))
            body = envelope_body(msgspec.structs.replace(e, data=data))  # type: ignore[arg-type]
            if link_hash(e.prev_hash, body) != e.hash:
                self.problems.append(
                    f"event seq {seq}: its hash does not match its envelope (the event was altered)"
                )
        except (msgspec.DecodeError, ValueError) as err:
            self.problems.append(f"event seq {seq}: unreadable envelope ({err})")
            return
        if not -(2**63) <= seq < 2**63:
            raise Malformed(f"event seq {seq} is out of range")
        entry = len(self.seqs)
        if self._sorted_upto is None and entry and seq < self.seqs[-1]:
            self._sorted_upto = entry
        if self._sorted_upto is not None:
            self._late[seq] = entry
        self.seqs.append(seq)
        self.offsets.append(offset)
        self.lengths.append(length)
        self.leaves += leaf_hash(body)
        prev, this = _hash_bytes(e.prev_hash), _hash_bytes(e.hash)
        if prev is not None and this is not None:
            self.links += prev + this
        else:
            self.links += bytes(64)
            self.odd[entry] = (e.prev_hash, e.hash)
        if typed is None:
            try:
                decode_data(e.type, data)
            except (KeyError, msgspec.ValidationError) as err:
                self.problems.append(f"event seq {seq}: its data is not a valid {e.type!r} ({err})")
                self.valid.append(0)
                return
        self.valid.append(1)
        self.valid_count += 1

    def finish(self) -> None:
        """After the last event: each valid event's prev_hash against the hash of a valid seq - 1."""
        for i, seq in enumerate(self.seqs):
            if not self.valid[i]:
                continue
            j = i - 1 if i and self.seqs[i - 1] == seq - 1 else self.index(seq - 1)
            if j is not None and self.valid[j] and self._prev(i) != self._hash(j):
                self.problems.append(f"event seq {seq}: prev_hash is not the hash of event seq {seq - 1}")

    def _prev(self, i: int) -> str:
        odd = self.odd.get(i)
        return odd[0] if odd else self.links[64 * i : 64 * i + 32].hex()

    def _hash(self, i: int) -> str:
        odd = self.odd.get(i)
        return odd[1] if odd else self.links[64 * i + 32 : 64 * i + 64].hex()

    def leaf(self, i: int) -> bytes:
        """The leaf hash of entry i."""
        return bytes(self.leaves[32 * i : 32 * i + 32])

    def in_seq_order(self) -> Iterator[int]:
        """Every entry, by seq."""
        if self._sorted_upto is None:
            return iter(range(len(self.seqs)))
        return iter(sorted(range(len(self.seqs)), key=self.seqs.__getitem__))

    def release_hashes(self) -> None:
        """Free the leaves and links once the proofs and neighbours are checked."""
        self.leaves, self.links = bytearray(), bytearray()

    def read(self, opener: Opener, entries: Iterable[int], ahead: int) -> Iterator[tuple[int, bytes]]:
        """(entry, its bytes in the file) for `entries` in ascending order (file order), reading at
        least `ahead` bytes at a time."""
        with opener() as f:
            start, window = 0, b""
            for i in entries:
                off, n = self.offsets[i], self.lengths[i]
                if not start <= off or off + n > start + len(window):
                    f.seek(off)
                    start, window = off, f.read(max(ahead, n))
                yield i, window[off - start : off - start + n]


def _typed(type_: str, raw: bytes) -> msgspec.Struct | None:
    """The data decoded to its type when its bytes are already canonical (as a bundle writes them:
    the stored bytes), so the hash and the type check need no other decoding; else None."""
    try:
        typed = decode_data(type_, raw)
    except (KeyError, msgspec.DecodeError):
        return None
    # a typed value re-encodes as the dict would (sorted fields, the same encoder): equal bytes mean
    # canonical(decode(raw)) is raw itself
    return typed if canonical(typed) == bytes(raw) else None


def _hash_bytes(text: str) -> bytes | None:
    """A hash spelt as 64 lowercase hex digits, as 32 bytes (equal bytes then mean equal text)."""
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        return None
    return raw if len(raw) == 32 and len(text) == 64 and text.islower() else None


class _Proofs:
    """Each proof checked as it streams against its event's leaf: the last one listed for a seq counts."""

    def __init__(self, events: _Events) -> None:
        self.events = events
        self.checkpoint: Checkpoint | None = None
        self.twice: list[str] = []
        self.state = bytearray()  # per entry: 0 no proof, 1 proof leads to the root, 2 a problem
        self.found: dict[int, str] = {}  # entry -> the problem of its proof
        self.strays: set[int] = set()  # seqs with a proof and no readable event
        self._climb: _Climb | None = None

    def add(self, p: _Proof) -> None:
        """Check one proof."""
        if len(self.state) < len(self.events):
            self.state.extend(bytes(len(self.events) - len(self.state)))
        i = self.events.index(p.seq)
        if i is None:
            if p.seq in self.strays:
                self.twice.append(f"proof for seq {p.seq}: listed twice")
            self.strays.add(p.seq)
            return
        if self.state[i]:
            self.twice.append(f"proof for seq {p.seq}: listed twice")
        problem = self._problem(p, self.events.leaf(i))
        self.state[i] = 1 if problem is None else 2
        if problem is None:
            self.found.pop(i, None)
        else:
            self.found[i] = problem

    def _problem(self, p: _Proof, leaf: bytes) -> str | None:
        cp, seq = self.checkpoint, p.seq
        where = f"event seq {seq}"
        if cp is None:
            return None
        if seq > cp.size:
            return f"{where}: beyond the checkpoint's tree size {cp.size}"
        if p.tree_size != cp.size:
            return f"{where}: its proof is for tree size {p.tree_size}, the checkpoint's is {cp.size}"
        if p.leaf_index != seq - 1:
            return f"{where}: its proof is for leaf index {p.leaf_index}, not {seq - 1}"
        if self._climb is None:
            self._climb = _Climb(cp.size, cp.root)
        if self._climb.leads(seq - 1, leaf, p.inclusion_path):
            return None
        try:
            path = [base64.b64decode(h, validate=True) for h in p.inclusion_path]
            verify_inclusion(seq - 1, cp.size, leaf, path, cp.root)
        except binascii.Error:
            return f"{where}: its inclusion proof holds a hash that is not base64"
        except ProofError as e:
            if "does not lead" in str(e):
                return f"{where}: inclusion proof does not lead to the checkpoint root"
            return f"{where}: inclusion proof: {e}"
        return None

    def problems(self) -> list[str]:
        """Proofs listed twice, then per seq in order the missing or failing proofs, then strays."""
        out = list(self.twice)
        if len(self.state) < len(self.events):
            self.state.extend(bytes(len(self.events) - len(self.state)))
        for i in self.events.in_seq_order():
            if self.state[i] == 0:
                out.append(f"event seq {self.events.seqs[i]}: no inclusion proof")
            elif self.state[i] == 2:
                out.append(self.found[i])
        out += [f"proof for seq {seq}: no such event in the bundle" for seq in sorted(self.strays)]
        return out


class _Climb:
    """RFC 9162's climb of inclusion proofs into one tree, one after another: where a proof's climb
    reaches a node the last good proof's climb passed through, with the same hash, and the rest of both
    paths is the same, the rest of the climb is that one's, which led to the root. Neighbouring leaves
    meet within a few levels, so a bundle's proofs cost a few hashes each, not the tree's height."""

    def __init__(self, size: int, root: bytes) -> None:
        self.size, self.root = size, root
        self.path: list[str] = []
        self.states: list[tuple[int, int, bytes]] = []

    def leads(self, index: int, leaf: bytes, path: list[str]) -> bool:
        """True when the proof surely leads to the root; False when it needs the exact check."""
        if not 0 <= index < self.size:
            return False
        fn, sn, r = index, self.size - 1, leaf
        last_path, last = self.path, self.states
        shared = len(path) == len(last_path)
        states: list[tuple[int, int, bytes]] = []
        for i, c in enumerate(path):
            if sn == 0:
                return False
            state = (fn, sn, r)
            if shared and last[i] == state and path[i:] == last_path[i:]:
                self.path, self.states = path, states + last[i:]
                return True
            states.append(state)
            try:
                # stricter than b64decode(validate=True), never looser: a refusal goes to the exact check
                h = binascii.a2b_base64(c, strict_mode=True)
            except binascii.Error:
                return False
            if len(h) != 32:
                return False
            if fn & 1 or fn == sn:
                r = node_hash(h, r)
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
            else:
                r = node_hash(r, h)
            fn, sn = fn >> 1, sn >> 1
        if sn != 0 or r != self.root:
            return False
        self.path, self.states = path, states
        return True


# -- rebuilding the record ------------------------------------------------------------------------


class _Light(msgspec.Struct):
    """What pass 2 reads of an event (the other fields are skipped)."""

    seq: int
    stream: str
    type: str
    observed_at: str
    recorded_at: str
    data: Glance


_LIGHT = msgspec.json.Decoder(_Light)
_CITATION, _RESOLUTION = "citation.observed", "resolution.observed"


class _Observations:
    """Per observation (as of T and K): its latest citation and latest resolution by (observed, seq),
    with only what decides whether it is inbound to the paper and where it sorts."""

    def __init__(self, arxiv_id: str) -> None:
        self.arxiv_id = arxiv_id
        self.slot: dict[str, int] = {}
        self.cit = array("q")  # observed_us, seq, entry; per slot (entry -1: none yet)
        self.res = array("q")
        self.citing: list[str] = []
        self.index: list[int] = []
        self.to_paper = bytearray()  # the latest resolution names the paper

    def add(self, entry: int, o_us: int, e: _Light) -> None:
        """One citation or resolution."""
        d = e.data
        oid = str(d.observation_id)
        s = self.slot.get(oid)
        if s is None:
            s = self.slot[oid] = len(self.citing)
            self.cit.extend((0, 0, -1))
            self.res.extend((0, 0, -1))
            self.citing.append("")
            self.index.append(0)
            self.to_paper.append(0)
        cit = e.type == _CITATION
        latest = self.cit if cit else self.res
        if latest[3 * s + 2] >= 0 and (o_us, e.seq) <= (latest[3 * s], latest[3 * s + 1]):
            return
        latest[3 * s : 3 * s + 3] = array("q", (o_us, e.seq, entry))
        if cit:
            self.citing[s] = str(d.citing_arxiv_id)
            self.index[s] = int(d.reference_index or 0)
        else:
            self.to_paper[s] = d.cited_arxiv_id == self.arxiv_id

    def entries(self, oid: str) -> list[int]:
        """The entries of an observation's latest citation and resolution."""
        s = self.slot[oid]
        return [x for x in (self.cit[3 * s + 2], self.res[3 * s + 2]) if x >= 0]

    def inbound(self, limit: int) -> tuple[int, list[str]]:
        """How many observations are inbound, and the first `limit` of them in the record's order."""
        found = (
            (self.citing[s], self.index[s], oid)
            for oid, s in self.slot.items()
            if self.cit[3 * s + 2] >= 0 and self.to_paper[s] and self.citing[s] != self.arxiv_id
        )
        total, kept = 0, []
        for item in found:
            total += 1
            kept.append(item)
            if len(kept) >= 4 * limit + 64:  # the first `limit` so far, in a list that stays small
                kept = heapq.nsmallest(limit, kept)
        return total, [oid for _, _, oid in heapq.nsmallest(limit, kept)]


def _rebuild(
    opener: Opener, events: _Events, record: JsonObject, known_at: str | None, problems: list[str]
) -> int:
    """Rebuild the record from the bundled events and compare; recompute its digests. Returns #digests."""
    # indexed as Python indexes any value: a record of another shape fails with Python's own error,
    # word for word what the in-memory check (tests/bundle_oracle.py) says
    shown: Any = record
    try:
        arxiv_id = str(_arxiv_id(record))
        as_of_us = parse_ts(shown["as_of"])
        known_us = None if known_at is None else parse_ts(known_at)
    except (KeyError, TypeError, ValueError) as e:
        problems.append(f"record: no readable paper.arxiv_id, as_of or known_at ({e!r})")
        return 0
    digests = _digests(record, problems)
    try:
        rebuilt = _rebuilt(opener, events, arxiv_id, as_of_us, known_us)
    except NotFound as e:
        problems.append(f"the bundled events give no record: {e.message}")
        return digests
    compare_record(record, rebuilt, problems)
    return digests


def _arxiv_id(record: JsonObject) -> Json:
    """The record's paper.arxiv_id; KeyError or TypeError, as indexing gives them, when it has none."""
    shown: Any = record  # indexed as Python indexes any value, so the errors are Python's own
    arxiv_id: Json = shown["paper"]["arxiv_id"]
    return arxiv_id


def compare_record(record: JsonObject, rebuilt: Record, problems: list[str]) -> None:
    """Name where the bundle's record differs from the one its events give (at most _MAX_DIFFS)."""
    if canonical(rebuilt) == canonical(record):
        return
    diffs = [(p or "$", a, b) for p, a, b in json_diff(record, as_json(rebuilt))]
    # a changed digest only echoes the content difference: name the content, if any
    content = [d for d in diffs if not d[0].endswith(("observation_digest", "context_digest"))]
    diffs = content or diffs
    for path, mine, theirs in diffs[:_MAX_DIFFS]:
        problems.append(
            f"record differs from the events at {path}: the bundle says {_short(mine)}, "
            f"the events give {_short(theirs)}"
        )
    if len(diffs) > _MAX_DIFFS:
        problems.append(f"... and {len(diffs) - _MAX_DIFFS} more differences")


def _rebuilt(opener: Opener, events: _Events, arxiv_id: str, t: int, k: int | None) -> Record:
    """The record built from the bundle's valid events as MemoryReader over all of them builds it, from
    only the events it reads: every event of the paper's stream and every check; of the snapshots, the
    latest per stream and paper; of the observations, the latest citation and resolution of those it
    shows and of those the paper's stream holds (so each observation read is whole), with the count."""
    own = f"paper:{arxiv_id}"
    keep: set[int] = set()
    observations = _Observations(arxiv_id)
    own_oids: set[str] = set()
    snapshots: dict[tuple[str, str | None], tuple[int, int, int]] = {}
    valid = (i for i in range(len(events)) if events.valid[i])
    for i, raw in events.read(opener, valid, _READ):
        e = _LIGHT.decode(raw)
        o_us = _instant(e, e.observed_at)
        if o_us > t or (k is not None and _instant(e, e.recorded_at) > k):
            continue
        if e.stream == own:
            keep.add(i)
        if e.type in (_CITATION, _RESOLUTION):
            observations.add(i, o_us, e)
            if e.stream == own:
                own_oids.add(str(e.data.observation_id))
        elif e.type == "paper.observed":
            at = (e.stream, e.data.arxiv_id)
            cur = snapshots.get(at)
            if cur is None or (o_us, e.seq) > cur[:2]:
                snapshots[at] = (o_us, e.seq, i)
        elif e.type == "standing.checked":
            keep.add(i)
    total, shown = observations.inbound(projection.CAPS["inbound"])
    for oid in {*shown, *own_oids}:
        keep.update(observations.entries(oid))
    keep.update(i for _, _, i in snapshots.values())
    del observations
    envelopes = []
    for _, raw in events.read(opener, sorted(keep), 1 << 16):
        full = _EVENT.decode(raw)
        data = canonical(msgspec.json.decode(full.data))
        envelopes.append(msgspec.structs.replace(full, data=data))
    reader = MemoryReader(envelopes, t, k, inbound_total=total)  # type: ignore[arg-type]
    return projection.build_record(reader, arxiv_id, t).record


# parse_ts without its cache: 200,000 instants read once each would only fill it (some 10 MB)
_parse_ts = getattr(parse_ts, "__wrapped__", parse_ts)


def _instant(e: _Light, text: str) -> int:
    try:
        return _parse_ts(text)  # type: ignore[no-any-return]
    except ValueError as err:
        raise NotFound(f"event seq {e.seq} has an unreadable instant ({err})") from None


def _digests(record: JsonObject, problems: list[str]) -> int:
    """Each observation_digest and the context_digest recomputed from the record's own content."""
    n = 0
    shown: Any = record  # indexed as Python indexes any value, as the in-memory check does
    for lane in ("outbound", "inbound"):
        for i, o in enumerate(shown.get(lane) or []):
            n += 1
            if o.get("observation_digest") != observation_digest(o):
                problems.append(f"record: {lane}[{i}].observation_digest does not match its content")
    if record.get("context_digest") != context_digest(record):
        problems.append("record: context_digest does not match its content")
    return n


def _short(value: Side) -> str:
    if isinstance(value, Missing):
        return "nothing"
    text = canonical(value).decode()
    return text if len(text) <= 80 else text[:77] + "..."
