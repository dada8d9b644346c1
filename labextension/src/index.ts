/**
 * The JupyterLab / Notebook 7 plugin: the Studies side panel, the study dashboards and run
 * monitors in the main area, and the commands `zeroshot:open-studies`, `zeroshot:open-study`
 * ({study, workspace?}) and `zeroshot:open-run` ({run_id, workspace?}) in the palette.
 * (The output renderer is the mime extension in mime.ts.)
 */

import { ILabShell, ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';
import { StudyDashboardWidget } from './dashboard';
import { RunMonitor } from './monitor';
import { StudiesPanel } from './panel';

export namespace CommandIDs {
  export const openStudies = 'zeroshot:open-studies';
  export const openStudy = 'zeroshot:open-study';
  export const openRun = 'zeroshot:open-run';
}

const CATEGORY = 'zeroshot';

function findOpen<T extends Widget>(app: JupyterFrontEnd, id: string): MainAreaWidget<T> | null {
  for (const w of app.shell.widgets('main')) {
    if (w.id === id) return w as MainAreaWidget<T>;
  }
  return null;
}

function safeId(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]/g, '_');
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'zeroshot-workbench:plugin',
  description: 'zeroshot studies panel, study dashboards and run monitors',
  autoStart: true,
  optional: [ICommandPalette, ILayoutRestorer, ILabShell],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const { commands, shell } = app;

    const openStudy = (study: string, workspace?: string) => {
      const id = `zeroshot-study-${safeId(study)}`;
      const open = findOpen<StudyDashboardWidget>(app, id);
      if (open) {
        shell.activateById(id);
        return open;
      }
      const content = new StudyDashboardWidget(study, workspace || undefined);
      const widget = new MainAreaWidget({ content });
      widget.id = id;
      widget.title.label = `Study ${study}`;
      widget.title.caption = content.title.caption;
      widget.title.closable = true;
      widget.addClass('zs-main-widget');
      shell.add(widget, 'main');
      shell.activateById(id);
      return widget;
    };

    const openRun = (runId: string, workspace?: string) => {
      const id = `zeroshot-run-${safeId(runId)}`;
      const open = findOpen<RunMonitor>(app, id);
      if (open) {
        shell.activateById(id);
        return open;
      }
      const content = new RunMonitor({ run_id: runId, workspace: workspace ?? '' });
      const widget = new MainAreaWidget({ content });
      widget.id = id;
      widget.title.label = `Run ${runId}`;
      widget.title.caption = `zeroshot run ${runId}`;
      widget.title.closable = true;
      widget.addClass('zs-main-widget');
      shell.add(widget, 'main');
      shell.activateById(id);
      return widget;
    };

    const panel = new StudiesPanel({
      openStudy: (study, workspace) => void commands.execute(CommandIDs.openStudy, { study, workspace }),
      openRun: (runId, workspace) => void commands.execute(CommandIDs.openRun, { run_id: runId, workspace })
    });
    panel.title.label = 'Studies';
    panel.title.iconClass = 'zs-studies-icon';
    panel.title.caption = 'zeroshot studies and runs';

    commands.addCommand(CommandIDs.openStudies, {
      label: 'zeroshot: Show Studies',
      caption: 'Show the zeroshot Studies panel',
      execute: () => {
        if (!panel.isAttached) shell.add(panel, 'left', { rank: 600 });
        shell.activateById(panel.id);
      }
    });
    commands.addCommand(CommandIDs.openStudy, {
      label: args => (args.study ? `zeroshot: Open Study ${String(args.study)}` : 'zeroshot: Open Study…'),
      caption: 'Open a zeroshot study dashboard',
      execute: async args => {
        let study = typeof args.study === 'string' ? args.study : '';
        if (!study) {
          study = window.prompt('Study name') ?? '';
        }
        if (!study) return;
        return openStudy(study, typeof args.workspace === 'string' ? args.workspace : undefined);
      }
    });
    commands.addCommand(CommandIDs.openRun, {
      label: args => (args.run_id ? `zeroshot: Open Run ${String(args.run_id)}` : 'zeroshot: Open Run…'),
      caption: 'Open the live monitor of a zeroshot run',
      execute: async args => {
        let runId = typeof args.run_id === 'string' ? args.run_id : '';
        if (!runId) {
          runId = window.prompt('Run id') ?? '';
        }
        if (!runId) return;
        return openRun(runId, typeof args.workspace === 'string' ? args.workspace : undefined);
      }
    });
    if (palette) {
      palette.addItem({ command: CommandIDs.openStudies, category: CATEGORY });
      palette.addItem({ command: CommandIDs.openStudy, category: CATEGORY });
      palette.addItem({ command: CommandIDs.openRun, category: CATEGORY });
    }

    // The panel lives in the left area where there is one (Lab; Notebook 7's tree and
    // notebook pages have a left area too, collapsed by default).
    try {
      shell.add(panel, 'left', { rank: 600 });
      if (restorer) restorer.add(panel, 'zeroshot-studies-panel');
    } catch (e) {
      console.warn('zeroshot: no left area for the Studies panel', e);
    }
  }
};

export default [plugin];
