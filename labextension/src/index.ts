import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'zeroshot-workbench:plugin',
  autoStart: true,
  activate: (_app: JupyterFrontEnd) => {
    console.debug('zeroshot-workbench activated');
  }
};

export default [plugin];
