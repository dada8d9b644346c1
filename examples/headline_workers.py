"""Python workers for ``headline.yaml``: plain functions, typed input in, typed output out."""

from zeroshot_kernel.workers import Verdict


def write(value: dict[str, str]) -> dict[str, str]:
    """The step: a headline for the topic."""
    return {"headline": f"What {value['topic']} remember when everything else forgets"}


def check(value: dict[str, str]) -> Verdict:
    """The verifier: accept headlines of at most twelve words; report the count."""
    words = len(value["headline"].split())
    return Verdict(signals={"verdict": "accepted" if words <= 12 else "rejected"},
                   diagnostic={"words": words})
