/**
 * The mime extension: renders `application/vnd.zeroshot.run+json` outputs as a live run
 * monitor, in JupyterLab 4 and Notebook 7, with or without a kernel. Its rank (-20) is below
 * ipywidgets' widget-view renderer (-10), so the monitor wins where both are in an output.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { RunMonitor, parseRunRef } from './monitor';
import { RUN_MIME } from './types';

export class RunMimeRenderer extends RunMonitor implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('zs-mime-run');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const ref = parseRunRef(model.data[RUN_MIME]);
    if (!ref) {
      this.showInvalid('This output names no zeroshot run (its data has no run_id).');
      return;
    }
    this.setRun(ref);
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [RUN_MIME],
  defaultRank: -20,
  createRenderer: () => new RunMimeRenderer()
};

const extension: IRenderMime.IExtension = {
  id: 'zeroshot-workbench:run-monitor',
  rendererFactory,
  rank: -20,
  dataType: 'json'
};

export default extension;
