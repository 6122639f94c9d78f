"""A stored run as production observations: ``drift --reference RUN`` compares a window of the request log
with one speculative run of a stored run, request by request (``monitoring.drift``)."""

from __future__ import annotations

from pathlib import Path

from specmeter.monitoring.requestlog import RequestObs
from specmeter.store.db import RunStore, StoreError

__all__ = ["stored_observations"]


def stored_observations(path: Path, ref: str, slot: str | None) -> list[RequestObs]:
    """The requests of one speculative run (``slot``, e.g. ``draft@k=4``; the only one when None) of the
    stored run ``ref``, each as a ``RequestObs`` with its drafted and accepted tokens over the steps that
    drafted. StoreError (one line naming ``--reference`` or ``--slot``) when there is no such run."""
    try:
        with RunStore(path, create=False) as db:
            run_id = db.resolve(ref)
            requests = db.requests(run_id)
            kind = db.run_info(run_id).kind
            holder = db.newest_with_slot(slot) if slot is not None else None
    except StoreError as e:
        raise StoreError(f"--reference: {e}") from None
    slots = sorted({r.slot for r in requests if r.draft is not None})
    if slot is None:
        if len(slots) != 1:
            raise StoreError(f"--reference {ref}: the run has {len(slots)} speculative runs "
                             f"({', '.join(slots)}); pick one with --slot")  # fmt: skip
        slot = slots[0]
    elif slot not in slots:
        which = f"run {run_id}, a {kind} run" if ref.strip() != str(run_id) else f"a {kind} run"
        hint = (
            f"; the newest run holding it is run {holder}: --reference {holder}"
            if holder is not None
            else "; no stored run holds it (see `specmeter runs list`)"
        )
        raise StoreError(
            f"--slot: {slot!r} is not a run of {ref} ({which} of {', '.join(slots) or 'no speculative run'})"
            f"{hint}"
        )
    out = []
    for i, r in enumerate(x for x in requests if x.slot == slot):
        steps = [s for s in r.record.steps if s.drafted >= 1]
        out.append(
            RequestObs(
                source=f"run {run_id}:{i + 1}",
                time=None,
                domain=r.record.category,
                tenant=None,
                accepted=sum(s.accepted for s in steps),
                drafted=sum(s.drafted for s in steps),
                steps=len(steps),
                tokens=r.record.output_tokens,
                latency_s=r.record.latency_s,
                shape="store",
            )
        )
    return out
