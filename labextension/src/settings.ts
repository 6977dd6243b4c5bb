/**
 * The extension's user settings (schema/plugin.json) as a typed object.
 */

import { ISettingRegistry } from '@jupyterlab/settingregistry';

export interface ISettings {
  /** Insert a code cell for every `code_ran` push in `%%oi` notebooks. */
  autoInsertCells: boolean;
  /** Show the model/tokens/cost item in the status bar. */
  showStatusItem: boolean;
  /** Where exports go by default; '' means next to the notebook. */
  exportDefaultDirectory: string;
  /** Keep cells whose code failed in the export (commented out). */
  exportIncludeFailed: boolean;
}

export const DEFAULT_SETTINGS: ISettings = {
  autoInsertCells: false,
  showStatusItem: true,
  exportDefaultDirectory: '',
  exportIncludeFailed: false
};

/** Read the composite settings, falling back to defaults field by field. */
export function readSettings(settings: ISettingRegistry.ISettings): ISettings {
  const get = <K extends keyof ISettings>(key: K): ISettings[K] => {
    const value = settings.get(key).composite;
    return typeof value === typeof DEFAULT_SETTINGS[key]
      ? (value as ISettings[K])
      : DEFAULT_SETTINGS[key];
  };
  return {
    autoInsertCells: get('autoInsertCells'),
    showStatusItem: get('showStatusItem'),
    exportDefaultDirectory: get('exportDefaultDirectory'),
    exportIncludeFailed: get('exportIncludeFailed')
  };
}
