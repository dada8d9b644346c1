"""Harnesses: how an executable node's work is done (embedded agents, Python callables,
agent CLIs, OpenAI-compatible endpoints), chosen per node by the runtime plan.

- ``plan``: the runtime plan models; ``registry.harness_for(name)``: one harness per kind.
- ``base``: the interface (``ExecutionRequest`` in, ``HarnessResult`` out).
- ``local_harness``, ``python_harness``: embedded agents and Python callables.
- ``trusted_harness``: trusted engine code behind a node (research measurement, adoption).
- ``prompt``: the prompt contract (instructions, input, response schema; reply checks).
- ``conversation``: prompt, up to two corrections, then ``malformed``; usage summed.
- ``sessions``: ``sessionScope: node_instance`` sessions kept across loop revisits.
- ``agent_cli`` (+ ``agent_guard``): agent CLIs as killable process groups.
- ``claude_harness``, ``codex_harness``, ``openai_harness``: the LLM harnesses.
- ``providers``: installed CLIs, satisfied connections, live checks
  (``zeroshot providers``); ``usage``: a run's summed usage (``zeroshot status``).
"""
