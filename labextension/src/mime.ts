import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';
import { RUN_MIME } from './types';

class Stub extends Widget implements IRenderMime.IRenderer {
  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.node.textContent = JSON.stringify(model.data[RUN_MIME]);
  }
}

const extension: IRenderMime.IExtension = {
  id: 'zeroshot-workbench:run-monitor',
  rendererFactory: { safe: true, mimeTypes: [RUN_MIME], createRenderer: () => new Stub() },
  rank: -20,
  dataType: 'json'
};

export default extension;
