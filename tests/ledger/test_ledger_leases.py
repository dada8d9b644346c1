"""Controller leases: one live holder, takeover only after expiry, heartbeats that can fail."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from ledger_events import ADMITTED, log

from zeroshot_kernel.ledger import InvalidArgument, LeaseNotHeld, Ledger
from zeroshot_kernel.ledger.events import SafeLog

START = 1_800_000_000.0


class Clock:
    """A hand-moved clock, so expiry is tested without sleeping."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ledger(ledger_url: str, clock: Clock) -> Iterator[Ledger]:
    with Ledger(ledger_url, clock=clock) as opened:
        yield opened


@pytest.fixture
def run_id(ledger: Ledger) -> str:
    return ledger.create_run(ADMITTED, title="leased")


def test_a_fresh_run_has_no_lease(ledger: Ledger, run_id: str) -> None:
    assert ledger.lease(run_id) is None


def test_acquire_records_owner_and_times_from_the_clock(
    ledger: Ledger, run_id: str, clock: Clock
) -> None:
    assert ledger.acquire_lease(run_id, "controller-a", ttl_s=30)
    lease = ledger.lease(run_id)
    assert lease is not None
    assert lease.owner == "controller-a"
    assert lease.heartbeat_at == datetime.fromtimestamp(START, tz=UTC)
    assert lease.expires_at == datetime.fromtimestamp(START + 30, tz=UTC)


def test_a_live_lease_cannot_be_taken(ledger: Ledger, run_id: str, clock: Clock) -> None:
    assert ledger.acquire_lease(run_id, "controller-a", ttl_s=30)
    clock.now += 29.9
    assert not ledger.acquire_lease(run_id, "controller-b", ttl_s=30)
    assert ledger.acquire_lease(run_id, "controller-a", ttl_s=30), "the holder may re-acquire"
    lease = ledger.lease(run_id)
    assert lease is not None and lease.owner == "controller-a"


def test_an_expired_lease_is_taken_over_and_the_old_holder_loses_it(
    ledger: Ledger, run_id: str, clock: Clock
) -> None:
    assert ledger.acquire_lease(run_id, "controller-a", ttl_s=10)
    clock.now += 10
    assert ledger.acquire_lease(run_id, "controller-b", ttl_s=10)
    assert not ledger.renew_lease(run_id, "controller-a", ttl_s=10)
    ledger.release_lease(run_id, "controller-a")
    lease = ledger.lease(run_id)
    assert lease is not None and lease.owner == "controller-b"


def test_renew_extends_a_live_lease(ledger: Ledger, run_id: str, clock: Clock) -> None:
    assert ledger.acquire_lease(run_id, "controller-a", ttl_s=10)
    for _ in range(5):
        clock.now += 8
        assert ledger.renew_lease(run_id, "controller-a", ttl_s=10)
    lease = ledger.lease(run_id)
    assert lease is not None
    assert lease.heartbeat_at == datetime.fromtimestamp(START + 40, tz=UTC)
    assert not ledger.acquire_lease(run_id, "controller-b", ttl_s=10)


def test_a_lapsed_lease_cannot_be_renewed_even_if_unclaimed(
    ledger: Ledger, run_id: str, clock: Clock
) -> None:
    assert ledger.acquire_lease(run_id, "controller-a", ttl_s=10)
    clock.now += 11
    assert not ledger.renew_lease(run_id, "controller-a", ttl_s=10)
    assert ledger.acquire_lease(run_id, "controller-a", ttl_s=10)


def test_renew_without_a_lease_fails(ledger: Ledger, run_id: str) -> None:
    assert not ledger.renew_lease(run_id, "controller-a", ttl_s=10)


def test_release_frees_the_run_only_for_the_holder(ledger: Ledger, run_id: str) -> None:
    assert ledger.acquire_lease(run_id, "controller-a", ttl_s=60)
    ledger.release_lease(run_id, "controller-b")
    assert not ledger.acquire_lease(run_id, "controller-b", ttl_s=60)
    ledger.release_lease(run_id, "controller-a")
    assert ledger.lease(run_id) is None
    assert ledger.acquire_lease(run_id, "controller-b", ttl_s=60)


def test_leases_are_per_run(ledger: Ledger, run_id: str) -> None:
    other = ledger.create_run(ADMITTED, title="other")
    assert ledger.acquire_lease(run_id, "controller-a", ttl_s=60)
    assert ledger.acquire_lease(other, "controller-b", ttl_s=60)


@pytest.mark.parametrize(
    ("owner", "ttl_s"),
    [("controller-a", 0), ("controller-a", -1), ("controller-a", float("inf")), ("", 5)],
)
def test_bad_lease_arguments_are_refused(
    ledger: Ledger, run_id: str, owner: str, ttl_s: float
) -> None:
    with pytest.raises(InvalidArgument):
        ledger.acquire_lease(run_id, owner, ttl_s)


def test_appends_are_fenced_by_the_lease(ledger: Ledger, run_id: str, clock: Clock) -> None:
    """A holder writes; once its lease lapsed and another took it, the old holder's append
    is refused inside the transaction and nothing of its batch is written."""
    assert ledger.acquire_lease(run_id, "controller-a", ttl_s=10)
    ledger.append(run_id, [log("from a")], owner="controller-a")
    with pytest.raises(LeaseNotHeld):
        ledger.append(run_id, [log("from b, unleased")], owner="controller-b")
    clock.now += 11
    with pytest.raises(LeaseNotHeld):  # lapsed, even before anyone took it over
        ledger.append(run_id, [log("from a, lapsed")], owner="controller-a")
    assert ledger.acquire_lease(run_id, "controller-b", ttl_s=10)
    ledger.append(run_id, [log("from b")], owner="controller-b")
    with pytest.raises(LeaseNotHeld):
        ledger.append(run_id, [log("from a, taken over")], owner="controller-a")
    lines = [
        event.line
        for _, event in ledger.snapshot_and_tail(run_id, None)[1]
        if isinstance(event, SafeLog)
    ]
    assert lines == ["from a", "from b"]


def test_a_dead_holder_named_by_the_caller_is_replaced_at_once(
    ledger: Ledger, run_id: str, clock: Clock
) -> None:
    assert ledger.acquire_lease(run_id, "controller-a", ttl_s=30)
    assert not ledger.acquire_lease(run_id, "controller-b", ttl_s=30, replacing="someone-else")
    assert ledger.acquire_lease(run_id, "controller-b", ttl_s=30, replacing="controller-a")
    lease = ledger.lease(run_id)
    assert lease is not None and lease.owner == "controller-b"
