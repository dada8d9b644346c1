"""``Launcher``: choose a target, a template (or a saved profile), a task and a harness;
validate; launch; monitor; save the form as a profile.

The research fields are built from the one declaration of the research options
(:data:`~zeroshot_kernel.auto_research.options.RESEARCH_OPTIONS`), which ``zeroshot research
run`` and ``%zeroshot research`` are built from too: the same names, defaults, bounds and
checks. A field only one harness reads (the ``openai`` server's base URL, default
``$ZEROSHOT_OPENAI_BASE_URL``, and each reply's token budget) shows with that harness only.

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

from zeroshot_kernel.auto_research.options import (
    RESEARCH_OPTIONS,
    OptionValue,
    ResearchOption,
    by_name,
    harness_problem,
    research_problems,
)
from zeroshot_kernel.auto_research.task import TASK_FILE, TaskError, resolve_task
from zeroshot_kernel.client import AdmissionRejected, Client
from zeroshot_kernel.contract.diagnostics import GraphDiagnostic
from zeroshot_kernel.exceptions import InvalidInput
from zeroshot_kernel.profiles import Profile, ProfileExists, ProfileNotFound, TemplateSource
from zeroshot_kernel.sandbox import DEFAULT_MODE, SandboxMode, SandboxUnavailable
from zeroshot_kernel.targets import TargetError, Targets
from zeroshot_kernel.templates import TemplateOptions, expand_template, template_names
from zeroshot_widgets.monitor import RunMonitor

RESEARCH = "auto-research"
NO_PROFILE = ""
GraphSource = Mapping[str, Any] | str | os.PathLike[str]


SANDBOX_CHOICES = [("bwrap (boxed)", "bwrap"), ("none (UNCONTAINED)", "none")]


class Launcher(widgets.VBox):  # type: ignore[misc]
    """A form that expands a built-in template and submits it.

    ``graph`` replaces the template's graph (for instance one copied from
    ``zeroshot template show auto-research --json`` and edited) while keeping the
    template's input and runtime plan. ``target`` picks a named ledger instead of
    ``client``'s; ``profile`` preselects a profile saved there. The other keywords are the
    research options (``iterations=3``, ``harness="openai"``, ...): their fields' first
    values.
    """

    def __init__(
        self,
        client: Client | None = None,
        *,
        template: str = RESEARCH,
        task: str = "",
        graph: GraphSource | None = None,
        target: str | None = None,
        profile: str = NO_PROFILE,
        sandbox: SandboxMode = DEFAULT_MODE,
        **research: OptionValue,
    ) -> None:
        self.monitor: RunMonitor | None = None  # first: close() reads it, even after a refusal
        unknown = sorted(set(research) - {option.name for option in RESEARCH_OPTIONS})
        if unknown:
            raise TypeError(f"Launcher() got an unexpected keyword argument {unknown[0]!r}")
        harness = research.get("harness", by_name("harness").default)
        if harness not in by_name("harness").choices:
            raise InvalidInput(
                harness_problem(str(harness))
                or f"--harness {harness}: the Launcher offers "
                f"{', '.join(by_name('harness').choices)}"
            )
        self.client = client or Client(target=target)
        self._given = client  # the caller's client is the caller's to close
        self.graph = graph
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
        self.fields: dict[str, widgets.Widget] = {
            option.name: _field(option, research.get(option.name), style)
            for option in RESEARCH_OPTIONS
        }
        """One field per declared research option, by its name (also an attribute)."""
        for name, field in self.fields.items():
            setattr(self, name, field)
        self.sandbox = widgets.Dropdown(
            options=SANDBOX_CHOICES,
            value=sandbox,
            description="sandbox",
            style=style,
            tooltip="How model-written code is contained: a bubblewrap box, or none "
            "(UNCONTAINED: it runs with your full powers)",
        )
        general = [self.fields[o.name] for o in RESEARCH_OPTIONS if o.only_for is None]
        self.harness_boxes = {
            harness: widgets.HBox(
                [self.fields[o.name] for o in RESEARCH_OPTIONS if o.only_for == harness]
            )
            for harness in {o.only_for for o in RESEARCH_OPTIONS if o.only_for is not None}
        }
        """Per harness, the fields only it reads."""
        self._show_harness_fields()
        self.fields["harness"].observe(lambda _: self._show_harness_fields(), names="value")
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
                widgets.HBox([self.template, self.task]),
                *(widgets.HBox(row) for row in _rows([*general, self.sandbox], 4)),
                *self.harness_boxes.values(),
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

    def research(self) -> dict[str, OptionValue]:
        """The research options as the form gives them; a field only another harness reads
        is left out (None). ``ValueError`` for a number field that holds no number."""
        harness = self.fields["harness"].value
        return {
            option.name: _value(option, self.fields[option.name])
            if option.only_for in (None, harness)
            else None
            for option in RESEARCH_OPTIONS
        }

    def options(self) -> TemplateOptions:
        """What the form expands its template with (``ValueError`` as :meth:`research`)."""
        return TemplateOptions(
            task=self.task.value.strip(),
            sandbox=None if self.sandbox.value == DEFAULT_MODE else self.sandbox.value,
            **self.research(),  # type: ignore[arg-type]
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
        return (self.template, self.task, *self.fields.values(), self.sandbox)

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
        try:
            options = self.options()
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
        for option in RESEARCH_OPTIONS:
            value = chosen.get(option.name)
            if value is None and option.envvar is not None:
                continue  # the environment's value stays: the profile did not choose
            if option.choices and value not in option.choices:
                continue  # a harness this form does not offer: the profile's plan names it
            _show_value(option, self.fields[option.name], value)
        self.sandbox.value = chosen.get("sandbox") or DEFAULT_MODE

    def _show_harness_fields(self) -> None:
        """A field only one harness reads shows with that harness only."""
        for harness, box in self.harness_boxes.items():
            box.layout.display = None if self.fields["harness"].value == harness else "none"

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
        """For auto-research: the task folder's problems, then the research options' (the
        checks the command line and the magic run)."""
        if self.template.value != RESEARCH:
            return []
        task = self.task.value.strip()
        problems = [] if task else ["task: choose a research task folder"]
        if task:
            try:
                resolve_task(task, self.client.workspace)
            except TaskError as problem:
                problems.append(f"task: {problem}")
        try:
            return problems + research_problems(self.research())
        except ValueError as unreadable:
            return [*problems, str(unreadable)]

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
    names = ["task", *(option.name for option in RESEARCH_OPTIONS), "sandbox"]
    chosen = {name: getattr(options, name) for name in names}
    return {key: value for key, value in chosen.items() if value is not None}


def _field(option: ResearchOption, value: OptionValue, style: dict[str, str]) -> widgets.Widget:
    """The field for ``option``, showing ``value`` (None: the environment's value for an
    option read from one, else the declared default)."""
    if value is None and option.envvar is not None:
        value = os.environ.get(option.envvar) or None
    if value is None:
        value = option.default
    common: dict[str, Any] = {
        "description": option.name.replace("_", " "),
        "tooltip": option.help,
        "style": style,
    }
    if option.kind is bool:
        return widgets.Checkbox(value=bool(value), indent=False, **common)
    if option.choices:
        return widgets.Dropdown(options=option.choices, value=value, **common)
    if option.kind is int and option.default is not None:
        return widgets.BoundedIntText(value=value, min=option.low, max=option.high, **common)
    text = "" if value is None or value == option.default else str(value)
    return widgets.Text(value=text, placeholder="default", **common)


def _value(option: ResearchOption, field: widgets.Widget) -> OptionValue:
    """The option's value in ``field`` (a text field is parsed as the option declares)."""
    if isinstance(field, widgets.Text):
        return option.parse(field.value)
    return field.value  # type: ignore[no-any-return]


def _show_value(option: ResearchOption, field: widgets.Widget, value: OptionValue) -> None:
    if value is None:
        value = option.default
    if isinstance(field, widgets.Text):
        field.value = "" if value is None or value == option.default else str(value)
    else:
        field.value = value


def _rows(fields: Sequence[widgets.Widget], width: int) -> list[list[widgets.Widget]]:
    return [list(fields[i : i + width]) for i in range(0, len(fields), width)]


def _task_folders(workspace: Path) -> list[str]:
    """Task folders one or two levels below the workspace, as the task field takes them."""
    found = [*workspace.glob(f"*/{TASK_FILE}"), *workspace.glob(f"*/*/{TASK_FILE}")]
    return sorted(p.parent.relative_to(workspace).as_posix() for p in found)
