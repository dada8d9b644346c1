"""The Jupyter server extension: the ledger, served as JSON to the JupyterLab front end.

ipywidgets views need a live kernel; a notebook reopened tomorrow cannot show a run as it
is now. This extension reads the ledger inside the Jupyter server instead, so the front end
(``labextension/``: a studies panel, study dashboards and a live run renderer for
``application/vnd.zeroshot.run+json`` outputs) works with or without a kernel. Endpoints
live under ``{base_url}zeroshot/api/`` (see :mod:`.handlers`; the wire contract is
``labextension/src/types.ts``). Installing the package enables it
(``etc/jupyter/jupyter_server_config.d/zeroshot_kernel.json``).

It imports no widget library (``make lint`` checks that): the server runs without one.
"""

from __future__ import annotations

from typing import Any

EXTENSION_NAME = "zeroshot_kernel.lab_server"
LABEXTENSION_NAME = "zeroshot-workbench"


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """How ``jupyter server`` finds this extension (``jpserver_extensions``)."""
    return [{"module": EXTENSION_NAME}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the front end's prebuilt bundle is, relative to this module's folder (the
    front end's build writes ``zeroshot_kernel/labextension/``; ``jupyter labextension
    develop`` links it; a wheel ships it under ``share/jupyter/labextensions/``)."""
    return [{"src": "../labextension", "dest": LABEXTENSION_NAME}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register the handlers under ``{base_url}zeroshot/api/``; ledgers are opened
    lazily, per workspace, on first request."""
    from zeroshot_kernel.lab_server.handlers import routes
    from zeroshot_kernel.lab_server.workspaces import Workspaces

    web_app = serverapp.web_app
    base_url = web_app.settings["base_url"]
    web_app.add_handlers(".*$", routes(base_url, Workspaces(serverapp.root_dir)))
    serverapp.log.info("zeroshot: serving ledgers at %szeroshot/api/", base_url)


# jupyter_server < 2 looked for the old name
load_jupyter_server_extension = _load_jupyter_server_extension
