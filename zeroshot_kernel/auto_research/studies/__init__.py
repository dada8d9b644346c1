"""A workspace's studies, one module for each thing held about them.

- :mod:`.catalog`: the studies themselves: names, the records folder of each, the legacy
  move, their summaries, which runs researched which study, and the claim a submission
  makes (:class:`~.catalog.StudyError`).
- :mod:`.run_lock`: the lock a controller holds while its run researches a study, so that
  one run at a time does, whatever ledger records it.
- :mod:`.table`: the studies and their runs as rows for the study browser's table and
  charts.
- :mod:`.export`: one study's rounds and candidates as rows, a DataFrame, a CSV or JSON
  (:class:`~.export.Study`).

Import from the module that holds a name; this package re-exports nothing, so importing
one module never loads the others.
"""
