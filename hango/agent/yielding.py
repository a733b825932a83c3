"""When a run gives its worker slot back: at a turn boundary, to a less-served tenant or member waiting.

The fair claim (revisions 0016, 0019 and 0020) gives a freed slot to the tenant with the fewest
runs in progress (running, or given back and waiting to go on), then to its member with the
fewest; but a run keeps its slot to its end, so without this a quiet tenant would wait for a
whole run. After a model answer and its tools are stored, and before its next model call, a run
asks the queue (``hango.store.job_slots.others_waiting``: the database's ``hango_slot_wanted``, written beside the claim
in revision 0020 from the same counts and lock rule) whether a job its worker could claim waits
for a tenant that would still have fewer runs in progress than the run's tenant even with one more
(its count + 1 < the run's), or, in the run's tenant, for such a member; with
``HANGO_QUEUE_HEADROOM``, only a job the freed slot may take (one of a tenant with nothing in
progress, or the worker below its open slots). Then the run gives its slot back (``Yielded``):
its row is ``queued`` again, its running time so far in ``ran_seconds``, and its job goes back
to the queue as it was (procrastinate's retry: the same job, so the same session lock and its
place before the session's later runs). Claimed again, the run goes on from its stored history:
its next ``run_started`` step says ``resumed``, its turns and its deadline (``HANGO_RUN_TIMEOUT``)
count only its own running time, and a cancel while it waits ends it ``cancelled`` with its
answered turns kept, like a cancel between two turns of a running run.

A run given back still counts as its tenant's, so giving a slot back changes no count: a quiet
tenant's runs each take a slot at the busy tenant's next turn boundaries (its third run too,
not only while it runs fewer than the busy tenant), and since a slot only moves to a tenant that
stays below the one giving it, two tenants never trade it back and forth.
"""

from __future__ import annotations


class Yielded(Exception):
    """The run gave its slot back and waits in the queue again (the worker retries its job)."""


def open_slots(concurrency: int, headroom: int) -> int | None:
    """How many of a worker's ``concurrency`` slots take a job of a tenant with jobs running (None: all).

    ``HANGO_QUEUE_HEADROOM`` keeps the others for tenants with nothing running; at least one stays open,
    so a single tenant's runs still go on.
    """
    return max(1, concurrency - headroom) if headroom > 0 else None
