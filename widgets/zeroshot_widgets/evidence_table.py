"""The evidence table of an auto-research run and its incumbent card, as plain rows and HTML.

No pandas: a row is a small frozen dataclass, and the HTML is built one row at a time so a
live monitor renders only the rounds it has not rendered yet (:func:`row_html`).

Example::

    rows = rounds_table(view)
    html = rounds_table_html(rows)        # newest round first, as the monitor lists them
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from zeroshot_kernel.auto_research.experiment import status_words
from zeroshot_kernel.auto_research.protocol import REMEASURE
from zeroshot_kernel.auto_research.round_words import (
    REMEASURED,
    approach_words,
    is_remeasure,
    reconsidered_words,
)
from zeroshot_kernel.auto_research.views import ResearchView, RoundView
from zeroshot_kernel.ledger.events import was_stopped
from zeroshot_widgets.charts import crashed

COLUMNS = (
    "round",
    "disposition",
    "metric",
    "gain / noise floor",
    "parent → candidate",
    "approach",
    "reason (click for the round's details)",
)
"""Newest round first, as everywhere (the monitor, the report, the snapshot)."""
COLUMN_WIDTHS = ("4.5em", "8.5em", "6em", "10em", "12em", "13em", "")
"""Fixed widths for the short columns; the reason takes the rest (at least 22em)."""
ROUNDS_BOX_HEIGHT = "360px"
"""The monitor's rounds table scrolls inside a box this tall, whatever the run's length."""
_TABLE_STYLE = (
    "border-collapse:collapse;font-size:12px;width:100%;min-width:760px;"
    "table-layout:fixed;font-family:var(--jp-ui-font-family,sans-serif)"
)
_CELL_STYLE = (
    "padding:3px 6px;border-bottom:1px solid #ddd;vertical-align:top;"
    "text-align:left;overflow-wrap:break-word"
)
_HEAD_STYLE = (
    f"{_CELL_STYLE};border-bottom:2px solid #999;position:sticky;top:0;"
    "background:var(--jp-layout-color1,white);z-index:1"
)
_SUMMARY_STYLE = (
    "cursor:pointer;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;display:list-item"
)
_ROW_STYLES = {
    "adopted": "background:rgba(44,160,44,0.12)",
    "crashed": "background:rgba(214,39,40,0.10)",
    "rejected": "",
    "remeasured": "background:rgba(31,119,180,0.07)",
}


@dataclass(frozen=True)
class RoundRow:
    """One reviewed round, flattened for a table."""

    round: int
    proposals: tuple[str, ...]
    """Each scout's proposal: ``approach (param=value, ...)``."""
    chosen: str
    parent: str
    candidate: str
    metric: float | None
    experiment_status: str
    gain: float
    noise_floor: float
    disposition: str
    verdict: str
    reason: str
    passes: int
    outcome: str
    """``adopted``, ``rejected``, ``remeasured`` (the incumbent measured again: nothing
    adopted or rejected) or ``crashed``: how the chart marks this round."""
    reconsidered: bool
    diff: str = ""
    """The change against its parent (unified diff), shown folded under the candidate."""
    seeds: int = 0
    """The paired seeds the round's evidence rests on."""
    max_seeds: int | None = None
    """The race's budget of paired seeds (``None``: not raced)."""
    gate_decision: str | None = None
    """How the gate's race ended (``better``, ``worse``, ``not_better``, ``budget_spent``,
    ``failed``)."""
    gate: str = ""
    """The gate's numbers and decision in words."""

    @classmethod
    def of(cls, round_view: RoundView) -> RoundRow:
        outcome = (
            "adopted"
            if round_view.adopted
            else "crashed"
            if crashed(round_view)
            else "remeasured"
            if remeasured(round_view)
            else "rejected"
        )
        return cls(
            round=round_view.round,
            proposals=tuple(f"{p.approach} ({_params(p.params)})" for p in round_view.proposals),
            chosen=round_view.approach,
            parent=round_view.parent_id,
            candidate=round_view.candidate_id,
            metric=round_view.metric,
            experiment_status=round_view.experiment_status,
            gain=round_view.gain,
            noise_floor=round_view.noise_floor,
            disposition=round_view.disposition,
            verdict=round_view.verdict,
            reason=round_view.reason,
            passes=round_view.passes,
            outcome=outcome,
            reconsidered=round_view.reconsidered,
            diff=round_view.diff,
            seeds=round_view.seeds,
            max_seeds=round_view.max_seeds,
            gate_decision=round_view.gate_decision,
            gate=round_view.gate,
        )


def rounds_table(view: ResearchView) -> list[RoundRow]:
    """One row per reviewed round, oldest first (tables show them newest first).

    >>> from zeroshot_kernel.auto_research.views import research_view
    >>> rounds_table(research_view([]))
    []
    """
    return [RoundRow.of(r) for r in view.rounds]


def row_html(row: RoundRow) -> str:
    """One ``<tr>``, one line: the round's outcome at a glance, and its reason as an
    expandable ``<details>`` holding the rest (every proposal, the chosen one bold, the
    verdict, the full reason, the passes and the change against its parent)."""
    metric = (
        _number(row.metric) if row.metric is not None else _e(status_words(row.experiment_status))
    )
    disposition = disposition_words(row) + (
        f" · {reconsidered_words(row.parent)}" if row.reconsidered else ""
    )
    cells = (
        str(row.round),
        _e(disposition),
        metric,
        _gain_html(row),
        f"{_e(row.parent)} → {_e(row.candidate)}",
        _e(approach_words(row.chosen, row.candidate, row.parent)),
        _details_html(row),
    )
    tds = "".join(f'<td style="{_CELL_STYLE}">{cell}</td>' for cell in cells)
    return f'<tr class="zeroshot-{row.outcome}" style="{_ROW_STYLES[row.outcome]}">{tds}</tr>'


def disposition_words(row: RoundRow) -> str:
    """What the round did, in words: ``adopted``, ``re-measured`` (the incumbent measured
    again: nothing to adopt or reject), ``kept the incumbent``, or the recorded word."""
    if row.disposition == "adopt":
        return "adopted"
    if is_remeasure(row.chosen, row.candidate, row.parent):
        return REMEASURED
    return {"reject": "kept the incumbent", "stop": "stopped"}.get(row.disposition, row.disposition)


def _details_html(row: RoundRow) -> str:
    proposals = (
        "".join(
            f"<li><b>{_e(_proposal_words(text))}</b></li>"
            if text.startswith(row.chosen + " (")
            else f"<li>{_e(_proposal_words(text))}</li>"
            for text in row.proposals
        )
        or f"<li>{_e(approach_words(row.chosen, row.candidate, row.parent))}</li>"
    )
    passes = f"{row.passes} review pass{'es' if row.passes != 1 else ''}"
    return (
        f'<details class="zeroshot-round-details"><summary style="{_SUMMARY_STYLE}">'
        f"{_e(row.reason) or '(no reason given)'}</summary>"
        f'<div style="white-space:normal;margin:2px 0 4px 0">{_e(row.reason)}<br>'
        f"verdict <b>{_e(row.verdict)}</b> · {passes}<br>"
        f"{'gate: ' + _e(row.gate) + '<br>' if row.gate else ''}proposals:<ul "
        f'style="margin:0;padding-left:1.4em">{proposals}</ul>{_diff_html(row)}</div>'
        "</details>"
    )


def remeasured(round_view: RoundView) -> bool:
    """The round measured the incumbent again (nothing to adopt or reject)."""
    return is_remeasure(round_view.approach, round_view.candidate_id, round_view.parent_id)


def _proposal_words(text: str) -> str:
    """A proposal's line, a scout's request to re-measure in words."""
    prefix = REMEASURE + " ("
    return "re-measure the incumbent (" + text[len(prefix) :] if text.startswith(prefix) else text


def _gain_html(row: RoundRow) -> str:
    """Gain / noise floor over the seeds; a candidate compared on no paired seed (it
    crashed, hung or printed no metric first) has no such numbers."""
    if not row.seeds:
        decision = row.gate_decision.replace("_", " ") if row.gate_decision else ""
        return "-" + (f"<br><small>{_e(decision)}</small>" if decision else "")
    return f"{_number(row.gain)} / {_number(row.noise_floor)}{_seeds_html(row)}"


def _seeds_html(row: RoundRow) -> str:
    """The seeds and the gate's decision under the gain (``6/9 seeds · better``)."""
    budget = f"/{row.max_seeds}" if row.max_seeds else ""
    decision = f" · {row.gate_decision.replace('_', ' ')}" if row.gate_decision else ""
    return (
        f'<br><small title="{html.escape(row.gate, quote=True)}">{row.seeds}{budget} '
        f"seed{'s' if row.seeds != 1 or budget else ''}{_e(decision)}</small>"
    )


def _diff_html(row: RoundRow) -> str:
    if not row.diff:
        return ""
    return (
        '<details><summary>change</summary><pre style="font-size:11px;margin:2px 0;'
        f'white-space:pre-wrap">{_e(row.diff)}</pre></details>'
    )


def table_html(body: Iterable[str], *, caption: str = "") -> str:
    """Wrap rendered rows (from :func:`row_html`) in a table with the column headers."""
    columns = "".join(
        f'<col style="width:{width}">' if width else '<col style="min-width:22em">'
        for width in COLUMN_WIDTHS
    )
    head = "".join(f'<th style="{_HEAD_STYLE}">{c}</th>' for c in COLUMNS)
    caption_html = (
        f'<caption style="text-align:left;caption-side:top">{_e(caption)}</caption>'
        if caption
        else ""
    )
    return (
        f'<table class="zeroshot-rounds" style="{_TABLE_STYLE}">{caption_html}'
        f"<colgroup>{columns}</colgroup>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def scrolling_box(content: str, *, height: str = ROUNDS_BOX_HEIGHT) -> str:
    """``content`` in a box of fixed maximum height that scrolls (the monitor's table).

    >>> 'overflow:auto' in scrolling_box("<table></table>")
    True
    """
    return (
        f'<div class="zeroshot-rounds-box" style="max-height:{height};overflow:auto;'
        f'border:1px solid #ddd">{content}</div>'
    )


def rounds_table_html(rows: Sequence[RoundRow], *, newest_first: bool = True) -> str:
    """The whole evidence table as one HTML string, newest round first (as the monitor
    lists them).

    >>> "<table" in rounds_table_html([])
    True
    """
    ordered = reversed(rows) if newest_first else iter(rows)
    return table_html(row_html(row) for row in ordered)


def incumbent_card_html(view: ResearchView, *, metric: str = "metric") -> str:
    """The incumbent, the round that adopted it, the plateau and the run's outcome.

    >>> from zeroshot_kernel.auto_research.views import research_view
    >>> "no reviewed rounds yet" in incumbent_card_html(research_view([]))
    True
    """
    style = (
        "border:1px solid #ccc;border-radius:4px;padding:8px 12px;font-size:13px;"
        "line-height:1.6;font-family:var(--jp-ui-font-family,sans-serif)"
    )
    incumbent = view.incumbent
    if incumbent is None:
        body = "<b>Incumbent</b><br>no reviewed rounds yet"
    else:
        origin = (
            f"adopted in round {incumbent.round}" if incumbent.round else "the starting candidate"
        )
        value = "-" if incumbent.metric is None else _number(incumbent.metric)
        again = sum(1 for r in view.rounds if not r.adopted and remeasured(r))
        body = (
            f"<b>Incumbent</b> {_e(incumbent.candidate_id)} · {_e(metric)} {value}"
            f" · {origin}<br>"
            f"rounds reviewed {len(view.rounds)} · adoptions {len(view.adoptions)}"
            f" · rejections {len(view.rejections) - again}"
            f"{f' · re-measurements {again}' if again else ''}<br>"
            f"{view.plateau} round{'s' if view.plateau != 1 else ''} without an adoption"
            f" since {f'round {incumbent.round}' if incumbent.round else 'the start'}"
            f" · different approaches {len(view.reconsiderations)}"
        )
    for note in view.notes():
        body += f"<br><b>{_e(note)}</b>"
    if was_stopped(view.terminal):
        body += "<br>run stopped"
    elif view.terminal is not None:
        result = view.terminal.status
        reason = getattr(view.terminal, "reason", "")
        body += f"<br>run {_e(result)}" + (f": {_e(reason)}" if reason else "")
    return f'<div class="zeroshot-incumbent" style="{style}">{body}</div>'


def _params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_number(v) if isinstance(v, float) else v}" for k, v in params.items())


def _number(value: float) -> str:
    return f"{value:.4g}"


def _e(text: str) -> str:
    return html.escape(text, quote=False)
