"""Turn py-spy's collapsed stacks into a short text summary: where the samples are, by function."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def summarise_raw(raw: Path, out: Path, top: int = 40) -> str:
    """Inclusive and self sample counts per function (frames as `name (file:line)`); returns out's path."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    if raw.exists():
        for line in raw.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            n = int(count)
            total += n
            frames = [_short(f) for f in stack.split(";") if f]
            for f in set(frames):
                inclusive[f] += n
            if frames:
                own[frames[-1]] += n
    lines = [f"py-spy samples: {total} (collapsed stacks in {raw.name})", "", "inclusive %  function"]
    lines += [f"{100 * n / max(total, 1):10.1f}  {f}" for f, n in inclusive.most_common(top)]
    lines += ["", "self %       function"]
    lines += [f"{100 * n / max(total, 1):10.1f}  {f}" for f, n in own.most_common(top)]
    out.write_text("\n".join(lines) + "\n")
    return str(out.relative_to(ROOT))


def _short(frame: str) -> str:
    """`fn (SITE/PKG/MOD.py:12)` -> `fn (PKG/MOD.py)`: lines dropped so calls add up."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rpartition(":")[0] or where.rstrip(")")
    for marker in ("site-packages/", f"{ROOT}/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{name} ({path})"
