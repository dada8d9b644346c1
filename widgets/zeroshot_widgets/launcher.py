"""``Launcher``: choose a target, a template (or a saved profile), a task and a harness;
validate; launch; monitor; save the form as a profile.

With the ``openai`` harness the form also shows the server's base URL (default
``$ZEROSHOT_OPENAI_BASE_URL``) and each reply's token budget (max tokens).

Validate runs every admission check (nothing is created) and, for auto-research, loads
the task folder, showing each problem inline with its readable path. Launch submits the
same expansion, or the chosen profile's stored graph and runtime, and shows a
:class:`RunMonitor` below the form. Save stores the form's submission at the target; an
existing name is replaced only with "replace" ticked.

Choosing a saved profile shows its values in the form's fields and greys them out: the
profile fixes them (choose "(the form below)" to edit the form again, as it was).

Example::

    from zeroshot_widgets import Launcher

    Launcher(task="research_templates/rosenbrock", iterations=3)
    Launcher(target="shared", profile="nightly")
    Launcher(task="branin", harness="openai", model="local",
             base_url="http://127.0.0.1:8080/v1")
"""

from __future__ import annotations

import contextlib
import html
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from zeroshot_kernel.auto_research.task import TASK_FILE, TaskError, resolve_task
from zeroshot_kernel.auto_research.template import DEFAULT_ITERATIONS, MAX_ITERATIONS
from zeroshot_kernel.client import AdmissionRejected, Client
from zeroshot_kernel.contract.diagnostics import GraphDiagnostic
from zeroshot_kernel.harness.plan import CORE_AGENT_HARNESSES, DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS
from zeroshot_kernel.profiles import Profile, ProfileExists, ProfileNotFound, TemplateSource
from zeroshot_kernel.sandbox import DEFAULT_MODE, SandboxMode, SandboxUnavailable
from zeroshot_kernel.targets import TargetError, Targets
from zeroshot_kernel.templates import TemplateOptions, expand_template, template_names
from zeroshot_widgets.monitor import RunMonitor

RESEARCH = "auto-research"
OPENAI = "openai"
BASE_URL_ENV = "ZEROSHOT_OPENAI_BASE_URL"
NO_PROFILE = ""
GraphSource = Mapping[str, Any] | str | os.PathLike[str]


SANDBOX_CHOICES = [("bwrap (boxed)", "bwrap"), ("none (UNCONTAINED)", "none")]


class Launcher(widgets.VBox):  # type: ignore[misc]
    """A form that expands a built-in template and submits it.

    ``graph`` replaces the template's graph (for instance one copied from
    ``zeroshot template show auto-research --json`` and edited) while keeping the
    template's input and runtime plan. ``target`` picks a named ledger instead of
    ``client``'s; ``profile`` preselects a profile saved there.
    """

    def __init__(
        self,
        client: Client | None = None,
        *,
        template: str = RESEARCH,
        task: str = "",
        iterations: int = DEFAULT_ITERATIONS,
        study: str = "",
        harness: str = "local",
        provider: str = "",
        model: str = "",
        base_url: str | None = None,
        max_tokens: int | None = None,
        graph: GraphSource | None = None,
        target: str | None = None,
        profile: str = NO_PROFILE,
        sandbox: SandboxMode = DEFAULT_MODE,
    ) -> None:
        self.client = client or Client(target=target)
        self._given = client  # the caller's client is the caller's to close
        self.graph = graph
        self.monitor: RunMonitor | None = None
        style = {"description_width": "80px"}
        targets, current = self._target_options()
        self.target = widgets.Dropdown(
            options=targets, value=current, description="target", style=style
        )
        self.profile = widgets.Dropdown(description="profile", style=style)
        self.profile_note = widgets.HTML()
        self._form: dict[str, Any] | None = None
        """The form's own values while a profile is shown in it (restored after)."""
        self.target.observe(lambda change: self._choose_target(change["new"]), names="value")
        self.template = widgets.Dropdown(
            options=template_names(), value=template, description="template", style=style
        )
        self.task = widgets.Combobox(
            value=task,
            options=_task_folders(self.client.workspace),
            description="task",
            placeholder="research task folder",
            ensure_option=False,
            style=style,
        )
        self.study = widgets.Text(
            value=study or "", placeholder="study (task name)", description="study", style=style
        )
        self.iterations = widgets.BoundedIntText(
            value=iterations, min=1, max=MAX_ITERATIONS, description="iterations", style=style
        )
        self.harness = widgets.Dropdown(
            options=CORE_AGENT_HARNESSES, value=harness, description="harness", style=style
        )
        self.provider = widgets.Text(
            value=provider, description="provider", style=style, placeholder="default"
        )
        self.model = widgets.Text(
            value=model, description="model", style=style, placeholder="default"
        )
        self.base_url = widgets.Text(
            value=os.environ.get(BASE_URL_ENV, "") if base_url is None else base_url,
            description="base URL",
            placeholder="http://127.0.0.1:8080/v1",
            style=style,
        )
        self.max_tokens = widgets.BoundedIntText(
            value=max_tokens or DEFAULT_MAX_TOKENS,
            min=1,
            max=MAX_MAX_TOKENS,
            description="max tokens",
            style=style,
        )
        self.sandbox = widgets.Dropdown(
            options=SANDBOX_CHOICES,
            value=sandbox,
            description="sandbox",
            style=style,
            tooltip="How model-written code is contained: a bubblewrap box, or none "
            "(UNCONTAINED: it runs with your full powers)",
        )
        self.openai_box = widgets.HBox([self.base_url, self.max_tokens])
        self._show_openai_fields()
        self.harness.observe(lambda _: self._show_openai_fields(), names="value")
        self.validate_button = widgets.Button(description="Validate", icon="check")
        self.launch_button = widgets.Button(
            description="Launch", icon="rocket", button_style="primary"
        )
        self.profile_name = widgets.Text(
            description="save as", style=style, placeholder="profile name"
        )
        self.save_button = widgets.Button(description="Save profile", icon="save")
        self.replace = widgets.Checkbox(
            value=False,
            description="replace",
            indent=False,
            tooltip="Replace a saved profile of the same name",
            layout=widgets.Layout(width="auto"),
        )
        self.diagnostics = widgets.HTML()
        self.monitor_box = widgets.VBox()
        self.validate_button.on_click(lambda _: self.validate())
        self.launch_button.on_click(lambda _: self.launch())
        self.save_button.on_click(lambda _: self.save_profile())
        super().__init__(
            children=[
                widgets.HBox([self.target, self.profile]),
                self.profile_note,
                widgets.HBox([self.template, self.task, self.iterations, self.study]),
                widgets.HBox([self.harness, self.provider, self.model, self.sandbox]),
                self.openai_box,
                widgets.HBox(
                    [
                        self.validate_button,
                        self.launch_button,
                        self.profile_name,
                        self.replace,
                        self.save_button,
                    ]
                ),
                self.diagnostics,
                self.monitor_box,
            ]
        )
        self.profile.observe(lambda change: self._show_profile(change["new"]), names="value")
        self._refresh_profiles(profile)
        self._show_profile(self.profile.value)

    def options(self) -> TemplateOptions:
        openai = self.harness.value == OPENAI
        return TemplateOptions(
            task=self.task.value.strip(),
            iterations=self.iterations.value,
            harness=self.harness.value,
            provider=self.provider.value.strip() or None,
            model=self.model.value.strip() or None,
            study=self.study.value.strip() or None,
            base_url=(self.base_url.value.strip() or None) if openai else None,
            max_tokens=self.max_tokens.value if openai else None,
            sandbox=None if self.sandbox.value == DEFAULT_MODE else self.sandbox.value,
        )

    def validate(self) -> bool:
        """Every admission check plus the task folder; shows the problems, creates nothing."""
        if self.profile.value != NO_PROFILE:
            admission = self.client.validate_profile(self.profile.value)
            self._show([], admission.diagnostics)
            return admission.ok
        problems = self._task_problems()
        try:
            expansion = expand_template(self.template.value, self.options())
            admission = self.client.validate(
                self.graph or expansion.graph, input=expansion.input, runtime=expansion.runtime
            )
        except ValueError as unreadable:
            self._show([*problems, str(unreadable)], [])
            return False
        self._show(problems, admission.diagnostics)
        return admission.ok and not problems

    def launch(self) -> RunMonitor | None:
        """Submit (the chosen profile, else the form) and show a monitor below the form;
        None (with the problems) if rejected."""
        problems = [] if self.profile.value != NO_PROFILE else self._task_problems()
        if problems:
            self._show(problems, [])
            return None
        try:
            if self.profile.value != NO_PROFILE:
                run = self.client.submit_profile(self.profile.value)
            else:
                expansion = expand_template(self.template.value, self.options())
                run = self.client.submit(
                    self.graph or expansion.graph,
                    input=expansion.input,
                    runtime=expansion.runtime,
                    title=self._title(),
                )
        except AdmissionRejected as rejected:
            self._show([], rejected.diagnostics)
            return None
        except (ValueError, SandboxUnavailable) as refused:
            self._show([str(refused)], [])
            return None
        if self.monitor is not None:
            self.monitor.close()
        self.diagnostics.value = f"launched <code>{html.escape(run.id)}</code>"
        self.monitor = RunMonitor(self.client, run.id)
        self.monitor_box.children = (self.monitor,)
        return self.monitor

    @property
    def form_fields(self) -> tuple[widgets.Widget, ...]:
        """The fields a chosen profile fixes."""
        return (
            self.template,
            self.task,
            self.iterations,
            self.study,
            self.harness,
            self.provider,
            self.model,
            self.base_url,
            self.max_tokens,
            self.sandbox,
        )

    def save_profile(self, name: str | None = None, *, replace: bool | None = None) -> bool:
        """Store the form's submission at the target as profile ``name`` (default: the
        "save as" field) and select it; an existing profile of that name is replaced only
        when ``replace`` (default: the "replace" box) says so. Shows what stopped it
        otherwise."""
        replace = self.replace.value if replace is None else replace
        name = (name or self.profile_name.value).strip()
        if not name:
            self._show(["save as: give the profile a name"], [])
            return False
        problems = self._task_problems()
        if problems:
            self._show(problems, [])
            return False
        options = self.options()
        try:
            expansion = expand_template(self.template.value, options)
        except ValueError as unreadable:
            self._show([str(unreadable)], [])
            return False
        source = (
            None
            if self.graph is not None
            else TemplateSource(name=self.template.value, options=_template_options(options))
        )
        try:
            saved = self.client.save_profile(
                name,
                self.graph or expansion.graph,
                runtime=expansion.runtime,
                input=expansion.input,
                title=self._title(),
                template=source,
                replace=replace,
            )
        except AdmissionRejected as rejected:
            self._show([], rejected.diagnostics)
            return False
        except ProfileExists:
            self._show(
                [
                    f"profile {name!r} is already saved at {self.client.display_url}: "
                    'tick "replace" and save again to replace it'
                ],
                [],
            )
            return False
        except ValueError as problem:
            self._show([str(problem)], [])
            return False
        self.replace.value = False  # one replacement per tick
        self._refresh_profiles(saved.name)
        verb = "replaced" if replace else "saved"
        self.diagnostics.value = (
            f"{verb} profile <code>{html.escape(saved.name)}</code> at "
            f"{html.escape(self.client.display_url)}"
        )
        return True

    def close(self) -> None:
        if self.monitor is not None:
            self.monitor.close()
        super().close()

    def _show_profile(self, name: str) -> None:
        """A chosen profile fills the form with its values and greys it out; the form
        (as it was) comes back when no profile is chosen."""
        if name == NO_PROFILE:
            if self._form is not None:
                for field, value in zip(self.form_fields, self._form.values(), strict=True):
                    field.value = value
                self._form = None
            for field in self.form_fields:
                field.disabled = False
            self.profile_note.value = ""
            return
        try:
            profile = self.client.profiles.get(name)
        except ProfileNotFound as missing:
            self._show([str(missing)], [])
            return
        if self._form is None:
            self._form = {f"{i}": field.value for i, field in enumerate(self.form_fields)}
        self._fill(profile)
        for field in self.form_fields:
            field.disabled = True
        self.profile_note.value = (
            f'<span style="color:#7f7f7f">profile <code>{html.escape(name)}</code> fixes the '
            "fields below (its stored graph, input and plan are what runs); choose "
            '"(the form below)" to edit them</span>'
        )

    def _fill(self, profile: Profile) -> None:
        """Show the profile's own values (its template's options) in the fields."""
        if profile.template is None:
            return  # a hand-written graph: nothing to show but its title
        chosen = profile.template.options
        if profile.template.name in self.template.options:
            self.template.value = profile.template.name
        self.task.value = str(chosen.get("task", ""))
        self.iterations.value = int(chosen.get("iterations") or DEFAULT_ITERATIONS)
        self.study.value = str(chosen.get("study") or "")
        if chosen.get("harness") in self.harness.options:
            self.harness.value = chosen["harness"]
        self.provider.value = str(chosen.get("provider") or "")
        self.model.value = str(chosen.get("model") or "")
        if chosen.get("base_url"):
            self.base_url.value = str(chosen["base_url"])
        if chosen.get("max_tokens"):
            self.max_tokens.value = int(chosen["max_tokens"])
        self.sandbox.value = chosen.get("sandbox") or DEFAULT_MODE

    def _show_openai_fields(self) -> None:
        """The server and token budget matter only to the openai harness."""
        shown = self.harness.value == OPENAI
        self.openai_box.layout.display = None if shown else "none"

    def _title(self) -> str:
        return f"{self.template.value} {self.task.value.strip()}".strip()

    def _target_options(self) -> tuple[list[tuple[str, str]], str]:
        """Every target by name, and the one the client writes to (its URL first when it
        is none of them)."""
        targets = Targets(self.client.workspace).list()
        options = [(t.name, t.name) for t in targets]
        for target in targets:
            with contextlib.suppress(TargetError):
                if target.url() == self.client.url:
                    return options, target.name
        return [(self.client.display_url, ""), *options], ""

    def _choose_target(self, name: str) -> None:
        if not name:
            return
        try:
            client = Client(target=name, workspace=str(self.client.workspace))
        except TargetError as problem:
            self._show([f"target: {problem}"], [])
            return
        if self.client is not self._given:
            self.client.close()
        self.client = client
        self._refresh_profiles(NO_PROFILE)
        self.diagnostics.value = f"target {html.escape(name)}: {html.escape(client.display_url)}"

    def _refresh_profiles(self, chosen: str) -> None:
        names = [p.name for p in self.client.profiles.list()]
        self.profile.options = [("(the form below)", NO_PROFILE), *[(n, n) for n in names]]
        self.profile.value = chosen if chosen in names else NO_PROFILE

    def _task_problems(self) -> list[str]:
        if self.template.value != RESEARCH:
            return []
        task = self.task.value.strip()
        if not task:
            return ["task: choose a research task folder"]
        try:
            resolve_task(task, self.client.workspace)
        except TaskError as problem:
            return [f"task: {problem}"]
        return []

    def _show(self, problems: Sequence[str], diagnostics: Sequence[GraphDiagnostic]) -> None:
        self.diagnostics.value = diagnostics_html(problems, diagnostics)


def diagnostics_html(problems: Sequence[str], diagnostics: Sequence[GraphDiagnostic]) -> str:
    """Problems and admission diagnostics (code, readable path, what to change) as HTML.

    >>> diagnostics_html([], [])
    '<div class="zeroshot-ok">admissible: every check passed; nothing was created</div>'
    """
    if not problems and not diagnostics:
        return '<div class="zeroshot-ok">admissible: every check passed; nothing was created</div>'
    items = [f"<li>{html.escape(p)}</li>" for p in problems]
    items += [
        f"<li><b>{html.escape(d.severity)}: {html.escape(d.code)}</b> at "
        f"<code>{html.escape(d.readable_path())}</code><br>{html.escape(d.message)}</li>"
        for d in diagnostics
    ]
    count = len(items)
    return (
        f'<div class="zeroshot-diagnostics" style="color:#d62728">'
        f"{count} problem{'s' if count != 1 else ''} found:<ul>{''.join(items)}</ul></div>"
    )


def _template_options(options: TemplateOptions) -> dict[str, Any]:
    chosen = {
        "task": options.task,
        "iterations": options.iterations,
        "study": options.study,
        "harness": options.harness,
        "provider": options.provider,
        "model": options.model,
        "base_url": options.base_url,
        "max_tokens": options.max_tokens,
        "sandbox": options.sandbox,
    }
    return {key: value for key, value in chosen.items() if value is not None}


def _task_folders(workspace: Path) -> list[str]:
    """Task folders one or two levels below the workspace, as the task field takes them."""
    found = [*workspace.glob(f"*/{TASK_FILE}"), *workspace.glob(f"*/*/{TASK_FILE}")]
    return sorted(p.parent.relative_to(workspace).as_posix() for p in found)
