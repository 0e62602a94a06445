"""What a ledger's database holds, read from the backend's own catalogue (sqlite_master and the PRAGMAs;
pg_catalog), in a shape two ledgers of one backend can be compared by, and an abstract shape two
backends can be compared by."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

# PostgreSQL's spelling of a type, as SQLite's (SQLite has one INTEGER and no booleans)
AS_SQLITE = {"text": "TEXT", "integer": "INTEGER", "bigint": "INTEGER", "boolean": "INTEGER", "bytea": "BLOB"}


def squash(sql: str | None) -> str:
    """`sql` with its runs of whitespace as one space, none inside brackets' edges."""
    text = re.sub(r"\s+", " ", sql or "").strip()
    return re.sub(r"\( ", "(", re.sub(r" \)", ")", text))


def _checks(create: str) -> list[str]:
    """The CHECK expressions of a CREATE TABLE statement, squashed, in order."""
    out, at = [], 0
    while (m := re.compile(r"\bCHECK\s*\(", re.I).search(create, at)) is not None:
        depth, i = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(create[i], 0)
            i += 1
        out.append(squash(create[m.end() : i - 1]))
        at = i
    return out


def sqlite_catalogue(path: str) -> dict[str, Any]:
    """Tables (columns, keys, checks, indexes, triggers), views and virtual tables of a SQLite ledger."""
    conn = sqlite3.connect(path)
    try:
        master = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        ).fetchall()
        tables: dict[str, Any] = {}
        for kind, name, _, sql in master:
            if kind != "table" or sql.upper().startswith("CREATE VIRTUAL"):
                continue
            cols = conn.execute(f"PRAGMA table_xinfo('{name}')").fetchall()
            pk = tuple(c[1] for c in sorted((c for c in cols if c[5]), key=lambda c: c[5]))
            indexes, uniques = {}, []
            for _, iname, unique, origin, partial in conn.execute(f"PRAGMA index_list('{name}')"):
                key = tuple(r[2] for r in conn.execute(f"PRAGMA index_xinfo('{iname}')") if r[5])
                if origin == "u":
                    uniques.append(key)
                elif origin == "c":
                    isql = next(s for k, n, _, s in master if n == iname)
                    where = squash(isql.split(" WHERE ", 1)[1]) if partial else None
                    indexes[iname] = (key, bool(unique), where)
            fks = [(r[3], r[2], r[4]) for r in conn.execute(f"PRAGMA foreign_key_list('{name}')")]
            tables[name] = {
                # name, declared type, not null, default, hidden (generated)
                "columns": [(c[1], c[2], bool(c[3]), c[4], c[6]) for c in cols],
                "primary_key": pk,
                "uniques": sorted(uniques),
                "checks": _checks(sql),
                "foreign_keys": sorted(fks),
                "indexes": indexes,
                "without_rowid": squash(sql).upper().endswith("WITHOUT ROWID"),
            }
        return {
            "tables": tables,
            "triggers": {n: (t, squash(s)) for k, n, t, s in master if k == "trigger"},
            "views": {n: squash(s) for k, n, _, s in master if k == "view"},
            "virtual": {
                n: squash(s) for k, n, _, s in master if k == "table" and s.startswith("CREATE VIRTUAL")
            },
        }
    finally:
        conn.close()


def pg_catalogue(url: str) -> dict[str, Any]:
    """Tables (columns, constraints, indexes, privileges), triggers, views and functions of a PostgreSQL
    ledger, as pg_catalog describes them."""
    import psycopg

    with psycopg.connect(url) as conn:
        q = conn.execute
        tables: dict[str, Any] = {}
        rels = q(
            "SELECT c.oid, c.relname, c.relkind, c.relacl::text FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v')"
        ).fetchall()
        for oid, name, kind, acl in rels:
            if kind != "r":
                continue
            cols = q(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, co.collname, "
                "pg_get_expr(d.adbin, d.adrelid), a.attgenerated, a.attidentity FROM pg_attribute a "
                "LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 0 "
                "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
                "WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                (oid,),
            ).fetchall()
            cons = q(
                "SELECT conname, contype, pg_get_constraintdef(oid), conindid, "
                "ARRAY(SELECT attname FROM pg_attribute WHERE attrelid = conrelid AND attnum = ANY(conkey) "
                "ORDER BY array_position(conkey, attnum)) FROM pg_constraint WHERE conrelid = %s",
                (oid,),
            ).fetchall()
            backing = {c[3] for c in cons}
            indexes = {}
            for iname, ioid, unique, pred, keys in q(
                "SELECT i.relname, x.indexrelid, x.indisunique, pg_get_expr(x.indpred, x.indrelid), "
                "ARRAY(SELECT pg_get_indexdef(x.indexrelid, k, true) "
                "FROM generate_series(1, x.indnkeyatts) k) "
                "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = %s",
                (oid,),
            ).fetchall():
                if ioid not in backing:
                    indexes[iname] = (tuple(keys), unique, pred)
            tables[name] = {
                "columns": [tuple(c) for c in cols],
                "constraints": sorted((c[0], c[1], c[2], tuple(c[4])) for c in cons),
                "indexes": indexes,
                "acl": acl,
            }
        triggers = {
            n: (t, d, e)
            for n, t, d, e in q(
                "SELECT tgname, tgrelid::regclass::text, pg_get_triggerdef(oid), tgenabled "
                "FROM pg_trigger WHERE NOT tgisinternal"
            )
        }
        views = {
            n: squash(d)
            for n, d in q("SELECT viewname, definition FROM pg_views WHERE schemaname = 'public'")
        }
        functions = {
            n: squash(s)
            for n, s in q(
                "SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = 'public'"
            )
        }
    return {"tables": tables, "triggers": triggers, "views": views, "functions": functions}


def catalogue(db: str) -> dict[str, Any]:
    """The catalogue of the ledger at `db` (a path or a postgresql:// URL)."""
    return pg_catalogue(db) if db.startswith("postgresql") else sqlite_catalogue(db)


def _plain(expr: str | None) -> str | None:
    """A predicate without PostgreSQL's casts, quotes and brackets."""
    return None if expr is None else squash(re.sub(r"::[a-z ]+|[()']", "", expr))


def _identifiers(expr: str) -> set[str]:
    return set(re.findall(r"[a-z_][a-z_0-9]*", re.sub(r"'[^']*'", "", expr)))


def abstract(cat: dict[str, Any]) -> dict[str, Any]:
    """The catalogue in terms both backends share: per table its columns (name, SQLite type, not null),
    primary key, unique keys, the columns each CHECK reads, foreign keys and indexes (columns, unique,
    partial predicate); which changes each table refuses; the views."""
    out: dict[str, Any] = {}
    pg = "functions" in cat
    for name, t in cat["tables"].items():
        if pg:
            cols = [(c[0], AS_SQLITE.get(c[1], c[1]), c[2]) for c in t["columns"]]
            by = {k: [c for c in t["constraints"] if c[1] == k] for k in "pucf"}
            pk = by["p"][0][3] if by["p"] else ()
            uniques = [c[3] for c in by["u"]]
            checks = [c[3] for c in by["c"]]
            fks = [(c[3][0], re.sub(r".*REFERENCES (\w+)\((\w+)\)", r"\1.\2", c[2])) for c in by["f"]]
            indexes = {}
            for iname, (keys, unique, pred) in t["indexes"].items():
                keys = tuple(re.sub(r"^md5\((\w+)\)$", r"\1", k) for k in keys)
                if unique and pred is None:
                    uniques.append(keys)  # a unique key spelled as an index
                else:
                    indexes[iname] = (keys, unique, _plain(pred))
        else:
            colnames = {c[0] for c in t["columns"]}
            cols = [(c[0], c[1], c[2] or c[0] in t["primary_key"]) for c in t["columns"]]
            pk, uniques = t["primary_key"], list(t["uniques"])
            checks = [tuple(sorted(_identifiers(e) & colnames)) for e in t["checks"]]
            fks = [(c, f"{rt}.{rc}") for c, rt, rc in t["foreign_keys"]]
            indexes = {n: (k, u, _plain(w)) for n, (k, u, w) in t["indexes"].items()}
        out[name] = {
            "columns": cols,
            "primary_key": tuple(pk),
            "uniques": sorted(tuple(u) for u in uniques),
            "checks": sorted(tuple(sorted(c)) for c in checks),
            "foreign_keys": sorted(fks),
            "indexes": indexes,
            "refuses": set(),
        }
    for tname, spelled in _refusals(cat):
        out[tname]["refuses"] |= spelled
    return {"tables": out, "views": sorted(cat["views"])}


def _refusals(cat: dict[str, Any]) -> list[tuple[str, set[str]]]:
    """(table, {UPDATE, DELETE}) a guard trigger refuses; SQLite's REPLACE and PostgreSQL's TRUNCATE
    guards are each backend's spelling of append-only, not compared."""
    out = []
    for table, *rest in cat["triggers"].values():
        text = rest[0]
        if "RAISE(ABORT" in text or "ledger_refuse_change" in text:
            head = text.split(" ON ", 1)[0]
            out.append((table, {op for op in ("UPDATE", "DELETE") if op in head}))
    return out
