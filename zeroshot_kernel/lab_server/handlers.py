"""The HTTP endpoints under ``{base_url}zeroshot/api/`` (the wire contract is
``labextension/src/types.ts``)::

    GET  studies                          StudiesReply
    GET  studies/{name}                   StudyDashboard
    GET  studies/{name}/candidates/{cid}  CandidateDetail
    GET  studies/{name}/export.csv        text/csv: the candidates (``?kind=rounds``: the
                                          rounds, as the study browser's Export CSV)
    GET  runs                             RunsReply
    GET  runs/{run_id}                    RunState
    POST runs/{run_id}/stop               ActionReply
    POST runs/{run_id}/continue           ActionReply (the new run)

Every method is ``@tornado.web.authenticated`` (Jupyter's token or cookie; POSTs also need
its XSRF check, which ``APIHandler`` applies to cookie logins). Every GET takes an optional
``?workspace=``. Errors are ``{"error": ...}`` with a 4xx status (an unknown study adds
``studies``); no traceback ever reaches a reply. Ledger reads block, so they run in worker
threads, never on the server's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from zeroshot_kernel.auto_research.studies.catalog import StudyError
from zeroshot_kernel.auto_research.studies.table import RunCache
from zeroshot_kernel.client import Client
from zeroshot_kernel.exceptions import NotFound, Refused, ZeroshotError
from zeroshot_kernel.lab_server import inputs
from zeroshot_kernel.lab_server.actions import NotContinuable, continue_run, stop_run
from zeroshot_kernel.lab_server.inputs import BadInput
from zeroshot_kernel.lab_server.json_values import dumps
from zeroshot_kernel.lab_server.run_payloads import RunStates, runs_reply
from zeroshot_kernel.lab_server.study_payloads import (
    CSV_KINDS,
    UnknownStudy,
    candidate_payload,
    export_csv,
    studies_reply,
    study_dashboard,
)
from zeroshot_kernel.lab_server.workspaces import OutsideRoot, Workspaces
from zeroshot_kernel.ledger import LedgerError, RunNotFound

_SEGMENT = r"([^/]+)"


class Refusal(Refused):
    """An answer other than 200: its status and JSON body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("error", ""))
        self.status = status
        self.body = body


class ZeroshotHandler(APIHandler):
    """Shared by every endpoint: the workspace, the worker thread, the error replies."""

    workspaces: Workspaces
    states: RunStates

    def initialize(self, workspaces: Workspaces, states: RunStates) -> None:
        self.workspaces = workspaces
        self.states = states

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Any error tornado or Jupyter raises (403 for a missing token or XSRF cookie,
        an unexpected failure) as ``{"error": ...}``, never with a traceback."""
        self.set_header("Content-Type", "application/json")
        error = kwargs.get("exc_info", (None, None, None))[1]
        reason = self._reason or "error"
        if (
            status_code == 403
            and isinstance(error, tornado.web.HTTPError)
            and "xsrf" in str(error.log_message or "").lower()
        ):
            reason = (
                "Forbidden: no XSRF token (a POST needs Jupyter's _xsrf cookie echoed in the "
                "X-XSRFToken header, or the token in the Authorization header)"
            )
        self.finish(dumps({"error": reason}))

    async def answer(self, work: Callable[[Client], Any], *, ok: int = 200) -> None:
        """Run ``work`` on the requested workspace's client in a worker thread and reply
        with its JSON (or the refusal it raised, as JSON)."""
        try:
            body = await asyncio.to_thread(self._run, work)
        except Refusal as refusal:
            self._refuse(refusal)
            return
        self.set_status(ok)
        self.set_header("Content-Type", "application/json")
        self.finish(dumps(body))

    def _run(self, work: Callable[[Client], Any]) -> Any:
        try:
            folder = self.workspaces.resolve(self.get_query_argument("workspace", None))
            return work(self.workspaces.client(folder))
        except Refusal:
            raise
        except Exception as problem:  # every failure becomes a JSON refusal, no traceback
            raise refusal_for(problem, self.log) from None

    def _cache(self, client: Client) -> RunCache:
        return self.workspaces.run_cache(Path(client.workspace))

    def _refuse(self, refusal: Refusal) -> None:
        self.set_status(refusal.status)
        self.set_header("Content-Type", "application/json")
        self.finish(dumps(refusal.body))


def refusal_for(problem: Exception, log: Any) -> Refusal:
    """The HTTP answer to a failure: 4xx for what the request named, 503 for a ledger
    that cannot be read, 500 (logged, never shown) for anything else."""
    if isinstance(problem, UnknownStudy):
        return Refusal(404, {"error": str(problem), "studies": problem.known})
    if isinstance(problem, RunNotFound):
        return Refusal(404, {"error": str(problem) or "no such run"})
    if isinstance(problem, NotFound):
        return Refusal(404, {"error": str(problem)})
    if isinstance(problem, OutsideRoot):
        return Refusal(403, {"error": str(problem)})
    if isinstance(problem, NotContinuable):
        return Refusal(409, {"error": str(problem)})
    if isinstance(problem, BadInput | StudyError | UnicodeError):
        return Refusal(400, {"error": str(problem)})
    if isinstance(problem, LedgerError | ZeroshotError):
        log.warning("zeroshot: %s", problem)
        return Refusal(503, {"error": f"could not read the ledger: {problem}"})
    log.exception("zeroshot: unexpected failure")
    failure = type(problem).__name__
    return Refusal(500, {"error": f"unexpected failure ({failure}); see the server log"})


class StudiesHandler(ZeroshotHandler):
    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(lambda client: studies_reply(client, self._cache(client)))


class StudyHandler(ZeroshotHandler):
    @tornado.web.authenticated
    async def get(self, name: str) -> None:
        await self.answer(
            lambda client: study_dashboard(client, inputs.study_name(name), self._cache(client))
        )


class CandidateHandler(ZeroshotHandler):
    @tornado.web.authenticated
    async def get(self, name: str, candidate: str) -> None:
        await self.answer(
            lambda client: candidate_payload(
                client, inputs.study_name(name), inputs.candidate_id(candidate)
            )
        )


class ExportHandler(ZeroshotHandler):
    @tornado.web.authenticated
    async def get(self, name: str) -> None:
        kind = self.get_query_argument("kind", "candidates")
        if kind not in CSV_KINDS:
            self._refuse(Refusal(400, {"error": "kind must be 'rounds' or 'candidates'"}))
            return
        try:
            study = inputs.study_name(name)
            text = await asyncio.to_thread(
                self._run, lambda client: export_csv(client, study, kind)
            )
        except BadInput as problem:
            self._refuse(Refusal(400, {"error": str(problem)}))
            return
        except Refusal as refusal:
            self._refuse(refusal)
            return
        self.set_header("Content-Disposition", f'attachment; filename="{study}-{kind}.csv"')
        self.finish(text, set_content_type="text/csv; charset=utf-8")


class RunsHandler(ZeroshotHandler):
    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(runs_reply)


class RunHandler(ZeroshotHandler):
    @tornado.web.authenticated
    async def get(self, run_id: str) -> None:
        await self.answer(lambda client: self.states.state(client, inputs.run_id(run_id)))


class StopHandler(ZeroshotHandler):
    @tornado.web.authenticated
    async def post(self, run_id: str) -> None:
        await self.answer(lambda client: stop_run(client, inputs.run_id(run_id)))


class ContinueHandler(ZeroshotHandler):
    @tornado.web.authenticated
    async def post(self, run_id: str) -> None:
        await self.answer(lambda client: continue_run(client, inputs.run_id(run_id)))


class UnknownEndpoint(ZeroshotHandler):
    """Anything else under ``zeroshot/api/``: a JSON 404, not the server's HTML page."""

    @tornado.web.authenticated
    async def get(self, *_: str) -> None:
        self._refuse(Refusal(404, {"error": "no such endpoint"}))

    @tornado.web.authenticated
    async def post(self, *_: str) -> None:
        self._refuse(Refusal(404, {"error": "no such endpoint"}))


def routes(
    base_url: str, workspaces: Workspaces, states: RunStates | None = None
) -> list[tuple[str, type[ZeroshotHandler], dict[str, Any]]]:
    """The handlers, under ``{base_url}zeroshot/api/``."""
    api = url_path_join(base_url, "zeroshot", "api")
    options = {"workspaces": workspaces, "states": states or RunStates()}
    table: list[tuple[str, type[ZeroshotHandler]]] = [
        ("studies", StudiesHandler),
        (f"studies/{_SEGMENT}", StudyHandler),
        (f"studies/{_SEGMENT}/candidates/{_SEGMENT}", CandidateHandler),
        (rf"studies/{_SEGMENT}/export\.csv", ExportHandler),
        ("runs", RunsHandler),
        (f"runs/{_SEGMENT}", RunHandler),
        (f"runs/{_SEGMENT}/stop", StopHandler),
        (f"runs/{_SEGMENT}/continue", ContinueHandler),
        ("(.*)", UnknownEndpoint),
    ]
    return [(url_path_join(api, path), handler, options) for path, handler in table]
