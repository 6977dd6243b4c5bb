/**
 * JupyterLab extension for Open Interpreter for Jupyter (oi_kernel).
 *
 * Wires the per-notebook comm connections to the commands, the notebook
 * toolbar button, the status bar item and automatic cell insertion.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, IToolbarWidgetRegistry } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { Signal } from '@lumino/signaling';

import { cardRendererFactory } from './cardview';
import { cellEditRendererFactory } from './celledits';
import { AutoInserter } from './cells';
import {
  CommandIDs,
  ICommandContext,
  addCommands,
  exportNotebook
} from './commands';
import {
  PALETTE_CATEGORY,
  addKernelAction,
  addToolbarItem
} from './kernelaction';
import { ConnectionManager } from './manager';
import { deciderName } from './protocol';
import { DEFAULT_SETTINGS, ISettings, readSettings } from './settings';
import { STATES_ACTION } from './states';
import { UNDO_ACTION } from './undo';
import { StatusItem, exportButton } from './widgets';

const PLUGIN_ID = 'oi-kernel:plugin';
const TOOLBAR_ITEM = 'oi-kernel-export';

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Open Interpreter for Jupyter: export/verify, status bar, approval shortcuts, insert ran code as cells.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [
    ICommandPalette,
    IStatusBar,
    ISettingRegistry,
    IDocumentManager,
    IToolbarWidgetRegistry,
    IRenderMimeRegistry
  ],
  activate
};

function activate(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  palette: ICommandPalette | null,
  statusBar: IStatusBar | null,
  settingRegistry: ISettingRegistry | null,
  docManager: IDocumentManager | null,
  toolbarRegistry: IToolbarWidgetRegistry | null,
  rendermime: IRenderMimeRegistry | null
): void {
  // Who decides in this browser: JupyterLab's user (with collaboration, each
  // collaborator's own; on JupyterHub, the Hub user).
  const user = app.serviceManager.user;
  const manager = new ConnectionManager(tracker, () =>
    deciderName(user?.identity ?? null)
  );
  addSharedCards(manager, tracker, rendermime);
  let settings: ISettings = { ...DEFAULT_SETTINGS };
  const settingsChanged = new Signal<typeof manager, void>(manager);

  const ctx: ICommandContext = {
    app,
    manager,
    settings: () => settings,
    docManager
  };
  addCommands(ctx);
  for (const action of [UNDO_ACTION, STATES_ACTION]) {
    addKernelAction(app, manager, tracker, palette, toolbarRegistry, action);
  }

  // Enablement of the export/verify commands follows the current notebook.
  manager.changed.connect(() => {
    app.commands.notifyCommandChanged(CommandIDs.exportNotebook);
    app.commands.notifyCommandChanged(CommandIDs.verify);
    app.commands.notifyCommandChanged(CommandIDs.setModel);
  });

  if (palette) {
    for (const command of Object.values(CommandIDs)) {
      palette.addItem({ command, category: PALETTE_CATEGORY });
    }
  }

  addToolbarButton(ctx, tracker, toolbarRegistry);

  if (statusBar) {
    addStatusItem(app, manager, statusBar, () => settings, settingsChanged);
  }

  const inserter = new AutoInserter();
  manager.codeRan.connect((_, { connection, message }) => {
    if (settings.autoInsertCells && connection.status?.kernel === 'ipython-magic') {
      inserter.insert(connection, message);
    }
  });

  if (settingRegistry) {
    settingRegistry
      .load(PLUGIN_ID)
      .then(loaded => {
        const update = (): void => {
          settings = readSettings(loaded);
          settingsChanged.emit();
        };
        update();
        loaded.changed.connect(update);
      })
      .catch(reason => {
        console.error('oi-kernel: cannot load settings', reason);
      });
  }
}

/**
 * The shared approval card renderer, in the application's registry (so every
 * notebook opened later has it) and in each notebook's own registry.
 */
function addSharedCards(
  manager: ConnectionManager,
  tracker: INotebookTracker,
  rendermime: IRenderMimeRegistry | null
): void {
  const factory = cardRendererFactory(node => {
    const panel = tracker.find(p => p.node.contains(node));
    return panel ? manager.get(panel) : null;
  });
  const edits = cellEditRendererFactory(node => {
    const panel = tracker.find(p => p.node.contains(node));
    return panel ? { panel, connection: manager.get(panel) } : null;
  });
  const add = (registry: IRenderMimeRegistry | null | undefined): void => {
    for (const f of [factory, edits]) {
      if (registry && !registry.getFactory(f.mimeTypes[0])) {
        registry.addFactory(f, f.defaultRank);
      }
    }
  };
  add(rendermime);
  tracker.forEach(panel => add(panel.content.rendermime));
  tracker.widgetAdded.connect((_, panel) => add(panel.content.rendermime));
}

function addToolbarButton(
  ctx: ICommandContext,
  tracker: INotebookTracker,
  toolbarRegistry: IToolbarWidgetRegistry | null
): void {
  addToolbarItem(tracker, toolbarRegistry, TOOLBAR_ITEM, panel => {
    const connection = ctx.manager.get(panel);
    return exportButton(connection, () => {
      if (connection.available) {
        void exportNotebook(ctx, connection);
      }
    });
  });
}

function addStatusItem(
  app: JupyterFrontEnd,
  manager: ConnectionManager,
  statusBar: IStatusBar,
  settings: () => ISettings,
  settingsChanged: Signal<ConnectionManager, void>
): void {
  const item = new StatusItem(() => {
    void app.commands.execute(CommandIDs.setModel);
  });
  const activeStateChanged = new Signal<StatusItem, void>(item);
  const refresh = (): void => {
    item.showStatus(manager.current?.status ?? null);
    activeStateChanged.emit();
  };
  statusBar.registerStatusItem(PLUGIN_ID + ':status', {
    item,
    align: 'left',
    rank: 100,
    isActive: () => {
      const current = manager.tracker.currentWidget;
      return (
        settings().showStatusItem &&
        current !== null &&
        app.shell.currentWidget === current &&
        manager.current?.available === true
      );
    },
    activeStateChanged
  });
  manager.changed.connect(refresh);
  settingsChanged.connect(refresh);
  app.shell.currentChanged?.connect(refresh);
  refresh();
}

export default plugin;
